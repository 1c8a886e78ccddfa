//! The training (or inference) method in words, one phrase for every place that names it: the
//! GUI's caption, the slide, Compare's rows and the reports' inputs.

use super::{BaseQuant, Checkpointing, Mode, Scenario};
use crate::i18n::Lang;

impl Checkpointing {
    /// The choice in words: "checkpointing segments:4" (the flag's own spelling) in English;
    /// "梯度检查点分 4 段" in Chinese, where a flag's keyword would be left untranslated.
    pub fn phrase_in(self, lang: Lang) -> String {
        match (lang, self) {
            (Lang::En, c) => format!("checkpointing {c}"),
            (Lang::ZhCn, Self::None) => "不做梯度检查点".into(),
            (Lang::ZhCn, Self::Full) => "每个块做梯度检查点".into(),
            (Lang::ZhCn, Self::Every(k)) => format!("每 {k} 个块做一次梯度检查点"),
            (Lang::ZhCn, Self::Segments(n)) => format!("梯度检查点分 {n} 段"),
            (Lang::ZhCn, Self::Selective) => "选择性梯度检查点（只重算注意力核心）".into(),
        }
    }
}

impl Scenario {
    /// The method and its precision: "full fine-tune, bf16", "LoRA r=16, bf16",
    /// "QLoRA r=16, NF4 base (double quant), bf16", "inference, bf16" (in English: see
    /// [`Self::method_in`]).
    pub fn method(&self) -> String {
        self.method_in(Lang::En)
    }

    /// [`Self::method`] in `lang`.
    pub fn method_in(&self, lang: Lang) -> String {
        crate::text!(lang, "{}, {}", "{}，{}", self.method_name_in(lang), self.precision)
    }

    /// The method without the precision: "full fine-tune", "LoRA r=16", "QLoRA r=16, NF4 base
    /// (double quant)", "inference, NF4 weights quantized at load (double quant)". A LoRA run
    /// over a quantized base is QLoRA whatever the precision recipe says: the base's storage is
    /// named with it.
    pub fn method_name_in(&self, lang: Lang) -> String {
        match (self.mode, self.lora) {
            (Mode::Train, Some(lo)) => match self.base_quant.storage_in(lang, lang.pick("base", "基座")) {
                Some(base) => crate::text!(lang, "QLoRA r={}, {base}", "QLoRA r={}，{base}", lo.rank),
                None => format!("LoRA r={}", lo.rank),
            },
            (Mode::Train, None) => lang.pick("full fine-tune", "全参数微调").into(),
            (Mode::Infer, _) => {
                match self
                    .base_quant
                    .storage_in(lang, lang.pick("weights quantized at load", "加载时量化的权重"))
                {
                    Some(w) => crate::text!(lang, "inference, {w}", "推理，{w}"),
                    None => lang.pick("inference", "推理").into(),
                }
            }
        }
    }

    /// The scenario's settings in one line, for a legend or a comparison's row:
    /// "Llama-3.1-8B · QLoRA r=16, NF4 base (double quant), bf16 · b4 × 2048 · checkpointing
    /// full · 8 GPUs (ZeRO-3, TP 1, PP 1)" (the GPU is not the scenario's: the caller adds it).
    pub fn summary_in(&self, lang: Lang) -> String {
        let mut parts =
            vec![self.model.name.clone(), self.method_in(lang), format!("b{} × {}", self.batch, self.seq)];
        if self.mode == Mode::Train {
            parts.push(self.checkpointing.phrase_in(lang));
        }
        let p = &self.parallel;
        if p.world() > 1 {
            parts.push(crate::text!(
                lang,
                "{} GPUs (ZeRO-{}, TP {}, PP {})",
                "{} 个 GPU（ZeRO-{}，TP {}，PP {}）",
                p.world(),
                p.effective_zero(),
                p.tp,
                p.pp
            ));
        }
        parts.join(" · ")
    }
}

impl BaseQuant {
    /// The quantized storage of `what` in words: "NF4 base (double quant)", "NF4 base (no double
    /// quant)", "int8 base (LLM.int8)"; `None` for unquantized weights.
    pub fn storage_in(self, lang: Lang, what: &str) -> Option<String> {
        match self {
            Self::None => None,
            Self::Nf4 => Some(crate::text!(lang, "NF4 {what} (double quant)", "NF4 {what}（双重量化）")),
            Self::Nf4NoDq => {
                Some(crate::text!(lang, "NF4 {what} (no double quant)", "NF4 {what}（无双重量化）"))
            }
            Self::Int8 => Some(crate::text!(lang, "int8 {what} (LLM.int8)", "int8 {what}（LLM.int8）")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qlora() -> Scenario {
        let mut sc = Scenario::new(crate::model::preset::builtin("llama-3.1-8b").expect("preset"));
        sc.lora = Some("16".parse().expect("lora"));
        sc.base_quant = BaseQuant::Nf4;
        sc
    }

    #[test]
    fn a_lora_run_over_a_4_bit_base_is_named_qlora_with_its_base() {
        let sc = qlora();
        let en = sc.method_in(Lang::En);
        assert!(en.starts_with("QLoRA r=16, NF4 base (double quant), "), "{en}");
        let zh = sc.method_in(Lang::ZhCn);
        assert!(zh.starts_with("QLoRA r=16，NF4 基座（双重量化），"), "{zh}");
        assert!(sc.summary_in(Lang::En).contains("QLoRA r=16, NF4 base (double quant)"));
        let mut plain = sc.clone();
        plain.base_quant = BaseQuant::None;
        assert!(plain.method_in(Lang::En).starts_with("LoRA r=16, "));
        plain.lora = None;
        assert!(plain.method_in(Lang::En).starts_with("full fine-tune, "));
    }

    #[test]
    fn the_text_report_names_qlora_by_the_same_phrase() {
        let sc = qlora();
        let e = crate::estimate::estimate(&sc).expect("estimate");
        let text = crate::report::to_text(&sc, &e, None, &[]);
        assert!(text.contains("QLoRA r=16, NF4 base (double quant); adapters on q,v"), "{text}");
    }
}
