//! The language of what vramscope says to people: English or Simplified Chinese (zh-CN). The
//! core's texts (the "Why" formulas, the step's moments, advice, roadmaps, reports) are written in
//! both, side by side, with [`text!`](crate::text); JSON keys and values stay English.

use serde::{Deserialize, Serialize};

crate::tokens::token_enum! {
    /// A language of the interface.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
    pub enum Lang {
        /// English.
        #[default]
        #[serde(rename = "en")]
        En => "en" | "en-us" | "en-gb" | "english",
        /// Simplified Chinese.
        #[serde(rename = "zh-CN")]
        ZhCn => "zh-CN" | "zh" | "zh-hans" | "zh-hans-cn" | "chinese",
    }
}

impl Lang {
    /// The BCP 47 tag (`--lang`'s value).
    pub const fn code(self) -> &'static str {
        self.name()
    }

    /// The language's name in itself (the menu shows each so anyone can find theirs).
    pub const fn native_name(self) -> &'static str {
        match self {
            Self::En => "English",
            Self::ZhCn => "简体中文",
        }
    }

    /// `en`, `zh-CN` (also `zh`, `zh_CN`, `zh-Hans`, any case).
    pub fn parse(s: &str) -> Result<Self, String> {
        let tag = s.trim().replace('_', "-");
        crate::tokens::find(&Self::SPELLINGS, &tag, true).ok_or_else(|| {
            format!("--lang {s}: the interface speaks {}", crate::tokens::or_list(&Self::TOKENS))
        })
    }

    /// The language of a POSIX locale value (`zh_CN.UTF-8` → zh-CN; anything else English).
    pub fn of_locale(value: &str) -> Self {
        if value.to_ascii_lowercase().starts_with("zh") { Self::ZhCn } else { Self::En }
    }

    /// The system's language: the first of `LC_ALL`, `LC_MESSAGES`, `LANG` that is set.
    pub fn system() -> Self {
        ["LC_ALL", "LC_MESSAGES", "LANG"]
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
            .map_or(Self::En, |v| Self::of_locale(&v))
    }
}

impl std::str::FromStr for Lang {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s)
    }
}

impl Lang {
    /// `en` or `zh` by the language: for fixed words (a label, a unit's name).
    pub const fn pick(self, en: &'static str, zh: &'static str) -> &'static str {
        match self {
            Self::En => en,
            Self::ZhCn => zh,
        }
    }
}

/// A sentence in the language `lang`: `text!(lang, "{n} blocks", "{n} 个块")`, both format strings
/// taking the same arguments (named captures or positional ones after them).
#[macro_export]
macro_rules! text {
    ($lang:expr, $en:literal, $zh:literal $(, $arg:expr)* $(,)?) => {
        match $lang {
            $crate::i18n::Lang::En => format!($en $(, $arg)*),
            $crate::i18n::Lang::ZhCn => format!($zh $(, $arg)*),
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_and_locales_are_read() {
        assert_eq!(Lang::parse("zh-CN"), Ok(Lang::ZhCn));
        assert_eq!(Lang::parse("zh_cn"), Ok(Lang::ZhCn));
        assert_eq!(Lang::parse("EN"), Ok(Lang::En));
        assert!(Lang::parse("fr").unwrap_err().contains("--lang fr"));
        assert_eq!(Lang::of_locale("zh_CN.UTF-8"), Lang::ZhCn);
        assert_eq!(Lang::of_locale("C.UTF-8"), Lang::En);
    }

    #[test]
    fn text_answers_in_the_language() {
        let n = 3;
        assert_eq!(crate::text!(Lang::En, "{n} blocks", "{n} 个块"), "3 blocks");
        assert_eq!(crate::text!(Lang::ZhCn, "{n} blocks", "{n} 个块"), "3 个块");
        assert_eq!(crate::text!(Lang::ZhCn, "{} of {}", "{1} 中的 {0}", 1, 2), "2 中的 1");
        assert_eq!(Lang::ZhCn.pick("yes", "是"), "是");
    }
}
