//! The step walk's moments in a person's language: the walk's events and [`Moment`](super::Moment)s keep their
//! English texts as data (JSON, tests, `vramscope timeline`); [`moment_in`] is what a person reads,
//! [`in_block`] puts a block's number around it.

use crate::i18n::Lang;
use std::borrow::Cow;

/// "block 3 MLP backward" in `lang`: "第 3 块 MLP 反向", "第 3 块前向" (`what` already translated).
pub(crate) fn in_block(b: u64, what: &str, lang: Lang) -> String {
    match lang {
        Lang::En => format!("block {b} {what}"),
        // a space between the number or a Latin word and what follows, none before Chinese
        Lang::ZhCn if what.starts_with(|c: char| c.is_ascii()) => format!("第 {b} 块 {what}"),
        Lang::ZhCn => format!("第 {b} 块{what}"),
    }
}

/// A moment of the step (an [`Event::op`](super::step::Event::op) of a [`Pass::Step`](super::step::Pass::Step) event, a [`Moment::what`](super::Moment::what)) in
/// `lang`. The data keeps the English text (JSON, tests); this is what a person reads. Texts that
/// are not one of the walk's moments (an op name such as `linear down_proj`) come back as they are.
pub fn moment_in(what: &str, lang: Lang) -> Cow<'_, str> {
    if lang == Lang::En {
        return Cow::Borrowed(what);
    }
    Cow::Borrowed(match what {
        // training: forward
        "embedding" => "嵌入层",
        "forward" => "前向",
        "final norm, LM head and loss" => "最终归一化、LM head 与损失",
        "end of forward (autocast weight cache)" => "前向结束（autocast 权重缓存）",
        // a convolutional network, op by op
        "the op holding the most (its output and the tensors later ops read)" => {
            "占用最多的算子（其输出及后续算子要读取的张量）"
        }
        "end of forward" => "前向结束",
        "backward of the op holding the most" => "占用最多的算子的反向",
        "forward (no grad)" => "前向（无梯度）",
        // training: backward
        "loss backward (compiled cross-entropy)" => "损失反向（编译的交叉熵）",
        "loss and log-softmax backward" => "损失与 log-softmax 反向",
        "LM head backward" => "LM head 反向",
        "LM head backward: a chunk's weight gradient summed" => "LM head 反向：一个分块的权重梯度被累加",
        "last block MLP backward" => "最后一个块的 MLP 反向",
        "last block attention backward" => "最后一个块的注意力反向",
        "recompute of a checkpointed block" => "梯度检查点块的重算",
        "recompute" => "重算",
        "first block MLP backward (recomputed)" => "第一个块的 MLP 反向（重算后）",
        "first block attention backward (recomputed)" => "第一个块的注意力反向（重算后）",
        "MLP backward" => "MLP 反向",
        "attention backward" => "注意力反向",
        "backward done" => "反向完成",
        "end of backward (every parameter stepped)" => "反向结束（每个参数均已更新）",
        "end of backward (gradients reduced across data-parallel ranks)" => {
            "反向结束（梯度已在数据并行的各 rank 间归约）"
        }
        "end of backward" => "反向结束",
        // training: optimizer step
        "optimizer steps ran in backward" => "优化器更新步已在反向中完成",
        "optimizer step" => "优化器更新步",
        "zero_grad (set_to_none=False: zeroed in place, kept)" => {
            "zero_grad（set_to_none=False：原地清零并保留）"
        }
        "zero_grad (set_to_none) after the last micro-batch" => {
            "最后一个微批次之后的 zero_grad（set_to_none：释放梯度）"
        }
        "zero_grad (set_to_none)" => "zero_grad（set_to_none：释放梯度）",
        // inference
        "last block forward" => "最后一个块的前向",
        "LM head (logits)" => "LM head（计算 logits）",
        // HF generate
        "prefill: embedding" => "预填充：嵌入层",
        "prefill forward" => "预填充前向",
        "prefill: last block forward" => "预填充：最后一个块的前向",
        "prefill: LM head (last token's logits) and their fp32 copy" => {
            "预填充：LM head（最后一个 token 的 logits）及其 fp32 副本"
        }
        "prefill: the 4-bit LM head dequantizing its weight" => "预填充：4 位 LM head 正在反量化其权重",
        "decode (last step): a layer's attention over the whole cache (scores, K/V repeated to every head)" => {
            "解码（最后一步）：一层对整个缓存的注意力（分数，K/V 复制到每个头）"
        }
        "decode (last step): torch.cat of a layer's cache (its old and new keys/values)" => {
            "解码（最后一步）：一层缓存的 torch.cat（新旧键/值同时存在）"
        }
        "decode (last step): logits and two fp32 copies" => "解码（最后一步）：logits 及两份 fp32 副本",
        _ => what,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate::step::{Event, Pass};
    use crate::estimate::{AttentionImpl, Loss, Optimizer, timeline};
    use crate::estimate::{Cat, Checkpointing, Mode, Moment, Phase, Scenario, Snapshot};
    use crate::model::preset::builtin;
    use crate::units::Precision;

    fn cjk(s: &str) -> bool {
        s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    }

    /// Scenarios that between them reach every block-level moment of the walk.
    fn scenarios() -> Vec<Scenario> {
        let llama = || Scenario::new(builtin("llama-3.1-8b").expect("preset"));
        let mut out = Vec::new();
        // training, no checkpointing
        out.push(llama());
        // full checkpointing under autocast (the weight cache), Adam (its step temporary)
        let mut s = llama();
        s.checkpointing = Checkpointing::Full;
        s.precision = Precision::Bf16Amp;
        out.push(s);
        // checkpoint_sequential segments and every K-th block
        let mut s = llama();
        s.checkpointing = Checkpointing::Segments(4);
        out.push(s);
        let mut s = llama();
        s.checkpointing = Checkpointing::Every(3);
        out.push(s);
        let mut s = llama();
        s.checkpointing = Checkpointing::Selective;
        out.push(s);
        // pipeline of 2 stages with micro-batches (the accumulated gradients' zero_grad)
        let mut s = llama();
        s.parallel.pp = 2;
        s.parallel.micro_batches = 4;
        s.checkpointing = Checkpointing::Full;
        out.push(s);
        // optimizer in backward
        let mut s = llama();
        s.stack.optimizer_in_backward = true;
        out.push(s);
        // compiled and chunked losses
        let mut s = llama();
        s.stack.compiled_loss = true;
        out.push(s);
        let mut s = llama();
        s.stack.loss = Loss::Chunked { chunks: 8 };
        out.push(s);
        let mut s = llama();
        s.stack.loss = Loss::ChunkedNative { positions: 128 };
        out.push(s);
        let mut s = llama();
        s.stack.loss = Loss::FusedLinearCe;
        out.push(s);
        // data parallel with ZeRO, and gradients kept by zero_grad(set_to_none=False)
        let mut s = llama();
        s.parallel.dp = 8;
        s.parallel.zero = 3;
        s.optimizer = Optimizer::Adam;
        out.push(s);
        let mut s = llama();
        s.stack.keep_grads = true;
        s.stack.grad_accum = 4;
        out.push(s);
        // inference: scoring forward, HF generate (SDPA and eager: cat or attention at decode)
        let mut s = llama();
        s.mode = Mode::Infer;
        out.push(s);
        let mut s = llama();
        s.mode = Mode::Infer;
        s.parallel.pp = 2;
        out.push(s);
        for attention in [AttentionImpl::Sdpa, AttentionImpl::Eager] {
            let mut s = llama();
            s.mode = Mode::Infer;
            s.new_tokens = 256;
            s.attention = attention;
            out.push(s);
        }
        // a convolutional network (its ops one by one)
        for mode in [Mode::Train, Mode::Infer] {
            let mut s = Scenario::new(builtin("resnet-50").expect("preset"));
            s.mode = mode;
            out.push(s);
        }
        out
    }

    #[test]
    fn every_moment_of_the_walk_has_a_chinese_text() {
        let mut seen = std::collections::BTreeSet::new();
        let mut missing = std::collections::BTreeSet::new();
        for sc in scenarios() {
            let t = timeline(&sc).expect("timeline");
            let e = &t.estimate;
            let whats = t
                .events
                .iter()
                .filter(|ev| ev.pass == Pass::Step)
                .map(|ev| ev.op)
                .chain(e.moments.iter().map(|m| m.what))
                .chain([e.peak.what]);
            for what in whats {
                seen.insert(what);
                let zh = moment_in(what, Lang::ZhCn);
                if zh == what || !cjk(&zh) {
                    missing.insert(what);
                }
                assert_eq!(moment_in(what, Lang::En), what);
            }
            // the labels of every event: op names kept, the rest in Chinese
            for ev in &t.events {
                let zh = ev.label_in(Lang::ZhCn);
                assert_eq!(ev.label_in(Lang::En), ev.label());
                assert!(cjk(&zh), "{zh}");
                if ev.pass != Pass::Step {
                    assert!(zh.contains(ev.op), "{zh} keeps {}", ev.op);
                }
            }
            let d = e.peak.describe_in(Lang::ZhCn);
            assert!(cjk(&d), "{d}");
            assert_eq!(e.peak.describe_in(Lang::En), e.peak.describe());
        }
        assert!(missing.is_empty(), "moments without a Chinese text: {missing:?}");
        // the scenarios reach the moments this test is for
        for what in [
            "optimizer step",
            "end of forward (autocast weight cache)",
            "loss and log-softmax backward",
            "loss backward (compiled cross-entropy)",
            "LM head backward: a chunk's weight gradient summed",
            "recompute of a checkpointed block",
            "backward done",
            "end of backward (every parameter stepped)",
            "end of backward (gradients reduced across data-parallel ranks)",
            "zero_grad (set_to_none=False: zeroed in place, kept)",
            "zero_grad (set_to_none) after the last micro-batch",
            "prefill: last block forward",
            "decode (last step): logits and two fp32 copies",
            "decode (last step): torch.cat of a layer's cache (its old and new keys/values)",
            "decode (last step): a layer's attention over the whole cache (scores, K/V repeated to every head)",
            "LM head (logits)",
        ] {
            assert!(seen.contains(what), "no scenario reaches {what:?}: {seen:?}");
        }
    }

    #[test]
    fn labels_read_in_chinese_around_the_op_names() {
        let ev = |block, op, pass| Event {
            phase: Phase::Backward,
            block,
            op,
            pass,
            candidate: false,
            alive: Snapshot::default(),
            tensors: [0; crate::engine::ops::OP_TENSORS],
            pieces: Default::default(),
            saved_piece: 0,
        };
        let e = ev(Some(17), "linear down_proj", Pass::OpBackward);
        assert_eq!(e.label(), "block 17 linear down_proj backward");
        assert_eq!(e.label_in(Lang::En), "block 17 linear down_proj backward");
        assert_eq!(e.label_in(Lang::ZhCn), "第 17 块 linear down_proj 反向");
        assert_eq!(ev(Some(3), "MLP backward", Pass::Step).label_in(Lang::ZhCn), "第 3 块 MLP 反向");
        assert_eq!(ev(Some(3), "backward done", Pass::Step).label_in(Lang::ZhCn), "第 3 块反向完成");
        assert_eq!(ev(None, "optimizer step", Pass::Step).label_in(Lang::ZhCn), "优化器更新步");
        // op names are not moments: they stay as they are
        assert_eq!(moment_in("rmsnorm", Lang::ZhCn), "rmsnorm");
        let m = Moment {
            phase: Phase::Backward,
            what: "MLP backward",
            block: Some(3),
            alive: Snapshot::default(),
        };
        assert_eq!(m.describe(), "backward: block 3 MLP backward");
        assert_eq!(m.describe_in(Lang::ZhCn), "反向：第 3 块 MLP 反向");
        let m = Moment {
            phase: Phase::OptimizerStep,
            what: "optimizer step",
            block: None,
            alive: Snapshot::default(),
        };
        assert_eq!(m.describe_in(Lang::ZhCn), "优化器更新步");
        assert_eq!(Cat::Mlp.label_in(Lang::ZhCn), "MLP 中间结果");
        assert_eq!(Cat::Mlp.label_in(Lang::En), Cat::Mlp.label());
    }
}
