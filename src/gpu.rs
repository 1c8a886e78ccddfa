//! The GPU catalog (`presets/gpus.ron`, compiled in): memory, bandwidth, compute and links.

use serde::{Deserialize, Serialize};

/// One GPU model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gpu {
    /// Short id used on the command line (`h100-80gb`).
    pub id: String,
    /// Full name.
    pub name: String,
    /// Total memory in MiB as the driver reports it.
    pub memory_mib: u64,
    /// Memory bandwidth, GB/s.
    pub bandwidth_gbs: u64,
    /// Dense bf16 (or fp16) tensor throughput, TFLOP/s.
    pub bf16_dense_tflops: u64,
    /// GPU-to-GPU link.
    pub link: String,
    /// Per-GPU link bandwidth, GB/s (bidirectional).
    pub link_gbs: u64,
    /// Default CUDA context size on this card, MiB.
    #[serde(default = "default_context_mib")]
    pub cuda_context_mib: u64,
    /// Default cuBLAS workspace on this card, MiB.
    #[serde(default = "default_workspace_mib")]
    pub workspace_mib: u64,
    /// The total CUDA reports (`cudaMemGetInfo`, `torch.cuda.mem_get_info()[1]`), MiB, where a
    /// published log gives it: less than NVML's total by what the driver keeps.
    #[serde(default)]
    pub cuda_total_mib: Option<u64>,
    /// Caveats.
    #[serde(default)]
    pub note: String,
}

fn default_context_mib() -> u64 {
    500
}

fn default_workspace_mib() -> u64 {
    32
}

impl Gpu {
    /// The total NVML (nvidia-smi) reports, bytes: the card's memory as sold. Verdicts use
    /// [`Gpu::capacity`].
    pub fn memory_bytes(&self) -> u64 {
        self.memory_mib << 20
    }

    /// The total CUDA reports on this card (`torch.cuda.mem_get_info()[1]`), bytes, and whether it
    /// is published (`cuda_total_mib`) rather than this rule: 1 % below NVML's total.
    pub fn cuda_total(&self) -> (u64, bool) {
        match self.cuda_total_mib {
            Some(m) => (m << 20, true),
            None => (self.memory_bytes() / 100 * 99, false),
        }
    }

    /// The memory every verdict measures a job against, bytes: the total CUDA reports
    /// ([`Gpu::cuda_total`]), of which the job's total (what its process holds, context
    /// included) must fit. NVML's (nvidia-smi's) total, [`Gpu::memory_bytes`], is larger by what
    /// the driver keeps and is shown beside it.
    pub fn capacity(&self) -> u64 {
        self.cuda_total().0
    }

    /// The overhead defaults of this card (context and workspace; allocator reserve 5 %).
    pub fn overhead(&self) -> crate::estimate::Overhead {
        crate::estimate::Overhead {
            cuda_context_bytes: self.cuda_context_mib << 20,
            workspace_bytes: self.workspace_mib << 20,
            ..crate::estimate::Overhead::default()
        }
    }
}

#[derive(Deserialize)]
struct CatalogFile {
    schema: u32,
    gpus: Vec<Gpu>,
}

/// The built-in catalog, parsed once (every `find` and every recompute reads it).
pub fn catalog() -> &'static [Gpu] {
    static CATALOG: std::sync::LazyLock<Vec<Gpu>> = std::sync::LazyLock::new(|| {
        match ron::from_str::<CatalogFile>(include_str!("../presets/gpus.ron")) {
            Ok(f) if f.schema == 1 => f.gpus,
            _ => Vec::new(), // guarded by a unit test: the shipped file always parses
        }
    });
    &CATALOG
}

/// Finds a GPU by id (case-insensitive, `_` and ` ` accepted for `-`), or by a plain memory size
/// such as `24gb` / `80GiB` for a card not in the catalog.
pub fn find(id: &str) -> Result<Gpu, String> {
    let norm = id.trim().to_ascii_lowercase().replace(['_', ' '], "-");
    if let Some(g) = catalog().iter().find(|g| g.id == norm).cloned() {
        return Ok(g);
    }
    let digits: String = norm.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
    let unit = &norm[digits.len()..];
    if !digits.is_empty()
        && matches!(unit, "gb" | "gib" | "g")
        && let Ok(v) = digits.parse::<f64>()
        && v > 0.0
        && v < 1e6
    {
        return Ok(Gpu {
            id: norm.clone(),
            name: format!("{v} GiB GPU"),
            memory_mib: (v * 1024.0).round() as u64,
            bandwidth_gbs: 0,
            bf16_dense_tflops: 0,
            link: String::new(),
            link_gbs: 0,
            cuda_context_mib: default_context_mib(),
            workspace_mib: default_workspace_mib(),
            cuda_total_mib: None,
            note: "custom capacity".into(),
        });
    }
    // short forms people type: "4090", "h100", "a100 80gb", "mi300"
    let matches: Vec<&Gpu> = catalog()
        .iter()
        .filter(|g| {
            let parts: Vec<&str> = g.id.split('-').collect();
            // the id's words in order, each word starting as the typed word does
            let typed: Vec<&str> = norm.split('-').filter(|w| !w.is_empty()).collect();
            !typed.is_empty()
                && (g.id.starts_with(&norm)
                    || parts.iter().any(|p| *p == norm)
                    || typed.iter().all(|w| parts.iter().any(|p| p.starts_with(w))))
        })
        .collect();
    match matches.as_slice() {
        [one] => return Ok((*one).clone()),
        [] => {}
        many => {
            let ids: Vec<&str> = many.iter().map(|g| g.id.as_str()).collect();
            return Err(format!("GPU \"{id}\" is ambiguous: {}", ids.join(", ")));
        }
    }
    let ids: Vec<&str> = catalog().iter().map(|g| g.id.as_str()).collect();
    Err(format!("unknown GPU \"{id}\" (one of {}, or a size like 24gb)", ids.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_parses_and_has_the_cards() {
        let c = catalog();
        for id in ["v100-16gb", "t4", "a100-80gb", "h100-80gb", "h200", "b300", "mi300x", "rtx-4090"] {
            assert!(c.iter().any(|g| g.id == id), "{id} missing");
        }
        assert!(c.iter().all(|g| g.memory_mib > 8000 && g.bandwidth_gbs > 0));
    }

    #[test]
    fn short_forms_resolve_and_ambiguous_ones_list_the_candidates() {
        assert_eq!(find("4090").unwrap().id, "rtx-4090");
        assert_eq!(find("RTX 5090").unwrap().id, "rtx-5090");
        assert_eq!(find("h200").unwrap().id, "h200");
        assert_eq!(find("mi300").unwrap().id, "mi300x");
        assert_eq!(find("a100 80gb").unwrap().id, "a100-80gb");
        let e = find("h100").unwrap_err();
        assert!(e.contains("ambiguous") && e.contains("h100-80gb") && e.contains("h100-pcie"), "{e}");
        let e = find("a100").unwrap_err();
        assert!(e.contains("a100-40gb") && e.contains("a100-80gb"), "{e}");
        assert!(find("quantum-9000").unwrap_err().contains("unknown GPU"));
    }

    #[test]
    fn find_by_id_or_size() {
        assert_eq!(find("H100_80GB").unwrap().memory_mib, 81559);
        assert_eq!(find("24gb").unwrap().memory_mib, 24576);
        assert!(find("tpu").is_err());
    }
}
