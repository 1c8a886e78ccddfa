//! The interface language: English or Simplified Chinese (zh-CN), chosen with View → Language or
//! `--lang`, else the system locale; the panels read it through [`super::strings::tr`] and
//! [`current`], which they pass to the core's texts.

pub use crate::i18n::Lang;
use std::cell::Cell;

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
    fn the_ui_thread_keeps_its_language() {
        set(Lang::ZhCn);
        assert_eq!(current(), Lang::ZhCn);
        set(Lang::En);
        assert_eq!(current(), Lang::En);
    }
}
