//! Fonts: egui's own (Latin, Greek, symbols) with Noto Sans CJK SC after them as the fallback for
//! Chinese. The CJK face is subset to the characters the zh-CN interface uses plus the 3,755
//! common hanzi of GB2312 level 1 (`assets/fonts/subset.sh`, licence beside it), so the binary
//! grows by about 1.5 MB.

use eframe::egui::{FontData, FontDefinitions, FontFamily};
use std::sync::Arc;

/// The subset CJK face (OpenType/CFF, SIL Open Font License 1.1).
pub const CJK: &[u8] = include_bytes!("../../assets/fonts/NotoSansCJKsc-Regular-subset.otf");

/// The name the CJK face is registered under.
pub const CJK_NAME: &str = "noto-sans-cjk-sc";

/// egui's default fonts with the CJK face appended to every family, so text in any language
/// finds a glyph.
pub fn definitions() -> FontDefinitions {
    let mut f = FontDefinitions::default();
    f.font_data.insert(CJK_NAME.to_owned(), Arc::new(FontData::from_static(CJK)));
    for family in [FontFamily::Proportional, FontFamily::Monospace] {
        f.families.entry(family).or_default().push(CJK_NAME.to_owned());
    }
    f
}
