//! What each usual fix would save in a given scenario, computed by the estimator and ranked —
//! so an OOM explanation can say "halving the micro-batch saves 9.2 GiB, 8-bit AdamW 11.0 GiB".

use crate::estimate::{Checkpointing, Mode, Optimizer, Scenario, estimate};
use crate::i18n::Lang;
use crate::text;
use crate::units::Precision;
use serde::Serialize;

/// One candidate change and its effect.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fix {
    /// What to change.
    pub change: String,
    /// Bytes of GPU memory it saves (total per GPU).
    pub saves: u64,
    /// Total per GPU after it.
    pub total_after: u64,
}

/// The usual fixes that apply to `sc`, each applied alone, ranked by what they save (largest
/// first); changes that save nothing are left out.
pub fn rank_fixes(sc: &Scenario) -> Vec<Fix> {
    rank_fixes_in(sc, Lang::En)
}

/// [`rank_fixes`] with each change written in `lang` (the figures are the same).
pub fn rank_fixes_in(sc: &Scenario, lang: Lang) -> Vec<Fix> {
    let Ok(base) = estimate(sc) else { return Vec::new() };
    let mut candidates: Vec<(String, Scenario)> = Vec::new();
    let mut with = |name: &str, f: &dyn Fn(&mut Scenario)| {
        let mut s = sc.clone();
        f(&mut s);
        if s != *sc {
            candidates.push((name.to_owned(), s));
        }
    };
    if sc.batch > 1 {
        let name = text!(
            lang,
            "halve the micro-batch to {} (double gradient accumulation)",
            "微批次减半到 {}（梯度累积步数翻倍）",
            sc.batch / 2
        );
        with(&name, &|s| s.batch /= 2);
    }
    if sc.mode == Mode::Train {
        if sc.checkpointing != Checkpointing::Full {
            with(
                lang.pick("gradient checkpointing on every block", "在每个块上启用梯度检查点"),
                &|s| s.checkpointing = Checkpointing::Full,
            );
        }
        if matches!(sc.optimizer, Optimizer::Adamw | Optimizer::Adam) {
            with(
                lang.pick(
                    "fused AdamW (no step temporary)",
                    "改用 fused AdamW（优化器更新步不再需要临时张量）",
                ),
                &|s| s.optimizer = Optimizer::AdamwFused,
            );
            with(lang.pick("8-bit AdamW (bitsandbytes)", "改用 8-bit AdamW（bitsandbytes）"), &|s| {
                s.optimizer = Optimizer::Adamw8bit
            });
        }
        if sc.precision == Precision::Fp32 {
            with(lang.pick("bf16 autocast (bf16-amp)", "bf16 自动混合精度（bf16-amp）"), &|s| {
                s.precision = Precision::Bf16Amp
            });
            with(lang.pick("pure bf16", "纯 bf16 训练"), &|s| s.precision = Precision::Bf16);
        }
        if sc.lora.is_none() && sc.model.transformer().is_some() {
            let name = lang.pick(
                "LoRA r=16 on all projections instead of full fine-tuning",
                "在所有投影层上用 LoRA r=16 代替全量微调",
            );
            with(name, &|s| {
                s.lora = Some(crate::estimate::Lora {
                    rank: 16,
                    targets: crate::estimate::Targets::ALL,
                    dropout: 0.0,
                });
            });
        }
        if sc.parallel.dp > 1 && sc.parallel.effective_zero() < 3 {
            let z = sc.parallel.effective_zero() + 1;
            let name = text!(
                lang,
                "ZeRO stage {z} across the {} data-parallel GPUs",
                "在 {} 块数据并行 GPU 上使用 ZeRO 阶段 {z}",
                sc.parallel.dp
            );
            with(&name, &|s| {
                s.parallel.zero = z;
                s.parallel.fsdp = None;
            });
        }
    }
    if sc.attention == crate::estimate::AttentionImpl::Eager {
        with(
            lang.pick("SDPA / flash attention instead of eager", "用 SDPA / flash attention 代替 eager"),
            &|s| s.attention = crate::estimate::AttentionImpl::Sdpa,
        );
    }
    if sc.seq > 256 {
        let name = text!(lang, "halve the sequence length to {}", "序列长度减半到 {}", sc.seq / 2);
        with(&name, &|s| s.seq /= 2);
    }
    let mut fixes: Vec<Fix> = candidates
        .into_iter()
        .filter_map(|(change, s)| {
            let e = estimate(&s).ok()?;
            (e.total < base.total).then(|| Fix { change, saves: base.total - e.total, total_after: e.total })
        })
        .collect();
    fixes.sort_by_key(|f| std::cmp::Reverse(f.saves));
    fixes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::preset::builtin;

    #[test]
    fn ranks_fixes_by_what_they_save() {
        let mut sc = Scenario::new(builtin("llama-2-7b").unwrap());
        sc.batch = 4;
        sc.seq = 4096;
        let fixes = rank_fixes(&sc);
        assert!(fixes.len() >= 4, "{fixes:?}");
        assert!(fixes.windows(2).all(|w| w[0].saves >= w[1].saves));
        // every figure is a real estimate: applying the change gives the total it claims
        let ck = fixes.iter().find(|f| f.change.starts_with("gradient checkpointing")).unwrap();
        let mut s = sc.clone();
        s.checkpointing = Checkpointing::Full;
        assert_eq!(estimate(&s).unwrap().total, ck.total_after);
        // with nothing to gain, nothing is proposed
        let mut tiny = Scenario::new(builtin("gpt2").unwrap());
        tiny.mode = Mode::Infer;
        tiny.seq = 128;
        assert!(rank_fixes(&tiny).iter().all(|f| f.saves > 0));
    }
}
