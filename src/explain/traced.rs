//! A traced model's parameters as its trace lists them: each tensor in the dtype it was traced
//! in (under autocast a LoRA base in the low dtype, the adapters in fp32).

use super::components::{bytes_in, count_in};
use crate::i18n::Lang;
use crate::text;
use crate::trace::TracedModel;

/// "2.57 × 10⁹ frozen params × 2 bytes + 5.8 × 10⁶ trained × 4 bytes (as traced)".
pub(super) fn params_text(t: &TracedModel, lang: Lang) -> String {
    // (trained, bytes per element) -> elements, in the order first met
    let mut groups: Vec<((bool, u8), u64)> = Vec::new();
    for p in &t.params {
        match groups.iter_mut().find(|(k, _)| *k == (p.trainable, p.elem)) {
            Some((_, n)) => *n += p.numel,
            None => groups.push(((p.trainable, p.elem), p.numel)),
        }
    }
    groups.sort_by_key(|((trained, _), _)| *trained);
    let parts: Vec<String> = groups
        .iter()
        .map(|&((trained, elem), n)| {
            let what = match (trained, lang) {
                (true, Lang::En) => " trained params",
                (false, Lang::En) => " frozen params",
                (true, Lang::ZhCn) => "可训练参数",
                (false, Lang::ZhCn) => "冻结参数",
            };
            format!("{}{what} × {}", count_in(n, lang), bytes_in(elem, lang))
        })
        .collect();
    format!("{}{}", parts.join(" + "), lang.pick(" (as traced)", "（按追踪时的类型）"))
}

/// "; most kept by up_blocks.3 2.10 GiB, up_blocks.2 1.31 GiB, down_blocks.0 0.95 GiB" (the
/// three modules keeping the most; empty when the trace cannot tell).
pub(super) fn modules_text(sc: &crate::estimate::Scenario, lang: Lang) -> String {
    let kept = crate::estimate::traced_modules(sc);
    if kept.is_empty() {
        return String::new();
    }
    let top: Vec<String> = kept
        .iter()
        .take(3)
        .map(|k| format!("{} {}", crate::report::module_label(k, lang), super::g(k.bytes)))
        .collect();
    let sep = lang.pick(", ", "、");
    text!(lang, "; most kept by {}", "；保留最多的模块：{}", top.join(sep))
}
