//! The interface language: English or Simplified Chinese (zh-CN), chosen with View → Language or
//! `--lang`, else the system locale; the panels read it through [`super::strings::tr`].

use serde::{Deserialize, Serialize};
use std::cell::Cell;

/// A language of the interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Lang {
    /// English.
    #[default]
    #[serde(rename = "en")]
    En,
    /// Simplified Chinese.
    #[serde(rename = "zh-CN")]
    ZhCn,
}

impl Lang {
    /// Every language, in menu order.
    pub const ALL: [Self; 2] = [Self::En, Self::ZhCn];

    /// The BCP 47 tag (`--lang`'s value).
    pub const fn code(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::ZhCn => "zh-CN",
        }
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
        let l = s.trim().to_ascii_lowercase().replace('_', "-");
        match l.as_str() {
            "en" | "en-us" | "en-gb" | "english" => Ok(Self::En),
            "zh" | "zh-cn" | "zh-hans" | "zh-hans-cn" | "chinese" => Ok(Self::ZhCn),
            _ => Err(format!("--lang {s}: the interface speaks en or zh-CN")),
        }
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

thread_local! {
    // the UI thread's language (egui draws on one thread; tests each on their own)
    static CURRENT: Cell<Lang> = const { Cell::new(Lang::En) };
}

/// The language the panels draw in.
pub fn current() -> Lang {
    CURRENT.with(Cell::get)
}

/// Sets the language the panels draw in (on this thread).
pub fn set(l: Lang) {
    CURRENT.with(|c| c.set(l));
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
        set(Lang::ZhCn);
        assert_eq!(current(), Lang::ZhCn);
        set(Lang::En);
    }
}
