//! What an out-of-memory message's numbers say: vLLM's and the numberless failures outside
//! PyTorch's allocator each have their own reading; PyTorch's and TensorFlow's numbers go
//! through [`RULES`], one rule a finding (or a line of explanation), in the order they write.

use super::read::gib;
use super::{Finding, OomNumbers, OtherProcess, Source};
use crate::i18n::Lang;
use crate::text;

/// What the readings write: the findings, the explanation's lines and the fixes, in order.
#[derive(Default)]
struct Notes {
    findings: Vec<Finding>,
    explanation: Vec<String>,
    fixes: Vec<String>,
}

/// The numbers the rules share, derived once from the message's.
struct Facts<'a> {
    n: &'a OomNumbers,
    lang: Lang,
    /// The card's total capacity.
    total: Option<u64>,
    /// The allocation that failed.
    requested: Option<u64>,
    /// Reserved by PyTorch but unallocated (given, or reserved − allocated).
    cached: Option<u64>,
    /// The processes the message names, less the one that is most likely this process.
    others: Vec<&'a OtherProcess>,
    /// Their memory together.
    named: u64,
    /// What this process's PyTorch holds: allocated + cached.
    own: Option<u64>,
    /// Memory outside this process's PyTorch: the named processes, or what the numbers leave.
    outside: u64,
    /// Neither processes nor this process's use are in the message.
    unnamed: bool,
}

/// The highest default `gpu_memory_utilization` of vLLM (`CacheConfig`: 0.9, 0.92 in recent
/// releases): a profiling peak above it leaves the KV cache nothing.
const VLLM_UTILIZATION: f64 = 0.92;

/// A rule: what one finding (or one line of explanation) adds to the notes.
type Rule = fn(&Facts, &mut Notes);

/// The rules for PyTorch's and TensorFlow's numbers, in the order they write.
const RULES: [Rule; 12] = [
    requested,
    request_exceeds_card,
    cached_and_fragmented,
    pytorch_hint,
    this_process_listed,
    other_processes_named,
    other_processes,
    outside_allocator_in_this_process,
    job_too_large,
    capped_below_card,
    more_messages,
    no_single_cause,
];

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 { one.to_owned() } else { many.to_owned() }
}

/// A size in the language: only "0 bytes" has a word in it.
fn size_in(b: u64, lang: Lang) -> String {
    if b == 0 { lang.pick("0 bytes", "0 字节").to_owned() } else { gib(b) }
}

/// The findings, explanation and fixes of a message from `source` with the numbers `n`.
pub(super) fn interpret(
    source: Source,
    n: &OomNumbers,
    lang: Lang,
) -> (Vec<Finding>, Vec<String>, Vec<String>) {
    let notes = match source {
        Source::Vllm => vllm(n, lang),
        Source::CudaRuntime | Source::Cublas => outside_allocator(source, lang),
        Source::PytorchCurrent | Source::PytorchLegacy | Source::Tensorflow => {
            let facts = Facts::new(n, lang);
            let mut notes = Notes::default();
            for rule in RULES {
                rule(&facts, &mut notes);
            }
            notes
        }
    };
    (notes.findings, notes.explanation, notes.fixes)
}

impl<'a> Facts<'a> {
    fn new(n: &'a OomNumbers, lang: Lang) -> Self {
        let (t, r) = (n.total, n.requested);
        let ru = n.reserved_unallocated.or_else(|| match (n.reserved, n.allocated) {
            (Some(res), Some(a)) => Some(res.saturating_sub(a)),
            _ => None,
        });
        // memory outside this process's PyTorch: other processes (named, or what the numbers leave)
        let others: Vec<&OtherProcess> = n.processes.iter().filter(|p| !p.likely_this_process).collect();
        let named: u64 = others.iter().map(|p| p.bytes).sum();
        let own = n.allocated.map(|a| a + ru.unwrap_or(0));
        let outside = if !n.processes.is_empty() {
            named
        } else if let (Some(t), Some(p)) = (t, n.process_in_use) {
            t.saturating_sub(p).saturating_sub(n.free.unwrap_or(0))
        } else if let (Some(t), Some(own), Some(free)) = (t, own, n.free) {
            // no process named: what is neither free nor PyTorch's (the context, other processes,
            // or on a unified-memory APU the host's share)
            t.saturating_sub(own).saturating_sub(free)
        } else {
            0
        };
        let unnamed = n.processes.is_empty() && n.process_in_use.is_none();
        Self { n, lang, total: t, requested: r, cached: ru, others, named, own, outside, unnamed }
    }
}

/// "One allocation of … failed."
fn requested(facts: &Facts, notes: &mut Notes) {
    let Facts { n, lang, .. } = *facts;
    let gib = |b: u64| size_in(b, lang);
    let Notes { explanation: e, .. } = notes;
    if let Some(r) = n.requested {
        e.push(text!(lang, "One allocation of {} failed.", "一次 {} 的分配失败了。", gib(r)));
    }
}

/// The request alone is larger than the card.
fn request_exceeds_card(facts: &Facts, notes: &mut Notes) {
    let Facts { lang, total: t, requested: r, .. } = *facts;
    let gib = |b: u64| size_in(b, lang);
    let Notes { findings: f, explanation: e, fixes: x } = notes;
    if let (Some(r), Some(t)) = (r, t)
        && r > t
    {
        f.push(Finding::RequestExceedsCard);
        e.push(text!(
            lang,
            "The request alone is larger than the whole card ({}): no setting of the allocator helps.",
            "仅这一次请求就超过了整张卡的容量（{}）：分配器怎么设置都无济于事。",
            gib(t)
        ));
        x.push(lang.pick(
            "shrink the tensor behind it: smaller micro-batch or sequence, chunked loss / logits, or split it across GPUs (tensor or sequence parallelism)",
            "缩小这次请求对应的张量：更小的微批次或序列长度、分块计算 loss / logits，或把它拆分到多块 GPU 上（张量并行或序列并行）",
        ).into());
    }
}

/// What PyTorch holds cached, and whether that cache is fragmented: the cache alone could have
/// served the request, or the cache and the free memory together could (the tensors plus the
/// request fit in what PyTorch could reach) while neither alone did. The cache is a real share of
/// the card either way — a few cached MiB on a full card are not the problem.
///
/// What is "reserved but unallocated" at the error is what is left after PyTorch's retry freed
/// every cached segment with no live block (`release_cached_blocks` before the error in
/// c10/cuda/CUDACachingAllocator.cpp): free pieces of segments that still hold tensors. Under
/// `expandable_segments:True` the retry unmaps those pieces' pages and maps them where the
/// request needs them (the allocator model's `classic_fragmentation_case`), so cache and free
/// memory add up.
fn cached_and_fragmented(facts: &Facts, notes: &mut Notes) {
    let Facts { n, lang, requested: r, total: t, cached: ru, .. } = *facts;
    let gib = |b: u64| size_in(b, lang);
    let Notes { findings: f, explanation: e, fixes: x } = notes;
    let conf = if n.backend.as_deref() == Some("HIP") {
        "PYTORCH_HIP_ALLOC_CONF"
    } else {
        "PYTORCH_CUDA_ALLOC_CONF"
    };
    let (Some(ru), Some(r)) = (ru, r) else { return };
    if f.contains(&Finding::RequestExceedsCard) {
        return;
    }
    e.push(text!(
        lang,
        "PyTorch holds {} reserved but unallocated (cached blocks).",
        "PyTorch 持有 {} 已保留但未分配的显存（缓存块）。",
        gib(ru)
    ));
    let share = t.is_none_or(|t| ru * 20 >= t);
    let free = n.free.unwrap_or(0);
    if ru >= r && share {
        e.push(lang.pick(
            "More memory is cached than was requested, yet no cached block was large enough: the cache is fragmented.",
            "缓存的显存比请求的多，却没有一个缓存块足够大：缓存已碎片化。",
        ).into());
    } else if let (true, Some(a)) = (share && n.free.is_some() && free < r && ru + free >= r, n.allocated) {
        let reachable = a + ru + free;
        if let Some(t) = t.filter(|t| n.vllm_profile_run && (a + r) as f64 > VLLM_UTILIZATION * *t as f64) {
            e.push(text!(
                lang,
                "This is vLLM's profiling run: even with its cache in one piece, its peak ({}, {:.0} % of the card) is above the gpu_memory_utilization vLLM's defaults allow (0.9; 0.92 in recent releases), which leaves no room for the KV cache.",
                "这是 vLLM 的 剖析运行（profiling）：即使缓存连成一片，其峰值（{}，整卡的 {:.0} %）也超过了 vLLM 默认允许的 gpu_memory_utilization（0.9；较新版本为 0.92），KV 缓存将没有空间。",
                gib(a + r),
                (a + r) as f64 * 100.0 / t as f64
            ));
            return;
        }
        e.push(text!(
            lang,
            "Neither the cache ({}) nor the free memory ({}) holds the {} alone, but together they hold {}: the tensors and the request ({}) fit in the {} PyTorch could reach, so the job is not too large for the card — the cache's free pieces sit between live tensors and could not be joined.",
            "缓存（{}）和空闲显存（{}）都无法单独容纳这 {}，但两者合计有 {}：张量加上这次请求（{}）放得进 PyTorch 可用的 {}，所以作业并没有超出这张卡——只是缓存中的空闲碎片夹在存活的张量之间，无法拼接起来。",
            gib(ru),
            gib(free),
            gib(r),
            gib(ru + free),
            gib(a + r),
            gib(reachable)
        ));
        at_the_edge(facts, reachable - (a + r), e, x);
    } else {
        return;
    }
    f.push(Finding::Fragmentation);
    x.insert(
        0,
        text!(
            lang,
            "export {conf}=expandable_segments:True  (lets segments grow instead of fragmenting)",
            "export {conf}=expandable_segments:True  （让段按需扩展，而不是碎片化）"
        ),
    );
}

/// After a fragmented cache: how much is left once the request is served, when that is under
/// 5 % of the card — the job runs at the edge.
fn at_the_edge(facts: &Facts, headroom: u64, e: &mut Vec<String>, x: &mut Vec<String>) {
    let Facts { lang, total: t, .. } = *facts;
    let Some(t) = t.filter(|t| headroom * 20 < *t) else { return };
    e.push(text!(
        lang,
        "That leaves {} ({:.1} % of the card) once the request is served: the job runs at the edge of the card. Expandable segments should let this step through; a longer sequence or a larger batch will not fit.",
        "满足这次请求后只剩 {}（整卡的 {:.1} %）：作业运行在显卡容量的边缘。可扩展段应能让这一步通过；更长的序列或更大的批次则放不下。",
        size_in(headroom, lang),
        headroom as f64 * 100.0 / t as f64
    ));
    x.push(lang.pick(
        "for headroom beyond that: a smaller micro-batch or sequence, or gradient checkpointing — `vramscope estimate` gives the step's peak against the card",
        "若要留出更多余量：减小微批次或序列长度，或启用梯度检查点 —— `vramscope estimate` 给出每步峰值与显卡容量的对比",
    ).into());
}

/// PyTorch's own advice at the end of its message, quoted, and whether the numbers say it
/// applies (PyTorch prints it on every out-of-memory error).
fn pytorch_hint(facts: &Facts, notes: &mut Notes) {
    let Facts { n, lang, total: t, cached: ru, .. } = *facts;
    let Some(hint) = &n.hint else { return };
    let Notes { findings: f, explanation: e, .. } = notes;
    e.push(match (f.contains(&Finding::Fragmentation), ru, t) {
        (true, _, _) => text!(lang, "PyTorch's own hint applies here: \"{hint}\"", "PyTorch 自己的提示在这里适用：\"{hint}\""),
        (false, Some(ru), Some(t)) if t > 0 => text!(
            lang,
            "PyTorch's own hint: \"{hint}\" Here {} is reserved but unallocated ({:.1} % of the card): not what fills it.",
            "PyTorch 自己的提示：\"{hint}\" 这里已保留但未分配的显存为 {}（整卡的 {:.1} %）：占满显卡的不是它。",
            size_in(ru, lang),
            ru as f64 * 100.0 / t as f64
        ),
        _ => text!(lang, "PyTorch's own hint: \"{hint}\"", "PyTorch 自己的提示：\"{hint}\""),
    });
}

/// A listed process that is most likely this one.
fn this_process_listed(facts: &Facts, notes: &mut Notes) {
    let Facts { n, lang, .. } = *facts;
    let Notes { explanation: e, .. } = notes;
    if let Some(me) = n.processes.iter().find(|p| p.likely_this_process) {
        e.push(text!(
            lang,
            "Process {} has {}: about what PyTorch reserved plus its context, so most likely this process itself (containers hide its own PID).",
            "进程 {} 占用 {}：约等于 PyTorch 保留的显存加上其 CUDA 上下文，因此很可能就是本进程（容器会隐藏它自己的 PID）。",
            me.pid,
            me.as_written
        ));
    }
}

/// The other processes the message names.
fn other_processes_named(facts: &Facts, notes: &mut Notes) {
    let Facts { lang, .. } = *facts;
    let Notes { explanation: e, .. } = notes;
    let others = &facts.others;
    if !others.is_empty() {
        let list: Vec<String> = others
            .iter()
            .map(|p| text!(lang, "process {} has {}", "进程 {} 占用 {}", p.pid, p.as_written))
            .collect();
        e.push(match lang {
            Lang::En => format!(
                "The message names {} on the card: {}.",
                plural(others.len(), "another process", "other processes"),
                list.join(", ")
            ),
            Lang::ZhCn => format!("报错中列出了卡上的其他进程：{}。", list.join("，")),
        });
    }
}

/// Other processes (or memory outside this PyTorch) holding a large share of the card.
fn other_processes(facts: &Facts, notes: &mut Notes) {
    let Facts { lang, total: t, named, outside, unnamed, .. } = *facts;
    let gib = |b: u64| size_in(b, lang);
    let Notes { findings: f, explanation: e, fixes: x } = notes;
    let others = &facts.others;
    // named processes count from a tenth of the card; an unnamed remainder also holds the CUDA
    // context (0.3-1.3 GiB), so it must be more than that as well
    if t.is_some_and(|t| outside > t / 10 && (!unnamed || outside > 3 << 29)) {
        f.push(Finding::OtherProcesses);
        if others.is_empty() {
            e.push(text!(
                lang,
                "About {} of the card is used outside this PyTorch (other processes, or on a unified-memory APU the host's share).",
                "卡上约有 {} 被本 PyTorch 之外的部分占用（其他进程；在统一内存的 APU 上则是主机占用的份额）。",
                gib(outside)
            ));
            x.push(lang.pick(
                "check `nvidia-smi` for other processes (a second job, a notebook kernel, a leftover worker) and stop them",
                "用 `nvidia-smi` 检查其他进程（另一个作业、notebook 内核、残留的 worker）并停止它们",
            ).into());
        } else {
            let pids = others
                .iter()
                .map(|p| format!("PID {}", p.pid))
                .collect::<Vec<_>>()
                .join(lang.pick(", ", "、"));
            x.push(match lang {
                Lang::En => format!(
                    "check `nvidia-smi` for {pids} (a second job, a notebook kernel, a leftover worker) and stop {}",
                    plural(others.len(), "it", "them")
                ),
                Lang::ZhCn => format!(
                    "用 `nvidia-smi` 检查 {pids}（另一个作业、notebook 内核、残留的 worker）并停止{}",
                    plural(others.len(), "它", "它们")
                ),
            });
        }
    } else if !others.is_empty() {
        e.push(text!(
            lang,
            "Together they hold {}: not what fills the card.",
            "它们合计占用 {}：并不是它们占满了显卡。",
            gib(named)
        ));
    }
}

/// This process's memory outside PyTorch's allocator, when it is a real share.
fn outside_allocator_in_this_process(facts: &Facts, notes: &mut Notes) {
    let Facts { n, lang, total: t, own, .. } = *facts;
    let gib = |b: u64| size_in(b, lang);
    let Notes { explanation: e, .. } = notes;
    if let (Some(t), Some(p), Some(own)) = (t, n.process_in_use, own) {
        let non_torch = p.saturating_sub(own);
        if non_torch * 20 > t {
            e.push(text!(
                lang,
                "This process holds {} outside PyTorch's allocator (CUDA context, cuBLAS / cuDNN workspaces, NCCL, other libraries).",
                "本进程在 PyTorch 分配器之外占用了 {}（CUDA 上下文、cuBLAS / cuDNN 工作区、NCCL、其他库）。",
                gib(non_torch)
            ));
        }
    }
}

/// PyTorch's own tensors fill the card.
fn job_too_large(facts: &Facts, notes: &mut Notes) {
    let Facts { n, lang, total: t, requested: r, cached: ru, outside, .. } = *facts;
    let gib = |b: u64| size_in(b, lang);
    let Notes { findings: f, explanation: e, fixes: x } = notes;
    let frag = f.contains(&Finding::Fragmentation);
    // the job too large: its tensors plus the request exceed what PyTorch could have had — its
    // cache, the free memory and, if they were gone, the other processes' share
    if let (Some(t), Some(a), Some(r), false) = (t, n.allocated, r, frag)
        && !f.contains(&Finding::RequestExceedsCard)
    {
        let reachable = a
            + ru.unwrap_or(0)
            + n.free.unwrap_or(0)
            + if f.contains(&Finding::OtherProcesses) { outside } else { 0 };
        if (a + r) as f64 > 0.95 * reachable as f64 {
            f.push(Finding::JobTooLarge);
            e.push(text!(
                lang,
                "PyTorch tensors take {} of {} and need {} more: the job itself is too large for this card.",
                "PyTorch 张量已占用 {1} 中的 {0}，还需要 {2}：作业本身对这张卡来说太大了。",
                gib(a),
                gib(t),
                gib(r)
            ));
            if r * 2 > t {
                e.push(text!(
                    lang,
                    "The single request is {:.0} % of the card: shrink or chunk the tensor behind it.",
                    "单次请求就占了整卡的 {:.0} %：缩小这次请求对应的张量，或分块处理。",
                    r as f64 * 100.0 / t as f64
                ));
            }
            x.push(lang.pick(
                "lower the micro-batch (keep the global batch with gradient accumulation), enable gradient checkpointing, use bf16 / an 8-bit optimizer, LoRA, or ZeRO/FSDP across GPUs — `vramscope estimate` ranks what each saves",
                "减小微批次（用梯度累积保持全局批次大小）、启用梯度检查点、使用 bf16 / 8-bit 优化器、LoRA，或跨 GPU 使用 ZeRO/FSDP —— `vramscope estimate` 会按节省的显存排序",
            ).into());
        }
    }
}

/// Plenty free on the card, yet the request failed.
fn capped_below_card(facts: &Facts, notes: &mut Notes) {
    let Facts { n, lang, requested: r, .. } = *facts;
    let gib = |b: u64| size_in(b, lang);
    let Notes { findings: f, explanation: e, fixes: x } = notes;
    let frag = f.contains(&Finding::Fragmentation);
    // plenty free on the card, yet the request failed: the process was capped below the card
    if let (Some(r), Some(free), false) = (r, n.free, frag)
        && free >= 2 * r
        && !f.contains(&Finding::RequestExceedsCard)
    {
        e.push(text!(
            lang,
            "The driver reports {} free, more than the {} requested: this process was capped below the card (torch.cuda.set_per_process_memory_fraction, a MIG slice or an MPS memory limit).",
            "驱动报告空闲 {}，多于请求的 {}：本进程可用的显存被限制在整卡容量以下（torch.cuda.set_per_process_memory_fraction、MIG 切片或 MPS 显存上限）。",
            gib(free),
            gib(r)
        ));
        x.push(lang.pick(
            "check torch.cuda.set_per_process_memory_fraction(...), CUDA_MPS_PINNED_DEVICE_MEM_LIMIT and the MIG slice (`nvidia-smi -L`) the job runs in",
            "检查 torch.cuda.set_per_process_memory_fraction(...)、CUDA_MPS_PINNED_DEVICE_MEM_LIMIT 以及作业所在的 MIG 切片（`nvidia-smi -L`）",
        ).into());
    }
}

/// Further out-of-memory messages in the input.
fn more_messages(facts: &Facts, notes: &mut Notes) {
    let Facts { n, lang, .. } = *facts;
    let Notes { explanation: e, .. } = notes;
    if !n.more_messages.is_empty() {
        let gpus: Vec<String> = n
            .more_messages
            .iter()
            .map(|g| g.map_or_else(|| "GPU ?".into(), |g| format!("GPU {g}")))
            .collect();
        e.push(match lang {
            Lang::En => format!(
                "{} more out-of-memory {} in the input ({}); this explains the first.",
                n.more_messages.len(),
                plural(n.more_messages.len(), "message", "messages"),
                gpus.join(", ")
            ),
            Lang::ZhCn => format!(
                "输入中还有 {} 条显存不足报错（{}）；这里解释的是第一条。",
                n.more_messages.len(),
                gpus.join("，")
            ),
        });
    }
}

/// No finding: the numbers do not single out a cause.
fn no_single_cause(facts: &Facts, notes: &mut Notes) {
    let Facts { lang, .. } = *facts;
    let Notes { findings: f, explanation: e, .. } = notes;
    if f.is_empty() {
        e.push(
            lang.pick(
                "The numbers do not single out one cause; compare the job with `vramscope estimate`.",
                "这些数字无法锁定单一原因；请用 `vramscope estimate` 对照该作业。",
            )
            .into(),
        );
    }
}

/// vLLM's KV cache that does not fit.
fn vllm(n: &OomNumbers, lang: Lang) -> Notes {
    let gib = |b: u64| size_in(b, lang);
    let mut notes = Notes::default();
    let Notes { findings: f, explanation: e, fixes: x } = &mut notes;
    f.push(Finding::KvCacheTooSmall);
    if let (Some(m), Some(k)) = (n.max_model_len, n.kv_tokens) {
        e.push(text!(
                    lang,
                    "The server's max_model_len ({m} tokens) is more than its KV cache holds ({k} tokens): one full-length request would not fit.",
                    "服务的 max_model_len（{m} 个 token）超过了其 KV 缓存能容纳的量（{k} 个 token）：一个满长度的请求放不下。"
                ));
    }
    if let (Some(need), Some(have)) = (n.kv_needed, n.kv_available) {
        e.push(text!(
                    lang,
                    "One request of max_model_len needs {} of KV cache; {} is left after the weights and the profiling peak.",
                    "一个 max_model_len 长度的请求需要 {} 的 KV 缓存；扣除权重和 剖析峰值后只剩 {}。",
                    gib(need),
                    gib(have)
                ));
    }
    // the lines above name the KV cache; without them, say that none was left
    if e.is_empty() {
        e.push(lang.pick(
                    "vLLM found no memory left for KV cache blocks: the weights and the profiling forward already take gpu_memory_utilization of the card.",
                    "vLLM 找不到可用于 KV 缓存块的显存：权重和 剖析前向已经用满了 gpu_memory_utilization 允许的显存。",
                ).into());
    }
    let fit = n.estimated_max_model_len.or(n.kv_tokens);
    if let Some(m) = fit {
        x.push(text!(
            lang,
            "--max-model-len {m} (or less): the longest context this KV cache holds",
            "--max-model-len {m}（或更小）：该 KV 缓存能容纳的最长上下文"
        ));
    } else {
        x.push(lang.pick("a smaller --max-model-len", "更小的 --max-model-len").into());
    }
    x.push(
        lang.pick(
            "--gpu-memory-utilization 0.95 (if nothing else uses the card)",
            "--gpu-memory-utilization 0.95（如果没有其他程序使用这张卡）",
        )
        .into(),
    );
    x.push(lang.pick(
                "--kv-cache-dtype fp8 (halves the KV cache per token), or a quantized checkpoint (fp8 / AWQ / GPTQ) to free weight memory",
                "--kv-cache-dtype fp8（每个 token 的 KV 缓存减半），或使用量化 checkpoint（fp8 / AWQ / GPTQ）以腾出权重占用的显存",
            ).into());
    x.push(
        lang.pick(
            "--tensor-parallel-size 2 (weights and KV heads split over two GPUs)",
            "--tensor-parallel-size 2（权重和 KV 头拆分到两块 GPU 上）",
        )
        .into(),
    );
    x.push(
        lang.pick(
            "a smaller --max-num-batched-tokens (a smaller profiling forward)",
            "更小的 --max-num-batched-tokens（剖析前向更小）",
        )
        .into(),
    );
    x.push(lang.pick(
                "`vramscope serve --model M --gpu G --max-model-len N` shows the budget term by term (weights, profiling peak, KV) and the max_model_len that fits",
                "`vramscope serve --model M --gpu G --max-model-len N` 逐项列出显存预算（权重、剖析峰值、KV）以及放得下的 max_model_len",
            ).into());
    notes
}

/// An allocation outside PyTorch's caching allocator failed (the CUDA runtime's or cuBLAS's).
fn outside_allocator(source: Source, lang: Lang) -> Notes {
    let mut notes = Notes::default();
    let Notes { findings: f, explanation: e, fixes: x } = &mut notes;
    f.push(Finding::OutsideAllocator);
    e.push(if source == Source::Cublas {
                lang.pick(
                    "cuBLAS could not allocate its handle or workspace: the card was already full when a matmul first ran on this stream or device.",
                    "cuBLAS 无法分配其句柄或工作区：在该流或设备上首次执行矩阵乘法时，显卡已经满了。",
                )
                .to_owned()
            } else {
                lang.pick(
                    "An allocation outside PyTorch's caching allocator failed (the CUDA runtime, cuDNN / cuBLAS workspaces, NCCL buffers or a kernel launch). The message carries no sizes.",
                    "PyTorch 缓存分配器之外的一次分配失败了（CUDA runtime、cuDNN / cuBLAS 工作区、NCCL 缓冲区或 kernel 启动）。报错中没有任何大小。",
                )
                .to_owned()
            });
    e.push(lang.pick(
                "Usually the caching allocator has taken the card (PyTorch's tensors and cache) and left a library no room; sometimes another process holds it.",
                "通常是缓存分配器占满了显卡（PyTorch 的张量和缓存），没给库留下空间；有时是另一个进程占着显存。",
            ).into());
    x.push(lang.pick(
                "run once with CUDA_LAUNCH_BLOCKING=1 to see the op that failed, and `nvidia-smi` for other processes",
                "设置 CUDA_LAUNCH_BLOCKING=1 运行一次，找出失败的算子；用 `nvidia-smi` 查看其他进程",
            ).into());
    x.push(lang.pick(
                "leave room for libraries: torch.cuda.set_per_process_memory_fraction(0.9) caps PyTorch's cache below the card",
                "给库留出空间：torch.cuda.set_per_process_memory_fraction(0.9) 把 PyTorch 的缓存限制在整卡容量以下",
            ).into());
    x.push(lang.pick(
                "lower the micro-batch or sequence, or enable gradient checkpointing — `vramscope estimate` gives the step's peak against the card",
                "减小微批次或序列长度，或启用梯度检查点 —— `vramscope estimate` 给出每步峰值与显卡容量的对比",
            ).into());
    notes
}
