//! The texts of the presenter's controls beside [`super::tr`]: full screen, zoom, the Learn menu,
//! the keyboard-shortcut window, the curves' legends and hover read-outs, and the notes that keep
//! "allocated" and "what nvidia-smi shows" apart. English and Simplified Chinese side by side;
//! [`tr_controls`] answers in [`crate::gui::lang::current`].

use crate::gui::lang::{self, Lang};

strings! {
    /// The presenter's controls' texts. Placeholders in braces are replaced by the panels.
    pub struct ControlsStrings, CONTROLS_EN, CONTROLS_ZH {
        /// View → full screen (F11).
        fullscreen: "Full screen" / "全屏",
        /// View → the zoom now: "{pct}".
        zoom_now: "Zoom: {pct} %" / "缩放：{pct}%",
        zoom_in: "Zoom in" / "放大",
        zoom_out: "Zoom out" / "缩小",
        zoom_reset: "Reset zoom" / "重置缩放",
        /// Learn → start at the first lesson.
        learn_start: "Start at lesson 1" / "从第 1 课开始",
        /// Learn → leave the lessons.
        learn_leave: "Leave the lessons" / "退出课程",
        /// Help → the window of keys.
        menu_shortcuts: "Keyboard shortcuts…" / "键盘快捷键…",
        /// The window's title.
        shortcuts_title: "Keyboard shortcuts" / "键盘快捷键",
        /// What each key does.
        key_undo: "Undo" / "撤销",
        key_redo: "Redo" / "重做",
        key_zoom_in: "Zoom in (kept between runs)" / "放大（下次启动时保留）",
        key_zoom_out: "Zoom out" / "缩小",
        key_zoom_reset: "Reset zoom to 100 %" / "缩放恢复为 100%",
        key_fullscreen: "Full screen on or off" / "开启或关闭全屏",
        key_next: "Next lesson (in the lessons)" / "下一课（课程中）",
        key_back: "Lesson before (in the lessons)" / "上一课（课程中）",
        key_leave: "Leave the lessons" / "退出课程",
        key_quit: "Quit" / "退出",
        /// The note under the table.
        keys_note: "The lesson keys act while no text field or slider has the keyboard."
            / "课程快捷键仅在没有文本框或滑块获得键盘焦点时生效。",
        /// The model section's Hub field: its label.
        hub_field: "Hub id" / "Hub 模型 ID",
        /// The field's hint (what to type).
        hub_hint: "org/name[@revision]" / "组织/模型名[@修订版本]",
        hub_fetch: "Fetch" / "获取",
        hub_tip: "Fetch a model from the Hugging Face Hub by its id: config.json and the safetensors headers only, never the weights (HF_ENDPOINT, HF_TOKEN and the caches as on the command line). Enter fetches."
            / "按 ID 从 Hugging Face Hub 获取模型：只读取 config.json 和 safetensors 文件头，从不下载权重（HF_ENDPOINT、HF_TOKEN 和缓存与命令行相同）。按回车键获取。",
        /// Beside the spinner while a fetch runs: "{id}".
        hub_fetching: "Fetching {id}…" / "正在获取 {id}…",
        hub_cancel: "Cancel" / "取消",
        /// The menu of the ids fetched lately.
        hub_recent: "Recent" / "最近",
        hub_recent_tip: "Hub ids fetched lately (kept between runs); pick one to fetch it again."
            / "最近获取的 Hub 模型 ID（下次启动时保留）；选择一个即可再次获取。",
        /// The status line after a fetch: "{name}", "{notes}" (where it came from first).
        st_hub_loaded: "Loaded {name}: {notes}" / "已加载 {name}：{notes}",
        /// The status line after Cancel: "{id}".
        st_hub_cancelled: "Stopped waiting for {id}." / "已停止等待 {id}。",
        /// The status line when the field holds no Hub id: "{id}".
        st_hub_not_id: "{id} is not a Hub id (org/name[@revision])." / "{id} 不是 Hub 模型 ID（组织/模型名[@修订版本]）。",
        /// The curve's hover read-out: "{knob}", "{x}", "{value}".
        hover_at: "at {knob} {x}: {value}" / "{knob}为 {x} 时：{value}",
        /// The read-out when the pointer is elsewhere.
        hover_none: "hover the curve to read its value" / "将鼠标悬停在曲线上可读取数值",
        /// Under the headline while a timeline event is selected.
        headline_at_peak: "The headline and the bar stay at the step's peak (what nvidia-smi shows); \"Why this much?\" shows the selected moment."
            / "标题与柱状图仍显示该步的峰值（nvidia-smi 显示的量）；“为什么这么多？”显示所选时刻。",
        /// The timeline's own peak, next to the headline's total: "{gib}".
        tl_peak_allocated: "peak {gib} allocated" / "峰值 {gib}（已分配）",
        /// Under the timeline: why its peak is below the headline.
        tl_vs_headline: "The timeline shows what PyTorch has allocated ({peak} at the peak); the headline's {total} is what nvidia-smi shows: that plus the allocator's cache, the CUDA context and NCCL's buffers."
            / "时间线显示 PyTorch 已分配的显存（峰值 {peak}）；标题中的 {total} 是 nvidia-smi 显示的量：它加上分配器缓存、CUDA 上下文和 NCCL 缓冲区。",
        /// After the timeline's peak, the headline's figure named: "{total}".
        tl_headline_is: "the headline's {total} is what nvidia-smi shows" / "标题中的 {total} 是 nvidia-smi 显示的量",
        /// The selected moment beside the peak: "{gib}".
        tl_selected_allocated: "selected: {gib} allocated" / "选中：{gib}（已分配）",
        /// Under the segment curve where it steps up: "{layers}", "{n}", "{k}", "{seg}", "{last}".
        seg_steps_caption: "Not a smooth line: checkpoint_sequential checkpoints N-1 segments of {layers}/N blocks (rounded down) and runs the blocks left over as the last segment, which keeps all its activations. Where N does not divide the {layers} blocks that last segment is longer: at {n} segments, {k} of {seg} block(s) and a last one of {last}, so the curve steps up there."
            / "曲线不是平滑的：checkpoint_sequential 对 N-1 段（每段 {layers}/N 个块，向下取整）做检查点，剩下的块作为最后一段正常运行，保留其全部激活值。当 N 不能整除 {layers} 个块时，最后一段更长：{n} 段时为 {k} 段各 {seg} 个块加最后一段 {last} 个块，因此曲线在此处跳升。",
        /// Under the batch or sequence curve where a point sits below the one before.
        reserve_caption: "Not a smooth line: each point is what nvidia-smi shows, the allocated peak (which only grows) plus the caching allocator's reserve, whose size depends on how each size of block fills its segments; so a point can sit a little below the one before it. Hover the curve for both figures."
            / "曲线不是平滑的：每个点都是 nvidia-smi 显示的量，即已分配峰值（只增不减）加上缓存分配器的预留，而预留大小取决于各种尺寸的块如何填充其内存段；因此某个点可能略低于前一个点。将鼠标悬停在曲线上可查看这两个数字。",
    }
}

/// The presenter's controls' texts in the current language.
pub fn tr_controls() -> &'static ControlsStrings {
    match lang::current() {
        Lang::En => &CONTROLS_EN,
        Lang::ZhCn => &CONTROLS_ZH,
    }
}
