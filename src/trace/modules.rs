//! What a traced model keeps at the end of its forward, by module ("Why this much?" names the
//! modules that keep the most): the module tree read off the dotted names the trace recorded,
//! a group that holds more than a quarter of the whole split into its children until none
//! does, and a list's numbered blocks that keep about as much as each other told as one run
//! (`transformer_blocks.0-18`, 19 blocks).

use super::TracedModel;

/// One module (or a run of numbered sibling blocks) and what it keeps.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ModuleKept {
    /// The module's dotted name (`up_blocks.3`), a run's with its numbers
    /// (`transformer_blocks.0-18`, `encoder.layers.encoder_layer_0-11`); empty: outside every
    /// module (the inputs, the loss).
    pub module: String,
    /// Blocks in the run (1: one module).
    pub blocks: u32,
    /// Bytes kept, as allocated.
    pub bytes: u64,
}

/// At most this many splits (each replaces a group by its children).
const MAX_SPLITS: usize = 24;

/// What the forward keeps by module at `bytes` ([`TracedModel::resolve_sizes`]), the largest
/// first.
pub fn kept(m: &TracedModel, bytes: &[u64], checkpoint: bool) -> Vec<ModuleKept> {
    let per = super::replay::kept_by_module(m, bytes, checkpoint);
    let leaves: Vec<(&str, u64)> =
        per.iter().enumerate().filter(|&(_, &b)| b > 0).map(|(k, &b)| (m.module_name(k as u32), b)).collect();
    group(&leaves)
}

/// Groups `(module, bytes)` as the module doc says.
pub fn group(leaves: &[(&str, u64)]) -> Vec<ModuleKept> {
    let total: u64 = leaves.iter().map(|l| l.1).sum();
    // (prefix, bytes, split no further)
    let mut groups: Vec<(String, u64, bool)> =
        children("", leaves).into_iter().map(|(p, b)| (p, b, false)).collect();
    for _ in 0..MAX_SPLITS {
        let big = groups
            .iter()
            .enumerate()
            .filter(|(_, g)| !g.2 && !g.0.is_empty() && g.1.saturating_mul(4) > total)
            .max_by_key(|(_, g)| g.1)
            .map(|(k, _)| k);
        let Some(k) = big else { break };
        let prefix = std::mem::take(&mut groups[k].0);
        let kids = children(&prefix, leaves);
        // what the module's own ops keep stays under its name, split no further
        groups.splice(k..=k, kids.into_iter().map(|(p, b)| (p.clone(), b, p == prefix)));
    }
    let mut out = runs(groups.into_iter().map(|(p, b, _)| (p, b)).collect());
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.module.cmp(&b.module)));
    out
}

/// The children of `prefix` (`""`: the root) with their bytes, in the order first met; a
/// leaf exactly at `prefix` (its module's own ops) is one of them.
fn children(prefix: &str, leaves: &[(&str, u64)]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for &(path, b) in leaves {
        let key = if prefix.is_empty() {
            path.split('.').next().unwrap_or("")
        } else if path == prefix {
            prefix
        } else if let Some(rest) = path.strip_prefix(prefix).and_then(|r| r.strip_prefix('.')) {
            let next = rest.split('.').next().unwrap_or("");
            &path[..prefix.len() + 1 + next.len()]
        } else {
            continue;
        };
        match out.iter_mut().find(|(k, _)| k == key) {
            Some((_, sum)) => *sum += b,
            None => out.push((key.to_owned(), b)),
        }
    }
    out
}

/// Numbered siblings (`P.0`, `P.1`, …; two or more) that each keep within a factor of two of
/// each other become one run `P.a-b`.
fn runs(groups: Vec<(String, u64)>) -> Vec<ModuleKept> {
    // `layers.3` is block 3 of `layers.`; torchvision's `layers.encoder_layer_3` of
    // `layers.encoder_layer_`
    let numbered = |p: &str| -> Option<(String, u64)> {
        let stem = p.trim_end_matches(|c: char| c.is_ascii_digit());
        let n = p[stem.len()..].parse().ok()?;
        (stem.ends_with(['.', '_'])).then(|| (stem.to_owned(), n))
    };
    // parent -> (lowest, highest, count, least, most, bytes)
    let mut lists: Vec<(String, [u64; 6])> = Vec::new();
    for (p, b) in &groups {
        if let Some((parent, n)) = numbered(p) {
            match lists.iter_mut().find(|(q, _)| *q == parent) {
                Some((_, s)) => {
                    *s = [s[0].min(n), s[1].max(n), s[2] + 1, s[3].min(*b), s[4].max(*b), s[5] + b]
                }
                None => lists.push((parent, [n, n, 1, *b, *b, *b])),
            }
        }
    }
    let merged = |parent: &str| {
        lists.iter().find(|(q, s)| q == parent && s[2] >= 2 && s[4] <= s[3].saturating_mul(2)).map(|(_, s)| s)
    };
    let mut out = Vec::new();
    let mut told: Vec<String> = Vec::new();
    for (p, b) in groups {
        let run = numbered(&p).and_then(|(parent, _)| merged(&parent).map(|s| (parent, s)));
        match run {
            Some((parent, s)) if !told.contains(&parent) => {
                out.push(ModuleKept {
                    module: format!("{parent}{}-{}", s[0], s[1]),
                    blocks: s[2] as u32,
                    bytes: s[5],
                });
                told.push(parent);
            }
            Some(_) => {}
            None => out.push(ModuleKept { module: p, blocks: 1, bytes: b }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(g: &[ModuleKept]) -> Vec<(&str, u32, u64)> {
        g.iter().map(|k| (k.module.as_str(), k.blocks, k.bytes)).collect()
    }

    #[test]
    fn the_largest_group_is_split_and_like_blocks_are_one_run() {
        let leaves = [
            ("", 5),
            ("conv_in", 10),
            ("down.0.conv", 30),
            ("down.1.conv", 10),
            ("up.0.attn", 20),
            ("up.0.norm", 20),
            ("up.1.attn", 45),
            ("up.2.attn", 40),
        ];
        // up (125 of 180) is split; its blocks keep 40-45 (a run), down (40) is not split
        let g = group(&leaves);
        assert_eq!(names(&g), [("up.0-2", 3, 125), ("down", 1, 40), ("conv_in", 1, 10), ("", 1, 5)]);
        assert_eq!(g.iter().map(|k| k.bytes).sum::<u64>(), 180);
    }

    #[test]
    fn blocks_that_differ_are_told_apart_and_a_lone_child_is_descended() {
        let leaves = [("encoder.layers.0.mlp", 10), ("encoder.layers.1.mlp", 90), ("head", 1), ("h1", 1)];
        let g = group(&leaves);
        // `h1` is no block of a list
        assert_eq!(
            names(&g),
            [("encoder.layers.1.mlp", 1, 90), ("encoder.layers.0", 1, 10), ("h1", 1, 1), ("head", 1, 1)]
        );
        let named = group(&[("enc.layer_0", 10), ("enc.layer_1", 12), ("enc.layer_2", 11)]);
        assert_eq!(names(&named), [("enc.layer_0-2", 3, 33)]);
    }

    #[test]
    fn a_module_keeping_everything_itself_is_a_leaf() {
        let g = group(&[("net", 100), ("net.a", 1)]);
        assert_eq!(names(&g), [("net", 1, 100), ("net.a", 1, 1)]);
        assert!(group(&[]).is_empty());
    }
}
