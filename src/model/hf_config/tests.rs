//! The config reader's unit tests.

use super::*;
use crate::model::{Moe, layer};

#[test]
fn llama_without_head_dim_and_defaults() {
    let text = r#"{"model_type":"mixtral","hidden_size":4096,"num_attention_heads":32,
        "num_key_value_heads":8,"num_hidden_layers":32,"intermediate_size":14336,
        "vocab_size":32000,"num_local_experts":8,"num_experts_per_tok":2,"head_dim":null,
        "architectures":["MixtralForCausalLM"]}"#;
    let (spec, note) = parse_config("c.json", text).unwrap();
    assert_eq!(spec.head_dim, 128);
    assert_eq!(spec.moe, Some(Moe::routed(8, 2)));
    assert!(note.is_none());
}

#[test]
fn errors_name_file_and_key() {
    let e = parse_config("x/config.json", r#"{"model_type":"bert","hidden_size":64}"#).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("x/config.json") && msg.contains("num_attention_heads"), "{msg}");
    let e = parse_config("y.json", r#"{"model_type":"t5"}"#).unwrap_err().to_string();
    assert!(e.contains("y.json") && e.contains("t5") && e.contains("hidden_size"), "{e}");
    let e = parse_config("z.json", "{\n  \"model_type\": ,\n}").unwrap_err().to_string();
    assert!(e.contains("z.json") && e.contains("line 2"), "{e}");
    let e = parse_config("w.json", r#"{"model_type":"gpt2","n_embd":"768"}"#).unwrap_err().to_string();
    assert!(e.contains("n_embd"), "{e}");
}

#[test]
fn head_follows_architectures() {
    let base = r#""model_type":"bert","hidden_size":64,"num_attention_heads":4,"num_hidden_layers":2,
        "intermediate_size":128,"vocab_size":100,"max_position_embeddings":64"#;
    let (s, _) =
        parse_config("b", &format!(r#"{{{base},"architectures":["BertForSequenceClassification"]}}"#))
            .unwrap();
    assert_eq!(s.head, Head::SequenceClassification { num_labels: 2 });
    let (s, note) = parse_config("b", &format!("{{{base}}}")).unwrap();
    assert_eq!(s.head, Head::MaskedLm);
    assert!(note.unwrap().contains("BertForMaskedLM"));
}

#[test]
fn missing_keys_take_the_class_defaults() {
    // gemma3 with a minimal text_config: Gemma3TextConfig defaults (vocab 262208, 8 heads,
    // head_dim 256, window 4096, full attention every 6th layer), tied by Gemma3Config
    let text = r#"{"model_type":"gemma3","architectures":["Gemma3ForConditionalGeneration"],
        "text_config":{"hidden_size":2560,"intermediate_size":10240,"num_hidden_layers":12},
        "vision_config":{"hidden_size":1152,"intermediate_size":4304,"num_hidden_layers":27,
        "image_size":896,"patch_size":14,"vision_use_head":false},"torch_dtype":"bfloat16"}"#;
    let p = parse("c.json", text).unwrap();
    let s = &p.spec;
    assert_eq!(
        (s.family, s.vocab_size, s.num_heads, s.num_kv_heads, s.head_dim),
        (crate::families::by_id("gemma3").unwrap(), 262208, 8, 4, 256)
    );
    assert_eq!(s.sliding_window, Some(4096));
    let full: Vec<usize> =
        s.layer_flags.iter().enumerate().filter(|(_, f)| **f & layer::SLIDING == 0).map(|(i, _)| i).collect();
    assert_eq!(full, vec![5, 11]);
    assert!(s.tie_word_embeddings && s.head == Head::CausalLm);
    assert_eq!(s.vision.unwrap().projector_params, 1152 * 2560 + 1152);
    assert_eq!(p.dtype.as_deref(), Some("bfloat16"));
}

#[test]
fn every_layer_sliding_keeps_flags_empty() {
    let base = r#""model_type":"mistral","hidden_size":64,"num_attention_heads":4,"num_key_value_heads":4,"num_hidden_layers":3,
        "intermediate_size":128,"vocab_size":100,"architectures":["MistralForCausalLM"]"#;
    let s = parse("m", &format!("{{{base}}}")).unwrap().spec;
    assert_eq!((s.sliding_window, s.layer_flags.len()), (Some(4096), 0));
    let s = parse("m", &format!(r#"{{{base},"sliding_window":null}}"#)).unwrap().spec;
    assert_eq!(s.sliding_window, None);
    let s = parse(
        "m",
        &format!(
            r#"{{{base},"model_type":"qwen3","use_sliding_window":true,"sliding_window":32,"max_window_layers":1}}"#
        )
        .replace(r#""model_type":"mistral","#, ""),
    )
    .unwrap()
    .spec;
    assert_eq!(
        (s.sliding_window, s.layer_flags.clone()),
        (Some(32), vec![0, layer::SLIDING, layer::SLIDING])
    );
}

#[test]
fn quantization_formats_and_unknown_methods() {
    let base = r#""model_type":"llama","hidden_size":64,"num_attention_heads":4,"num_hidden_layers":2,
        "intermediate_size":128,"vocab_size":100,"architectures":["LlamaForCausalLM"]"#;
    let q = |cfg: &str| parse("q.json", &format!(r#"{{{base},"quantization_config":{cfg}}}"#));
    use WeightFormat as W;
    assert_eq!(
        q(r#"{"quant_method":"gptq","bits":4,"group_size":-1}"#).unwrap().spec.quant,
        Some(W::Gptq { bits: 4, group_size: 1 << 32 })
    );
    assert_eq!(
        q(r#"{"quant_method":"awq","w_bit":4,"q_group_size":64}"#).unwrap().spec.quant,
        Some(W::Awq { bits: 4, group_size: 64 })
    );
    assert_eq!(
        q(r#"{"quant_method":"bitsandbytes","load_in_8bit":true}"#).unwrap().spec.quant,
        Some(W::Bnb8)
    );
    assert_eq!(
        q(r#"{"quant_method":"fp8","weight_block_size":[128,128]}"#).unwrap().spec.quant,
        Some(W::Fp8 { block: 128 })
    );
    let ct = r#"{"quant_method":"compressed-tensors","config_groups":{"group_0":{"weights":{"num_bits":8,"type":"float"}}}}"#;
    assert_eq!(q(ct).unwrap().spec.quant, Some(W::Fp8 { block: 0 }));
    let p =
        q(r#"{"quant_method":"bitsandbytes","load_in_4bit":true,"bnb_4bit_use_double_quant":true}"#).unwrap();
    assert_eq!(p.spec.quant, Some(W::Bnb4 { double_quant: true }));
    assert!(p.notes.iter().any(|n| n.contains("bitsandbytes 4-bit")), "{:?}", p.notes);
    let p = q(r#"{"quant_method":"hqq"}"#).unwrap();
    assert_eq!(p.spec.quant, None);
    assert!(
        p.notes.iter().any(|n| n.contains("q.json") && n.contains("hqq") && n.contains("not modelled")),
        "{:?}",
        p.notes
    );
}

#[test]
fn unknown_types_are_generic_decoders() {
    let text = r#"{"model_type":"internlm2","hidden_size":64,"num_attention_heads":4,"num_hidden_layers":2,
        "intermediate_size":128,"vocab_size":100,"architectures":["InternLM2ForCausalLM"],
        "tie_word_embeddings":false}"#;
    let p = parse("g.json", text).unwrap();
    assert_eq!(p.spec.family, crate::families::generic());
    assert_eq!(p.spec.unvalidated_type.as_deref(), Some("internlm2"));
    assert!(p.notes[0].contains("unvalidated architecture: model_type \"internlm2\""), "{:?}", p.notes);
    let e = parse("g.json", r#"{"model_type":"rwkv","hidden_size":64}"#).unwrap_err().to_string();
    assert!(e.contains("g.json") && e.contains("rwkv") && e.contains("num_hidden_layers"), "{e}");
    // Mamba has a family now: its class defaults fill the rest
    let m = parse("g.json", r#"{"model_type":"mamba","hidden_size":64}"#).unwrap();
    assert_eq!(m.spec.family.id(), "mamba");
}

#[test]
fn unknown_types_read_their_experts_and_say_which_mixers_are_not_modelled() {
    // a hybrid of linear-attention and attention layers with routed and shared experts, in a
    // spelling (Kimi's) no family reads
    let text = r#"{"model_type":"some_hybrid","hidden_size":64,"num_attention_heads":4,"num_hidden_layers":4,
        "intermediate_size":128,"moe_intermediate_size":16,"num_experts":8,"num_experts_per_token":2,
        "num_shared_experts":1,"vocab_size":100,"tie_word_embeddings":false,
        "layer_types":["linear_attention","linear_attention","linear_attention","full_attention"]}"#;
    let p = parse("h.json", text).unwrap();
    let moe = p.spec.moe.unwrap();
    assert_eq!(
        (moe.experts, moe.top_k, moe.shared_intermediate_size, p.spec.intermediate_size),
        (8, 2, 16, 16)
    );
    let u = p.spec.unmodelled.as_deref().unwrap_or_default();
    assert!(
        u.contains("not modelled") && u.contains("3 of 4 layers") && u.contains("linear_attention"),
        "{u}"
    );
    // a dense decoder says nothing of the kind
    let dense = r#"{"model_type":"internlm2","hidden_size":64,"num_attention_heads":4,"num_hidden_layers":2,
        "intermediate_size":128,"vocab_size":100}"#;
    assert!(parse("g.json", dense).unwrap().spec.unmodelled.is_none());
}

#[test]
fn a_wrappers_own_tie_decides_over_its_text_configs() {
    // transformers ties the head by the loaded (wrapper) model's config: Mistral 3's class
    // default ties although its text_config (MistralConfig) says not; counts checked against
    // meta-device instantiation (23,340,272,640 at the class defaults)
    let text = r#"{"model_type":"mistral3","tie_word_embeddings":true,
        "text_config":{"model_type":"mistral","hidden_size":64,"num_attention_heads":4,"num_key_value_heads":2,"num_hidden_layers":2,
        "intermediate_size":128,"vocab_size":100,"tie_word_embeddings":false},
        "vision_config":{"model_type":"pixtral","hidden_size":32,"intermediate_size":64,"num_hidden_layers":1,
        "num_attention_heads":2,"image_size":64,"patch_size":16}}"#;
    assert!(parse("m.json", text).unwrap().spec.tie_word_embeddings);
    let untied = text.replacen(r#""tie_word_embeddings":true"#, r#""tie_word_embeddings":false"#, 1);
    assert!(!parse("m.json", &untied).unwrap().spec.tie_word_embeddings);
}
