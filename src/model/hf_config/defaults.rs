//! transformers 5.24 config-class defaults of the keys the reader uses, by `model_type`.

/// Config-class defaults (transformers 5.24) of the keys read, by `model_type`.
pub(super) fn class_defaults(model_type: &str) -> &'static str {
    match model_type {
        "llama" | "granite" => {
            r#"{"vocab_size":32000,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
            "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false,"mlp_bias":false}"#
        }
        "mistral" => {
            r#"{"vocab_size":32000,"hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":8,"tie_word_embeddings":false,"sliding_window":4096}"#
        }
        "mixtral" => {
            r#"{"vocab_size":32000,"hidden_size":4096,"intermediate_size":14336,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":8,"tie_word_embeddings":false,
            "num_local_experts":8,"num_experts_per_tok":2}"#
        }
        "qwen2" => {
            r#"{"vocab_size":151936,"hidden_size":4096,"intermediate_size":22016,"num_hidden_layers":32,
            "num_attention_heads":32,"tie_word_embeddings":false,"use_sliding_window":false,
            "sliding_window":4096,"max_window_layers":28}"#
        }
        "qwen2_moe" => {
            r#"{"vocab_size":151936,"hidden_size":2048,"intermediate_size":5632,"num_hidden_layers":24,
            "num_attention_heads":16,"num_key_value_heads":16,"tie_word_embeddings":false,
            "use_sliding_window":false,"max_window_layers":28,"decoder_sparse_step":1,
            "moe_intermediate_size":1408,"shared_expert_intermediate_size":5632,"num_experts_per_tok":4,
            "num_experts":60,"norm_topk_prob":false,"mlp_only_layers":[],"qkv_bias":true}"#
        }
        "qwen3" => {
            r#"{"vocab_size":151936,"hidden_size":4096,"intermediate_size":22016,"num_hidden_layers":32,
            "num_attention_heads":32,"num_key_value_heads":32,"head_dim":128,"tie_word_embeddings":false,
            "attention_bias":false,"use_sliding_window":false,"max_window_layers":28}"#
        }
        "qwen3_moe" => {
            r#"{"vocab_size":151936,"hidden_size":2048,"intermediate_size":6144,"num_hidden_layers":24,
            "num_attention_heads":32,"num_key_value_heads":4,"tie_word_embeddings":false,
            "attention_bias":false,"use_sliding_window":false,"max_window_layers":28,
            "decoder_sparse_step":1,"moe_intermediate_size":768,"num_experts_per_tok":8,
            "num_experts":128,"norm_topk_prob":false,"mlp_only_layers":[]}"#
        }
        "gemma" => {
            r#"{"vocab_size":256000,"hidden_size":3072,"intermediate_size":24576,"num_hidden_layers":28,
            "num_attention_heads":16,"num_key_value_heads":16,"head_dim":256,"tie_word_embeddings":true,
            "attention_bias":false}"#
        }
        "gemma2" => {
            r#"{"vocab_size":256000,"hidden_size":2304,"intermediate_size":9216,"num_hidden_layers":26,
            "num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"tie_word_embeddings":true,
            "attention_bias":false,"sliding_window":4096,"final_logit_softcapping":30.0,
            "attn_logit_softcapping":50.0}"#
        }
        "gemma3_text" => {
            r#"{"vocab_size":262208,"hidden_size":2304,"intermediate_size":9216,"num_hidden_layers":26,
            "num_attention_heads":8,"num_key_value_heads":4,"head_dim":256,"tie_word_embeddings":true,
            "attention_bias":false,"sliding_window":4096,"sliding_window_pattern":6}"#
        }
        "siglip_vision_model" => {
            r#"{"hidden_size":768,"intermediate_size":3072,"num_hidden_layers":12,"num_channels":3,
            "image_size":224,"patch_size":16,"vision_use_head":true}"#
        }
        "pixtral" => {
            r#"{"hidden_size":1024,"intermediate_size":4096,"num_hidden_layers":24,"num_channels":3,
            "image_size":1024,"patch_size":16}"#
        }
        "gemma3" => r#"{"tie_word_embeddings":true}"#,
        "mistral3" => {
            r#"{"tie_word_embeddings":true,"multimodal_projector_bias":false,"spatial_merge_size":2}"#
        }
        "phi3" => {
            r#"{"vocab_size":32064,"hidden_size":3072,"intermediate_size":8192,"num_hidden_layers":32,
            "num_attention_heads":32,"resid_pdrop":0.0,"tie_word_embeddings":false,"partial_rotary_factor":1.0}"#
        }
        "phi" => {
            r#"{"vocab_size":51200,"hidden_size":2048,"intermediate_size":8192,"num_hidden_layers":24,
            "num_attention_heads":32,"resid_pdrop":0.0,"embd_pdrop":0.0,"attention_dropout":0.0,
            "hidden_act":"gelu_new","tie_word_embeddings":false,"partial_rotary_factor":0.5,
            "qk_layernorm":false}"#
        }
        "olmo2" => {
            r#"{"vocab_size":50304,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
            "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false}"#
        }
        "gpt_neox" => {
            r#"{"vocab_size":50432,"hidden_size":6144,"intermediate_size":24576,"num_hidden_layers":44,
            "num_attention_heads":64,"rotary_pct":0.25,"use_parallel_residual":true,"attention_bias":true,
            "tie_word_embeddings":false,"hidden_dropout":0.0,"attention_dropout":0.0}"#
        }
        "falcon" => {
            r#"{"vocab_size":65024,"hidden_size":4544,"num_hidden_layers":32,"num_attention_heads":71,
            "multi_query":true,"parallel_attn":true,"new_decoder_architecture":false,"bias":false,
            "tie_word_embeddings":true,"hidden_dropout":0.0,"attention_dropout":0.0}"#
        }
        "starcoder2" => {
            r#"{"vocab_size":49152,"hidden_size":3072,"intermediate_size":12288,"num_hidden_layers":30,
            "num_attention_heads":24,"num_key_value_heads":2,"use_bias":true,"tie_word_embeddings":true,
            "residual_dropout":0.0}"#
        }
        "smollm3" => {
            r#"{"vocab_size":128256,"hidden_size":2048,"intermediate_size":11008,"num_hidden_layers":36,
            "num_attention_heads":16,"num_key_value_heads":4,"tie_word_embeddings":true,
            "use_sliding_window":false,"no_rope_layer_interval":4,"attention_bias":false,"mlp_bias":false}"#
        }
        "deepseek_v2" => {
            r#"{"vocab_size":102400,"hidden_size":4096,"intermediate_size":11008,"num_hidden_layers":32,
            "num_attention_heads":32,"tie_word_embeddings":false,"attention_bias":false,
            "first_k_dense_replace":0,"kv_lora_rank":512,"q_lora_rank":1536,"n_routed_experts":64,
            "n_shared_experts":2,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,
            "moe_intermediate_size":1407,"moe_layer_freq":1}"#
        }
        "deepseek_v3" => {
            r#"{"vocab_size":129280,"hidden_size":7168,"intermediate_size":18432,"num_hidden_layers":61,
            "num_attention_heads":128,"tie_word_embeddings":false,"attention_bias":false,
            "first_k_dense_replace":3,"kv_lora_rank":512,"q_lora_rank":1536,"n_routed_experts":256,
            "n_shared_experts":1,"qk_nope_head_dim":128,"qk_rope_head_dim":64,"v_head_dim":128,
            "moe_intermediate_size":2048,"num_experts_per_tok":8,"moe_layer_freq":1}"#
        }
        "gpt_oss" => {
            r#"{"vocab_size":201088,"hidden_size":2880,"intermediate_size":2880,"num_hidden_layers":36,
            "num_attention_heads":64,"num_key_value_heads":8,"head_dim":64,"tie_word_embeddings":false,
            "attention_bias":true,"sliding_window":128,"num_local_experts":128,"num_experts_per_tok":4}"#
        }
        "vit" => {
            r#"{"hidden_size":768,"intermediate_size":3072,"num_hidden_layers":12,"num_attention_heads":12,
            "hidden_dropout_prob":0.0,"attention_probs_dropout_prob":0.0,"image_size":224,"patch_size":16,
            "num_channels":3,"qkv_bias":true}"#
        }
        "t5" => r#"{"tie_word_embeddings":true}"#,
        "whisper" => r#"{"tie_word_embeddings":true}"#,
        _ => "{}",
    }
}
