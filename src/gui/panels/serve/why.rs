//! "Why this much KV cache?": each term of vLLM's start-up accounting with its rule and the
//! numbers substituted, per GPU.

use crate::explain::Component;
use crate::gui::derived::ServeComputed;
use crate::gui::palette;
use crate::gui::panels::{exact, gib};
use crate::gui::strings::tr_serve;
use crate::text;
use crate::units::digits;
use eframe::egui::{self, RichText};

/// (colour, name, rule with numbers, bytes) per row.
fn rows(c: &ServeComputed) -> Vec<(Option<Component>, &'static str, String, u64)> {
    let t = tr_serve();
    let s = &c.serve;
    let b = &s.bytes;
    let st = &s.settings;
    let l = &s.layout;
    let per_request = l.blocks_per_request(st.max_model_len, st.max_num_batched_tokens);
    let lang = crate::gui::lang::current();
    let gpu = &c.gpu.name;
    let peak_at = crate::serve::profile::peak_at_in(&s.activation_peak_at, lang);
    vec![
        (
            None,
            t.cuda_total_line,
            text!(
                lang,
                "torch.cuda.mem_get_info() total of the {gpu}",
                "{gpu} 上 torch.cuda.mem_get_info() 的总量"
            ),
            b.cuda_total,
        ),
        (
            None,
            t.budget_line,
            format!("{} × {:.2} (--gpu-memory-utilization)", gib(b.cuda_total), st.gpu_memory_utilization),
            b.budget,
        ),
        (
            Some(Component::Parameters),
            t.seg_weights,
            text!(
                lang,
                "the checkpoint's tensors on one rank, {} (TP {}, PP {})",
                "单个 rank 上检查点文件的张量，{}（TP {}，PP {}）",
                st.dtype,
                st.tp,
                st.pp
            ),
            b.weights,
        ),
        (
            Some(Component::Activations),
            t.seg_profile,
            text!(
                lang,
                "a dummy forward over {} tokens and a sampler over {} rows: {}",
                "对 {} 个 token 的一次虚拟前向，以及对 {} 行的采样：{}",
                digits(st.max_num_batched_tokens),
                digits(st.max_num_seqs),
                peak_at
            ),
            b.activation_peak,
        ),
        (
            Some(Component::Overhead),
            t.seg_non_torch,
            lang.pick("cuBLAS workspace, NCCL buffers under TP/PP", "cuBLAS 工作区，TP/PP 下的 NCCL 缓冲区")
                .into(),
            b.non_torch,
        ),
        (
            Some(Component::Temporaries),
            t.seg_graphs,
            if st.enforce_eager {
                lang.pick("--enforce-eager: none", "--enforce-eager：无").into()
            } else {
                lang.pick(
                    "subtracted only when given (vLLM ≥ 0.21 estimates it)",
                    "仅在给定时扣除（vLLM ≥ 0.21 会自行估算）",
                )
                .into()
            },
            b.cudagraph,
        ),
        (
            Some(Component::KvCache),
            t.seg_kv,
            text!(
                lang,
                "budget − weights − profiling − non-torch − graphs: {} blocks of {} ({} tokens of every layer, {})",
                "预算 − 权重 − 剖析峰值 − 非 torch − CUDA graphs：{} 个块，每块 {}（每层 {} 个 token，{}）",
                digits(s.kv_blocks),
                exact(l.block_bytes()),
                l.block_size,
                st.kv_cache_dtype
            ),
            b.kv_cache,
        ),
        (None, t.tokens_of_kv, tokens_text(c, per_request), s.kv_bytes_per_token),
    ]
}

/// How the blocks make the tokens vLLM logs and the requests that fit (a hybrid model's state
/// groups take one block per request each).
fn tokens_text(c: &ServeComputed, per_request: u64) -> String {
    let (s, lang) = (&c.serve, crate::gui::lang::current());
    let (l, st) = (&s.layout, &s.settings);
    if l.state_layers > 0 {
        let (_, full, sliding, state) = l.groups();
        text!(
            lang,
            "{} blocks of {} tokens shared by {} layer groups, {} of them recurrent state (one block each per request): vLLM counts {} tokens; one {}-token request needs {} blocks: {:.2} at once",
            "{} 个块（每块 {} 个 token），由 {} 个层组共享，其中 {} 组是循环状态（每个请求各占一块）：vLLM 计为 {} 个 token；一个 {} token 的请求需要 {} 个块：可同时容纳 {:.2} 个",
            digits(s.kv_blocks),
            l.block_size,
            full + sliding + state,
            state,
            digits(s.kv_tokens),
            digits(st.max_model_len),
            digits(per_request),
            s.max_concurrency
        )
    } else {
        text!(
            lang,
            "{} blocks × {} = {} tokens; one {}-token request needs {} blocks: {:.2} at once",
            "{} 个块 × {} = {} 个 token；一个 {} token 的请求需要 {} 个块：可同时容纳 {:.2} 个",
            digits(s.kv_blocks),
            l.block_size,
            digits(s.kv_tokens),
            digits(st.max_model_len),
            digits(per_request),
            s.max_concurrency
        )
    }
}

/// Draws the table.
pub fn ui(ui: &mut egui::Ui, c: &ServeComputed) {
    let t = tr_serve();
    ui.heading(t.why_title);
    ui.label(RichText::new(t.why_hint).weak());
    egui::ScrollArea::vertical().id_salt("serve-why").show(ui, |ui| {
        egui::Grid::new("serve-why-grid").num_columns(4).spacing([8.0, 6.0]).striped(true).show(ui, |ui| {
            for (i, (comp, name, rule, bytes)) in rows(c).into_iter().enumerate() {
                let (rect, _) = ui.allocate_exact_size(egui::vec2(12.0, 12.0), egui::Sense::hover());
                if let Some(comp) = comp {
                    ui.painter().rect_filled(rect, 2.0, palette::color(comp));
                }
                ui.label(RichText::new(name).strong());
                // the last row is per token, not a share of the card
                let per = crate::gui::lang::current().pick(" bytes / token", " 字节/token");
                let shown = if i == 7 { format!("{}{per}", digits(bytes)) } else { gib(bytes) };
                ui.label(RichText::new(shown).strong()).on_hover_text(exact(bytes));
                ui.add(egui::Label::new(rule).wrap());
                ui.end_row();
            }
        });
        if !c.serve.notes.is_empty() {
            ui.add_space(6.0);
            ui.label(RichText::new(t.notes).strong());
            for n in &c.serve.notes {
                ui.add(egui::Label::new(RichText::new(format!("· {n}")).small()).wrap());
            }
        }
    });
}
