//! The block structure a safetensors header shows by its tensor names, for an architecture
//! without a family: how many blocks, which hold attention and which another mixer, which
//! route to experts (how many, how wide, with shared experts) and which keep a dense MLP. The
//! generic decoder takes it where its config.json is silent or disagrees, so that the experts
//! and dense-first layers are walked as such; a mixer it does not model stays a caveat.

use super::{FROM_HEADER, Fact};
use crate::model::safetensors::TensorInfo;
use crate::model::{Moe, TransformerSpec, layer};
use std::collections::{BTreeMap, BTreeSet};

/// A block's tensors sorted by what they belong to.
#[derive(Default, Debug)]
struct Block {
    attention: bool,
    /// First name segments of tensors that are neither attention, MLP nor norm (`mamba`, …).
    mixers: BTreeSet<String>,
    /// Routed-expert indices seen (`….experts.7.…`).
    expert_ids: BTreeSet<u64>,
    /// Experts of a fused 3-D expert tensor (its first dimension).
    fused_experts: u64,
    shared: bool,
    shared_gate: bool,
    dense: bool,
}

/// The structure read from the names.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Layout {
    /// Blocks found under the decoder's prefix.
    pub blocks: u64,
    /// Per block: attention tensors present.
    pub attention: Vec<bool>,
    /// The mixers of the blocks without attention, by their tensors' first segment.
    pub mixers: BTreeSet<String>,
    /// Routed experts per sparse block (0: none).
    pub experts: u64,
    /// One routed expert's width.
    pub expert_width: u64,
    /// The shared experts' width (0: none).
    pub shared_width: u64,
    /// A sigmoid gate on the shared expert (`shared_expert_gate`, Qwen2-MoE style).
    pub shared_gate: bool,
    /// Per block: a dense MLP and no experts.
    pub dense: Vec<bool>,
    /// The dense MLP's width.
    pub dense_width: u64,
}

/// Splits `model.layers.7.mlp.up_proj.weight` into (`model.layers`, 7, `mlp.up_proj.weight`).
fn split_block(name: &str) -> Option<(String, u64, &str)> {
    let mut start = 0;
    for seg in name.split('.') {
        let end = start + seg.len();
        if matches!(seg, "layers" | "h" | "blocks" | "block" | "layer") {
            let rest = name.get(end + 1..)?;
            let (idx, tail) = rest.split_once('.')?;
            if let Ok(i) = idx.parse() {
                return Some((name[..end].to_owned(), i, tail));
            }
        }
        start = end + 1;
    }
    None
}

/// A module of softmax attention: `self_attn`, `attention`, T5's `SelfAttention`,
/// `cross_attn`; not a `linear_attn` (a linear-attention mixer).
fn is_attention(seg: &str) -> bool {
    let s = seg.to_ascii_lowercase();
    (s.contains("attn") || s.contains("attention")) && !s.starts_with("linear")
}
const MLP: &[&str] = &["mlp", "feed_forward", "block_sparse_moe", "moe", "ffn", "ff"];
/// An MLP's projections named at the block's own level (OPT's `fc1`, Falcon's `dense_h_to_4h`).
const MLP_LEAVES: &[&str] =
    &["fc1", "fc2", "c_fc", "dense_h_to_4h", "dense_4h_to_h", "gate_proj", "up_proj", "down_proj"];

/// The width of an MLP tensor: its dimension that is not `hidden` (halved for a fused
/// gate-and-up projection), from the projection back to the stream when there is one.
fn width(t: &TensorInfo, tail: &str, hidden: u64, fused_dim: bool) -> Option<(u64, bool)> {
    let dims = if fused_dim { t.shape.get(1..)? } else { &t.shape[..] };
    let [a, b] = dims else { return None };
    let other = if *a == hidden {
        *b
    } else if *b == hidden {
        *a
    } else {
        return None;
    };
    let leaf = module_name(tail);
    let down = ["down", "w2", "fc2", "c_proj", "out", "wo"].iter().any(|d| leaf.contains(d));
    let fused = leaf.contains("gate_up") || leaf == "w13";
    Some((if fused { other / 2 } else { other }, down))
}

/// The module a tensor belongs to: `down_proj` of `mlp.down_proj.weight` and of a fused
/// `experts.down_proj`.
fn module_name(tail: &str) -> &str {
    tail.rsplit('.').find(|s| !matches!(*s, "weight" | "bias")).unwrap_or("")
}

/// Keeps the widest reading, a down projection's over any other.
fn keep(slot: &mut (u64, bool), w: Option<(u64, bool)>) {
    if let Some((w, down)) = w
        && (down && !slot.1 || (down == slot.1 && w > slot.0))
    {
        *slot = (w, down);
    }
}

fn sort(b: &mut Block, t: &TensorInfo, tail: &str, hidden: u64, widths: &mut [(u64, bool); 3]) {
    let mut segs = tail.split('.');
    let first = segs.next().unwrap_or("");
    let leaf = module_name(tail);
    if leaf.to_ascii_lowercase().contains("norm") || leaf.starts_with("ln") {
        return;
    }
    if tail.split('.').any(is_attention) {
        b.attention = true;
        return;
    }
    if MLP_LEAVES.contains(&first) {
        b.dense = true;
        keep(&mut widths[2], width(t, tail, hidden, false));
        return;
    }
    if !MLP.contains(&first) {
        b.mixers.insert(first.to_owned());
        return;
    }
    let second = segs.next().unwrap_or("");
    if let Some((_, after)) = tail.split_once(".experts.") {
        match after.split('.').next().and_then(|i| i.parse::<u64>().ok()) {
            Some(i) => {
                b.expert_ids.insert(i);
                keep(&mut widths[0], width(t, tail, hidden, false));
            }
            None if t.shape.len() == 3 => {
                b.fused_experts = b.fused_experts.max(t.shape[0]);
                keep(&mut widths[0], width(t, tail, hidden, true));
            }
            None => {}
        }
    } else if second.starts_with("shared_expert") || second == "shared_mlp" {
        if second == "shared_expert_gate" {
            b.shared_gate = true;
        } else {
            keep(&mut widths[1], width(t, tail, hidden, false));
            b.shared = true;
        }
    } else if matches!(second, "gate" | "router") {
        // the router: its rows are the experts (a bias or correction vector says nothing more)
        if t.shape.len() == 2 && t.shape[1] == hidden {
            b.fused_experts = b.fused_experts.max(t.shape[0]);
        }
    } else {
        b.dense = true;
        keep(&mut widths[2], width(t, tail, hidden, false));
    }
}

/// Reads the layout of the decoder's blocks from `tensors`; `None` when the names show no
/// numbered blocks. Of several block prefixes (a vision tower's and the language model's), the
/// one with `layers` blocks, else the one holding the most parameters, is the decoder.
pub(super) fn read(tensors: &[&TensorInfo], hidden: u64, layers: u64) -> Option<Layout> {
    let mut by_prefix: BTreeMap<String, (BTreeSet<u64>, u64)> = BTreeMap::new();
    for t in tensors {
        if let Some((p, i, _)) = split_block(&t.name) {
            let e = by_prefix.entry(p).or_default();
            e.0.insert(i);
            e.1 += t.numel();
        }
    }
    let prefix = by_prefix
        .iter()
        .max_by_key(|(_, (ids, n))| (ids.len() as u64 == layers, *n))
        .map(|(p, _)| p.clone())?;
    let blocks = by_prefix.get(&prefix).and_then(|(ids, _)| ids.last()).map_or(0, |l| l + 1);
    if blocks < layers {
        // fewer blocks under one prefix than the config's layers (an encoder-decoder's two
        // stacks, a header that lacks some): the names do not say which block is which
        return None;
    }
    let blocks = layers;
    let mut per: Vec<Block> = (0..blocks).map(|_| Block::default()).collect();
    let mut widths = [(0, false); 3];
    for t in tensors {
        if let Some((p, i, tail)) = split_block(&t.name)
            && p == prefix
            && let Some(b) = per.get_mut(i as usize)
        {
            sort(b, t, tail, hidden, &mut widths);
        }
    }
    if per.iter().any(|b| {
        !b.attention
            && b.mixers.is_empty()
            && !b.dense
            && !b.shared
            && b.fused_experts == 0
            && b.expert_ids.is_empty()
    }) {
        // a block of norms alone is not one the names explain
        return None;
    }
    let experts = per.iter().map(|b| (b.expert_ids.len() as u64).max(b.fused_experts)).max().unwrap_or(0);
    let sparse = |b: &Block| !b.expert_ids.is_empty() || b.fused_experts > 1;
    Some(Layout {
        blocks,
        attention: per.iter().map(|b| b.attention).collect(),
        mixers: per.iter().filter(|b| !b.attention).flat_map(|b| b.mixers.iter().cloned()).collect(),
        experts,
        expert_width: widths[0].0,
        shared_width: if per.iter().any(|b| b.shared) { widths[1].0 } else { 0 },
        shared_gate: per.iter().any(|b| b.shared_gate),
        dense: per.iter().map(|b| b.dense && !sparse(b)).collect(),
        dense_width: widths[2].0,
    })
}

impl Layout {
    /// The layout in a phrase: "28 blocks: 26 with 64 experts of width 1408 and a shared MLP of
    /// width 2816, 2 with a dense MLP of width 10944; 21 with attention, 7 without (`mamba.*`)".
    pub fn describe(&self) -> String {
        let dense = self.dense.iter().filter(|d| **d).count() as u64;
        let mut mlp = Vec::new();
        if self.experts > 1 {
            let shared = match self.shared_width {
                0 => String::new(),
                w => format!(" and a shared MLP of width {w}"),
            };
            mlp.push(format!(
                "{} with {} experts of width {}{shared}",
                self.blocks - dense,
                self.experts,
                self.expert_width
            ));
        }
        if dense > 0 {
            mlp.push(format!("{dense} with a dense MLP of width {}", self.dense_width));
        }
        let attn = self.attention.iter().filter(|a| **a).count() as u64;
        let mixers = match self.blocks - attn {
            0 => String::new(),
            n => format!(", {n} without ({})", self.mixer_names()),
        };
        let mlp = if mlp.is_empty() { String::new() } else { format!("{}; ", mlp.join(", ")) };
        format!("{} blocks: {mlp}{attn} with attention{mixers}", self.blocks)
    }

    fn mixer_names(&self) -> String {
        let names: Vec<String> = self.mixers.iter().map(|m| format!("`{m}.*`")).collect();
        if names.is_empty() { "no tensors".into() } else { names.join(", ") }
    }
}

/// A token's experts when the config names no count: Mixtral's 2 (the activations of the
/// experts scale with it; said among the facts).
const DEFAULT_TOP_K: u64 = 2;
/// Where a fact the header cannot show and the config does not hold comes from.
const DEFAULTED: &str = "vramscope default (not in config.json or the header)";

/// A token's experts as the config names them, under any spelling the MoE reader knows, at the
/// top level or in `text_config`.
pub(crate) fn config_top_k(config: &serde_json::Value) -> Option<u64> {
    let text = config.get("text_config");
    crate::families::moe::TOP_K.iter().find_map(|k| {
        config.get(*k).or_else(|| text.and_then(|t| t.get(*k))).and_then(serde_json::Value::as_u64)
    })
}

/// Gives the generic decoder `spec` the header's structure where its config.json is silent or
/// disagrees: the experts (a token's `top_k` from the config's `config_top_k`, else
/// [`DEFAULT_TOP_K`] and said so), the dense blocks, and a caveat for blocks without attention. Returns what changed, for
/// the header check, and records the layout among the facts.
pub(super) fn apply(
    spec: &mut TransformerSpec,
    l: &Layout,
    config: Option<&serde_json::Value>,
    facts: &mut Vec<Fact>,
) -> Vec<String> {
    facts.push(Fact { fact: "block structure".into(), from: FROM_HEADER.into(), value: Some(l.describe()) });
    let mut changed = Vec::new();
    if l.blocks == spec.num_layers && l.experts > 1 && l.expert_width > 0 {
        experts(spec, l, config, facts, &mut changed);
    }
    let without = l.attention.iter().filter(|a| !**a).count();
    if without > 0 && spec.unmodelled.is_none() {
        spec.unmodelled = Some(format!(
            "not modelled: {without} of {} blocks hold no attention tensors ({}): the generic decoder costs them as attention blocks, so activations and the KV cache can be far off (the parameters are the header's, exact)",
            l.blocks,
            l.mixer_names()
        ));
        changed.push(format!("{without} blocks without attention named in a caveat"));
    }
    changed
}

fn experts(
    spec: &mut TransformerSpec,
    l: &Layout,
    config: Option<&serde_json::Value>,
    facts: &mut Vec<Fact>,
    changed: &mut Vec<String>,
) {
    let had = spec.moe;
    let config_top_k = config.and_then(config_top_k);
    // `norm_topk_prob: false` (Qwen-MoE's spelling) leaves the top-k weights as they are
    let renormalised = config.and_then(|c| c.get("norm_topk_prob")).and_then(serde_json::Value::as_bool);
    let top_k = had.map(|m| m.top_k).or(config_top_k).unwrap_or(DEFAULT_TOP_K).clamp(1, l.experts);
    if had.is_none() {
        if config_top_k.is_none() {
            facts.push(Fact {
                fact: "experts per token".into(),
                from: DEFAULTED.into(),
                value: Some(top_k.to_string()),
            });
        }
        let (router, from) = match renormalised {
            Some(true) => ("softmax, top-k renormalised", "config.json (norm_topk_prob)"),
            Some(false) => ("softmax, top-k not renormalised", "config.json (norm_topk_prob)"),
            None => ("softmax, top-k renormalised", DEFAULTED),
        };
        facts.push(Fact { fact: "router".into(), from: from.into(), value: Some(router.into()) });
    }
    let mut moe = had.unwrap_or_else(|| Moe {
        router: if renormalised == Some(false) {
            crate::model::Router::SoftmaxNoNorm
        } else {
            crate::model::Router::Softmax
        },
        ..Moe::routed(l.experts, top_k)
    });
    moe.experts = l.experts;
    moe.top_k = top_k;
    if l.shared_width > 0 {
        moe.shared_experts = moe.shared_experts.max(1);
        moe.shared_intermediate_size = l.shared_width;
        if l.shared_gate {
            moe.router = crate::model::Router::SoftmaxSharedGate;
        }
    }
    let dense_before = spec.dense_intermediate_size;
    let any_dense = l.dense.iter().any(|d| *d);
    if had.is_none() {
        spec.dense_intermediate_size = spec.intermediate_size;
    }
    if any_dense && l.dense_width > 0 {
        spec.dense_intermediate_size = l.dense_width;
    }
    spec.intermediate_size = l.expert_width;
    let base = if spec.layer_flags.is_empty() && spec.sliding_window.is_some() { layer::SLIDING } else { 0 };
    let mut flags: Vec<u8> = (0..spec.num_layers as usize)
        .map(|i| spec.layer_flags.get(i).copied().unwrap_or(base) & !layer::DENSE)
        .collect();
    for (f, d) in flags.iter_mut().zip(&l.dense) {
        if *d {
            *f |= layer::DENSE;
        }
    }
    let new_flags = crate::families::compact_flags(flags);
    let new_spec_moe = Some(moe);
    if had != new_spec_moe || new_flags != spec.layer_flags || dense_before != spec.dense_intermediate_size {
        changed.push(format!("the experts and dense blocks are the header's ({})", l.describe()));
    }
    spec.moe = new_spec_moe;
    spec.layer_flags = new_flags;
}
