//! The plan report's comparison: the scenarios pinned beside the current one, each named by its
//! settings, and their difference component by component (what the GUI's Compare tab and slide
//! show).

use crate::estimate::{Estimate, Scenario};
use crate::explain::Component;
use crate::i18n::Lang;
use crate::text;
use crate::units::GIB;
use std::fmt::Write as _;

/// One scenario of a comparison: its label ("current", "A"), settings, card and estimate.
#[derive(Clone, Copy, Debug)]
pub struct Compared<'a> {
    /// "current", "A", "B", …
    pub label: &'a str,
    /// The scenario.
    pub scenario: &'a Scenario,
    /// The card's name.
    pub gpu: &'a str,
    /// Its estimate.
    pub estimate: &'a Estimate,
}

/// The report's section comparing `current` with `pinned` (empty when nothing is pinned): a
/// legend saying what each label is (its settings in one line), then a row a component and the
/// total with each pin's size and "current − pin".
pub fn compare_markdown_in(current: &Compared<'_>, pinned: &[Compared<'_>], lang: Lang) -> String {
    let mut s = String::new();
    if pinned.is_empty() {
        return s;
    }
    let _ = writeln!(s, "\n{}\n", lang.pick("## Compared with the pinned scenarios", "## 与固定场景的比较"));
    for x in std::iter::once(current).chain(pinned) {
        let what = x.scenario.summary_in(lang);
        let _ =
            writeln!(s, "{}", text!(lang, "- **{}**: {what} · {}", "- **{}**：{what} · {}", x.label, x.gpu));
    }
    let mut head = format!("\n| {} | {} |", lang.pick("component", "组成项"), current.label);
    let mut rule = String::from("|---|---:|");
    for p in pinned {
        let _ = write!(head, " {} | {} − {} |", p.label, current.label, p.label);
        rule += "---:|---:|";
    }
    let _ = writeln!(s, "{head}\n{rule}");
    let gib = |b: u64| format!("{:.2} GiB", b as f64 / GIB);
    let all = || std::iter::once(current).chain(pinned);
    let mut row = |name: &str, f: &dyn Fn(&Estimate) -> u64| {
        let cur = f(current.estimate);
        let _ = write!(s, "| {name} | {} |", gib(cur));
        for p in pinned {
            let v = f(p.estimate);
            let _ = write!(s, " {} | {:+.2} GiB |", gib(v), (cur as f64 - v as f64) / GIB);
        }
        s.push('\n');
    };
    for comp in Component::ALL {
        if all().all(|x| comp.at_peak(x.estimate) == 0) {
            continue;
        }
        row(comp.name_in(lang), &|e: &Estimate| comp.at_peak(e));
    }
    row(lang.pick("total (nvidia-smi)", "总量（nvidia-smi）"), &|e: &Estimate| e.total);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_are_named_by_their_settings_and_differ_by_component() {
        let mut a = Scenario::new(crate::model::preset::builtin("llama-3.1-8b").expect("preset"));
        a.lora = Some("16".parse().expect("lora"));
        a.base_quant = crate::estimate::BaseQuant::Nf4;
        let mut cur = a.clone();
        cur.batch = 4;
        let (ea, ec) =
            (crate::estimate::estimate(&a).expect("a"), crate::estimate::estimate(&cur).expect("cur"));
        let c = Compared { label: "current", scenario: &cur, gpu: "NVIDIA H100 80GB", estimate: &ec };
        let pins = [Compared { label: "A", scenario: &a, gpu: "NVIDIA H100 80GB", estimate: &ea }];
        let md = compare_markdown_in(&c, &pins, Lang::En);
        assert!(md.contains("- **A**: Llama-3.1-8B · QLoRA r=16, NF4 base (double quant), "), "{md}");
        assert!(md.contains("| component | current | A | current − A |"), "{md}");
        let d = (ec.total as f64 - ea.total as f64) / GIB;
        assert!(
            md.contains(&format!(
                "| total (nvidia-smi) | {:.2} GiB | {:.2} GiB | {d:+.2} GiB |",
                ec.total as f64 / GIB,
                ea.total as f64 / GIB
            )),
            "{md}"
        );
        assert!(compare_markdown_in(&c, &[], Lang::En).is_empty());
        let zh = compare_markdown_in(&c, &pins, Lang::ZhCn);
        assert!(zh.contains("QLoRA r=16，NF4 基座（双重量化）"), "{zh}");
    }
}
