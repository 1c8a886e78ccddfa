//! What a run costs: cloud and on-premises options (`presets/clouds.ron`), FLOPs → GPU-hours at
//! an editable utilisation, on-demand / spot / committed prices, and GPU sharing (MIG) when a job
//! is small.

use crate::gpu::{self, Gpu};
use serde::{Deserialize, Serialize};

/// Buying instead of renting.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Purchase {
    /// Price of the machine, USD.
    pub price: f64,
    /// Years it is written off over.
    pub amortise_years: f64,
    /// Power, cooling and hosting per hour, USD.
    pub running_per_hour: f64,
}

/// A rentable (or buyable) machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// Short id.
    pub id: String,
    /// AWS, Azure, Google Cloud, On-premises.
    pub provider: String,
    /// The provider's name for it.
    pub name: String,
    /// GPU id in the GPU catalog.
    pub gpu: String,
    /// GPUs in one instance.
    pub gpus: u64,
    /// On-demand price of the instance per hour, USD.
    pub price_per_hour: f64,
    /// Region the price is from.
    pub region: String,
    /// When the price was noted.
    pub price_date: String,
    /// Purchase terms for on-premises machines.
    #[serde(default)]
    pub purchase: Option<Purchase>,
}

impl Instance {
    /// Cost of one instance-hour: the on-demand price, or amortisation plus running costs.
    pub fn hourly(&self) -> f64 {
        match self.purchase {
            Some(p) => p.price / (p.amortise_years.max(0.1) * 365.25 * 24.0) + p.running_per_hour,
            None => self.price_per_hour,
        }
    }

    /// Per GPU-hour.
    pub fn per_gpu_hour(&self) -> f64 {
        self.hourly() / self.gpus.max(1) as f64
    }
}

#[derive(Deserialize)]
struct CloudFile {
    schema: u32,
    instances: Vec<Instance>,
}

/// The built-in options, parsed once.
pub fn catalog() -> &'static [Instance] {
    static CATALOG: std::sync::LazyLock<Vec<Instance>> = std::sync::LazyLock::new(|| {
        match ron::from_str::<CloudFile>(include_str!("../presets/clouds.ron")) {
            Ok(f) if f.schema == 1 => f.instances,
            _ => Vec::new(), // guarded by a unit test: the shipped file always parses
        }
    });
    &CATALOG
}

/// The rented (not purchased) instance of a card with the lowest price per GPU-hour.
pub fn cheapest_on_demand(gpu_id: &str) -> Option<&'static Instance> {
    catalog()
        .iter()
        .filter(|i| i.gpu == gpu_id && i.purchase.is_none())
        .min_by(|a, b| a.per_gpu_hour().total_cmp(&b.per_gpu_hour()))
}

/// The cheapest on-demand price of one GPU-hour of a card, if the catalog rents it.
pub fn on_demand_per_gpu_hour(gpu_id: &str) -> Option<f64> {
    cheapest_on_demand(gpu_id).map(Instance::per_gpu_hour)
}

/// Money for tables: "$1234", or "$1.23 M" from a million up.
pub fn usd(x: f64) -> String {
    if x >= 1e6 { format!("${:.2} M", x / 1e6) } else { format!("${x:.0}") }
}

/// Discounts applied to on-demand prices.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Discounts {
    /// Spot / preemptible (default 70 % off; interruptions cost checkpoint-restore time).
    pub spot: f64,
    /// Committed use / savings plans (default 40 % off; 30-50 % is typical for 1-3 years).
    pub committed: f64,
}

impl Default for Discounts {
    fn default() -> Self {
        Self { spot: 0.70, committed: 0.40 }
    }
}

/// FLOPs of a run: about 6·N·tokens to train (forward 2, backward 4), 2·N·tokens for inference.
pub fn run_flops(active_params: f64, tokens: f64, training: bool) -> f64 {
    (if training { 6.0 } else { 2.0 }) * active_params * tokens
}

/// Cost of a run on one kind of instance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunCost {
    /// Instance id.
    pub instance: String,
    /// Instances used at once.
    pub instances: u64,
    /// GPU-hours of compute.
    pub gpu_hours: f64,
    /// Wall-clock hours.
    pub wall_hours: f64,
    /// On-demand cost, USD.
    pub on_demand: f64,
    /// With spot / preemptible capacity, USD.
    pub spot: f64,
    /// With a commitment / savings plan, USD.
    pub committed: f64,
}

/// GPU-hours and money for `flops` on `instances` instances at utilisation `mfu`.
pub fn run_cost(flops: f64, inst: &Instance, instances: u64, mfu: f64, d: &Discounts) -> Option<RunCost> {
    let g = gpu::find(&inst.gpu).ok()?;
    let rate = g.bf16_dense_tflops as f64 * 1e12 * mfu.clamp(0.01, 1.0);
    let gpus = (inst.gpus * instances.max(1)) as f64;
    let gpu_hours = flops / rate / 3600.0;
    let wall_hours = gpu_hours / gpus;
    let on_demand = wall_hours * inst.hourly() * instances.max(1) as f64;
    let rented = inst.purchase.is_none();
    Some(RunCost {
        instance: inst.id.clone(),
        instances: instances.max(1),
        gpu_hours,
        wall_hours,
        on_demand,
        spot: if rented { on_demand * (1.0 - d.spot) } else { on_demand },
        committed: if rented { on_demand * (1.0 - d.committed) } else { on_demand },
    })
}

/// One cloud or on-premises option for a run: does the plan fit its GPUs, how many instances the
/// layout needs, and what the run costs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunOption {
    /// The instance.
    pub instance: Instance,
    /// Per-GPU total of the plan fits the instance's GPU.
    pub fits: bool,
    /// Headroom on its GPU (negative: short by), bytes.
    pub headroom: i64,
    /// Cost of the run (instances = the layout's GPUs over the instance's GPUs, rounded up).
    pub cost: Option<RunCost>,
    /// A MIG slice that would hold the job instead of a whole GPU: (slices of 7, GiB, jobs per GPU).
    pub mig: Option<(u32, f64, u32)>,
}

/// Every catalog instance for a plan on `world` GPUs, for a run of `flops` at utilisation `mfu`.
/// `on_card` gives the plan's verdict on a card — whether it fits and the most loaded GPU's total
/// there (`fit::verdict`: the allocator is replayed on each card, so the total depends on it).
/// Sorted: fitting first, then by on-demand cost.
pub fn run_options(
    on_card: impl Fn(&Gpu) -> Option<(bool, u64)>,
    world: u64,
    flops: f64,
    mfu: f64,
    d: &Discounts,
) -> Vec<RunOption> {
    let mut v: Vec<RunOption> = catalog()
        .iter()
        .filter_map(|inst| {
            let g = gpu::find(&inst.gpu).ok()?;
            let cap = g.capacity();
            let (fits, total_bytes) = on_card(&g)?;
            let instances = world.max(1).div_ceil(inst.gpus.max(1));
            Some(RunOption {
                fits,
                headroom: cap as i64 - total_bytes as i64,
                cost: run_cost(flops, inst, instances, mfu, d),
                mig: if world <= 1 { mig_share(total_bytes, &g) } else { None },
                instance: inst.clone(),
            })
        })
        .collect();
    let key = |o: &RunOption| o.cost.as_ref().map_or(f64::INFINITY, |c| c.on_demand);
    v.sort_by(|a, b| b.fits.cmp(&a.fits).then(key(a).total_cmp(&key(b))));
    v
}

/// MIG slice sizes (GiB) a card offers, smallest first; empty when it has no MIG.
pub fn mig_slices(g: &Gpu) -> &'static [(u32, f64)] {
    match g.id.as_str() {
        "a100-40gb" => &[(1, 5.0), (2, 10.0), (3, 20.0), (4, 20.0), (7, 40.0)],
        "a100-80gb" | "h100-80gb" | "h100-pcie" => &[(1, 10.0), (2, 20.0), (3, 40.0), (4, 40.0), (7, 80.0)],
        "h100-nvl" => &[(1, 12.0), (2, 24.0), (3, 47.0), (4, 47.0), (7, 94.0)],
        "h200" => &[(1, 18.0), (2, 35.0), (3, 71.0), (4, 71.0), (7, 141.0)],
        "b200" => &[(1, 23.0), (2, 45.0), (3, 90.0), (4, 90.0), (7, 180.0)],
        _ => &[],
    }
}

/// The smallest MIG slice that holds a job of `total_bytes`: (compute slices of 7, slice GiB,
/// jobs per GPU). `None` when the card has no MIG or the job needs the whole card.
pub fn mig_share(total_bytes: u64, g: &Gpu) -> Option<(u32, f64, u32)> {
    let need = total_bytes as f64 / crate::units::GIB;
    mig_slices(g)
        .iter()
        .copied()
        .find(|(_, gib)| *gib >= need)
        .filter(|(c, _)| *c < 7)
        .map(|(c, gib)| (c, gib, 7 / c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_options_put_fitting_cheapest_first_and_scale_instances_with_the_layout() {
        let gib = 1u64 << 30;
        let flops = run_flops(7e9, 1e9, true); // 4.2e19
        let flat = |t: u64| move |g: &Gpu| Some((t <= g.capacity(), t));
        let v = run_options(flat(50 * gib), 16, flops, 0.4, &Discounts::default());
        assert!(!v.is_empty());
        let first_unfit = v.iter().position(|o| !o.fits).unwrap_or(v.len());
        assert!(v[first_unfit..].iter().all(|o| !o.fits), "fitting options first");
        let costs: Vec<f64> =
            v[..first_unfit].iter().filter_map(|o| o.cost.as_ref().map(|c| c.on_demand)).collect();
        assert!(costs.windows(2).all(|w| w[0] <= w[1]), "then cheapest first: {costs:?}");
        // 40 GB A100s do not hold 50 GiB; 8-GPU instances need two of them for 16 GPUs
        let p4d = v.iter().find(|o| o.instance.id == "aws-p4d.24xlarge").unwrap();
        assert!(!p4d.fits);
        assert_eq!(p4d.cost.as_ref().unwrap().instances, 2);
        // hand check: A100 312 TFLOP/s x 0.4 = 124.8 TFLOP/s; 4.2e19 / 1.248e14 / 3600 = 93.5 GPU-h
        let gh = p4d.cost.as_ref().unwrap().gpu_hours;
        assert!((gh - 4.2e19 / 1.248e14 / 3600.0).abs() < 1e-6, "{gh}");
        // a small single-GPU job can share a MIG-capable card
        let small = run_options(flat(8 * gib), 1, flops, 0.4, &Discounts::default());
        let a100 = small.iter().find(|o| o.instance.gpu == "a100-80gb").unwrap();
        assert_eq!(a100.mig, Some((1, 10.0, 7)));
    }

    #[test]
    fn catalog_has_the_required_instances() {
        let c = catalog();
        for id in [
            "aws-p4d.24xlarge",
            "aws-p4de.24xlarge",
            "aws-p5.48xlarge",
            "aws-p5e.48xlarge",
            "azure-nd96isr-h100-v5",
            "gcp-a3-highgpu-8g",
            "onprem-dgx-h100",
        ] {
            let i = c.iter().find(|i| i.id == id).unwrap_or_else(|| panic!("{id}"));
            assert!(gpu::find(&i.gpu).is_ok(), "{id}: GPU {} not in the catalog", i.gpu);
        }
    }

    #[test]
    fn cost_arithmetic_by_hand() {
        // 7B parameters, 1e12 tokens: 6 · 7e9 · 1e12 = 4.2e22 FLOPs
        let flops = run_flops(7e9, 1e12, true);
        assert_eq!(flops, 4.2e22);
        // on p5.48xlarge (8 x H100, 989 TFLOP/s each) at 40 % MFU:
        // 4.2e22 / (989e12 · 0.4) / 3600 = 29,491.07 GPU-hours; 8 GPUs → 3,686.38 h; × $55.04
        let p5 = catalog().iter().find(|i| i.id == "aws-p5.48xlarge").unwrap();
        let c = run_cost(flops, p5, 1, 0.4, &Discounts::default()).unwrap();
        assert!((c.gpu_hours - 29_491.07).abs() < 0.01, "{}", c.gpu_hours);
        assert!((c.wall_hours - 3_686.38).abs() < 0.01);
        assert!((c.on_demand - 3_686.38 * 55.04).abs() < 1.0);
        assert!((c.spot - c.on_demand * 0.3).abs() < 1e-6);
        assert!((c.committed - c.on_demand * 0.6).abs() < 1e-6);
        // DGX H100 bought for $400k over 4 years + $6/h: 400000 / 35064 + 6 = $17.41 an hour
        let dgx = catalog().iter().find(|i| i.id == "onprem-dgx-h100").unwrap();
        assert!((dgx.hourly() - (400000.0 / 35064.0 + 6.0)).abs() < 1e-9);
        // inference: 2 · N · tokens
        assert_eq!(run_flops(7e9, 1e9, false), 1.4e19);
    }

    #[test]
    fn mig_when_the_job_is_small() {
        let a100 = gpu::find("a100-80gb").unwrap();
        assert_eq!(mig_share(8 << 30, &a100), Some((1, 10.0, 7)));
        assert_eq!(mig_share(30 << 30, &a100), Some((3, 40.0, 2)));
        assert_eq!(mig_share(70 << 30, &a100), None, "needs the whole card");
        assert_eq!(mig_share(1 << 30, &gpu::find("rtx-4090").unwrap()), None, "no MIG");
    }
}
