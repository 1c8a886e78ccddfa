//! One rank of a parallel job: which pipeline stage it runs, how many blocks and micro-batches it
//! holds, and the slice of the model tensor and expert parallelism leave it.

use super::{Mode, Parallel, Scenario};
use serde::Serialize;

/// Which pipeline stage a per-rank estimate is for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stage {
    /// 0-based stage index.
    pub index: u64,
    /// Pipeline stages.
    pub stages: u64,
    /// Transformer blocks on this stage.
    pub blocks: u64,
    /// Micro-batches whose activations this stage holds at once (1F1B: min(m, pp - index);
    /// interleaved schedules hold more on the first stage).
    pub in_flight: f64,
}

impl Stage {
    pub fn first(&self) -> bool {
        self.index == 0
    }
    pub fn last(&self) -> bool {
        self.index + 1 == self.stages
    }
}

/// Every stage, 0 first.
pub(crate) fn all_stages(sc: &Scenario, layers: u64) -> Vec<Stage> {
    (0..sc.parallel.pp.max(1)).map(|i| stage(sc, layers, i)).collect()
}

/// Stage `i` of the pipeline.
fn stage(sc: &Scenario, layers: u64, i: u64) -> Stage {
    let p = &sc.parallel;
    let pp = p.pp.max(1);
    // inference passes one batch through the stages: one micro-batch in flight per stage
    let m = if sc.mode == Mode::Infer { 1 } else { p.micro_batches() };
    let v = p.virtual_stages.max(1);
    let blocks = layers / pp + u64::from(i < layers % pp);
    let base = m.min(pp - i) as f64;
    let in_flight = if v > 1 && i == 0 { base * (1.0 + (pp - 1) as f64 / (pp * v) as f64) } else { base };
    Stage { index: i, stages: pp, blocks, in_flight }
}

/// Pipeline stage of a global rank: the pipeline is the outermost dimension of the rank grid in
/// Megatron-LM (`tp-cp-ep-dp-pp`), torchtitan and DeepSpeed's `PipeDataParallelTopology`, so
/// ranks `0 .. world / pp` run stage 0, the next block stage 1, and so on.
pub fn stage_of_rank(p: &super::Parallel, rank: u64) -> u64 {
    let per_stage = (p.world() / p.pp.max(1)).max(1);
    (rank / per_stage).min(p.pp.max(1) - 1)
}

/// The stages worth evaluating: the first (most micro-batches in flight, embeddings), the last
/// (LM head and loss) and, for deep pipelines, the second (most blocks when L % pp != 0).
pub(crate) fn stages_of(sc: &Scenario, layers: u64) -> Vec<Stage> {
    let pp = sc.parallel.pp.max(1);
    let mut idx = vec![0];
    if pp > 1 {
        idx.push(pp - 1);
    }
    if pp > 2 {
        idx.push(1);
    }
    idx.into_iter().map(|i| stage(sc, layers, i)).collect()
}

/// The transformer as one tensor-parallel (and expert-parallel) rank sees it: heads, KV heads,
/// MLP width, vocabulary and experts divided (KV heads replicated when fewer than the degree).
pub fn shard_spec(t: &crate::model::TransformerSpec, p: &Parallel) -> crate::model::TransformerSpec {
    let tp = p.tp.max(1);
    let mut s = t.clone();
    if tp > 1 {
        s.num_heads = t.num_heads.div_ceil(tp);
        s.num_kv_heads = t.num_kv_heads.div_ceil(tp).max(1);
        s.intermediate_size = t.intermediate_size.div_ceil(tp);
        s.dense_intermediate_size = t.dense_intermediate_size.div_ceil(tp);
        s.vocab_size = t.vocab_size.div_ceil(tp);
        if let Some(mut moe) = s.moe {
            moe.shared_intermediate_size = moe.shared_intermediate_size.div_ceil(tp);
            s.moe = Some(moe);
        }
    }
    if let Some(mut moe) = t.moe
        && p.ep > 1
    {
        moe.experts = moe.experts.div_ceil(p.ep);
        s.moe = Some(moe);
    }
    s
}

/// Parameter groups one pipeline stage holds.
pub(crate) fn stage_groups(
    spec: &crate::model::TransformerSpec,
    stage: &Stage,
) -> Vec<crate::model::ParamGroup> {
    use crate::model::{ParamKind, Scope};
    let layers = spec.num_layers.max(1);
    let all = spec.param_groups();
    let mut out = Vec::with_capacity(all.len() + 1);
    for g in &all {
        match g.scope {
            Scope::Block => {
                // groups of some layers only (an MoE model's dense or sparse layers) share out
                // in proportion; every group is whole when the stage holds all blocks
                let count =
                    if stage.blocks >= layers { g.count } else { (g.count * stage.blocks).div_ceil(layers) };
                if count > 0 {
                    out.push(crate::model::ParamGroup { count, ..*g });
                }
            }
            Scope::Input if stage.first() => out.push(*g),
            Scope::Output if stage.last() => out.push(*g),
            _ => {}
        }
    }
    // Megatron keeps a copy of tied word embeddings on the last stage for the LM head
    if stage.last()
        && !stage.first()
        && spec.tie_word_embeddings
        && let Some(e) = all.iter().find(|g| g.kind == ParamKind::Embedding && g.rows == spec.vocab_size)
    {
        out.push(*e);
    }
    out
}
