//! The controls' sections and the Serve mode: serving as the CLI answers, HF generate, litgpt's
//! code and PyTorch release, QLoRA and quantized inference, FSDP, the largest-batch line.

use super::*;

/// The Serve mode's answer, as the CLI prints it for the command the window names.
fn serve_of(h: &Harness<'_, VramApp>) -> vramscope::gui::derived::ServeComputed {
    match &h.state().derived.serve {
        Some(Ok(s)) => s.clone(),
        other => panic!("no server: {:?}", other.as_ref().map(|r| r.as_ref().err())),
    }
}

#[test]
fn serve_mode_answers_as_the_cli_does_and_applies_an_option() {
    let mut h = harness();
    h.get_by_label("Serve").click();
    h.run();
    assert!(h.state().state.settings.serving);
    let sv = serve_of(&h);
    // the one-line answer, with the figures `vramscope serve` gives for the command shown
    let cmd = sv.command();
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(&words[1..])
        .arg("--json")
        .output()
        .unwrap();
    // exit code 3 when the server would not start, its answer printed all the same
    let code = if sv.serve.fits { 0 } else { 3 };
    assert_eq!(out.status.code(), Some(code), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["kv_tokens"].as_u64(), Some(sv.serve.kv_tokens), "{cmd}");
    assert_eq!(j["bytes"]["kv_cache"].as_u64(), Some(sv.serve.bytes.kv_cache));
    assert_eq!(j["fits"].as_bool(), Some(sv.serve.fits));
    let tokens = vramscope::units::digits(sv.serve.kv_tokens);
    assert!(
        h.query_by_label_contains(&format!("{tokens} tokens of KV cache")).is_some(),
        "headline shows {tokens}"
    );
    assert!(h.query_by_label_contains(&cmd).is_some(), "the window names its command");
    // the export is what `serve --roadmap --json` prints for that command
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(&words[1..])
        .args(["--roadmap", "--json"])
        .output()
        .unwrap();
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let exported: serde_json::Value =
        serde_json::from_str(&h.state().serve_export_text(true).unwrap()).unwrap();
    assert_eq!(exported["roadmap"], cli["roadmap"]);
    assert_eq!(exported["options"], cli["options"]);
    assert_eq!(exported["headline"], cli["headline"]);
    assert!(h.state().serve_export_text(false).unwrap().contains(&format!("{tokens} tokens of KV cache")));
    // the utilisation slider moves the pool
    h.get_by_role_and_label(Role::Slider, "GPU memory utilisation").set_value_accesskit(0.8);
    h.run();
    let lower = serve_of(&h);
    assert!(lower.serve.bytes.kv_cache < sv.serve.bytes.kv_cache);
    // an option applied gives the figures its row showed
    h.get_by_label("Options & cost").click();
    h.run();
    let adv = lower.advice.clone().unwrap();
    let kv = adv.options.iter().position(|o| o.title.contains("kv-cache-dtype")).unwrap();
    let row = adv.options[kv].clone();
    h.get_all_by_label("apply").nth(kv).unwrap().click();
    h.run();
    let applied = serve_of(&h);
    assert!(h.state().state.settings.serve.kv_fp8);
    assert_eq!(applied.serve.kv_tokens, row.kv_tokens, "{}", row.title);
    // undo brings the server back
    h.key_press_modifiers(Modifiers::COMMAND, Key::Z);
    h.run();
    assert!(!h.state().state.settings.serve.kv_fp8);
    // a server that does not start says so, in the headline and the bar
    h.state_mut().state.settings.model = ModelChoice::Preset("llama-3.1-70b".into());
    h.run();
    assert!(!serve_of(&h).serve.fits);
    assert!(h.query_by_label_contains("does not start").is_some());
    // leaving Serve mode brings the training view back
    h.get_by_label("Train").click();
    h.run();
    assert!(!h.state().state.settings.serving);
    assert!(h.state().derived.serve.is_none());
}

#[test]
fn inference_can_be_hf_generate_and_the_command_gives_its_numbers() {
    let mut h = harness();
    h.get_by_label("Infer").click();
    h.run();
    assert_eq!(h.state().state.settings.new_tokens, 0);
    h.get_by_label("Generate (HF generate)").click();
    h.run();
    assert!(h.state().state.settings.new_tokens > 0);
    h.get_by_role_and_label(Role::Slider, "New tokens").set_value_accesskit(1000.0);
    h.run();
    let s = h.state().state.settings.clone();
    assert_eq!(s.new_tokens, 1000);
    let sc = s.to_scenario().unwrap();
    let e = match &h.state().derived.current {
        Some(Ok(c)) => c.estimate.clone(),
        _ => panic!("no estimate"),
    };
    let g = e.generate.expect("the app estimates HF generate");
    assert_eq!(g.cached_tokens, s.seq + 999);
    // the flags the window names give the same numbers on the command line
    let gpu = vramscope::gpu::find(&s.gpu_id).unwrap();
    let mut args = vec!["estimate".to_owned(), "--model".into(), "llama-3.1-8b".into()];
    for (k, v) in vramscope::flags::flags(&sc, &gpu) {
        args.push(k.to_owned());
        args.extend(v);
    }
    args.push("--json".into());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vramscope")).args(&args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["bytes"]["kv_cache"].as_u64(), Some(e.kv_cache), "{args:?}");
    assert_eq!(j["bytes"]["total"].as_u64(), Some(e.total), "{args:?}");
    // back to training: the new tokens do not leak into the training scenario
    h.get_by_label("Train").click();
    h.run();
    assert_eq!(h.state().state.settings.to_scenario().unwrap().new_tokens, 0);
}

#[test]
fn litgpt_shows_its_model_code_and_the_pytorch_release() {
    use vramscope::estimate::{ModelCode, Torch};
    let mut h = harness();
    assert!(h.query_by_label("PyTorch release").is_none(), "hidden under transformers' defaults");
    h.get_by_role_and_label(Role::ComboBox, "Framework").click();
    h.run();
    h.get_by_label("litgpt").click_accesskit();
    h.run();
    assert_eq!(h.state().state.settings.stack.model_code, ModelCode::Litgpt);
    let acts = |h: &Harness<'_, VramApp>| shown(h).activations;
    let before = acts(&h);
    let pick = |h: &mut Harness<'_, VramApp>, item: &str| {
        // (the menu may still be open from the last pick)
        if h.query_by_label(item).is_none() {
            h.get_by_role_and_label(Role::ComboBox, "PyTorch release").click_accesskit();
            h.run();
        }
        h.get_by_label(item).click_accesskit();
        h.run();
    };
    pick(&mut h, "PyTorch 2.0 - 2.1");
    assert_eq!(h.state().state.settings.stack.torch, Torch::Before2_2);
    // the final norm's mean keeps its squared input too
    let mean = acts(&h);
    assert!(mean > before, "{before} -> {mean}");
    // before 1.11 every softmax keeps its input as well (tests/accuracy.rs measures it); PyTorch
    // 1.10 has no SDPA, so the attention shown becomes the eager attention walked
    let sdpa = h.state().state.settings.attention;
    pick(&mut h, "PyTorch 1.10 or older");
    assert_eq!(h.state().state.settings.stack.torch, Torch::Before1_11);
    assert_eq!(sdpa, vramscope::estimate::AttentionImpl::Sdpa);
    assert_eq!(h.state().state.settings.attention, vramscope::estimate::AttentionImpl::Eager);
}

#[test]
fn qlora_and_quantized_inference_come_from_the_base_weights_menu() {
    use vramscope::estimate::BaseQuant;
    let mut h = harness();
    assert!(h.query_by_label("Base weights").is_none(), "full fine-tuning has no base to quantize");
    h.get_by_role_and_label(Role::CheckBox, "LoRA adapters").click_accesskit();
    h.run();
    let params = |h: &Harness<'_, VramApp>| shown(h).parameters;
    let lora = params(&h);
    h.get_by_role_and_label(Role::ComboBox, "Base weights").click();
    h.run();
    h.get_by_label("NF4 (double quant)").click_accesskit();
    h.run();
    assert_eq!(h.state().state.settings.base_quant, BaseQuant::Nf4);
    // the frozen projections in NF4 (about a quarter of their bf16 bytes; embedding and head stay)
    assert!(params(&h) < lora / 2, "{} vs {}", params(&h), lora);
    // the scenario the window shows is the one `vramscope estimate --base-quant nf4` gives
    let sc = h.state().state.settings.to_scenario().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sc.base_quant, BaseQuant::Nf4);
    let gpu = vramscope::gpu::find(&h.state().state.settings.gpu_id).unwrap_or_else(|e| panic!("{e}"));
    assert!(vramscope::flags::line(&vramscope::flags::flags(&sc, &gpu)).contains("--base-quant nf4"));
    // who quantized it: bitsandbytes before 0.43 quantized from fp16, so each 4-bit matmul under
    // bf16 holds the fp16 weight and its bf16 cast; Lightning's plugin quantizes the head too
    use vramscope::estimate::Bnb;
    let nf4 = shown(&h);
    for (choice, bnb, flag) in [
        ("bitsandbytes < 0.43", Bnb::Before0_43, "--bitsandbytes 0.42"),
        ("Lightning (litgpt)", Bnb::Lightning, "--bitsandbytes lightning"),
    ] {
        // open the menu (a menu left open by the previous choice closes on the first click)
        for _ in 0..3 {
            if h.query_by_label(choice).is_some() {
                break;
            }
            h.get_by_role_and_label(Role::ComboBox, "Quantized by").click_accesskit();
            h.run();
        }
        h.get_by_label(choice).click_accesskit();
        h.run();
        assert_eq!(h.state().state.settings.stack.bnb, bnb);
        // the window's numbers are those of the flags it names
        let sc = h.state().state.settings.to_scenario().unwrap_or_else(|e| panic!("{e}"));
        let line = vramscope::flags::line(&vramscope::flags::flags(&sc, &gpu));
        assert!(line.contains(flag), "{line}");
        let (e, _) = vramscope::estimate::estimate_reserved(&sc, Some(gpu.capacity()))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(e.total, total(&h), "{choice}");
    }
    // Lightning's plugin quantizes the LM head too
    assert!(shown(&h).parameters < nf4.parameters, "{} vs {}", shown(&h).parameters, nf4.parameters);
}

#[test]
fn fsdp_and_its_code_are_chosen_in_the_parallel_section() {
    use vramscope::estimate::{FsdpImpl, FsdpMode};
    let mut h = harness();
    h.state_mut().state.settings.dp = 4;
    h.state_mut().state.settings.lora_enabled = true;
    h.run();
    assert!(h.query_by_label("FSDP code").is_none(), "shown under FSDP only");
    h.get_by_role_and_label(Role::ComboBox, "Sharding").click_accesskit();
    h.run();
    h.get_by_label("FSDP full_shard").click_accesskit();
    h.run();
    assert_eq!(h.state().state.settings.fsdp, Some(FsdpMode::FullShard));
    let grads = |h: &Harness<'_, VramApp>| shown(h).gradients;
    let own = grads(&h);
    h.get_by_role_and_label(Role::ComboBox, "FSDP code").click_accesskit();
    h.run();
    h.get_by_label("fsdp1-shared").click_accesskit();
    h.run();
    assert_eq!(h.state().state.settings.stack.fsdp, FsdpImpl::Fsdp1Shared);
    // adapters inside each block's flat parameter: every block weight's gradient, sharded
    assert!(grads(&h) > 20 * own, "{own} -> {}", grads(&h));
    // the window's scenario is the CLI's
    let sc = h.state().state.settings.to_scenario().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(sc.parallel.fsdp, Some(FsdpMode::FullShard));
    let e = vramscope::estimate::estimate(&sc).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(e.gradients, grads(&h));
}

/// When the current batch fits above the largest micro-batch (a smaller one runs out of blocks in
/// the allocator replay), the headline says so instead of contradicting the verdict.
#[test]
fn the_largest_batch_line_explains_a_fitting_batch_above_it() {
    use vramscope::gui::derived::Computed;
    use vramscope::gui::panels::headline::max_batch_text;
    let s = Settings { batch: 3, ..Settings::default() };
    let mut c = Computed::new(&s).unwrap();
    assert!(c.fits());
    let plain = max_batch_text(&c);
    assert!(!plain.contains("finds no free block"), "{plain}");
    // as the replay answers when batch 2 fragments the cache and 3 does not
    c.max_batch = Some(1);
    let text = max_batch_text(&c);
    assert!(text.starts_with("Largest micro-batch that fits: 1 "), "{text}");
    assert!(text.contains("micro-batch 2 finds no free block"), "{text}");
}
