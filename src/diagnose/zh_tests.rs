//! The diagnoses in zh-CN against the English ones, over the fixtures users paste
//! (`tests/data/diagnose/`): the same findings, verdicts and numbers, each line in Chinese.

use super::fixes::{rank_fixes, rank_fixes_in};
use super::trace::{self, Verdict};
use super::{OomError, Source, explain_oom, explain_oom_in};
use crate::i18n::Lang;

fn fixture(name: &str) -> String {
    let p = format!("{}/tests/data/diagnose/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn fixtures(prefix: &str) -> Vec<String> {
    let dir = format!("{}/tests/data/diagnose", env!("CARGO_MANIFEST_DIR"));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect();
    names.sort();
    names
}

fn has_cjk(s: &str) -> bool {
    s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
}

/// The numbers of a line ("2.50", "95", "0.9"), sorted: a translation may reorder them.
fn numbers(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|t| t.trim_matches('.'))
        .filter(|t| t.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

/// Each zh line is Chinese and carries the English line's numbers.
fn same_lines(what: &str, en: &[String], zh: &[String]) {
    assert_eq!(en.len(), zh.len(), "{what}: {en:#?}\n{zh:#?}");
    for (e, z) in en.iter().zip(zh) {
        assert!(has_cjk(z), "{what}: not Chinese: {z}");
        assert!(!has_cjk(e), "{what}: English line with CJK: {e}");
        assert_eq!(numbers(e), numbers(z), "{what}:\n  {e}\n  {z}");
    }
}

#[test]
fn every_oom_fixture_reads_the_same_in_chinese() {
    let names = fixtures("oom_");
    assert!(names.len() >= 20);
    for name in &names {
        let text = fixture(name);
        let en = explain_oom(&text).unwrap();
        let zh = explain_oom_in(&text, Lang::ZhCn).unwrap();
        assert_eq!(en, explain_oom_in(&text, Lang::En).unwrap(), "{name}");
        assert_eq!((en.source, &en.numbers, &en.findings), (zh.source, &zh.numbers, &zh.findings), "{name}");
        same_lines(name, &en.explanation, &zh.explanation);
        same_lines(name, &en.fixes, &zh.fixes);
        same_lines(name, &en.not_understood, &zh.not_understood);
        assert!(
            has_cjk(zh.source.label_in(Lang::ZhCn)) || zh.source.label() == zh.source.label_in(Lang::ZhCn)
        );
    }
    // the fragmentation case keeps the flag as it is, and its sizes
    let zh = explain_oom_in(&fixture("oom_pt23_fragmentation.txt"), Lang::ZhCn).unwrap();
    assert!(
        zh.fixes[0].starts_with("export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
        "{:?}",
        zh.fixes
    );
    assert!(zh.explanation.iter().any(|l| l.contains("15.91 GiB") && l.contains("已保留但未分配")), "{zh:?}");
    assert!(zh.explanation.iter().any(|l| l.contains("碎片化")), "{zh:?}");
    // two ranks ran out of memory: the other one is named, in Chinese
    let zh = explain_oom_in(&fixture("oom_rank_prefixed_torchrun.txt"), Lang::ZhCn).unwrap();
    assert!(
        zh.explanation.iter().any(|l| l.contains("还有 1 条显存不足报错") && l.contains("GPU 1")),
        "{zh:?}"
    );
    let zh = explain_oom_in(&fixture("oom_vllm_max_seq_len_kv_cache.txt"), Lang::ZhCn).unwrap();
    assert!(zh.fixes[0].starts_with("--max-model-len 23648"), "{:?}", zh.fixes);
    // what could not be read
    assert!(has_cjk(&OomError::NotAnOom.message_in(Lang::ZhCn)));
    assert_eq!(OomError::NotAnOom.message_in(Lang::En), OomError::NotAnOom.to_string());
    let zh = explain_oom_in("Tried to allocate lots of memory", Lang::ZhCn).unwrap();
    assert!(zh.not_understood.iter().all(|l| has_cjk(l)) && !zh.not_understood.is_empty());
    assert_eq!(Source::Vllm.label_in(Lang::En), Source::Vllm.label());
    // a size of nothing is written in the language
    let m = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.93 GiB memory in use. Of the allocated memory 77.02 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.";
    let (en, zh) = (explain_oom(m).unwrap(), explain_oom_in(m, Lang::ZhCn).unwrap());
    assert!(en.explanation.iter().any(|l| l.contains("holds 0 bytes reserved")), "{en:?}");
    assert!(zh.explanation.iter().any(|l| l.contains("持有 0 字节")), "{zh:?}");
}

#[test]
fn every_trace_fixture_reads_the_same_in_chinese() {
    let names = fixtures("trace_");
    assert!(names.len() >= 10);
    let mut verdicts = Vec::new();
    for name in &names {
        let mut s = trace::parse(&fixture(name)).unwrap();
        if s.iter().all(|x| x.total == 0) {
            trace::with_total(&mut s, 81559 << 20);
        }
        let en = trace::classify_all(&s).unwrap();
        let zh = trace::classify_all_in(&s, Lang::ZhCn).unwrap();
        assert_eq!(en, trace::classify_all_in(&s, Lang::En).unwrap(), "{name}");
        assert_eq!(en.len(), zh.len(), "{name}");
        for (e, z) in en.iter().zip(&zh) {
            assert_eq!((e.gpu, e.verdict, &e.evidence), (z.gpu, z.verdict, &z.evidence), "{name}");
            same_lines(name, &e.advice, &z.advice);
            assert!(has_cjk(z.verdict.label_in(Lang::ZhCn)), "{name}");
            verdicts.push(e.verdict);
        }
    }
    // the fixtures cover every verdict
    for v in [
        Verdict::Leak,
        Verdict::ModelTooLarge,
        Verdict::BatchTooLarge,
        Verdict::Healthy,
        Verdict::StoppedWithJob,
        Verdict::NearCapacity,
    ] {
        assert!(verdicts.contains(&v), "{v:?}");
        assert_eq!(v.label_in(Lang::En), v.label());
    }
    // the leaking run: its rate in MiB per iteration, in Chinese
    let s = trace::parse(&fixture("trace_leak_midnight_csv.csv")).unwrap();
    let (en, zh) = (trace::classify(&s, None).unwrap(), trace::classify_in(&s, None, Lang::ZhCn).unwrap());
    assert_eq!(zh.verdict.label_in(Lang::ZhCn), "内存泄漏");
    let rate = format!("{:.1} MiB", en.growth_mib_per_iteration);
    assert!(en.advice[0].contains(&rate) && zh.advice[0].contains(&rate), "{:?}", zh.advice);
    assert!(zh.advice[0].contains("每次迭代增长"), "{:?}", zh.advice);
}

#[test]
fn ranked_fixes_read_the_same_in_chinese() {
    use crate::estimate::{Optimizer, Scenario};
    let mut sc = Scenario::new(crate::model::preset::builtin("llama-2-7b").unwrap());
    sc.batch = 4;
    sc.seq = 4096;
    sc.optimizer = Optimizer::Adamw;
    sc.precision = crate::units::Precision::Fp32;
    sc.parallel.dp = 4;
    let (en, zh) = (rank_fixes(&sc), rank_fixes_in(&sc, Lang::ZhCn));
    assert!(en.len() >= 6, "{en:?}");
    assert_eq!(en, rank_fixes_in(&sc, Lang::En));
    assert_eq!(en.len(), zh.len());
    for (e, z) in en.iter().zip(&zh) {
        assert_eq!((e.saves, e.total_after), (z.saves, z.total_after));
        same_lines("fix", std::slice::from_ref(&e.change), std::slice::from_ref(&z.change));
    }
    assert!(zh.iter().any(|f| f.change.contains("梯度检查点")), "{zh:?}");
}
