//! Every user-facing string of the GUI, each written once with its English and Simplified Chinese
//! (zh-CN) texts side by side, so the panels never hold a text of their own. One table per part of
//! the window, one file each under `strings/`: [`main`] (menus, controls, verdict, charts),
//! [`serve`], [`cluster`], [`options`], [`live`], [`controls`] (full screen, zoom, the Learn menu,
//! the shortcut window, the curves' read-outs), [`export`] (the save prompt, Compare, the slide).
//! [`tr`], [`tr_serve`], [`tr_cluster`], [`tr_options`], [`tr_live`], [`tr_controls`] and
//! [`tr_export`] answer in [`super::lang::current`].
//!
//! A table is written with `strings!`: each entry is a field's name (with its doc comment), its
//! English text, `/`, its Chinese text, so a missing translation is a compile error, not a blank.
//! The core writes its own sentences the same way with [`crate::text!`].

/// Writes one table of texts: `pub struct Strings, EN, ZH { … }` gives the struct, its fields
/// `&'static str` (an entry named `name[n]` is an array of `n` of them), and its English and
/// Chinese values as the two constants named. Each entry is `field: "English" / "中文"` (arrays:
/// `[…] / […]`); the pattern requires both texts. Under `cfg(test)` the struct also lists its
/// texts pairwise (`pairs()`) for the tables' tests.
macro_rules! strings {
    (@type) => { &'static str };
    (@type $n:literal) => { [&'static str; $n] };
    (@items $text:expr) => { [$text] };
    (@items $text:expr, $n:literal) => { $text };
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident, $en:ident, $zh:ident {
            $(
                $(#[$field_attr:meta])*
                $field:ident $([$n:literal])?: $en_text:tt / $zh_text:tt
            ),* $(,)?
        }
    ) => {
        $(#[$attr])*
        #[derive(Clone, Copy, Debug)]
        $vis struct $name {
            $(
                $(#[$field_attr])*
                pub $field: strings!(@type $($n)?),
            )*
        }

        /// English.
        $vis const $en: $name = $name { $($field: $en_text,)* };

        /// Simplified Chinese (zh-CN).
        $vis const $zh: $name = $name { $($field: $zh_text,)* };

        #[cfg(test)]
        impl $name {
            /// Each text as (field, English, Chinese), an array's items one by one.
            pub(super) fn pairs() -> Vec<(&'static str, &'static str, &'static str)> {
                let mut pairs = Vec::new();
                // by reference: a field read off the constant itself copies the whole table
                // into the frame each time (a debug build's stack overflows past ~480 texts)
                let (en_table, zh_table): (&$name, &$name) = (&$en, &$zh);
                $(
                    let en = strings!(@items en_table.$field $(, $n)?);
                    let zh = strings!(@items zh_table.$field $(, $n)?);
                    pairs.extend(en.into_iter().zip(zh).map(|(e, z)| (stringify!($field), e, z)));
                )*
                pairs
            }
        }
    };
}

pub mod cluster;
pub mod controls;
pub mod export;
pub mod live;
pub mod main;
pub mod options;
pub mod serve;

pub use cluster::{ClusterStrings, tr_cluster};
pub use controls::{ControlsStrings, tr_controls};
pub use export::{ExportStrings, tr_export};
pub use live::{LiveStrings, tr_live};
pub use main::{Strings, tr};
pub use options::{OptionsStrings, tr_options};
pub use serve::{ServeStrings, tr_serve};

/// The menu label of an export format.
pub fn export_label(f: crate::export::Format) -> &'static str {
    use crate::export::Format;
    let (en, zh) = match f {
        Format::Ron => ("Scenario (.ron)…", "场景（.ron）…"),
        Format::Markdown => ("Plan report (Markdown)…", "规划报告（Markdown）…"),
        Format::Json => ("Plan report (JSON)…", "规划报告（JSON）…"),
        Format::Csv => ("What-if curves (CSV)…", "假设分析曲线（CSV）…"),
        Format::Roadmap => ("Roadmap (Markdown)…", "路线图（Markdown）…"),
        Format::RoadmapJson => ("Roadmap (JSON)…", "路线图（JSON）…"),
        Format::Deepspeed => ("DeepSpeed config (JSON)…", "DeepSpeed 配置（JSON）…"),
        Format::Hf => ("Hugging Face TrainingArguments…", "Hugging Face TrainingArguments…"),
        Format::Fsdp => ("PyTorch FSDP snippet…", "PyTorch FSDP 代码片段…"),
        Format::Megatron => ("Megatron-LM arguments…", "Megatron-LM 参数…"),
    };
    super::lang::current().pick(en, zh)
}

#[cfg(test)]
/// What breaks zh-CN typesetting in `zh`: an ASCII colon or comma touching a Chinese
/// character (or one space from it), or a space between two Chinese characters.
pub(crate) fn zh_punctuation_faults(zh: &str) -> Vec<String> {
    let cjk = |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c);
    let chars: Vec<char> = zh.chars().collect();
    let mut faults = Vec::new();
    for (i, &ch) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i + 1).copied();
        let after_space = chars.get(i + 2).copied().filter(|_| after == Some(' '));
        let touches = before.is_some_and(cjk) || after.is_some_and(cjk) || after_space.is_some_and(cjk);
        if matches!(ch, ':' | ',') && touches {
            faults.push(format!("ASCII {ch:?} beside Chinese in {zh:?}"));
        }
        if ch == ' ' && before.is_some_and(cjk) && after.is_some_and(cjk) {
            faults.push(format!("a space between Chinese characters in {zh:?}"));
        }
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gui::lang::{self, Lang};

    /// Every text of every table: (table, field, English, Chinese).
    fn every_text() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
        let tables = [
            ("Strings", Strings::pairs()),
            ("ServeStrings", ServeStrings::pairs()),
            ("ClusterStrings", ClusterStrings::pairs()),
            ("OptionsStrings", OptionsStrings::pairs()),
            ("LiveStrings", LiveStrings::pairs()),
            ("ControlsStrings", ControlsStrings::pairs()),
            ("ExportStrings", ExportStrings::pairs()),
        ];
        tables
            .into_iter()
            .flat_map(|(t, pairs)| pairs.into_iter().map(move |(f, en, zh)| (t, f, en, zh)))
            .collect()
    }

    /// The names in braces of a text, sorted (`{n}`, `{path}`, …).
    fn placeholders(text: &str) -> Vec<&str> {
        let mut names: Vec<&str> =
            text.split('{').skip(1).filter_map(|p| p.split_once('}').map(|(name, _)| name)).collect();
        names.sort_unstable();
        names
    }

    #[test]
    fn every_translation_keeps_the_placeholders() {
        let texts = every_text();
        assert_eq!(texts.len(), 518, "seven tables, the PyTorch classes item by item");
        for (table, field, en, zh) in texts {
            assert_eq!(placeholders(en), placeholders(zh), "{table}.{field}: {en:?} / {zh:?}");
        }
        assert_eq!(placeholders("{n} of {m} GPUs ({list})"), ["list", "m", "n"]);
    }

    /// A Chinese text with neither a CJK character nor Chinese punctuation is a symbol, a unit, a
    /// product's or a library's name, or a label kept in English in Chinese interfaces: these, and
    /// no other (an English text copied into the Chinese column fails here).
    #[test]
    fn every_translation_is_chinese_but_names_and_symbols() {
        let kept = [
            ("Strings", "app_title"),
            ("Strings", "torch_classes"),
            ("Strings", "every_k"),
            ("Strings", "bnb_current"),
            ("Strings", "bnb_before_0_43"),
            ("Strings", "sharding_zero"),
            ("Strings", "gpu"),
            ("Strings", "of"),
            ("Strings", "live_gpu"),
            ("ServeStrings", "seg_graphs"),
            ("ClusterStrings", "url"),
            ("ClusterStrings", "col_gpu"),
            ("ClusterStrings", "col_rank"),
            ("ClusterStrings", "col_error"),
            ("OptionsStrings", "col_gpu"),
            ("OptionsStrings", "run_tokens_suffix"),
            ("OptionsStrings", "at_mfu"),
            ("OptionsStrings", "col_number"),
            ("LiveStrings", "col_pid"),
            ("LiveStrings", "gpu_on_host"),
        ];
        // an ideograph, or punctuation written the Chinese way (、：（）)
        let cjk = |s: &str| {
            s.chars().any(
                |c| matches!(c, '\u{4e00}'..='\u{9fff}' | '\u{3000}'..='\u{303f}' | '\u{ff00}'..='\u{ffef}'),
            )
        };
        let texts = every_text();
        for &(table, field, en, zh) in &texts {
            assert!(!en.is_empty() && !zh.is_empty(), "{table}.{field} is empty");
            assert!(cjk(zh) || kept.contains(&(table, field)), "{table}.{field} is not Chinese: {zh:?}");
        }
        for (table, field) in kept {
            assert!(texts.iter().any(|t| (t.0, t.1) == (table, field)), "{table}.{field} is not a text");
        }
    }

    #[test]
    fn every_table_answers_in_the_language() {
        lang::set(Lang::ZhCn);
        let zh = (
            tr().menu_file,
            tr_serve().mode_serve,
            tr_cluster().source,
            tr_options().yes,
            tr_live().list_sep,
        );
        let export = export_label(crate::export::Format::Csv);
        lang::set(Lang::En);
        assert_eq!(zh, ("文件", "服务", "数据源", "是", "、"));
        assert_eq!(export, "假设分析曲线（CSV）…");
        let en = (
            tr().menu_file,
            tr_serve().mode_serve,
            tr_cluster().source,
            tr_options().yes,
            tr_live().list_sep,
        );
        assert_eq!(en, ("File", "Serve", "Source", "yes", ", "));
        assert_eq!(export_label(crate::export::Format::Csv), "What-if curves (CSV)…");
    }

    #[test]
    fn every_chinese_text_uses_full_width_punctuation() {
        // the host-order field's example is what the user types, ASCII commas and all
        let faults: Vec<String> = every_text()
            .into_iter()
            .filter(|(_, f, _, _)| *f != "host_order_hint")
            .flat_map(|(t, f, _, zh)| {
                super::zh_punctuation_faults(zh).into_iter().map(move |x| format!("{t}.{f}: {x}"))
            })
            .collect();
        assert!(faults.is_empty(), "{}", faults.join("\n"));
    }
}
