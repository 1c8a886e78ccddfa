//! The Live tab's own texts beside [`super::strings::tr`] and [`super::strings::tr_cluster`]: the
//! lines the panels put together around the core's numbers and diagnoses (which the core writes in
//! the language itself, see [`crate::i18n`]). [`tr_live`] answers in [`crate::gui::lang::current`].

use crate::gui::lang::Lang;

/// The Live tab's texts around the core's diagnoses. Placeholders in braces are replaced by the
/// panels.
#[derive(Clone, Copy, Debug)]
pub struct LiveStrings {
    /// The GPU shown and its use: "{name}", "{used}", "{total}".
    pub gpu_usage: &'static str,
    /// The curve's verdict under the plot: "{label}" ("Curve"), "{verdict}".
    pub verdict_line: &'static str,
    /// The process table's PID column.
    pub col_pid: &'static str,
    /// One ranked fix: "{change}", "{saves}", "{total}".
    pub fix_line: &'static str,
    /// A GPU of a cluster: "{host}", "{gpu}".
    pub gpu_on_host: &'static str,
    /// Between the items of a list of GPUs.
    pub list_sep: &'static str,
    /// The sampling thread did not start: "{e}".
    pub sampling_thread_failed: &'static str,
    /// The range thread did not start: "{e}".
    pub range_thread_failed: &'static str,
    /// A recording over the size limit: "{mib}".
    pub recording_too_large: &'static str,
}

pub const LIVE_EN_OLD: LiveStrings = LiveStrings {
    gpu_usage: "{name}: {used} of {total}",
    verdict_line: "{label}: {verdict}",
    col_pid: "pid",
    fix_line: "• {change}: saves {saves}, total {total}",
    gpu_on_host: "{host} GPU {gpu}",
    list_sep: ", ",
    sampling_thread_failed: "could not start the sampling thread: {e}",
    range_thread_failed: "could not start the range thread: {e}",
    recording_too_large: "larger than {mib} MiB",
};

pub const LIVE_ZH_OLD: LiveStrings = LiveStrings {
    gpu_usage: "{name}：已用 {used} / {total}",
    verdict_line: "{label}：{verdict}",
    col_pid: "PID",
    fix_line: "• {change}：节省 {saves}，总量 {total}",
    gpu_on_host: "{host} GPU {gpu}",
    list_sep: "、",
    sampling_thread_failed: "无法启动采样线程：{e}",
    range_thread_failed: "无法启动读取时间范围的线程：{e}",
    recording_too_large: "超过 {mib} MiB",
};

/// The Live tab's texts in the current language.
pub fn tr_live() -> &'static LiveStrings {
    match crate::gui::lang::current() {
        Lang::En => &LIVE_EN_OLD,
        Lang::ZhCn => &LIVE_ZH_OLD,
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
