//! Vision-language models take images per sample (`--images N --image-size HxW`) beside the
//! text (`--seq`): the image tokens as the processor makes them, the frozen tower, the flags that
//! reproduce the scenario and the refusals.

use super::{assert_usage_error, json, run};

#[test]
fn qwen25_vl_lora_with_four_large_images_is_one_command() {
    let args = [
        "estimate",
        "--model",
        "qwen2.5-vl-7b",
        "--lora",
        "16:all",
        "--images",
        "4",
        "--image-size",
        "1024",
        "--seq",
        "2048",
        "--json",
    ];
    let j = json(&args);
    // smart_resize: 1024 → 1036 (37 × 28 px), 74 × 74 patches, 2 × 2 merged
    let im = &j["scenario"]["images"];
    assert_eq!(im["count"], 4);
    assert_eq!((im["resized_height"].as_u64(), im["resized_width"].as_u64()), (Some(1036), Some(1036)));
    assert_eq!(im["tokens_per_image"], 1369);
    assert_eq!(im["image_tokens"], 5476);
    assert_eq!(im["text_tokens"], 2048);
    assert_eq!(j["scenario"]["seq"], 2048 + 5476);
    assert_eq!(j["model"]["n_params"], 8_292_166_656_u64);
    assert_eq!(j["model"]["validated"], true);
    // more images, more activations: the decoder runs over text and image tokens
    let one = json(&[
        "estimate",
        "--model",
        "qwen2.5-vl-7b",
        "--lora",
        "16:all",
        "--images",
        "1",
        "--image-size",
        "1024",
        "--seq",
        "2048",
        "--json",
    ]);
    let act = |j: &serde_json::Value| j["bytes"]["activations"].as_u64().unwrap();
    assert!(act(&j) > act(&one) * 2, "{} vs {}", act(&j), act(&one));
    // the text names the tokens and the frozen tower
    let out = run(&args[..args.len() - 1]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("seq 7524 (2048 text + 4 × 1024×1024 images of 1369 tokens)"), "{text}");
    assert!(text.contains("vision tower and projector are frozen"), "{text}");
}

#[test]
fn fixed_size_towers_and_the_fit_count_text_beside_the_images() {
    // LLaVA-1.5: every image is one 336-pixel crop, 576 tokens
    let j = json(&["estimate", "--model", "llava-1.5-7b", "--images", "2", "--seq", "512", "--json"]);
    assert_eq!(j["scenario"]["images"]["tokens_per_image"], 576);
    assert_eq!(j["scenario"]["seq"], 512 + 2 * 576);
    assert_eq!(j["model"]["n_params"], 7_063_427_072_u64);
    let out = run(&[
        "estimate",
        "--model",
        "qwen3-vl-8b",
        "--images",
        "2",
        "--image-size",
        "800x600",
        "--seq",
        "1024",
        "--lora",
        "16:all",
        "--gpu",
        "h100-80gb",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("most text tokens that fit beside"), "{text}");
}

#[test]
fn images_need_a_model_that_takes_them_and_a_size() {
    assert_usage_error(
        &["estimate", "--model", "gpt2", "--images", "2"],
        "--images applies to a vision-language model",
    );
    assert_usage_error(&["estimate", "--model", "dinov2-large", "--images", "2"], "takes one image a sample");
    assert_usage_error(
        &["estimate", "--model", "qwen2.5-vl-7b", "--images", "2"],
        "--images needs --image-size",
    );
    assert_usage_error(
        &["estimate", "--model", "qwen2.5-vl-7b", "--images", "2", "--image-size", "10x4000"],
        "aspect ratio over 200",
    );
    // a tower whose image tokens are not modelled yet is said to be one, not text-only
    assert_usage_error(
        &["estimate", "--model", "llama-4-scout", "--images", "1"],
        "image tokens are not modelled yet",
    );
    // the probe and the framework exports do not feed images yet: refused, not a text-only run
    let vlm = ["--model", "qwen2.5-vl-7b", "--images", "2", "--image-size", "448", "--lora", "16:all"];
    assert_usage_error(
        &[&["probe"][..], &vlm, &["-o", "/dev/null"]].concat(),
        "images (pixel values, grids) are not fed yet",
    );
    assert_usage_error(
        &[&["export"][..], &vlm, &["--format", "hf"]].concat(),
        "does not write a vision-language run yet",
    );
}

#[test]
fn the_what_if_table_counts_text_tokens() {
    let out = run(&[
        "export",
        "--model",
        "qwen2.5-vl-7b",
        "--images",
        "2",
        "--image-size",
        "448",
        "--lora",
        "16:all",
        "--seq",
        "700",
        "--format",
        "md",
        "--gpu",
        "h100-80gb",
    ]);
    assert!(out.status.success());
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("| text tokens | peak allocated | total | fits |"), "{md}");
    // the scenario's own text, not its text + image total, is a row
    assert!(md.contains("| 700 |"), "{md}");
}

#[test]
fn advice_reproduces_the_images() {
    let j = json(&[
        "estimate",
        "--model",
        "qwen2.5-vl-7b",
        "--lora",
        "16:all",
        "--images",
        "3",
        "--image-size",
        "448x640",
        "--seq",
        "700",
        "--json",
    ]);
    let mut sc =
        vramscope::estimate::Scenario::new(vramscope::model::preset::builtin("qwen2.5-vl-7b").unwrap());
    sc.seq = 700;
    sc.set_images(3, vramscope::model::pixels::ImageSize { height: 448, width: 640 }).unwrap();
    let gpu = vramscope::gpu::find("h100-80gb").unwrap();
    let line = vramscope::flags::line(&vramscope::flags::flags(&sc, &gpu));
    assert!(line.contains("--seq 700 --images 3 --image-size 448x640"), "{line}");
    // the line gives the same scenario back
    assert_eq!(j["scenario"]["seq"], sc.seq);
    assert_eq!(j["scenario"]["images"]["text_tokens"], 700);
}

/// Gemma 3 takes images without a size: the processor resizes each to the tower's 896 pixels and
/// the projector pools them to 256 tokens; every layer then gets a mask (each image attends to
/// itself bidirectionally), so SDPA keeps a `(b, 1, s, s)` bias per layer.
#[test]
fn gemma3_images_are_256_tokens_each_and_mask_every_layer() {
    let text = json(&["estimate", "--model", "gemma-3-4b", "--seq", "512", "--lora", "16", "--json"]);
    let v = json(&[
        "estimate",
        "--model",
        "gemma-3-4b",
        "--seq",
        "512",
        "--images",
        "2",
        "--lora",
        "16",
        "--json",
    ]);
    assert_eq!(v["scenario"]["images"]["count"], 2);
    assert_eq!(v["scenario"]["images"]["tokens_per_image"], 256);
    assert_eq!(v["scenario"]["seq"], 1024, "512 text + 2 × 256 image tokens");
    let with_text_only_len =
        json(&["estimate", "--model", "gemma-3-4b", "--seq", "1024", "--lora", "16", "--json"]);
    // the same sequence with images keeps more: the per-layer masks (and the scatter's mask)
    let act = |x: &serde_json::Value| x["bytes"]["activations"].as_u64().expect("activations");
    assert!(act(&v) > act(&with_text_only_len), "{} vs {}", act(&v), act(&with_text_only_len));
    assert!(act(&with_text_only_len) > act(&text));
}

/// Mistral 3 (Pixtral): a 1024×768 image is rounded up to 1036×784, 37 rows of 28 tokens, each
/// row ending with a break token: 1073 tokens in the sequence.
#[test]
fn mistral3_images_are_rows_of_tokens_with_a_break_each() {
    let cfg = std::env::temp_dir().join(format!("vramscope-mistral3-{}.json", std::process::id()));
    std::fs::write(
        &cfg,
        r#"{"model_type":"mistral3","architectures":["Mistral3ForConditionalGeneration"],
        "text_config":{"model_type":"mistral","hidden_size":512,"intermediate_size":1024,"num_hidden_layers":2,
        "num_attention_heads":8,"num_key_value_heads":2,"head_dim":64,"vocab_size":1000},
        "vision_config":{"model_type":"pixtral","hidden_size":64,"intermediate_size":128,"num_hidden_layers":1,
        "num_attention_heads":2,"head_dim":32,"image_size":1540,"patch_size":14}}"#,
    )
    .unwrap();
    let path = cfg.to_str().unwrap();
    let v = json(&[
        "estimate",
        "--model",
        path,
        "--seq",
        "100",
        "--images",
        "1",
        "--image-size",
        "1024x768",
        "--json",
    ]);
    assert_eq!(v["scenario"]["images"]["tokens_per_image"], 1073);
    assert_eq!(v["scenario"]["seq"], 1173);
    assert_usage_error(&["estimate", "--model", path, "--images", "1"], "--images needs --image-size");
    let _ = std::fs::remove_file(&cfg);
}

/// The markdown report names the text and the images of the sequence, in both languages.
#[test]
fn the_report_names_the_text_and_the_images() {
    let dir = std::env::temp_dir();
    for (lang, needle) in [
        ("en", "| 1 x 1024 (512 text + 512 image tokens: 2 × 896×896, 256 tokens per image) |"),
        ("zh-CN", "1 x 1024（512 个文本 token + 512 个图像 token：2 × 896×896，每张图像 256 个 token）"),
    ] {
        let out = dir.join(format!("vramscope-vlm-report-{lang}-{}.md", std::process::id()));
        let path = out.to_str().unwrap();
        let args = ["export", "--model", "gemma-3-4b", "--images", "2", "--seq", "512", "--lora", "16"];
        let o = run(&[&args[..], &["--format", "md", "--lang", lang, "-o", path]].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let md = std::fs::read_to_string(&out).unwrap();
        assert!(md.contains(needle), "{lang}: {md}");
        let _ = std::fs::remove_file(&out);
    }
}
