//! Reading each source's wording into [`OomNumbers`]: PyTorch's current and older messages,
//! TensorFlow's, vLLM's KV-cache start-up errors, and the numberless CUDA runtime and cuBLAS
//! failures. The text they read is compacted (no whitespace) except TensorFlow's shape.

use super::read::{gpu_index, int_after, processes, size_after, size_at, size_before, written_after};
use super::{OomNumbers, STARTS, Source};
use crate::i18n::Lang;

/// Reads the first message of `all` (the compacted text; `spaced_text` keeps the spaces
/// TensorFlow's wording needs) into `n`, adding what it did not understand, and names its
/// source; `None` when no known out-of-memory wording is found.
pub(super) fn read_message(
    all: &str,
    spaced_text: &str,
    n: &mut OomNumbers,
    not_understood: &mut Vec<String>,
    lang: Lang,
) -> Option<Source> {
    let source = if let Some(at) = all.find("Triedtoallocate") {
        pytorch(all, at, n, not_understood, lang)
    } else if let Some(i) = spaced_text.find("OOM when allocating tensor") {
        tensorflow(&spaced_text[i..], n, not_understood, lang);
        Source::Tensorflow
    } else if all.contains("Noavailablememoryforthecacheblocks")
        || all.contains("maximumnumberoftokensthatcanbestoredinKVcache")
        || all.contains("KVcacheisneeded,whichislargerthantheavailableKVcachememory")
    {
        vllm(all, n);
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
        return None;
    };
    Some(source)
}

/// PyTorch's message starting before `at` (its "Tried to allocate"), in either wording.
fn pytorch(all: &str, at: usize, n: &mut OomNumbers, not_understood: &mut Vec<String>, lang: Lang) -> Source {
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
    n.hint = allocator_hint(c);
    // vLLM's worker (`worker/model_runner.py`, V1's `gpu_model_runner.py`) names its profiling
    // forward `profile_run`
    n.vllm_profile_run = all[..next].contains("profile_run");
    // PyTorch 2.1 printed "total capacty"
    let cap_key = ["hasatotalcapacityof", "hasatotalcapactyof"].into_iter().find(|k| c.contains(k));
    if let Some(cap_key) = cap_key {
        pytorch_current(c, cap_key, n, not_understood, lang)
    } else {
        pytorch_legacy(c, n)
    }
}

/// PyTorch's advice at the end of the compacted message `c`, in its words: the condition
/// (c10/cuda/CUDACachingAllocator.cpp: "If reserved but unallocated memory is large" since 2.1,
/// "If reserved memory is >> allocated memory" before) and the setting it names
/// (`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` since 2.2, `max_split_size_mb` before; the
/// HIP build's `PYTORCH_HIP_ALLOC_CONF`).
fn allocator_hint(c: &str) -> Option<String> {
    const FORMS: [(&str, &str); 2] = [
        (
            "Ifreservedbutunallocatedmemoryislargetrysetting",
            "If reserved but unallocated memory is large try setting",
        ),
        (
            "Ifreservedmemoryis>>allocatedmemorytrysetting",
            "If reserved memory is >> allocated memory try setting",
        ),
    ];
    FORMS.iter().find_map(|(key, words)| {
        let rest = &c[c.find(key)? + key.len()..];
        let setting = &rest[..rest.find("toavoidfragmentation")?];
        let plain = !setting.is_empty()
            && setting.len() <= 80
            && setting.chars().all(|ch| ch.is_ascii_alphanumeric() || "_=:,.".contains(ch));
        plain.then(|| format!("{words} {setting} to avoid fragmentation."))
    })
}

/// PyTorch 2.1 and later: "GPU 0 has a total capacity of … of which … is free", `cap_key`
/// being the compacted "has a total capacity of" as this release spelled it.
fn pytorch_current(
    c: &str,
    cap_key: &str,
    n: &mut OomNumbers,
    not_understood: &mut Vec<String>,
    lang: Lang,
) -> Source {
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
        (lang.pick("the memory reserved but unallocated", "已保留但未分配的显存"), n.reserved_unallocated),
    ] {
        if v.is_none() {
            not_understood.push(name.into());
        }
    }
    Source::PytorchCurrent
}

/// Older PyTorch: "(GPU 0; … total capacity; … already allocated; … free; … reserved in total)".
fn pytorch_legacy(c: &str, n: &mut OomNumbers) -> Source {
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

/// TensorFlow's "OOM when allocating tensor with shape[…] and type …", `tail` starting there.
fn tensorflow(tail: &str, n: &mut OomNumbers, not_understood: &mut Vec<String>, lang: Lang) {
    if let (Some(a), Some(b)) = (tail.find("shape["), tail.find(']'))
        && a + 6 <= b
    {
        n.shape = tail[a + 6..b].split(',').map(|d| d.trim().parse().ok()).collect::<Option<Vec<u64>>>();
    }
    if n.shape.is_none() {
        not_understood.push(lang.pick("the tensor shape", "张量形状").into());
    }
    n.dtype =
        tail.find("type ").map(|p| tail[p + 5..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect());
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
}

/// vLLM's KV-cache start-up errors: max_model_len, the tokens and bytes of KV cache.
fn vllm(all: &str, n: &mut OomNumbers) {
    n.max_model_len = int_after(all, "maxseqlen(");
    n.kv_tokens = int_after(all, "storedinKVcache(");
    n.kv_needed = all.find("KVcacheisneeded").and_then(|i| {
        let head = &all[..i];
        let p = head.rfind('(')?;
        size_at(&head[p + 1..]).map(|(v, _)| v)
    });
    n.kv_available = size_after(all, "availableKVcachememory(");
    n.estimated_max_model_len = int_after(all, "estimatedmaximummodellengthis");
    n.total = size_after(all, "total_gpu_memory=");
}
