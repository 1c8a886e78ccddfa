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
    /// Short forms this card is the default part of (`h100` → the SXM5 board), although they start
    /// several ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_for: Vec<String>,
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
            default_for: Vec::new(),
            note: "custom capacity".into(),
        });
    }
    // short forms people type: "4090", "h100", "a100 80gb", "mi300"
    let matches: Vec<&Gpu> = catalog().iter().filter(|g| short_form_of(&norm, &g.id)).collect();
    match matches.as_slice() {
        [one] => return Ok((*one).clone()),
        [] => {}
        many => {
            if let Some(g) = many.iter().find(|g| g.default_for.contains(&norm)) {
                return Ok((*g).clone());
            }
            let ids: Vec<&str> = many.iter().map(|g| g.id.as_str()).collect();
            let sizes: std::collections::BTreeSet<u64> = many.iter().map(|g| g.memory_mib).collect();
            let why = if sizes.len() > 1 { " (their memory differs: name the part)" } else { "" };
            return Err(format!("GPU \"{id}\" is ambiguous: {}{why}", ids.join(", ")));
        }
    }
    let ids: Vec<&str> = catalog().iter().map(|g| g.id.as_str()).collect();
    let hint = nearest(&norm).map_or(String::new(), |n| format!("; did you mean {n}?"));
    Err(format!("unknown GPU \"{id}\"{hint} (one of {}, or a size like 24gb)", ids.join(", ")))
}

/// Whether `norm` (lower case, `-` separated) is a short form of the catalog id: the id starts
/// with it, one of the id's words is it, or each typed word starts one of the id's words.
fn short_form_of(norm: &str, id: &str) -> bool {
    let parts: Vec<&str> = id.split('-').collect();
    let typed: Vec<&str> = norm.split('-').filter(|w| !w.is_empty()).collect();
    !typed.is_empty()
        && (id.starts_with(norm)
            || parts.contains(&norm)
            || typed.iter().all(|w| parts.iter().any(|p| p.starts_with(w))))
}

/// The note that says which card a family short form (`--gpu h100`) was taken to mean, when it
/// resolved through a card's `default_for` rather than naming one card.
pub fn default_note(id: &str) -> Option<String> {
    let norm = id.trim().to_ascii_lowercase().replace(['_', ' '], "-");
    let g = catalog().iter().find(|g| g.default_for.contains(&norm))?;
    let others: Vec<&str> = catalog()
        .iter()
        .filter(|o| o.id != g.id && short_form_of(&norm, &o.id))
        .map(|o| o.id.as_str())
        .collect();
    Some(format!(
        "--gpu {id} is taken as {}, the {}: the part a bare \"{norm}\" usually means; the other parts are {} (name one to choose it)",
        g.id,
        g.name,
        others.join(", ")
    ))
}

/// The catalog id nearest to a misspelled one (edit distance with `-` ignored, at most a third of
/// its length), for "did you mean".
pub fn nearest(norm: &str) -> Option<&'static str> {
    let q: Vec<char> = norm.chars().filter(|c| *c != '-').collect();
    catalog()
        .iter()
        .map(|g| {
            let c: Vec<char> = g.id.chars().filter(|c| *c != '-').collect();
            (crate::tokens::edit_distance(&q, &c), g.id.as_str())
        })
        .min_by_key(|(d, _)| *d)
        .filter(|(d, _)| *d <= (q.len() / 3).max(1))
        .map(|(_, id)| id)
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
        assert_eq!(find("h20").unwrap().id, "h20");
        assert_eq!(find("mi300").unwrap().id, "mi300x");
        assert_eq!(find("a100 80gb").unwrap().id, "a100-80gb");
        assert_eq!(find("910b").unwrap().id, "ascend-910b");
        // a family name resolves to its SXM part (the other H100s share its 80 GB but not its speed)
        assert_eq!(find("h100").unwrap().id, "h100-80gb");
        assert_eq!(find("H100").unwrap().id, "h100-80gb");
        // the A100s and A800s differ in memory: still an error, naming the parts
        let e = find("a100").unwrap_err();
        assert!(e.contains("a100-40gb") && e.contains("a100-80gb") && e.contains("memory differs"), "{e}");
        let e = find("a800").unwrap_err();
        assert!(e.contains("a800-40gb") && e.contains("a800-80gb"), "{e}");
        let e = find("6000").unwrap_err();
        assert!(e.contains("rtx-6000-ada") && e.contains("rtx-pro-6000"), "{e}");
        assert!(find("quantum-9000").unwrap_err().contains("unknown GPU"));
    }

    #[test]
    fn a_family_default_says_which_part_it_took() {
        let n = default_note("h100").unwrap();
        assert!(
            n.contains("h100-80gb")
                && n.contains("SXM5")
                && n.contains("h100-pcie")
                && n.contains("h100-nvl"),
            "{n}"
        );
        assert_eq!(default_note("h100-80gb"), None, "a full id needs no note");
        assert_eq!(default_note("4090"), None, "an unambiguous short form needs no note");
        // every default names a short form that does start several cards, and one card claims it
        for g in catalog() {
            for d in &g.default_for {
                let n = catalog().iter().filter(|o| short_form_of(d, &o.id)).count();
                assert!(n > 1, "{}: default_for {d} is not ambiguous", g.id);
                assert_eq!(catalog().iter().filter(|o| o.default_for.contains(d)).count(), 1, "{d}");
            }
        }
    }

    #[test]
    fn misspelled_ids_get_a_did_you_mean() {
        for (typed, want) in [
            ("rtx4090", "rtx-4090"),
            ("rtx-4909", "rtx-4090"),
            ("h10080gb", "h100-80gb"),
            ("mi30x", "mi300x"),
        ] {
            let e = find(typed).unwrap_err();
            assert!(e.contains(&format!("did you mean {want}?")), "{typed}: {e}");
        }
        assert!(!find("quantum-9000").unwrap_err().contains("did you mean"), "nothing close");
    }

    #[test]
    fn published_cuda_totals_are_below_nvml_and_plausible() {
        // the driver keeps a few hundred MiB (ECC, page tables, reserved regions): CUDA's total is
        // below nvidia-smi's and at least 90 % of it (the NPU's 60.97 of 64 GiB is the lowest)
        let mut published = 0;
        for g in catalog() {
            let (cuda, is_published) = g.cuda_total();
            assert!(cuda < g.memory_bytes(), "{}: CUDA total {cuda} not below NVML's", g.id);
            if let Some(m) = g.cuda_total_mib {
                published += 1;
                assert!(is_published);
                let frac = m as f64 / g.memory_mib as f64;
                assert!(
                    (0.90..1.0).contains(&frac),
                    "{}: {m} MiB is {frac:.3} of {} MiB",
                    g.id,
                    g.memory_mib
                );
            } else {
                assert!(!is_published);
            }
        }
        assert!(published >= 15, "{published} cards with a published total");
        for id in ["rtx-4090", "a100-80gb", "h100-80gb", "l4", "t4", "a10g", "h200", "b200", "gb200"] {
            assert!(find(id).unwrap().cuda_total_mib.is_some(), "{id}");
        }
        // the figures of the OOM messages quoted in #42
        assert_eq!(find("rtx-4090").unwrap().cuda_total_mib, Some((23.64f64 * 1024.0).round() as u64));
        assert_eq!(find("a100-80gb").unwrap().cuda_total_mib, Some((79.15f64 * 1024.0).round() as u64));
    }

    #[test]
    fn new_cards_are_in_the_catalog() {
        for id in [
            "a800-40gb",
            "a800-80gb",
            "h800",
            "h20",
            "l20",
            "rtx-4060-ti-16gb",
            "rtx-4070",
            "rtx-4080",
            "rtx-a6000",
            "rtx-6000-ada",
            "rtx-pro-6000",
            "gb200",
            "mi325x",
            "mi355x",
            "ascend-910b",
        ] {
            let g = find(id).unwrap_or_else(|e| panic!("{e}"));
            assert!(g.bandwidth_gbs > 0 && g.bf16_dense_tflops > 0 && g.link_gbs > 0, "{id}");
        }
        let npu = find("ascend-910b").unwrap();
        assert!(npu.note.contains("torch_npu") && npu.note.contains("Not modelled"), "{}", npu.note);
    }

    #[test]
    fn geforce_notes_give_the_bf16_training_rate() {
        // GeForce tensor cores run fp16/bf16 with fp32 accumulate at half the fp16-accumulate rate;
        // the catalog's figure is the bf16 one and the note says so (not "fp16 accumulate")
        for (id, tflops) in [("rtx-3090", 71), ("rtx-4090", 165), ("rtx-4080", 97)] {
            let g = find(id).unwrap();
            assert_eq!(g.bf16_dense_tflops, tflops, "{id}");
            assert!(
                g.note.contains("bf16 with fp32 accumulate") && !g.note.starts_with("fp16 accumulate"),
                "{id}: {}",
                g.note
            );
        }
    }

    #[test]
    fn find_by_id_or_size() {
        assert_eq!(find("H100_80GB").unwrap().memory_mib, 81559);
        assert_eq!(find("24gb").unwrap().memory_mib, 24576);
        assert!(find("tpu").is_err());
    }
}
