//! Reading out-of-memory messages: every number in PyTorch's `torch.OutOfMemoryError` (current,
//! 2.1's "total capacty" and older wordings, CUDA and ROCm/HIP), TensorFlow's
//! `ResourceExhaustedError`, the CUDA runtime's and cuBLAS's own allocation failures and vLLM's
//! KV-cache start-up errors; what they mean, and which memory problem they point to.
//!
//! Messages are read as users paste them: inside tracebacks and logs, with per-line prefixes
//! (`[rank3]: `, `(VllmWorkerProcess pid=2421) ERROR … ] `), hard-wrapped mid-word, with CRLF line
//! ends. The text is compacted (whitespace removed) before the keys are looked up, so a wrap
//! anywhere loses nothing. Input is untrusted: it is size-capped, never panics, and says what it
//! did not understand.

use crate::i18n::Lang;
use crate::text;
use serde::Serialize;

/// Longest message read (larger input is cut, with a note).
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// Which framework wrote the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// PyTorch ≥ 2.1 wording ("GPU 0 has a total capacity of …").
    PytorchCurrent,
    /// Older PyTorch wording ("(GPU 0; … total capacity; … already allocated; …)").
    PytorchLegacy,
    /// TensorFlow ("OOM when allocating tensor with shape[…]").
    Tensorflow,
    /// The CUDA runtime's own error ("RuntimeError: CUDA error: out of memory"): an allocation
    /// outside PyTorch's caching allocator failed, with no numbers.
    CudaRuntime,
    /// cuBLAS could not allocate its handle or workspace (`CUBLAS_STATUS_ALLOC_FAILED`).
    Cublas,
    /// vLLM found no room for the KV cache it needs at start-up.
    Vllm,
}

impl Source {
    /// Name for display.
    pub const fn label(self) -> &'static str {
        match self {
            Self::PytorchCurrent => "PyTorch (2.1 and later wording)",
            Self::PytorchLegacy => "PyTorch (older wording)",
            Self::Tensorflow => "TensorFlow",
            Self::CudaRuntime => "CUDA runtime (outside PyTorch's allocator)",
            Self::Cublas => "cuBLAS",
            Self::Vllm => "vLLM (KV cache at start-up)",
        }
    }

    /// Name for display in `lang` ([`Source::label`] in English).
    pub const fn label_in(self, lang: Lang) -> &'static str {
        match lang {
            Lang::En => self.label(),
            Lang::ZhCn => match self {
                Self::PytorchCurrent => "PyTorch（2.1 及以后版本的措辞）",
                Self::PytorchLegacy => "PyTorch（旧版措辞）",
                Self::Tensorflow => "TensorFlow",
                Self::CudaRuntime => "CUDA runtime（PyTorch 分配器之外）",
                Self::Cublas => "cuBLAS",
                Self::Vllm => "vLLM（启动时的 KV 缓存）",
            },
        }
    }
}

/// A process the message names: "Process 12345 has 10.20 GiB memory in use".
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OtherProcess {
    /// Its PID.
    pub pid: u64,
    /// Its memory, bytes.
    pub bytes: u64,
    /// The size as the message wrote it ("10.20 GiB").
    pub as_written: String,
    /// Most likely the failing process itself: inside a container PyTorch cannot match its own
    /// PID and lists itself as "Process N"; its size is what PyTorch reserved plus the context.
    pub likely_this_process: bool,
}

/// Numbers found in the message, in bytes.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OomNumbers {
    /// The allocation that failed.
    pub requested: Option<u64>,
    /// Device index.
    pub gpu: Option<u32>,
    /// `CUDA` or `HIP` (ROCm), when the message says.
    pub backend: Option<String>,
    /// Total capacity of the GPU.
    pub total: Option<u64>,
    /// Free memory reported by the driver.
    pub free: Option<u64>,
    /// Memory this process holds, including non-PyTorch memory (current wording; a 0 there is
    /// NVML not seeing the process, as in containers, and is left out).
    pub process_in_use: Option<u64>,
    /// Allocated by PyTorch tensors.
    pub allocated: Option<u64>,
    /// Reserved by PyTorch but not allocated (cached blocks).
    pub reserved_unallocated: Option<u64>,
    /// Reserved in total by PyTorch (older wording: "reserved in total", or "cached").
    pub reserved: Option<u64>,
    /// TensorFlow: the tensor shape.
    pub shape: Option<Vec<u64>>,
    /// TensorFlow: the element type.
    pub dtype: Option<String>,
    /// Processes the message names, in its order.
    pub processes: Vec<OtherProcess>,
    /// vLLM: the model's max sequence length the server was asked for.
    pub max_model_len: Option<u64>,
    /// vLLM: tokens the KV cache could hold.
    pub kv_tokens: Option<u64>,
    /// vLLM: KV cache one request of `max_model_len` needs, bytes.
    pub kv_needed: Option<u64>,
    /// vLLM: KV cache memory available, bytes.
    pub kv_available: Option<u64>,
    /// vLLM: its own estimate of the largest max_model_len that fits.
    pub estimated_max_model_len: Option<u64>,
    /// GPUs of further out-of-memory messages in the same input (other ranks), in order.
    pub more_messages: Vec<Option<u32>>,
    /// The message's own wording of the total, free and this process's sizes.
    pub as_written: std::collections::BTreeMap<String, String>,
}

/// What the numbers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    /// The single request is larger than the whole card.
    RequestExceedsCard,
    /// Much memory is reserved but unallocated: fragmentation.
    Fragmentation,
    /// Other processes (or memory outside this PyTorch) hold a large share of the card.
    OtherProcesses,
    /// PyTorch's own tensors fill the card: the job is too big for it.
    JobTooLarge,
    /// An allocation outside PyTorch's caching allocator (CUDA runtime, cuBLAS, cuDNN, NCCL)
    /// failed: the caching allocator had taken the card.
    OutsideAllocator,
    /// vLLM: the KV cache the server needs does not fit beside the weights and activations.
    KvCacheTooSmall,
}

/// An explained OOM message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OomReport {
    /// Framework and wording.
    pub source: Source,
    /// Extracted numbers.
    pub numbers: OomNumbers,
    /// Findings, most important first.
    pub findings: Vec<Finding>,
    /// Plain-language explanation, one line per point.
    pub explanation: Vec<String>,
    /// Suggested settings and commands, most useful first.
    pub fixes: Vec<String>,
    /// Parts that were expected but not understood.
    pub not_understood: Vec<String>,
}

/// Why a message could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OomError {
    /// No known OOM wording found.
    #[error(
        "no out-of-memory message found (looked for PyTorch's \"out of memory\" / \"Tried to allocate\", TensorFlow's \"OOM when allocating\", \"CUDA error: out of memory\", CUBLAS_STATUS_ALLOC_FAILED and vLLM's KV-cache errors)"
    )]
    NotAnOom,
}

impl OomError {
    /// The error's message in `lang` (its `Display` in English).
    pub fn message_in(&self, lang: Lang) -> String {
        match (self, lang) {
            (_, Lang::En) => self.to_string(),
            (Self::NotAnOom, Lang::ZhCn) => "未找到显存不足报错（查找了 PyTorch 的 \"out of memory\" / \"Tried to allocate\"、TensorFlow 的 \"OOM when allocating\"、\"CUDA error: out of memory\"、CUBLAS_STATUS_ALLOC_FAILED 以及 vLLM 的 KV 缓存报错）".to_owned(),
        }
    }
}

mod read;
#[cfg(test)]
mod tests;

use read::{
    gib, gpu_index, int_after, processes, size_after, size_at, size_before, strip_prefix, written_after,
};

/// Starts of an out-of-memory message, compacted, in the order they are tried.
const STARTS: [&str; 3] = ["outofmemory.Triedtoallocate", "outofmemory.", "OutOfMemoryError"];

/// Explains an out-of-memory message, in English.
pub fn explain_oom(input: &str) -> Result<OomReport, OomError> {
    explain_oom_in(input, Lang::En)
}

/// Explains an out-of-memory message, its explanation, fixes and what it did not understand
/// written in `lang` (the numbers, findings and flags are the same in every language).
pub fn explain_oom_in(input: &str, lang: Lang) -> Result<OomReport, OomError> {
    let mut not_understood = Vec::new();
    let text = if input.len() > MAX_INPUT_BYTES {
        not_understood.push(text!(
            lang,
            "input cut to the first {MAX_INPUT_BYTES} bytes",
            "输入被截断为前 {MAX_INPUT_BYTES} 字节"
        ));
        let mut end = MAX_INPUT_BYTES;
        while !input.is_char_boundary(end) {
            end -= 1;
        }
        &input[..end]
    } else {
        input
    };
    let lines: Vec<&str> = text.lines().map(strip_prefix).collect();
    // the compacted text: a wrap (or a CRLF) anywhere, even mid-word, loses nothing
    let all: String = lines.iter().flat_map(|l| l.chars()).filter(|ch| !ch.is_whitespace()).collect();
    let spaced_text = lines.join(" ");
    let mut n = OomNumbers::default();
    let source = if let Some(at) = all.find("Triedtoallocate") {
        // the first message; further ones (other ranks) are counted, each with its GPU
        let start = all[..at].rfind("outofmemory").unwrap_or(at);
        let next = all[at + 15..].find("Triedtoallocate").map_or(all.len(), |j| at + 15 + j);
        let c = &all[start..next];
        let mut rest = &all[next..];
        while let Some(j) = rest.find("Triedtoallocate") {
            let tail = &rest[j + 15..];
            let end = tail.find("Triedtoallocate").unwrap_or(tail.len());
            n.more_messages.push(gpu_index(&tail[..end]));
            rest = tail;
            if n.more_messages.len() >= 64 {
                break;
            }
        }
        n.backend = if all[..next].contains("HIPoutofmemory") {
            Some("HIP".into())
        } else if all[..next].contains("CUDAoutofmemory") {
            Some("CUDA".into())
        } else {
            None
        };
        n.requested = size_after(c, "Triedtoallocate");
        n.gpu = gpu_index(c);
        // PyTorch 2.1 printed "total capacty"
        let cap_key = ["hasatotalcapacityof", "hasatotalcapactyof"].into_iter().find(|k| c.contains(k));
        if let Some(cap_key) = cap_key {
            n.total = size_after(c, cap_key);
            n.free = size_after(c, "ofwhich");
            n.process_in_use = size_after(c, "thisprocesshas").filter(|&b| b > 0);
            if size_after(c, "thisprocesshas") == Some(0) {
                not_understood.push(
                    lang.pick(
                        "\"this process has 0 bytes memory in use\": NVML does not see the process (a container); left out",
                        "\"this process has 0 bytes memory in use\"：NVML 看不到该进程（在容器中）；已忽略",
                    )
                    .into(),
                );
            }
            n.processes = processes(c);
            for (k, key) in [("total", cap_key), ("free", "ofwhich"), ("this_process", "thisprocesshas")] {
                if let Some(w) = written_after(c, key) {
                    n.as_written.insert(k.to_owned(), w);
                }
            }
            n.allocated = size_after(c, "Oftheallocatedmemory");
            n.reserved_unallocated = size_before(c, "isreservedbyPyTorchbutunallocated");
            for (name, v) in [
                (lang.pick("the free memory", "空闲显存"), n.free),
                (lang.pick("the memory allocated by PyTorch", "PyTorch 已分配的显存"), n.allocated),
                (
                    lang.pick("the memory reserved but unallocated", "已保留但未分配的显存"),
                    n.reserved_unallocated,
                ),
            ] {
                if v.is_none() {
                    not_understood.push(name.into());
                }
            }
            Source::PytorchCurrent
        } else {
            n.total = size_before(c, "totalcapacity");
            n.allocated = size_before(c, "alreadyallocated");
            n.free = size_before(c, "free;").or_else(|| size_before(c, "free)"));
            n.reserved = size_before(c, "reservedintotalbyPyTorch");
            // the oldest wording's "cached" is the cache beside the tensors (it is below
            // "already allocated" in real messages), not the total reserved
            if n.reserved.is_none() {
                n.reserved_unallocated = size_before(c, "cached)");
            }
            Source::PytorchLegacy
        }
    } else if let Some(i) = spaced_text.find("OOM when allocating tensor") {
        let tail = &spaced_text[i..];
        if let (Some(a), Some(b)) = (tail.find("shape["), tail.find(']'))
            && a + 6 <= b
        {
            n.shape = tail[a + 6..b].split(',').map(|d| d.trim().parse().ok()).collect::<Option<Vec<u64>>>();
        }
        if n.shape.is_none() {
            not_understood.push(lang.pick("the tensor shape", "张量形状").into());
        }
        n.dtype = tail
            .find("type ")
            .map(|p| tail[p + 5..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect());
        let bytes_per = match n.dtype.as_deref() {
            Some("float" | "float32" | "int32") => Some(4),
            Some("half" | "bfloat16" | "float16") => Some(2),
            Some("double" | "float64" | "int64") => Some(8),
            Some("int8" | "uint8" | "bool") => Some(1),
            _ => None,
        };
        if let (Some(s), Some(b)) = (&n.shape, bytes_per) {
            n.requested = s.iter().try_fold(b as u64, |acc, d| acc.checked_mul(*d));
        }
        n.gpu = gpu_index(&tail.replace(':', ""));
        Source::Tensorflow
    } else if all.contains("Noavailablememoryforthecacheblocks")
        || all.contains("maximumnumberoftokensthatcanbestoredinKVcache")
        || all.contains("KVcacheisneeded,whichislargerthantheavailableKVcachememory")
    {
        n.max_model_len = int_after(&all, "maxseqlen(");
        n.kv_tokens = int_after(&all, "storedinKVcache(");
        n.kv_needed = all.find("KVcacheisneeded").and_then(|i| {
            let head = &all[..i];
            let p = head.rfind('(')?;
            size_at(&head[p + 1..]).map(|(v, _)| v)
        });
        n.kv_available = size_after(&all, "availableKVcachememory(");
        n.estimated_max_model_len = int_after(&all, "estimatedmaximummodellengthis");
        n.total = size_after(&all, "total_gpu_memory=");
        Source::Vllm
    } else if all.contains("CUBLAS_STATUS_ALLOC_FAILED") {
        n.gpu = None;
        Source::Cublas
    } else if all.contains("CUDAerror:outofmemory") || all.contains("HIPerror:outofmemory") {
        n.backend = Some(if all.contains("HIPerror") { "HIP" } else { "CUDA" }.into());
        Source::CudaRuntime
    } else if STARTS.iter().any(|k| all.contains(k)) {
        // an out-of-memory message without the numbers PyTorch prints: say so
        not_understood.push(lang.pick("the requested size", "请求的大小").into());
        Source::CudaRuntime
    } else {
        return Err(OomError::NotAnOom);
    };
    if matches!(source, Source::PytorchCurrent | Source::PytorchLegacy) {
        for (name, v) in [
            (lang.pick("the requested size", "请求的大小"), n.requested),
            (lang.pick("the GPU's total capacity", "GPU 的总容量"), n.total),
        ] {
            if v.is_none() {
                not_understood.insert(0, name.into());
            }
        }
    }
    mark_this_process(&mut n);
    let (findings, explanation, fixes) = interpret(source, &n, lang);
    Ok(OomReport { source, numbers: n, findings, explanation, fixes, not_understood })
}

/// Marks the listed process whose size is what PyTorch reserved plus a context (up to 4 GiB
/// more) as most likely the failing process itself, when the message does not name "this process".
fn mark_this_process(n: &mut OomNumbers) {
    if n.process_in_use.is_some() {
        return;
    }
    let (Some(a), ru) = (n.allocated, n.reserved_unallocated.unwrap_or(0)) else { return };
    let own = a + ru;
    let best = n
        .processes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.bytes as f64 >= own as f64 * 0.98 && p.bytes <= own + (4 << 30))
        .min_by_key(|(_, p)| p.bytes.abs_diff(own))
        .map(|(i, _)| i);
    if let Some(i) = best {
        n.processes[i].likely_this_process = true;
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 { one.to_owned() } else { many.to_owned() }
}

fn interpret(source: Source, n: &OomNumbers, lang: Lang) -> (Vec<Finding>, Vec<String>, Vec<String>) {
    // a size in the language: only "0 bytes" has a word in it
    let gib = |b: u64| if b == 0 { lang.pick("0 bytes", "0 字节").to_owned() } else { gib(b) };
    let mut f = Vec::new();
    let mut e = Vec::new();
    let mut x = Vec::new();
    let conf = if n.backend.as_deref() == Some("HIP") {
        "PYTORCH_HIP_ALLOC_CONF"
    } else {
        "PYTORCH_CUDA_ALLOC_CONF"
    };
    match source {
        Source::Vllm => {
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
                    "一个 max_model_len 长度的请求需要 {} 的 KV 缓存；扣除权重和 profiling 峰值后只剩 {}。",
                    gib(need),
                    gib(have)
                ));
            }
            // the lines above name the KV cache; without them, say that none was left
            if e.is_empty() {
                e.push(lang.pick(
                    "vLLM found no memory left for KV cache blocks: the weights and the profiling forward already take gpu_memory_utilization of the card.",
                    "vLLM 找不到可用于 KV 缓存块的显存：权重和 profiling 前向已经用满了 gpu_memory_utilization 允许的显存。",
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
                    "更小的 --max-num-batched-tokens（profiling 前向更小）",
                )
                .into(),
            );
            x.push(lang.pick(
                "`vramscope serve --model M --gpu G --max-model-len N` shows the budget term by term (weights, profiling peak, KV) and the max_model_len that fits",
                "`vramscope serve --model M --gpu G --max-model-len N` 逐项列出显存预算（权重、profiling 峰值、KV）以及放得下的 max_model_len",
            ).into());
            return (f, e, x);
        }
        Source::CudaRuntime | Source::Cublas => {
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
            return (f, e, x);
        }
        _ => {}
    }
    if let Some(r) = n.requested {
        e.push(text!(lang, "One allocation of {} failed.", "一次 {} 的分配失败了。", gib(r)));
    }
    let (t, r) = (n.total, n.requested);
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
    let ru = n.reserved_unallocated.or_else(|| match (n.reserved, n.allocated) {
        (Some(res), Some(a)) => Some(res.saturating_sub(a)),
        _ => None,
    });
    let mut frag = false;
    if let (Some(ru), Some(r)) = (ru, r) {
        if !f.contains(&Finding::RequestExceedsCard) {
            e.push(text!(
                lang,
                "PyTorch holds {} reserved but unallocated (cached blocks).",
                "PyTorch 持有 {} 已保留但未分配的显存（缓存块）。",
                gib(ru)
            ));
        }
        // fragmentation: the cache alone could have served the request yet did not, and it is a
        // real share of the card — a few cached MiB on a full card are not the problem
        let share = t.is_none_or(|t| ru * 20 >= t);
        if ru >= r && share && !f.contains(&Finding::RequestExceedsCard) {
            frag = true;
            f.push(Finding::Fragmentation);
            e.push(lang.pick(
                "More memory is cached than was requested, yet no cached block was large enough: the cache is fragmented.",
                "缓存的显存比请求的多，却没有一个缓存块足够大：缓存已碎片化。",
            ).into());
            x.push(text!(
                lang,
                "export {conf}=expandable_segments:True  (lets segments grow instead of fragmenting)",
                "export {conf}=expandable_segments:True  （让段按需扩展，而不是碎片化）"
            ));
        }
    }
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
    if let Some(me) = n.processes.iter().find(|p| p.likely_this_process) {
        e.push(text!(
            lang,
            "Process {} has {}: about what PyTorch reserved plus its context, so most likely this process itself (containers hide its own PID).",
            "进程 {} 占用 {}：约等于 PyTorch 保留的显存加上其 CUDA 上下文，因此很可能就是本进程（容器会隐藏它自己的 PID）。",
            me.pid,
            me.as_written
        ));
    }
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
    // named processes count from a tenth of the card; an unnamed remainder also holds the CUDA
    // context (0.3-1.3 GiB), so it must be more than that as well
    let unnamed = n.processes.is_empty() && n.process_in_use.is_none();
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
    if f.is_empty() {
        e.push(
            lang.pick(
                "The numbers do not single out one cause; compare the job with `vramscope estimate`.",
                "这些数字无法锁定单一原因；请用 `vramscope estimate` 对照该作业。",
            )
            .into(),
        );
    }
    (f, e, x)
}
