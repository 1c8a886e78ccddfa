//! The plan report (Markdown / JSON), the what-if curves (CSV) and the hardware options table.

use super::ScenarioFile;
use crate::cost;
use crate::estimate::{Estimate, Mode, Scenario};
use crate::fit::{self, Knob};
use crate::gpu;
use crate::i18n::Lang;
use crate::report::{self, FitInfo};
use crate::roadmap;
use crate::text;
use crate::units::GIB;
use serde::Serialize;
use serde_json::{Value, json};
use std::fmt::Write as _;

fn g(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / GIB)
}

/// The report's JSON: the estimate (as `estimate --json`), the plan's settings, the what-if
/// curves and the hardware options.
pub fn report_json(f: &ScenarioFile, e: &Estimate) -> Value {
    let gpu = f.gpu();
    let fit = gpu.as_ref().map(|g| {
        let cap = g.capacity();
        FitInfo {
            fits: fit::fits(&f.scenario, cap),
            max_batch: fit::max_batch(&f.scenario, cap),
            max_seq: fit::max_seq(&f.scenario, cap),
            gpu: g.clone(),
        }
    });
    let mut v = report::to_json(&f.scenario, e, fit.as_ref(), &[]);
    if let Some(o) = v.as_object_mut() {
        o.insert("parallel".into(), json!(f.scenario.parallel));
        o.insert("global_batch".into(), json!(f.global_batch()));
        o.insert("grad_accum".into(), json!(f.grad_accum()));
        let curves: serde_json::Map<String, Value> = Knob::ALL
            .iter()
            .map(|&k| {
                let cap = gpu.as_ref().map(|g| g.capacity());
                let pts: Vec<Value> = fit::sweep(&f.scenario, k, table_values(k, &f.scenario), cap)
                    .iter()
                    .map(|p| json!({"x": p.x, "peak_bytes": p.peak, "total_bytes": p.total, "fits": p.fits}))
                    .collect();
                (knob_name(k, &f.scenario).to_owned(), Value::Array(pts))
            })
            .collect();
        o.insert("what_if".into(), Value::Object(curves));
        o.insert("options".into(), json!(options(f)));
    }
    v
}

/// The knob's key in the JSON and the CSV: a vision model's sequence knob is its image side.
fn knob_name(k: Knob, sc: &Scenario) -> &'static str {
    match k {
        Knob::Batch => "batch",
        Knob::Seq if sc.image_size().is_some() => "image_side",
        // a vision-language model's: its text, beside the images' tokens
        Knob::Seq if sc.vlm_images().is_some() => "text_tokens",
        Knob::Seq => "seq",
        Knob::Segments => "segments",
        Knob::Gpus => "gpus",
    }
}

/// The few values a report's what-if table shows, the scenario's own among them (the curves
/// CSV has the full sweeps).
fn table_values(k: Knob, sc: &Scenario) -> Vec<u64> {
    let with = |mut v: Vec<u64>, own: u64| {
        v.push(own);
        v.sort_unstable();
        v.dedup();
        v
    };
    match k {
        Knob::Batch => with(vec![1, 2, 4, 8, 16, 32, 64], sc.batch),
        Knob::Seq | Knob::Segments if sc.model.traced().is_some() => Vec::new(),
        // a vision model's sequence knob is its image side (pixels, whole patches)
        Knob::Seq if let Some(i) = sc.image_size() => {
            let p = sc.model.patches().map_or(1, |p| p.patch);
            let v = [224u64, 336, 384, 448, 512, 768, 1024].into_iter().map(|x| (x / p).max(1) * p).collect();
            with(v, i.height.max(i.width))
        }
        Knob::Seq => {
            // the context the config declares (a Hub config's `max_position_embeddings` is read
            // as its context length), at least the scenario's own
            let max = sc
                .model
                .transformer()
                .map_or(4096, |t| t.context_length.max(t.max_position_embeddings).max(512))
                .max(sc.seq)
                .saturating_sub(sc.image_tokens());
            let v =
                [512u64, 1024, 2048, 4096, 8192, 16384, 32768].into_iter().filter(|&s| s <= max).collect();
            // a vision-language model's knob is its text (the images' tokens are added)
            with(v, sc.text_tokens())
        }
        Knob::Segments => {
            let l = sc.model.transformer().map_or(1, |t| t.num_layers);
            let mut v: Vec<u64> = [1, 2, 4, 8, 16, 32, l].into_iter().filter(|&s| s <= l).collect();
            v.sort_unstable();
            v.dedup();
            v
        }
        Knob::Gpus => vec![1, 2, 4, 8, 16, 32, 64],
    }
}

/// One hardware option: a catalog card, whether the plan fits it, and the cheapest cloud price.
#[derive(Clone, Debug, Serialize)]
pub struct HwOption {
    /// Catalog id.
    pub gpu: String,
    /// Name.
    pub name: String,
    /// Capacity, bytes.
    pub capacity: u64,
    /// Fits?
    pub fits: bool,
    /// Headroom (negative: short by), bytes.
    pub headroom: i64,
    /// Largest micro-batch that fits.
    pub max_batch: Option<u64>,
    /// Cheapest on-demand price per GPU-hour in the catalog, and its instance.
    pub price_per_gpu_hour: Option<f64>,
    /// That instance.
    pub instance: Option<String>,
}

/// Every catalog card, for the scenario as it is (same parallel layout).
pub fn options(f: &ScenarioFile) -> Vec<HwOption> {
    gpu::catalog()
        .iter()
        .filter_map(|g| {
            let cap = g.capacity();
            // each card's own verdict (the allocator replayed on it), as `estimate --gpu` gives
            let v = fit::verdict(&f.scenario, cap).ok()?;
            let cheapest = cost::cheapest_on_demand(&g.id);
            Some(HwOption {
                fits: v.fits,
                headroom: v.headroom(),
                max_batch: fit::max_batch(&f.scenario, cap),
                price_per_gpu_hour: cheapest.map(cost::Instance::per_gpu_hour),
                instance: cheapest.map(|i| format!("{} {}", i.provider, i.name)),
                gpu: g.id.clone(),
                name: g.name.clone(),
                capacity: cap,
            })
        })
        .collect()
}

/// The plan report in Markdown: inputs, breakdown, what-if tables, options with prices, roadmap
/// (in English: [`report_markdown_in`] with [`Lang::En`]).
pub fn report_markdown(f: &ScenarioFile, e: &Estimate) -> String {
    report_markdown_in(f, e, Lang::En)
}

/// The heading of the report's breakdown, under which [`with_chart_link`] puts the chart.
fn breakdown_heading(lang: Lang) -> &'static str {
    lang.pick("## Per-GPU memory (most loaded rank)\n", "## 每 GPU 显存（负载最重的 rank）\n")
}

/// A what-if table's first column in `lang`.
fn knob_label(k: Knob, lang: Lang) -> &'static str {
    match k {
        Knob::Batch => lang.pick("batch", "微批次"),
        Knob::Seq => lang.pick("seq", "序列长度"),
        Knob::Segments => lang.pick("segments", "检查点段数"),
        Knob::Gpus => lang.pick("gpus", "GPU 数"),
    }
}

/// [`report_markdown`] with its headings, table headers and sentences in `lang`; the figures, the
/// settings' values (as the flags spell them) and the embedded roadmap are the same in every
/// language.
pub fn report_markdown_in(f: &ScenarioFile, e: &Estimate, lang: Lang) -> String {
    let sc = &f.scenario;
    let mut s = String::new();
    md_inputs(&mut s, f, e, lang);
    md_breakdown(&mut s, e, lang);
    md_fit(&mut s, f, e, lang);
    md_what_if(&mut s, sc, f.gpu().map(|g| g.capacity()), lang);
    md_hardware(&mut s, f, lang);
    md_roadmap(&mut s, f, lang);
    let _ = writeln!(
        s,
        "{}",
        text!(
            lang,
            "\n---\nvramscope {}; prices from presets/clouds.ron.",
            "\n---\nvramscope {}；价格取自 presets/clouds.ron。",
            env!("CARGO_PKG_VERSION")
        )
    );
    s
}

/// The report's title and its inputs table.
fn md_inputs(s: &mut String, f: &ScenarioFile, e: &Estimate, lang: Lang) {
    let sc = &f.scenario;
    let p = &sc.parallel;
    let _ = writeln!(s, "{}", text!(lang, "# Memory plan: {}\n", "# 显存规划：{}\n", sc.model.name));
    // what the numbers rest on, as the CLI says it: the family and whether it was measured, and
    // what is not modelled
    let _ = writeln!(s, "> {}", report::validation_line(sc));
    for c in report::caveats(sc) {
        let _ = writeln!(s, ">\n> {}", text!(lang, "note: {}", "注：{}", c));
    }
    s.push('\n');
    let _ = writeln!(
        s,
        "{}",
        lang.pick("## Inputs\n\n| setting | value |\n|---|---|", "## 输入\n\n| 设置 | 值 |\n|---|---|")
    );
    let rows: Vec<(&str, String)> = vec![
        (
            lang.pick("model", "模型"),
            text!(
                lang,
                "{} ({} parameters)",
                "{}（{} 参数）",
                sc.model.name,
                report::human_count(e.n_params)
            ),
        ),
        (lang.pick("mode", "模式"), sc.mode_label_in(lang)),
        (lang.pick("method", "方法"), sc.method_in(lang)),
        match (sc.vlm_images(), sc.image_size()) {
            (Some(v), _) => (
                lang.pick("micro-batch x sequence", "微批次 x 序列长度"),
                crate::text!(
                    lang,
                    "{} x {} ({} text + {} image tokens: {} × {}, {} tokens per image)",
                    "{} x {}（{} 个文本 token + {} 个图像 token：{} × {}，每张图像 {} 个 token）",
                    sc.batch,
                    sc.seq,
                    sc.text_tokens(),
                    v.tokens(),
                    v.count,
                    v.size,
                    v.per_image()
                ),
            ),
            (None, Some(i)) => (
                lang.pick("micro-batch x image", "微批次 x 图像"),
                format!("{} x {i} ({} tokens)", sc.batch, sc.seq),
            ),
            _ if sc.model.traced().is_some() => (
                lang.pick("micro-batch x dims", "微批次 x 维度"),
                format!("{} x {}", sc.batch, report::shape_text(sc)),
            ),
            (None, None) => (
                lang.pick("micro-batch x sequence", "微批次 x 序列长度"),
                format!("{} x {}", sc.batch, sc.seq),
            ),
        },
        (
            lang.pick("global batch / accumulation", "全局批次 / 梯度累积"),
            format!("{} / {}", f.global_batch(), f.grad_accum()),
        ),
        (lang.pick("precision", "精度"), sc.precision.to_string()),
        (lang.pick("optimizer", "优化器"), format!("{:?}", sc.optimizer).to_lowercase()),
        (lang.pick("checkpointing", "梯度检查点"), sc.checkpointing.to_string()),
        (lang.pick("attention", "注意力"), sc.attention.name().to_string()),
        (lang.pick("training stack", "训练栈"), {
            let d = sc.stack.describe();
            if d.is_empty() {
                lang.pick("defaults, PyTorch 2.2 or later", "默认，PyTorch 2.2 及更新").into()
            } else {
                d
            }
        }),
        (
            lang.pick("parallel", "并行"),
            format!(
                "dp {} (ZeRO {}{}), tp {}{}, pp {}, cp {}, ep {}, {}",
                p.dp,
                p.zero,
                p.fsdp.map_or(String::new(), |m| format!(", FSDP {m:?}")),
                p.tp,
                if p.sp { " + SP" } else { "" },
                p.pp,
                p.cp,
                p.ep,
                offload_in(p.offload, p.fsdp.is_some(), lang)
            ),
        ),
        ("GPU", f.gpu().map_or_else(|| lang.pick("(none chosen)", "（未选择）").into(), |g| g.name)),
    ];
    for (k, v) in rows {
        let _ = writeln!(s, "| {k} | {v} |");
    }
}

/// What the layout moves off the GPU, in words: "no offload", "optimizer offloaded to the CPU".
fn offload_in(o: crate::estimate::Offload, fsdp: bool, lang: Lang) -> &'static str {
    use crate::estimate::Offload;
    match (o, fsdp) {
        (Offload::None, _) => lang.pick("no offload", "不卸载"),
        (Offload::Optimizer, _) => lang.pick("optimizer offloaded to the CPU", "优化器卸载到 CPU"),
        (Offload::Params, true) => {
            lang.pick("parameters offloaded to the CPU (FSDP)", "参数卸载到 CPU（FSDP）")
        }
        (Offload::Params, false) => lang.pick("parameters offloaded to NVMe", "参数卸载到 NVMe"),
    }
}

/// The breakdown table and where the peak is.
fn md_breakdown(s: &mut String, e: &Estimate, lang: Lang) {
    let _ = writeln!(
        s,
        "\n{}\n{}\n|---|---:|---:|",
        breakdown_heading(lang),
        lang.pick("| component | bytes | GiB |", "| 组成项 | 字节 | GiB |")
    );
    let zero = (lang.pick("ZeRO buckets (DeepSpeed)", "ZeRO 通信桶（DeepSpeed）"), e.zero_buckets);
    for (k, b) in [
        (lang.pick("parameters", "参数"), e.parameters),
        (lang.pick("gradients", "梯度"), e.gradients),
        (lang.pick("optimizer states", "优化器状态"), e.optimizer_states),
        (lang.pick("activations (saved)", "激活值（为反向保存）"), e.activations),
        (lang.pick("KV cache", "KV 缓存"), e.kv_cache),
    ]
    .into_iter()
    .chain((e.zero_buckets > 0).then_some(zero))
    .chain([
        (lang.pick("peak allocated", "已分配峰值"), e.peak_allocated),
        (lang.pick("CUDA context + allocator", "CUDA 上下文 + 分配器"), e.overhead),
        (lang.pick("total (nvidia-smi)", "总量（nvidia-smi）"), e.total),
    ]) {
        let _ = writeln!(s, "| {k} | {b} | {:.2} |", b as f64 / GIB);
    }
    let _ = match lang {
        Lang::En => writeln!(
            s,
            "\nPeak at: {} ({:?}); temporaries then {}.",
            e.peak.what,
            e.peak.phase,
            g(e.peak.alive.temporaries)
        ),
        Lang::ZhCn => writeln!(
            s,
            "\n峰值出现在：{}；此时临时张量 {}。",
            e.peak.describe_in(lang),
            g(e.peak.alive.temporaries)
        ),
    };
}

/// Whether the plan fits its card, and the largest micro-batch that does.
fn md_fit(s: &mut String, f: &ScenarioFile, e: &Estimate, lang: Lang) {
    let sc = &f.scenario;
    if let Some(gpu) = f.gpu() {
        let cap = gpu.capacity();
        let verdict = if fit::fits(sc, cap) {
            text!(lang, "fits, {} free", "放得下，剩余 {}", g(cap.saturating_sub(e.total)))
        } else if e.total > cap {
            text!(lang, "does NOT fit, short by {}", "放不下，还差 {}", g(e.total - cap))
        } else {
            text!(
                lang,
                "does NOT fit: {} below the card, but the allocator replay finds no free block for one request (fragmentation)",
                "无法容纳：总量比显卡容量低 {}，但分配器重放找不到能满足某次申请的空闲块（碎片化）",
                g(cap - e.total)
            )
        };
        let mb = fit::max_batch(sc, cap).map_or_else(|| lang.pick("none", "无").into(), |b| b.to_string());
        let _ = writeln!(
            s,
            "{}",
            text!(
                lang,
                "\n{} ({}): {verdict}; largest micro-batch that fits: {mb}.",
                "\n{}（{}）：{verdict}；可容纳的最大微批次：{mb}。",
                gpu.name,
                g(cap)
            )
        );
    }
}

/// The what-if tables, one a knob: each row what `vramscope estimate` prints with the knob's flag
/// at that value (the allocator replayed on the card), and whether it fits.
fn md_what_if(s: &mut String, sc: &Scenario, cap: Option<u64>, lang: Lang) {
    let _ = writeln!(s, "\n{}\n", lang.pick("## What if", "## 假设分析"));
    for k in Knob::ALL {
        if k == Knob::Segments && sc.mode != Mode::Train {
            continue;
        }
        let pts = fit::sweep(sc, k, table_values(k, sc), cap);
        if pts.is_empty() {
            continue;
        }
        let (fits_head, fits_rule) =
            if cap.is_some() { (lang.pick(" | fits", " | 可容纳"), "|---") } else { ("", "") };
        let _ = writeln!(
            s,
            "| {} | {}{fits_head} |\n|---:|---:|---:{fits_rule}|",
            match k {
                // a vision model's sequence knob is its square image's side
                Knob::Seq if sc.image_size().is_some() => lang.pick("image side (px)", "图像边长（像素）"),
                Knob::Seq if sc.vlm_images().is_some() => lang.pick("text tokens", "文本 token 数"),
                _ => knob_label(k, lang),
            },
            lang.pick("peak allocated | total", "已分配峰值 | 总量")
        );
        for pt in pts {
            let fits = if cap.is_none() {
                String::new()
            } else {
                format!(" | {}", if pt.fits { lang.pick("yes", "是") } else { lang.pick("no", "否") })
            };
            let _ = writeln!(s, "| {} | {} | {}{fits} |", pt.x, g(pt.peak), g(pt.total));
        }
        s.push('\n');
    }
}

/// The hardware options table (same layout).
fn md_hardware(s: &mut String, f: &ScenarioFile, lang: Lang) {
    let _ = writeln!(
        s,
        "{}",
        lang.pick(
            "## Hardware options (same layout)\n\n| GPU | memory | fits | headroom | largest micro-batch | cheapest on-demand |\n|---|---:|---|---:|---:|---|",
            "## 硬件方案（相同布局）\n\n| GPU | 显存 | 可容纳 | 余量 | 可容纳的最大微批次 | 最便宜的按需价格 |\n|---|---:|---|---:|---:|---|"
        )
    );
    for o in options(f) {
        let price = match (&o.instance, o.price_per_gpu_hour) {
            (Some(i), Some(p)) => text!(lang, "${p:.2}/GPU-h ({i})", "${p:.2}/GPU·小时（{i}）"),
            _ => "-".into(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:+.2} GiB | {} | {price} |",
            o.name,
            g(o.capacity),
            if o.fits { lang.pick("yes", "是") } else { lang.pick("no", "否") },
            o.headroom as f64 / GIB,
            o.max_batch.map_or_else(|| "-".into(), |b| b.to_string())
        );
    }
}

/// The plan's roadmap on its card, its headings one level down.
fn md_roadmap(s: &mut String, f: &ScenarioFile, lang: Lang) {
    let sc = &f.scenario;
    if let Some(r) = f.gpu().and_then(|gp| roadmap::roadmap_in(sc, &gp, 0.0, lang)) {
        let md = roadmap::to_markdown_in(sc, &r, None, lang);
        // demote the roadmap's headings one level under the report
        s.push('\n');
        for line in md.lines() {
            if line.starts_with('#') {
                s.push('#');
            }
            s.push_str(line);
            s.push('\n');
        }
    }
}

/// Inserts a link to the chart picture under the report's breakdown heading (a report in any
/// language; the link's text in the report's).
pub fn with_chart_link(report_md: &str, png_file_name: &str) -> String {
    let alt = |lang: Lang| lang.pick("per-GPU memory breakdown", "每 GPU 显存分解");
    for lang in Lang::ALL {
        let heading = breakdown_heading(lang);
        if let Some(i) = report_md.find(heading) {
            let at = i + heading.len();
            return format!("{}\n![{}]({png_file_name})\n{}", &report_md[..at], alt(lang), &report_md[at..]);
        }
    }
    format!("{report_md}\n![{}]({png_file_name})\n", alt(Lang::En))
}

/// The what-if curves: every knob's full sweep, one row per point.
pub fn curves_csv(f: &ScenarioFile) -> String {
    let cap = f.gpu().map(|g| g.capacity());
    let mut s = String::from("knob,value,peak_allocated_bytes,total_bytes,fits\n");
    for k in Knob::ALL {
        for p in fit::sweep(&f.scenario, k, k.values(&f.scenario), cap) {
            let fits = cap.map_or(String::new(), |_| p.fits.to_string());
            let _ = writeln!(s, "{},{},{},{},{fits}", knob_name(k, &f.scenario), p.x, p.peak, p.total);
        }
    }
    s
}
