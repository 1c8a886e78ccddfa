//! A cluster's GPUs read against the plan: the job's ranks mapped to hosts and GPUs in launch
//! order, each GPU's measured memory beside the prediction for the pipeline stage its rank runs,
//! and the most loaded GPU against the plan's most loaded stage.
//!
//! Launch order is torchrun's (and Slurm's, mpirun's): node rank `n` holds global ranks
//! `n · gpus_per_node ..`, local rank `i` on CUDA device `i`. The node order is the user's
//! (`host order`), else the hosts sorted by name. Pure: measured values come in as plain numbers.

use crate::estimate::{Parallel, stage_of_rank};

/// One GPU as measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measured {
    /// Its host.
    pub host: String,
    /// Its index on the host.
    pub gpu: u32,
    /// Used memory now, bytes.
    pub used: u64,
    /// The most it used over the window read (what a step's peak is compared with), bytes.
    pub peak: u64,
    /// Its memory, bytes.
    pub total: u64,
}

/// One GPU of the cluster with the rank that runs on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The GPU as measured.
    pub gpu: Measured,
    /// The job's rank on it (`None`: more GPUs than the job's world).
    pub rank: Option<u64>,
    /// The pipeline stage that rank runs.
    pub stage: Option<u64>,
    /// The predicted total of that stage's rank (what nvidia-smi would show).
    pub predicted: Option<u64>,
}

impl Row {
    /// Measured peak over predicted, minus one.
    pub fn error(&self) -> Option<f64> {
        self.predicted.filter(|p| *p > 0).map(|p| self.gpu.peak as f64 / p as f64 - 1.0)
    }

    /// Share of the card its peak used.
    pub fn fraction(&self) -> f64 {
        if self.gpu.total == 0 { 0.0 } else { self.gpu.peak as f64 / self.gpu.total as f64 }
    }
}

/// The cluster over the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Every GPU: the job's ranks in order, then the GPUs beyond its world.
    pub rows: Vec<Row>,
    /// The hosts in node-rank order.
    pub hosts: Vec<String>,
    /// Hosts the order names that no GPU was seen on.
    pub unknown_hosts: Vec<String>,
    /// Ranks of the job with no GPU seen for them.
    pub missing_ranks: u64,
    /// The row of the most loaded rank (the highest share of its card used at its peak).
    pub worst: Option<usize>,
    /// The plan's most loaded stage (the highest predicted total).
    pub worst_stage: Option<u64>,
}

/// Host names in a node order typed by the user: commas or whitespace between them.
pub fn parse_order(text: &str) -> Vec<String> {
    text.split(|c: char| c == ',' || c.is_whitespace()).filter(|h| !h.is_empty()).map(str::to_owned).collect()
}

/// Maps `gpus` to the ranks of a job laid out as `parallel`, nodes in `order` (the hosts it
/// names first, the others after them by name), each rank against `stage_totals[stage]`.
pub fn map(gpus: &[Measured], order: &str, parallel: &Parallel, stage_totals: &[u64]) -> Layout {
    let mut seen: Vec<String> = gpus.iter().map(|g| g.host.clone()).collect();
    seen.sort();
    seen.dedup();
    let named = parse_order(order);
    let mut hosts: Vec<String> = Vec::with_capacity(seen.len());
    let mut unknown_hosts = Vec::new();
    for h in named {
        if hosts.contains(&h) || unknown_hosts.contains(&h) {
            continue;
        }
        if seen.contains(&h) { hosts.push(h) } else { unknown_hosts.push(h) }
    }
    for h in seen {
        if !hosts.contains(&h) {
            hosts.push(h);
        }
    }
    let mut ordered: Vec<&Measured> = gpus.iter().collect();
    let node = |h: &str| hosts.iter().position(|x| x == h).unwrap_or(usize::MAX);
    ordered.sort_by_key(|g| (node(&g.host), g.gpu));
    let world = parallel.world();
    let rows: Vec<Row> = ordered
        .into_iter()
        .zip(0u64..)
        .map(|(g, i)| {
            let rank = (i < world).then_some(i);
            let stage = rank.map(|r| stage_of_rank(parallel, r));
            let predicted =
                stage.and_then(|s| usize::try_from(s).ok()).and_then(|s| stage_totals.get(s).copied());
            Row { gpu: g.clone(), rank, stage, predicted }
        })
        .collect();
    let mapped = rows.iter().filter(|r| r.rank.is_some()).count() as u64;
    let worst = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.rank.is_some())
        .fold(None, |best: Option<(usize, f64)>, (i, r)| match best {
            Some((_, f)) if f >= r.fraction() => best,
            _ => Some((i, r.fraction())),
        })
        .map(|(i, _)| i);
    let worst_stage = stage_totals
        .iter()
        .zip(0u64..)
        .fold(None, |best: Option<(u64, u64)>, (&t, s)| match best {
            Some((_, bt)) if bt >= t => best,
            _ => Some((s, t)),
        })
        .map(|(s, _)| s);
    Layout { rows, hosts, unknown_hosts, missing_ranks: world.saturating_sub(mapped), worst, worst_stage }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(host: &str, gpu: u32, used_gib: u64) -> Measured {
        Measured { host: host.into(), gpu, used: used_gib << 30, peak: used_gib << 30, total: 80 << 30 }
    }

    fn cluster() -> Vec<Measured> {
        // as Prometheus may list them: out of order
        let mut v = Vec::new();
        for h in ["node-b", "node-a"] {
            for g in (0..4).rev() {
                v.push(gpu(h, g, 40 + u64::from(g)));
            }
        }
        v
    }

    #[test]
    fn ranks_follow_the_node_order_and_the_pipeline_is_outermost() {
        let p = Parallel { dp: 4, pp: 2, ..Default::default() };
        let l = map(&cluster(), "", &p, &[60 << 30, 50 << 30]);
        let keys: Vec<(&str, u32, Option<u64>, Option<u64>)> =
            l.rows.iter().map(|r| (r.gpu.host.as_str(), r.gpu.gpu, r.rank, r.stage)).collect();
        assert_eq!(keys[0], ("node-a", 0, Some(0), Some(0)));
        assert_eq!(keys[3], ("node-a", 3, Some(3), Some(0)));
        assert_eq!(keys[4], ("node-b", 0, Some(4), Some(1)));
        assert_eq!(keys[7], ("node-b", 3, Some(7), Some(1)));
        assert_eq!(l.rows[4].predicted, Some(50 << 30));
        assert_eq!(l.worst_stage, Some(0));
        // every GPU 3 uses 43 GiB: the first of them in rank order is the worst
        assert_eq!(l.worst, Some(3));
        assert!((l.rows[3].error().unwrap() - (43.0 / 60.0 - 1.0)).abs() < 1e-12);
        // the user's node order: node-b is node 0, so it runs stage 0
        let l = map(&cluster(), "node-b, ghost node-a", &p, &[60 << 30, 50 << 30]);
        assert_eq!(l.hosts, ["node-b", "node-a"]);
        assert_eq!(l.unknown_hosts, ["ghost"]);
        assert_eq!((l.rows[0].gpu.host.as_str(), l.rows[0].stage), ("node-b", Some(0)));
        assert_eq!(l.missing_ranks, 0);
    }

    #[test]
    fn a_smaller_or_larger_job_than_the_cluster_says_so() {
        // a 4-GPU job on 8 GPUs: the last four run no rank of it
        let p = Parallel { tp: 4, ..Default::default() };
        let l = map(&cluster(), "", &p, &[70 << 30]);
        assert_eq!(l.rows.iter().filter(|r| r.rank.is_some()).count(), 4);
        assert!(l.rows[4..].iter().all(|r| r.rank.is_none() && r.predicted.is_none()));
        assert_eq!(l.worst, Some(3));
        // a 16-GPU job seen on 8: eight ranks missing
        let p = Parallel { dp: 16, ..Default::default() };
        assert_eq!(map(&cluster(), "", &p, &[70 << 30]).missing_ranks, 8);
        assert_eq!(map(&[], "", &p, &[]).worst, None);
    }
}
