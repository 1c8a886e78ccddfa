//! transformers 5.24 config-class defaults of the keys the reader uses for the model types no
//! family reads: the vision towers and wrappers of multimodal checkpoints, the encoder-decoders
//! counted as generic. The families' own are in their files ([`crate::families::FamilyDef::class_defaults`]).

/// Config-class defaults (transformers 5.24) of the keys read, by `model_type`: a family's, else
/// these, else none.
pub(super) fn class_defaults(model_type: &str) -> &'static str {
    if let Some(d) = crate::families::class_defaults(model_type) {
        return d;
    }
    match model_type {
        // the vision backbones built op by op (their families read a NetSpec, not a TransformerSpec)
        "resnet" => {
            r#"{"num_channels":3,"embedding_size":64,"hidden_sizes":[256,512,1024,2048],"depths":[3,4,6,3],
            "layer_type":"bottleneck","hidden_act":"relu","downsample_in_first_stage":false,
            "downsample_in_bottleneck":false,"num_labels":2}"#
        }
        "convnext" => {
            r#"{"num_channels":3,"patch_size":4,"num_stages":4,"hidden_sizes":[96,192,384,768],"depths":[3,3,9,3],
            "hidden_act":"gelu","layer_scale_init_value":1e-6,"drop_path_rate":0.0,"image_size":224,"num_labels":2}"#
        }
        "swin" => {
            r#"{"num_channels":3,"patch_size":4,"embed_dim":96,"depths":[2,2,6,2],"num_heads":[3,6,12,24],
            "window_size":7,"mlp_ratio":4.0,"qkv_bias":true,"hidden_dropout_prob":0.0,
            "attention_probs_dropout_prob":0.0,"drop_path_rate":0.1,"hidden_act":"gelu",
            "use_absolute_embeddings":false,"image_size":224,"num_labels":2}"#
        }
        "llama4_vision_model" => {
            r#"{"hidden_size":768,"intermediate_size":5632,"num_hidden_layers":34,"num_channels":3,
            "image_size":448,"patch_size":14,"projector_input_dim":4096,"projector_output_dim":4096,
            "vision_output_dim":7680}"#
        }
        "qwen2_5_vl_vision" => {
            r#"{"depth":32,"hidden_size":3584,"intermediate_size":3420,"num_heads":16,"in_channels":3,
            "patch_size":14,"spatial_merge_size":2,"temporal_patch_size":2,"out_hidden_size":3584}"#
        }
        "qwen3_vl_vision" => {
            r#"{"depth":27,"hidden_size":1152,"intermediate_size":4304,"num_heads":16,"in_channels":3,
            "patch_size":16,"spatial_merge_size":2,"temporal_patch_size":2,"out_hidden_size":3584,
            "num_position_embeddings":2304,"deepstack_visual_indexes":[8,16,24]}"#
        }
        "clip_vision_model" => {
            r#"{"hidden_size":768,"intermediate_size":3072,"num_hidden_layers":12,"num_attention_heads":12,
            "num_channels":3,"image_size":224,"patch_size":32}"#
        }
        // LlavaConfig's vision_config when the file has none
        "llava_clip_vision" => {
            r#"{"hidden_size":1024,"intermediate_size":4096,"num_hidden_layers":24,"num_attention_heads":16,
            "num_channels":3,"image_size":336,"patch_size":14}"#
        }
        "llava" => {
            r#"{"tie_word_embeddings":false,"multimodal_projector_bias":true,"vision_feature_layer":-2,
            "vision_feature_select_strategy":"default"}"#
        }
        "pixtral" => {
            r#"{"hidden_size":1024,"intermediate_size":4096,"num_hidden_layers":24,"num_channels":3,
            "image_size":1024,"patch_size":16}"#
        }
        "mistral3" => {
            r#"{"tie_word_embeddings":true,"multimodal_projector_bias":false,"spatial_merge_size":2}"#
        }
        "siglip_text_model" => {
            r#"{"vocab_size":32000,"hidden_size":768,"intermediate_size":3072,"num_hidden_layers":12,
            "max_position_embeddings":64}"#
        }
        "t5" => r#"{"tie_word_embeddings":true}"#,
        "whisper" => r#"{"tie_word_embeddings":true}"#,
        _ => "{}",
    }
}
