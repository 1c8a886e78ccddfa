//! The serving answer and its advice as text (what `vramscope serve` prints and the app exports).

use super::Serve;
use super::advice::{ServeAdvice, ServeStep};
use crate::i18n::Lang;
use crate::units::{digits as count, gib};

fn per_token(b: u64) -> String {
    if b >= 1 << 20 {
        format!("{:.2} MiB", b as f64 / f64::from(1u32 << 20))
    } else {
        format!("{:.1} KiB", b as f64 / 1024.0)
    }
}

/// `vramscope serve` as text: the one-line answer, the settings, each term per GPU, the notes.
pub fn answer(s: &Serve, gpu_name: &str) -> String {
    let st = &s.settings;
    let b = &s.bytes;
    let gpus = st.tp * st.pp;
    let mut o = if s.fits {
        format!(
            "{} on {}×{}: {} tokens of KV cache, {:.1} concurrent {}-token requests\n",
            s.model,
            gpus,
            gpu_name,
            count(s.kv_tokens),
            s.max_concurrency,
            count(st.max_model_len)
        )
    } else if s.kv_tokens > 0 {
        format!(
            "{} on {}×{}: the server does not start — one {}-token request needs more than the {} tokens of KV cache left\n",
            s.model,
            gpus,
            gpu_name,
            count(st.max_model_len),
            count(s.kv_tokens)
        )
    } else {
        format!(
            "{} on {}×{}: the server does not start — nothing is left for the KV cache\n",
            s.model, gpus, gpu_name
        )
    };
    if let (Some(c), Some(n)) = (s.context, s.concurrency_at_context) {
        o += &format!("  at a {}-token context: {n:.1} concurrent requests\n", count(c));
    }
    o += &format!("  settings: {}\n\n", s.settings.args().join(" "));
    o += "  per GPU\n";
    let rows = [
        ("CUDA-visible total", b.cuda_total),
        ("budget (x utilisation)", b.budget),
        ("weights", b.weights),
        ("profiling peak", b.activation_peak),
        ("non-torch (cuBLAS, NCCL)", b.non_torch),
        ("CUDA graphs", b.cudagraph),
        ("KV cache", b.kv_cache),
    ];
    for (k, v) in rows {
        o += &format!("  {k:<26} {:>12}\n", gib(v));
    }
    o += &format!("  profiling peak at: {}\n", s.activation_peak_at);
    let l = &s.layout;
    o += &if l.state_layers > 0 && l.full_layers + l.sliding_layers == 0 {
        format!(
            "  state cache: {} blocks, one per request ({:.1} KiB per layer)\n",
            count(s.kv_blocks),
            l.page_bytes as f64 / 1024.0
        )
    } else {
        format!(
            "  KV cache: {} blocks of {} tokens ({} per token)\n",
            count(s.kv_blocks),
            l.block_size,
            per_token(s.kv_bytes_per_token)
        )
    };
    o += &if s.fits {
        format!("  starts: yes; the longest request that fits: {} tokens\n", count(s.max_model_len_that_fits))
    } else if s.max_model_len_that_fits > 0 {
        format!(
            "  starts: no — --max-model-len {} is the longest that fits\n",
            count(s.max_model_len_that_fits).replace(',', "")
        )
    } else {
        "  starts: no — nothing is left for the KV cache\n".into()
    };
    for n in &s.notes {
        o += &format!("  note: {n}\n");
    }
    o
}

/// `serve --options` (each change alone, `options`) or `--roadmap` as text: each row's figures
/// and the command that gives them; `model` is the `--model` value. In English.
pub fn advice(a: &ServeAdvice, model: &str, options: bool) -> String {
    advice_in(a, model, options, Lang::En)
}

/// [`advice`] with its frame in `lang` (the rows' texts are the advice's own: make it with
/// [`super::advice::advise_in`] in the same language); commands and flags stay as they are.
pub fn advice_in(a: &ServeAdvice, model: &str, options: bool, lang: Lang) -> String {
    let b = &a.before;
    let mut o = format!("{}\n", a.headline);
    let at = |c: f64, n: u64| {
        let n = count(n);
        crate::text!(lang, ", {c:.1} at {n} tokens", "，{n} token 时为 {c:.1}")
    };
    let ctx = match (b.concurrency_at_context, b.context) {
        (Some(c), Some(n)) => at(c, n),
        _ => String::new(),
    };
    let (kv, conc, len) = (count(b.kv_tokens), b.max_concurrency, count(b.settings.max_model_len));
    let starts =
        if b.fits { lang.pick("starts", "可启动") } else { lang.pick("does not start", "无法启动") };
    o += &crate::text!(
        lang,
        "  now: {kv} tokens of KV cache, {conc:.1} concurrent {len}-token requests{ctx}, {starts}\n",
        "  当前：KV 缓存 {kv} 个 token，可并发 {conc:.1} 个 {len} token 的请求{ctx}，{starts}\n"
    );
    o += &format!("    vramscope serve --model {model} {}\n\n", b.args().join(" "));
    let row = |o: &mut String, st: &ServeStep| {
        let ctx = match (st.concurrency_at_context, st.serve.context) {
            (Some(c), Some(n)) => at(c, n),
            _ => String::new(),
        };
        let cost = st
            .cost_change
            .map(|c| {
                let p = c * 100.0;
                crate::text!(lang, ", price {p:+.0} %", "，价格 {p:+.0} %")
            })
            .unwrap_or_default();
        let (when, title, effort, gpus) = (st.horizon.label_in(lang), &st.title, st.effort, st.gpus);
        let (tokens, conc) = (count(st.kv_tokens), st.max_concurrency);
        let verdict = super::advice::verdict_in(&st.serve, lang);
        let (trade_off, changes, args) = (&st.trade_off, st.changes.join(" "), st.serve_args.join(" "));
        *o += &crate::text!(
            lang,
            "  [{when}] {title} ({effort} effort)\n    {gpus} GPU(s): {tokens} tokens, {conc:.1} concurrent{ctx}, {verdict}{cost}\n    trade-off: {trade_off}\n    changes: {changes}\n    vramscope serve --model {model} {args}\n",
            "  [{when}] {title}（投入：{effort}）\n    {gpus} 张 GPU：{tokens} 个 token，可并发 {conc:.1}{ctx}，{verdict}{cost}\n    代价：{trade_off}\n    改动：{changes}\n    vramscope serve --model {model} {args}\n"
        );
    };
    if options {
        o += lang.pick("  each change alone:\n", "  单独应用每项更改：\n");
        for st in &a.options {
            row(&mut o, st);
        }
        // the headline names where the path ends: the path itself, so that its command is here
        if !a.roadmap.is_empty() {
            o += lang.pick(
                "\n  the path the headline names (each step on top of the ones before):\n",
                "\n  标题所指的路线（每一步叠加在之前各步之上）：\n",
            );
            for st in &a.roadmap {
                row(&mut o, st);
            }
        }
    } else {
        o += lang.pick(
            "  the path (each step on top of the ones before):\n",
            "  路线图（每一步叠加在之前各步之上）：\n",
        );
        if a.roadmap.is_empty() {
            o += lang.pick("    (no step needed)\n", "    （无需任何步骤）\n");
        }
        for st in &a.roadmap {
            row(&mut o, st);
        }
    }
    if !a.beside.is_empty() {
        o += lang.pick(
            "\n  beside it (changes what the server accepts):\n",
            "\n  路线图之外（会改变服务器接受的请求）：\n",
        );
        for st in &a.beside {
            row(&mut o, st);
        }
    }
    o
}
