//! The Live tab's own texts beside [`super::tr`] and [`super::tr_cluster`]: the lines the panels
//! put together around the core's numbers and diagnoses (which the core writes in the language
//! itself, see [`crate::i18n`]), English and Simplified Chinese side by side. [`tr_live`] answers
//! in [`crate::gui::lang::current`].

use crate::gui::lang::{self, Lang};

strings! {
    /// The Live tab's texts around the core's diagnoses. Placeholders in braces are replaced by the
    /// panels.
    pub struct LiveStrings, LIVE_EN, LIVE_ZH {
        /// The GPU shown and its use: "{name}", "{used}", "{total}".
        gpu_usage: "{name}: {used} of {total}" / "{name}：已用 {used} / {total}",
        /// The curve's verdict under the plot: "{label}" ("Curve"), "{verdict}".
        verdict_line: "{label}: {verdict}" / "{label}：{verdict}",
        /// The process table's PID column.
        col_pid: "pid" / "PID",
        /// One ranked fix: "{change}", "{saves}", "{total}".
        fix_line: "• {change}: saves {saves}, total {total}" / "• {change}：节省 {saves}，总量 {total}",
        /// A GPU of a cluster: "{host}", "{gpu}".
        gpu_on_host: "{host} GPU {gpu}" / "{host} GPU {gpu}",
        /// Between the items of a list of GPUs.
        list_sep: ", " / "、",
        /// The sampling thread did not start: "{e}".
        sampling_thread_failed: "could not start the sampling thread: {e}" / "无法启动采样线程：{e}",
        /// The range thread did not start: "{e}".
        range_thread_failed: "could not start the range thread: {e}" / "无法启动读取时间范围的线程：{e}",
        /// A recording over the size limit: "{mib}".
        recording_too_large: "larger than {mib} MiB" / "超过 {mib} MiB",
    }
}

/// The Live tab's texts in the current language.
pub fn tr_live() -> &'static LiveStrings {
    match lang::current() {
        Lang::En => &LIVE_EN,
        Lang::ZhCn => &LIVE_ZH,
    }
}

impl LiveStrings {
    /// A cluster's GPU by its host and index ("gpu-node-1 GPU 3").
    pub fn host_gpu(&self, host: &str, gpu: u32) -> String {
        self.gpu_on_host.replace("{host}", host).replace("{gpu}", &gpu.to_string())
    }

    /// A list of GPUs (or other items) joined in the language's way.
    pub fn list(&self, items: &[String]) -> String {
        items.join(self.list_sep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GPU and a list of them in each language (the placeholders: `strings::tests`).
    #[test]
    fn gpus_are_named_and_listed_in_the_language() {
        assert_eq!(LIVE_EN.host_gpu("n1", 3), "n1 GPU 3");
        assert_eq!(LIVE_ZH.host_gpu("n1", 3), "n1 GPU 3");
        let gpus = ["n1 GPU 0".to_owned(), "n1 GPU 1".to_owned()];
        assert_eq!(LIVE_EN.list(&gpus), "n1 GPU 0, n1 GPU 1");
        assert_eq!(LIVE_ZH.list(&gpus), "n1 GPU 0、n1 GPU 1");
    }
}
