//! The serving advice: a server that does not start, a target concurrency, the Chinese texts and
//! shorter requests beside the path.

use super::*;
use crate::model::preset::builtin;

fn setup(model: &str, gpu: &str, cfg: ServeConfig) -> Setup {
    Setup { model: builtin(model).unwrap(), gpu: gpu::find(gpu).unwrap(), cfg, checkpoint_dtype: None }
}

#[test]
fn a_server_that_does_not_start_gets_a_path_that_starts() {
    // Llama-3.1-70B in bf16 on one H100: the weights alone exceed the budget
    let s =
        setup("llama-3.1-70b", "h100-80gb", ServeConfig { max_model_len: Some(8192), ..Default::default() });
    let a = advise(&s, None).unwrap();
    assert!(!a.before.fits);
    assert!(a.meets_target_after, "{}", a.headline);
    assert!(a.roadmap.last().is_some_and(|st| st.starts));
    // each step is the serve of its own flags, and gains on the one before
    let mut prev = &a.before;
    for st in &a.roadmap {
        assert!(gains(prev, &st.serve), "{}", st.title);
        prev = &st.serve;
        assert!(!st.changes.is_empty(), "{} changes nothing", st.title);
    }
    // fp8 weights come before a second card: the cheaper path starts on one H100
    assert!(a.roadmap.iter().any(|st| st.title.contains("fp8")));
}

#[test]
fn a_target_concurrency_is_met_or_said_unmet() {
    let s =
        setup("llama-3.1-8b", "rtx-4090", ServeConfig { max_model_len: Some(8192), ..Default::default() });
    let a = advise(&s, Some(50.0)).unwrap();
    assert!(a.before.fits && a.before.max_concurrency < 50.0);
    if a.meets_target_after {
        assert!(a.roadmap.last().is_some_and(|st| st.max_concurrency >= 50.0));
    } else {
        assert!(a.headline.starts_with("no modelled change"), "{}", a.headline);
    }
    assert!(advise(&s, Some(-1.0)).is_err());
    // fp8 KV doubles the tokens of the pool
    let kv = a.options.iter().find(|o| o.title.contains("kv-cache-dtype")).unwrap();
    let r = kv.kv_tokens as f64 / a.before.kv_tokens as f64;
    assert!((1.9..=2.1).contains(&r), "{r}");
}

/// The advice in Chinese: the same rows, flags and figures as in English, every title,
/// trade-off and headline in Chinese, the effort 低 / 中 / 高.
#[test]
fn the_advice_in_chinese_has_the_same_figures_and_chinese_texts() {
    let cjk = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
    let cases = [
        ("llama-3.1-70b", "h100-80gb", Some(8192), None),
        ("llama-3.1-8b", "rtx-4090", Some(8192), Some(50.0)),
        ("llama-3.1-8b", "rtx-4090", None, None),
    ];
    for (model, card, len, target) in cases {
        let s = setup(model, card, ServeConfig { max_model_len: len, ..Default::default() });
        let en = advise(&s, target).unwrap();
        assert_eq!(advise_in(&s, target, Lang::En).unwrap(), en);
        let zh = advise_in(&s, target, Lang::ZhCn).unwrap();
        assert!(cjk(&zh.headline), "{}", zh.headline);
        assert_eq!((&zh.before, zh.meets_target_after), (&en.before, en.meets_target_after));
        let all = |a: &ServeAdvice| -> Vec<ServeStep> {
            a.options.iter().chain(&a.roadmap).chain(&a.beside).cloned().collect()
        };
        let (e, z) = (all(&en), all(&zh));
        assert_eq!(e.len(), z.len());
        for (e, z) in e.iter().zip(&z) {
            assert!(cjk(&z.title) && cjk(&z.trade_off), "{} / {}", z.title, z.trade_off);
            assert_eq!((&e.serve_args, &e.changes, &e.serve), (&z.serve_args, &z.changes, &z.serve));
            assert_eq!(
                (e.horizon, e.kind, e.starts, e.meets_target),
                (z.horizon, z.kind, z.starts, z.meets_target)
            );
            assert_eq!(effort_in(e.effort, Lang::ZhCn), z.effort);
            // a flag named in English is named in Chinese too
            if let Some(flag) = e.title.split_whitespace().find(|w| w.starts_with("--")) {
                assert!(z.title.contains(flag), "{} / {}", e.title, z.title);
            }
            let v = verdict_in(&z.serve, Lang::ZhCn);
            assert!(cjk(&v), "{v}");
            assert_eq!(verdict(&e.serve), verdict_in(&e.serve, Lang::En));
        }
        // the text: the same commands, no English frame left
        for options in [false, true] {
            let t_en = crate::serve::text::advice(&en, model, options);
            assert_eq!(crate::serve::text::advice_in(&en, model, options, Lang::En), t_en);
            let t_zh = crate::serve::text::advice_in(&zh, model, options, Lang::ZhCn);
            let commands = |t: &str| -> Vec<String> {
                t.lines()
                    .filter(|l| l.trim_start().starts_with("vramscope serve"))
                    .map(str::to_owned)
                    .collect()
            };
            assert_eq!(commands(&t_zh), commands(&t_en));
            for english in
                ["effort)", "trade-off:", "changes:", "GPU(s)", "each change alone", "the path (", "now:"]
            {
                assert!(!t_zh.contains(english), "{english} left in:\n{t_zh}");
            }
        }
    }
}

#[test]
fn too_long_a_context_is_offered_shorter_requests_beside_the_path() {
    let s = setup("llama-3.1-8b", "rtx-4090", ServeConfig::default());
    let a = advise(&s, None).unwrap();
    assert!(!a.before.fits);
    let b = &a.beside[0];
    assert!(b.starts && b.kind == StepKind::Method);
    assert!(b.serve_args.contains(&a.before.max_model_len_that_fits.to_string()));
}

/// `serve --options --target-concurrency` names in its headline where a path ends ("holds 64
/// concurrent requests after 6 step(s) … on 8×H100"): the text prints that path, each step with
/// its command, so the command of the headline's answer is on the page (it once listed only
/// the changes alone).
#[test]
fn the_options_print_the_path_their_headline_names() {
    let s = setup("llama-3.1-8b", "rtx-4090", ServeConfig::default());
    let a = advise(&s, Some(64.0)).unwrap();
    assert!(!a.roadmap.is_empty(), "{}", a.headline);
    let text = crate::serve::text::advice(&a, "llama-3.1-8b", true);
    let last = a.roadmap.last().unwrap();
    let cmd = format!("vramscope serve --model llama-3.1-8b {}", last.serve_args.join(" "));
    assert!(text.contains(&cmd), "the headline's path is missing from:\n{text}");
    assert!(text.contains("the path the headline names"), "{text}");
}
