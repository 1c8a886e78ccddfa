use super::*;
use crate::model::preset::load_path;
use std::path::{Path, PathBuf};

const CONFIG: &str = r#"{"model_type":"llama","architectures":["LlamaForCausalLM"],"hidden_size":64,
"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,
"vocab_size":100,"tie_word_embeddings":false,"torch_dtype":"bfloat16"QUANT}"#;

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vramscope-hc-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The tiny Llama's tensors as the checkpoint stores them.
fn llama(lm_head: bool) -> Vec<(String, &'static str, Vec<u64>)> {
    let mut t = vec![("model.embed_tokens.weight".to_owned(), "BF16", vec![100, 64])];
    for l in 0..2 {
        let p = format!("model.layers.{l}.");
        for (n, s) in [
            ("self_attn.q_proj.weight", vec![64, 64]),
            ("self_attn.k_proj.weight", vec![32, 64]),
            ("self_attn.v_proj.weight", vec![32, 64]),
            ("self_attn.o_proj.weight", vec![64, 64]),
            ("mlp.gate_proj.weight", vec![128, 64]),
            ("mlp.up_proj.weight", vec![128, 64]),
            ("mlp.down_proj.weight", vec![64, 128]),
            ("input_layernorm.weight", vec![64]),
            ("post_attention_layernorm.weight", vec![64]),
        ] {
            t.push((format!("{p}{n}"), "BF16", s));
        }
    }
    t.push(("model.norm.weight".into(), "BF16", vec![64]));
    if lm_head {
        t.push(("lm_head.weight".into(), "BF16", vec![100, 64]));
    }
    t
}

fn write(d: &Path, quant: &str, tensors: &[(String, &str, Vec<u64>)]) {
    std::fs::write(d.join("config.json"), CONFIG.replace("QUANT", quant)).unwrap();
    write_header(d, tensors);
}

/// A header-only `model.safetensors` of `tensors` in `d`.
fn write_header(d: &Path, tensors: &[(String, &str, Vec<u64>)]) {
    let mut h = serde_json::Map::new();
    for (n, dt, s) in tensors {
        h.insert(n.clone(), serde_json::json!({"dtype": dt, "shape": s, "data_offsets": [0, 0]}));
    }
    let text = serde_json::Value::Object(h).to_string();
    let mut bytes = (text.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(text.as_bytes());
    std::fs::write(d.join("model.safetensors"), bytes).unwrap();
}

fn total(t: &[(String, &str, Vec<u64>)]) -> u64 {
    t.iter().map(|(_, _, s)| s.iter().product::<u64>()).sum()
}

#[test]
fn an_agreeing_header_changes_nothing_and_is_named_as_the_source() {
    let d = dir("agree");
    let t = llama(true);
    // buffers some checkpoints save beside the weights are not parameters
    let mut with_buffers = t.clone();
    with_buffers.push(("model.layers.0.self_attn.rotary_emb.inv_freq".into(), "F32", vec![8]));
    with_buffers.push(("model.embed_positions.position_ids".into(), "I64", vec![1, 64]));
    write(&d, "", &with_buffers);
    let l = load_path(&d).unwrap();
    let cfg_only = load_path(&d.join("config.json")).unwrap();
    assert_eq!(l.model, cfg_only.model);
    assert_eq!(l.model.n_params(), total(&t));
    let h = l.header.as_ref().unwrap();
    assert!(h.agrees && h.missing.is_empty() && h.extra.is_empty(), "{h:?}");
    assert_eq!(h.buffers, 2);
    assert_eq!(h.dtypes, ["BF16"]);
    let from = |k: &str| l.facts.iter().find(|f| f.fact == k).map(|f| f.from.clone());
    assert_eq!(from("parameters").as_deref(), Some(FROM_HEADER));
    assert_eq!(from("num_hidden_layers").as_deref(), Some("config.json"));
    assert_eq!(from("attention_bias").as_deref(), Some("class default"));
    assert_eq!(from("torch_dtype").as_deref(), Some("config.json"));
    assert_eq!(from("rope_theta").as_deref(), Some("vramscope default"));
    assert!(!l.notes.iter().any(|n| n.contains("holds")), "{:?}", l.notes);
}

#[test]
fn a_header_without_the_lm_head_ties_the_embeddings() {
    let d = dir("tied");
    let t = llama(false);
    write(&d, "", &t);
    let l = load_path(&d).unwrap();
    assert_eq!(l.model.n_params(), total(&t));
    assert!(l.model.transformer().unwrap().tie_word_embeddings);
    let h = l.header.as_ref().unwrap();
    assert!(!h.agrees);
    assert_eq!(h.missing.len(), 1, "{h:?}");
    assert_eq!(h.missing[0].shape, [100, 64]);
    let note = l.notes.iter().find(|n| n.contains("holds")).unwrap();
    assert!(note.contains("no LM head") && note.contains("using the header's exact count"), "{note}");
}

#[test]
fn extra_and_missing_tensors_are_named_and_the_count_is_the_header() {
    let d = dir("extra");
    let mut t = llama(true);
    // a new variant: q/k norms per layer, and no up projection in layer 1
    t.push(("model.layers.0.self_attn.q_norm.weight".into(), "BF16", vec![16]));
    t.push(("model.layers.1.self_attn.q_norm.weight".into(), "BF16", vec![16]));
    t.retain(|(n, _, _)| n != "model.layers.1.mlp.up_proj.weight");
    write(&d, "", &t);
    let l = load_path(&d).unwrap();
    assert_eq!(l.model.n_params(), total(&t));
    let h = l.header.as_ref().unwrap();
    assert_eq!(h.extra.len(), 1, "{h:?}");
    assert_eq!(h.extra[0].count, 2);
    assert!(h.extra[0].names.iter().any(|n| n.contains("q_norm")), "{h:?}");
    assert_eq!(h.missing.len(), 1, "{h:?}");
    assert_eq!((h.missing[0].shape, h.missing[0].count), ([128, 64], 1));
    let note = l.notes.iter().find(|n| n.contains("holds")).unwrap();
    assert!(note.contains("q_norm") && note.contains("missing 1 ×"), "{note}");
    // the JSON carries it
    let v = serde_json::to_value(h).unwrap();
    assert_eq!(v["extra"][0]["count"], 2);
}

#[test]
fn gptq_packed_weights_count_as_the_weights_they_hold() {
    let d = dir("gptq");
    let t = llama(true);
    let mut q = Vec::new();
    for (n, dt, s) in &t {
        if n.contains("_proj.weight") {
            let b = n.trim_end_matches(".weight");
            let (out_f, in_f) = (s[0], s[1]);
            q.push((format!("{b}.qweight"), "I32", vec![in_f * 4 / 32, out_f]));
            q.push((format!("{b}.qzeros"), "I32", vec![in_f / 32, out_f * 4 / 32]));
            q.push((format!("{b}.scales"), "F16", vec![in_f / 32, out_f]));
            q.push((format!("{b}.g_idx"), "I32", vec![in_f]));
        } else {
            q.push((n.clone(), *dt, s.clone()));
        }
    }
    write(&d, r#","quantization_config":{"quant_method":"gptq","bits":4,"group_size":32}"#, &q);
    let l = load_path(&d).unwrap();
    let h = l.header.as_ref().unwrap();
    assert!(h.agrees, "{h:?} {:?}", l.notes);
    assert_eq!(h.header_params, total(&t));
    assert_eq!(h.quant_aux_tensors, 14 * 3);
}

#[test]
fn mxfp4_blocks_unpack_to_their_weights() {
    let t = vec![
        TensorInfo { name: "e.gate_up_proj_blocks".into(), dtype: "U8".into(), shape: vec![4, 64, 2, 16] },
        TensorInfo { name: "e.gate_up_proj_scales".into(), dtype: "U8".into(), shape: vec![4, 64, 2] },
    ];
    let (l, aux, _) = logical(&t, Some(WeightFormat::Mxfp4));
    assert_eq!((l.len(), aux), (1, 1));
    assert_eq!(l[0].0.shape, [4, 64, 64]);
}

#[test]
fn per_expert_tensors_fold_into_the_fused_shape() {
    let mut t = Vec::new();
    for e in 0..4 {
        for (n, s) in [("w1", vec![8, 16]), ("w3", vec![8, 16]), ("w2", vec![16, 8])] {
            let name = format!("model.layers.0.block_sparse_moe.experts.{e}.{n}.weight");
            t.push((TensorInfo { name, dtype: "BF16".into(), shape: s }, true));
        }
    }
    let s = header_shapes(&t);
    assert_eq!(s.keys().copied().collect::<Vec<_>>(), [[64, 8], [64, 16]]);
}

/// The parameter tensors of a fixture's shapes.txt (meta-device dump of the HF class).
fn fixture_tensors(text: &str) -> Vec<(String, &'static str, Vec<u64>)> {
    let mut out = Vec::new();
    for line in text.lines().take_while(|l| !l.starts_with("# buffers")).filter(|l| !l.starts_with('#')) {
        let Some((name, rest)) = line.split_once(' ') else { continue };
        let (shape, after) = rest.trim_start().trim_start_matches('[').split_once(']').unwrap();
        let shape: Vec<u64> = shape.split(',').map(|d| d.trim().parse().unwrap()).collect();
        let times: usize = after.split_whitespace().nth(1).unwrap().trim_start_matches('x').parse().unwrap();
        for i in 0..times {
            out.push((name.replace('*', &i.to_string()), "BF16", shape.clone()));
        }
    }
    out
}

/// The tensors as a quantized checkpoint stores them.
fn pack(
    t: Vec<(String, &'static str, Vec<u64>)>,
    q: Option<WeightFormat>,
) -> Vec<(String, &'static str, Vec<u64>)> {
    let mut out = Vec::new();
    for (n, dt, s) in t {
        let linear = n.contains(".layers.") && n.ends_with("_proj.weight") && s.len() == 2;
        let base = n.trim_end_matches(".weight").to_owned();
        match (q, s.as_slice()) {
            (Some(WeightFormat::Gptq { bits, group_size }), [o, i]) if linear => {
                out.push((format!("{base}.qweight"), "I32", vec![i * bits / 32, *o]));
                out.push((format!("{base}.qzeros"), "I32", vec![i / group_size, o * bits / 32]));
                out.push((format!("{base}.scales"), "F16", vec![i / group_size, *o]));
                out.push((format!("{base}.g_idx"), "I32", vec![*i]));
            }
            (Some(WeightFormat::Awq { bits, group_size }), [o, i]) if linear => {
                out.push((format!("{base}.qweight"), "I32", vec![*i, o * bits / 32]));
                out.push((format!("{base}.qzeros"), "I32", vec![i / group_size, o * bits / 32]));
                out.push((format!("{base}.scales"), "F16", vec![i / group_size, *o]));
            }
            (Some(WeightFormat::Bnb4 { .. }), [o, i]) if linear => {
                out.push((n.clone(), "U8", vec![o * i / 2, 1]));
                out.push((format!("{n}.absmax"), "U8", vec![o * i / 64]));
                out.push((format!("{n}.quant_map"), "F32", vec![16]));
                out.push((format!("{n}.quant_state.bitsandbytes__nf4"), "U8", vec![100]));
            }
            (Some(WeightFormat::Fp8 { block }), [o, i]) if linear => {
                out.push((n.clone(), "F8_E4M3", s.clone()));
                out.push((format!("{n}_scale_inv"), "F32", vec![o.div_ceil(block), i.div_ceil(block)]));
            }
            (Some(WeightFormat::Mxfp4), [e, a, b])
                if n.ends_with("gate_up_proj") || n.ends_with("down_proj") =>
            {
                out.push((format!("{n}_blocks"), "U8", vec![*e, *b, a / 32, 16]));
                out.push((format!("{n}_scales"), "U8", vec![*e, *b, a / 32]));
            }
            _ => out.push((n, dt, s)),
        }
    }
    out
}

/// Every fixture of tests/data/hub: a header of its real tensors (packed as its quantization
/// stores them) agrees with the family's list, and the model is the one config.json alone gives.
#[test]
fn every_fixtures_header_agrees_and_changes_no_number() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hub");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let fixture = entry.unwrap().path();
        let (cfg, shapes) = (fixture.join("config.json"), fixture.join("shapes.txt"));
        if !cfg.exists() || !shapes.exists() {
            continue;
        }
        let tag = fixture.file_name().unwrap().to_string_lossy().to_string();
        let alone = load_path(&cfg).unwrap();
        let quant = alone.model.transformer().and_then(|t| t.quant);
        let t = pack(fixture_tensors(&std::fs::read_to_string(&shapes).unwrap()), quant);
        let d = dir(&format!("fx-{tag}"));
        write_header(&d, &t);
        std::fs::copy(&cfg, d.join("config.json")).unwrap();
        let l = load_path(&d).unwrap();
        let hc = l.header.as_ref().unwrap();
        assert!(hc.agrees, "{tag}: {hc:?}\n{:?}", l.notes);
        assert_eq!(l.model.arch, alone.model.arch, "{tag}");
        let _ = std::fs::remove_dir_all(&d);
        checked += 1;
    }
    assert!(checked >= 30, "{checked} fixtures");
}

/// A fixture's tensors and config under an unknown `model_type`, with `drop` keys left out of
/// its config; the experts unfused per expert when `per_expert` (as Hub checkpoints store them).
fn mystery(fixture: &str, drop: &[&str], per_expert: bool, tag: &str) -> (Loaded, u64) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hub").join(fixture);
    let mut t = fixture_tensors(&std::fs::read_to_string(root.join("shapes.txt")).unwrap());
    if per_expert {
        let mut out = Vec::new();
        for (n, dt, s) in t {
            match (n.rsplit_once(".experts."), s.as_slice()) {
                (Some((p, "gate_up_proj")), [e, two_i, h]) => {
                    for i in 0..*e {
                        out.push((format!("{p}.experts.{i}.gate_proj.weight"), dt, vec![two_i / 2, *h]));
                        out.push((format!("{p}.experts.{i}.up_proj.weight"), dt, vec![two_i / 2, *h]));
                    }
                }
                (Some((p, "down_proj")), [e, h, i_]) => {
                    for i in 0..*e {
                        out.push((format!("{p}.experts.{i}.down_proj.weight"), dt, vec![*h, *i_]));
                    }
                }
                _ => out.push((n, dt, s)),
            }
        }
        t = out;
    }
    let mut cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("config.json")).unwrap()).unwrap();
    cfg["model_type"] = "mystery".into();
    cfg["architectures"] = serde_json::json!(["MysteryForCausalLM"]);
    for k in drop {
        cfg.as_object_mut().unwrap().remove(*k);
    }
    let d = dir(&format!("mystery-{tag}"));
    write_header(&d, &t);
    std::fs::write(d.join("config.json"), cfg.to_string()).unwrap();
    let l = load_path(&d).unwrap();
    let _ = std::fs::remove_dir_all(&d);
    (l, total(&t))
}

/// Qwen-MoE's keys (experts, their width, the shared expert's) as a config of a new type might
/// spell them otherwise: left out, so that only the header can show them.
const QWEN_MOE_KEYS: &[&str] =
    &["num_experts", "moe_intermediate_size", "shared_expert_intermediate_size", "decoder_sparse_step"];

#[test]
fn an_unknown_moe_reads_its_experts_from_the_tensor_names_as_its_config_would_give_them() {
    for (fixture, per_expert) in [("qwen2-moe", false), ("qwen2-moe", true), ("qwen3-30b-a3b", true)] {
        let tag = format!("{fixture}-{per_expert}");
        let (keys, _) = mystery(fixture, &[], per_expert, &format!("{tag}-keys"));
        let (names, n) = mystery(fixture, QWEN_MOE_KEYS, per_expert, &tag);
        let (a, b) = (keys.model.transformer().unwrap(), names.model.transformer().unwrap());
        let (ma, mb) = (a.moe.unwrap(), b.moe.expect("experts from the header"));
        assert_eq!(
            (mb.experts, mb.top_k, mb.shared_experts > 0, mb.shared_intermediate_size),
            (ma.experts, ma.top_k, ma.shared_experts > 0, ma.shared_intermediate_size),
            "{tag}"
        );
        assert_eq!((b.intermediate_size, &b.layer_flags), (a.intermediate_size, &a.layer_flags), "{tag}");
        assert_eq!(names.model.n_params(), n, "{tag}");
        // the structure is walked as such: nothing beyond the generic list but Qwen2's q/k/v
        // biases or Qwen3's q/k norms
        assert!(b.extra_params <= 3 * 2048 * 48, "{tag}: {} extra", b.extra_params);
        let s = names.facts.iter().find(|f| f.fact == "block structure").expect("the layout is a fact");
        assert_eq!(s.from, FROM_HEADER);
        assert!(s.value.as_deref().unwrap().contains(&format!("{} experts of width", ma.experts)), "{s:?}");
        let r = names.facts.iter().find(|f| f.fact == "router").expect("the router is a fact");
        assert_eq!(r.from, "config.json (norm_topk_prob)", "{tag}");
        let norm = fixture == "qwen3-30b-a3b";
        assert_eq!(r.value.as_deref().unwrap().contains("not renormalised"), !norm, "{tag}: {r:?}");
    }
}

#[test]
fn dense_first_blocks_and_blocks_without_attention_show_in_the_names() {
    let mut t = llama(true);
    // block 1 of the tiny Llama: 4 experts of width 32 instead of the dense MLP; block 0 a mixer
    t.retain(|(n, _, _)| {
        !(n.starts_with("model.layers.1.mlp.") || n.starts_with("model.layers.0.self_attn."))
    });
    for e in 0..4 {
        for (m, s) in [("gate_proj", vec![32, 64]), ("up_proj", vec![32, 64]), ("down_proj", vec![64, 32])] {
            t.push((format!("model.layers.1.mlp.experts.{e}.{m}.weight"), "BF16", s));
        }
    }
    t.push(("model.layers.1.mlp.gate.weight".into(), "BF16", vec![4, 64]));
    t.push(("model.layers.0.mamba.in_proj.weight".into(), "BF16", vec![256, 64]));
    t.push(("model.layers.0.mamba.A_log".into(), "F32", vec![8]));
    let d = dir("hybrid");
    write(&d, "", &t);
    std::fs::write(
        d.join("config.json"),
        CONFIG.replace("QUANT", "").replace("\"llama\"", "\"mystery\"").replace("LlamaFor", "MysteryFor"),
    )
    .unwrap();
    let l = load_path(&d).unwrap();
    let s = l.model.transformer().unwrap();
    let moe = s.moe.unwrap();
    assert_eq!((moe.experts, moe.top_k, s.intermediate_size, s.dense_intermediate_size), (4, 2, 32, 128));
    assert_eq!(s.layer_flags, [crate::model::layer::DENSE, 0]);
    assert_eq!(l.model.n_params(), total(&t));
    let caveat = s.unmodelled.as_deref().unwrap();
    assert!(caveat.contains("1 of 2 blocks hold no attention") && caveat.contains("`mamba.*`"), "{caveat}");
    let from = |k: &str| l.facts.iter().find(|f| f.fact == k).map(|f| f.from.clone());
    assert!(from("experts per token").unwrap().starts_with("vramscope default"));
    let v = l.facts.iter().find(|f| f.fact == "block structure").unwrap().value.clone().unwrap();
    assert_eq!(
        v,
        "2 blocks: 1 with 4 experts of width 32, 1 with a dense MLP of width 128; 1 with attention, 1 without (`mamba.*`)"
    );
}
