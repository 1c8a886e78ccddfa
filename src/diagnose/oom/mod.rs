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
//!
//! `sources` reads each source's wording into [`OomNumbers`], `findings` says what the numbers
//! mean (one rule a finding, in a table), `read` holds the pieces both read with.

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
    /// PyTorch's own advice at the end of its message, as it wrote it ("If reserved but
    /// unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    /// to avoid fragmentation.").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The message came out of vLLM's profiling run (`profile_run` in its traceback): the peak
    /// it measures must leave the KV cache room within `gpu_memory_utilization`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub vllm_profile_run: bool,
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

mod findings;
mod read;
mod sources;
#[cfg(test)]
mod tests;

use findings::interpret;
use read::strip_prefix;
use sources::read_message;

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
    let source =
        read_message(&all, &spaced_text, &mut n, &mut not_understood, lang).ok_or(OomError::NotAnOom)?;
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
