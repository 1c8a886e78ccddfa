//! Vision models take an image size (`--image-size`), not a sequence: the tokens, the error
//! messages, the largest image that fits and the flags that reproduce a scenario.

use super::{assert_usage_error, json, run};

#[test]
fn an_image_size_sets_the_tokens_and_says_how() {
    let j = json(&[
        "estimate",
        "--model",
        "vit-base-patch16-224",
        "--image-size",
        "384",
        "--batch",
        "8",
        "--json",
    ]);
    assert_eq!(j["scenario"]["seq"], 577);
    let image = &j["scenario"]["image"];
    assert_eq!((image["height"].as_u64(), image["width"].as_u64()), (Some(384), Some(384)));
    assert_eq!(image["patches"], 576);
    assert_eq!(image["tokens"], 577);
    assert_eq!(image["positions_interpolated"], true);
    assert!(image["describe"].as_str().unwrap().contains("interpolate_pos_encoding=True"), "{image}");
    assert_eq!(j["model"]["n_params"], 86_567_656);
    assert_eq!(j["model"]["validated"], true);
    // the config's own size needs no interpolation; a text model has no image
    let own = json(&["estimate", "--model", "vit-base-patch16-224", "--json"]);
    assert_eq!(own["scenario"]["seq"], 197);
    assert_eq!(own["scenario"]["image"]["positions_interpolated"], false);
    assert!(json(&["estimate", "--model", "gpt2", "--json"])["scenario"]["image"].is_null());
    // a non-square image: DINOv2 interpolates on every forward (16 × 32 patches + the class token)
    let tall = json(&["estimate", "--model", "dinov2-large", "--image-size", "224x448", "--json"]);
    assert_eq!(tall["scenario"]["seq"], 16 * 32 + 1);
    // the activations grow with the image's area
    let small = json(&["estimate", "--model", "dinov2-large", "--image-size", "224", "--json"]);
    let act = |j: &serde_json::Value| j["bytes"]["activations"].as_u64().unwrap();
    assert!(act(&tall) > act(&small) * 19 / 10, "{} vs {}", act(&tall), act(&small));
}

#[test]
fn the_text_names_the_image_and_the_largest_that_fits() {
    let out =
        run(&["estimate", "--model", "dinov2-large", "--image-size", "448", "--batch", "8", "--gpu", "l4"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("batch 8 x 448×448 image (1025 tokens)"), "{text}");
    assert!(text.contains("largest square image that fits at micro-batch 8:"), "{text}");
    assert!(text.contains("positions interpolated from the 37×37 grid"), "{text}");
}

#[test]
fn images_and_sequences_do_not_mix() {
    assert_usage_error(&["estimate", "--model", "gpt2", "--image-size", "224"], "reads text, not images");
    assert_usage_error(
        &["estimate", "--model", "vit-base-patch16-224", "--seq", "300"],
        "197 tokens of a 224×224",
    );
    assert_usage_error(
        &["estimate", "--model", "vit-base-patch16-224", "--image-size", "384", "--seq", "197"],
        "disagree",
    );
    assert_usage_error(
        &["estimate", "--model", "vit-base-patch16-224", "--image-size", "8"],
        "smaller than one 16×16",
    );
    assert_usage_error(
        &["estimate", "--model", "vit-base-patch16-224", "--image-size", "2x"],
        "not an image size",
    );
}

/// Every command a report or a probe names for a vision model carries its image, and the JSON
/// keys say what the sequence knob is: the image side.
#[test]
fn reports_and_probes_reproduce_the_image() {
    let dir = std::env::temp_dir().join(format!("vramscope-vision-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let md = dir.join("r.md");
    let common = ["--model", "dinov2-large", "--image-size", "448", "--batch", "32", "--gpu", "rtx-4090"];
    let out =
        run(&[&["export"][..], &common, &["--format", "md", "-o", md.to_str().unwrap(), "--force"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("| micro-batch x image | 32 x 448×448 (1025 tokens) |"), "{text}");
    assert!(text.contains("| image side (px) |"), "{text}");
    assert!(!text.contains("--seq"), "{text}");
    let j = json(&[&["estimate"][..], &common, &["--json"]].concat());
    let side = j["max_image_side"].as_u64().unwrap();
    assert_eq!(side % 14, 0);
    assert_eq!(j["max_seq"].as_u64(), Some((side / 14) * (side / 14) + 1), "tokens of the largest image");
    let script = dir.join("p.py");
    let out = run(&[&["probe"][..], &common, &["-o", script.to_str().unwrap(), "--force"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let py = std::fs::read_to_string(&script).unwrap();
    assert!(py.contains("--image-size 448x448") && !py.contains("--seq 1025"), "the probe's command line");
    std::fs::remove_dir_all(&dir).ok();
    // a text model takes no image
    assert_usage_error(&["estimate", "--model", "gpt2", "--image-size", "384"], "reads text");
}

/// A convolutional backbone answers by image size: its feature maps grow with the pixels, the
/// JSON names the family as validated, and what it cannot run is refused by name.
#[test]
fn a_convolutional_network_answers_by_image_size() {
    let at = |side: &str| {
        json(&[
            "estimate",
            "--model",
            "resnet-50",
            "--image-size",
            side,
            "--batch",
            "32",
            "--precision",
            "bf16",
            "--json",
        ])
    };
    let (a, b) = (at("224"), at("448"));
    assert_eq!(a["model"]["family"], "resnet");
    assert_eq!(a["model"]["validated"], true);
    assert_eq!(a["scenario"]["image"]["height"], 224);
    let acts = |j: &serde_json::Value| j["bytes"]["activations"].as_u64().unwrap();
    // ResNet-50 keeps 1,400,412,674 bytes at b32 bf16 224 (reference_W: measured, exact); four
    // times the pixels, four times the feature maps
    assert_eq!(acts(&a), 1_400_412_674);
    let r = acts(&b) as f64 / acts(&a) as f64;
    assert!((3.9..4.1).contains(&r), "{r}");
    assert!(a["activations_by_kind"]["feature_maps"].as_u64().unwrap() > acts(&a) / 2);
    assert_usage_error(
        &["estimate", "--model", "resnet-50", "--checkpoint", "full"],
        "gradient checkpointing",
    );
    assert_usage_error(&["estimate", "--model", "resnet-50", "--precision", "bf16-amp"], "autocast");
    assert_usage_error(&["estimate", "--model", "resnet-50", "--seq", "100"], "no sequence");
    assert_usage_error(&["estimate", "--model", "convnext-base-224", "--image-size", "16"], "total stride");
    assert_usage_error(&["estimate", "--model", "resnet-50", "--lora", "8"], "not yet for ResNet");
}

/// Swin answers by image size too: its windows, shifted windows and merges measured exactly
/// (reference_X), and an image whose last stage is smaller than the window refused as
/// transformers fails on it.
#[test]
fn swin_answers_by_image_size_and_refuses_a_grid_under_its_window() {
    let j = json(&["estimate", "--model", "swin-base-224", "--batch", "32", "--precision", "bf16", "--json"]);
    assert_eq!(j["model"]["family"], "swin");
    assert_eq!(j["model"]["validated"], true);
    // Swin-B keeps 3,503,682,434 bytes at b32 bf16 224 (reference_X: measured, exact)
    assert_eq!(j["bytes"]["activations"].as_u64(), Some(3_503_682_434));
    assert_usage_error(
        &["estimate", "--model", "swin-base-224", "--image-size", "192"],
        "smaller than its 7×7 window",
    );
    assert_usage_error(&["estimate", "--model", "swin-base-224", "--checkpoint", "full"], "not modelled yet");
    assert_usage_error(
        &["estimate", "--model", "swin-base-224", "--attention", "eager"],
        "modelled with SDPA",
    );
    // 193 px is the smallest side whose last stage keeps a 7×7 grid; the image search starts there
    let j = json(&[
        "estimate",
        "--model",
        "swin-base-224",
        "--image-size",
        "193",
        "--batch",
        "220",
        "--precision",
        "bf16",
        "--gpu",
        "4090",
        "--json",
    ]);
    if j["fits"] == true {
        assert!(j["max_image_side"].as_u64().is_some_and(|s| s >= 193), "{}", j["max_image_side"]);
    }
}

/// LLaVA-NeXT sizes its image tokens by the image (anyres), as its processor does, and counts
/// its parameters exactly; a malformed grid list is refused by key.
#[test]
fn llava_next_counts_its_anyres_tokens() {
    let j = json(&[
        "estimate",
        "--model",
        "llava-v1.6-mistral-7b",
        "--images",
        "2",
        "--image-size",
        "1024x768",
        "--seq",
        "512",
        "--json",
    ]);
    // transformers' LlavaNextProcessor: the 672×672 grid, 2352 tokens (class token dropped)
    assert_eq!(j["scenario"]["images"]["tokens_per_image"], 2352);
    assert_eq!(j["scenario"]["images"]["resized_height"], 672);
    assert_eq!(j["model"]["validated"], true);
    let dir = std::env::temp_dir().join(format!("vramscope-llava-next-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("config.json");
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/presets/hf/llava-v1.6-mistral-7b.json"
    ))
    .unwrap()
    .replace("[1008, 336]", "[1000, 336]");
    std::fs::write(&cfg, text).unwrap();
    assert_usage_error(&["estimate", "--model", cfg.to_str().unwrap()], "image_grid_pinpoints");
    let _ = std::fs::remove_dir_all(&dir);
}
