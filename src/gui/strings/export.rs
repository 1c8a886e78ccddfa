//! The texts of what the window writes and shows side by side: the save prompt every export
//! opens, the Compare tab's rows and the slide's legend, English and Simplified Chinese side by
//! side; [`tr_export`] answers in [`crate::gui::lang::current`].

use crate::gui::lang::{self, Lang};

strings! {
    /// The save prompt's, Compare's and the slide's texts.
    pub struct ExportStrings, EXPORT_EN, EXPORT_ZH {
        save_as: "Save as" / "另存为",
        save: "Save" / "保存",
        cancel: "Cancel" / "取消",
        path_tip: "The file to write (a relative path is under the folder vramscope was started in). Enter saves, Escape cancels."
            / "要写入的文件（相对路径位于启动 vramscope 时的文件夹下）。按回车保存，按 Esc 取消。",
        will_replace: "{path} exists: saving replaces it." / "{path} 已存在：保存会替换它。",
        no_folder: "The folder {dir} does not exist." / "文件夹 {dir} 不存在。",
        empty_path: "Type a file name to save to." / "请输入要保存的文件名。",
        total_smi: "total (nvidia-smi)" / "总量（nvidia-smi）",
        legend_item: "{label}: {what}" / "{label}：{what}",
        diff_title: "Compared with the pinned scenarios" / "与固定场景的比较",
        legend_cache: "allocator cache (reserved beyond the allocated peak)" / "分配器缓存（超出已分配峰值的保留显存）",
    }
}

/// The save prompt's, Compare's and the slide's texts in the current language.
pub fn tr_export() -> &'static ExportStrings {
    match lang::current() {
        Lang::En => &EXPORT_EN,
        Lang::ZhCn => &EXPORT_ZH,
    }
}
