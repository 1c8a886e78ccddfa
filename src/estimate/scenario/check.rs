//! A scenario's checks, run once at the edge ([`Scenario::validate`]): ranges, combinations of
//! the weight format, LoRA, the stack, the parallel degrees against the model, checkpointing.

use super::*;

impl Scenario {
    /// A training scenario with HF-like defaults: batch 1, sequence 512 (clamped to the model's
    /// positions), bf16, AdamW, SDPA, no checkpointing.
    pub fn new(model: ModelSpec) -> Self {
        let seq = match model.transformer() {
            _ if let Some(p) = model.patches() => p.tokens(p.image),
            Some(t) if t.max_position_embeddings > 0 => t.max_position_embeddings.min(512),
            _ => 512,
        };
        let mut s = Self {
            model,
            mode: Mode::Train,
            batch: 1,
            seq,
            image: None,
            images: 0,
            new_tokens: 0,
            dims: Default::default(),
            precision: Precision::Bf16,
            optimizer: Optimizer::Adamw,
            attention: AttentionImpl::Sdpa,
            checkpointing: Checkpointing::None,
            lora: None,
            base_quant: BaseQuant::None,
            kv_cache_dtype: None,
            overhead: Overhead::default(),
            parallel: Parallel::default(),
            stack: Stack::default(),
        };
        s.at_traced();
        s
    }

    /// Checks ranges and combinations; the estimator trusts a validated scenario. The first
    /// problem found is the one reported, in this order.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.check_workload()?;
        self.check_weights()?;
        self.check_sizes()?;
        self.check_stack()?;
        self.check_parallel()?;
        self.check_steps()
    }

    /// Batch, sequence, generated tokens and the model's positions.
    fn check_workload(&self) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::Invalid(m));
        if self.batch == 0 || self.batch > 1 << 24 {
            return bad(format!("batch {} is out of range (1 to 16777216)", self.batch));
        }
        if let Some(t) = self.model.traced() {
            return self.check_traced(t);
        }
        if let Some(name) = self.dims.keys().next() {
            return bad(format!("--dim {name}: only a traced model (a .vstrace.json) has named dims"));
        }
        if self.seq == 0 || self.seq > 1 << 24 {
            return bad(format!("sequence length {} is out of range (1 to 16777216)", self.seq));
        }
        if self.new_tokens > 0 {
            if self.mode != Mode::Infer {
                return bad("--new-tokens is for inference (--mode infer): HF generate's new tokens".into());
            }
            if self.new_tokens > 1 << 24 {
                return bad(format!("--new-tokens {} is out of range (1 to 16777216)", self.new_tokens));
            }
            let causal = self.model.transformer().is_some_and(|t| t.head == crate::model::Head::CausalLm);
            if !causal {
                return bad(format!(
                    "--new-tokens needs a causal language model; {} has no generating head",
                    self.model.name
                ));
            }
        }
        if let Some(t) = self.model.transformer()
            && t.max_position_embeddings > 0
            && self.new_tokens > 0
            && self.seq + self.new_tokens - 1 > t.max_position_embeddings
        {
            return bad(format!(
                "prompt {} + {} new tokens exceeds the model's {} positions",
                self.seq, self.new_tokens, t.max_position_embeddings
            ));
        }
        if let Some(p) = self.model.patches() {
            return self.check_image(p);
        }
        if let Some(rule) = self.image_rule() {
            return self.check_images(rule);
        }
        if self.image.is_some() || self.images > 0 {
            return bad(no_image_input(&self.model));
        }
        if let Some(t) = self.model.transformer()
            && t.max_position_embeddings > 0
            && self.seq + t.position_offset > t.max_position_embeddings
        {
            let usable = t.max_position_embeddings.saturating_sub(t.position_offset);
            return bad(match t.position_offset {
                0 => format!("sequence length {} exceeds the model's {usable} learned positions", self.seq),
                k => format!(
                    "sequence length {} exceeds the model's {usable} usable positions ({} learned; they start at {k}, after the padding id)",
                    self.seq, t.max_position_embeddings
                ),
            });
        }
        Ok(())
    }

    /// A vision model's image: one it takes, and the sequence its tokens.
    fn check_image(&self, p: crate::model::pixels::Patches) -> Result<(), ScenarioError> {
        let image = self.image.unwrap_or(p.image);
        p.check(image).map_err(ScenarioError::Invalid)?;
        if let Some(n) = self.model.net() {
            return self.check_net(n);
        }
        if self.seq != p.tokens(image) {
            return Err(ScenarioError::Invalid(format!(
                "{} takes images: sequence length {} is not the {} tokens of a {image} image (set the image size, not the sequence)",
                self.model.name,
                self.seq,
                p.tokens(image)
            )));
        }
        Ok(())
    }

    /// What a convolutional backbone's walk covers: one image a sample, pure precision,
    /// no checkpointing (transformers' ResNet and ConvNeXt classes do not support it).
    fn check_net(&self, n: &crate::model::net::NetSpec) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::Invalid(m));
        if self.seq != 1 {
            return bad(format!(
                "{} takes one image a sample: it has no sequence (set --image-size, not --seq)",
                self.model.name
            ));
        }
        use crate::units::Precision as P;
        if !matches!(self.precision, P::Bf16 | P::Fp16 | P::Fp32) {
            return bad(format!(
                "{}: --precision {} is not modelled for the vision backbones built op by op (ResNet, ConvNeXt, Swin: autocast and quantized weights are not measured for them yet); use bf16, fp16 or fp32",
                self.model.name, self.precision
            ));
        }
        if self.base_quant != BaseQuant::None || self.kv_cache_dtype.is_some() {
            return bad(format!(
                "{}: --base-quant and --kv-dtype do not apply to an image classifier built op by op (no quantized base, no KV cache)",
                self.model.name
            ));
        }
        if self.parallel.sp {
            return bad(format!(
                "{}: sequence parallelism needs a transformer (no sequence here)",
                self.model.name
            ));
        }
        if self.stack.loss != Loss::Hf || self.stack.compiled_loss {
            return bad(format!(
                "{}: the loss options (--loss, --compile-loss) are a language model's; a classifier's loss over its labels is tiny",
                self.model.name
            ));
        }
        if let Some(why) = self.image_size().and_then(|i| crate::families::swin::refuses(n, i)) {
            return bad(format!("{}: {why}", self.model.name));
        }
        if matches!(n.kind, crate::model::net::NetKind::Swin(_))
            && self.attention != crate::engine::inputs::AttentionImpl::Sdpa
        {
            return bad(format!(
                "{}: Swin is modelled with SDPA (transformers' default for it, its memory-efficient kernel); --attention {} is not modelled for it yet",
                self.model.name,
                self.attention.name()
            ));
        }
        if self.mode == Mode::Train && self.checkpointing != Checkpointing::None {
            return bad(if matches!(n.kind, crate::model::net::NetKind::Swin(_)) {
                format!("{}: gradient checkpointing of Swin's blocks is not modelled yet", self.model.name)
            } else {
                format!(
                    "{}: transformers' {} classes do not support gradient checkpointing (supports_gradient_checkpointing is False)",
                    self.model.name,
                    n.family_id()
                )
            });
        }
        if self.mode == Mode::Train && n.num_labels == 0 {
            return bad(format!(
                "{}: the bare backbone (…Model) has no loss to train with; its classifier is architectures [\"…ForImageClassification\"]",
                self.model.name
            ));
        }
        Ok(())
    }

    /// The input image of a vision model: the one set, else the config's; `None` for text.
    pub fn image_size(&self) -> Option<crate::model::pixels::ImageSize> {
        let p = self.model.patches()?;
        Some(self.image.unwrap_or(p.image))
    }

    /// Feeds a vision model `image`: the sequence becomes its tokens. A text model is left as
    /// it is (and says so).
    pub fn set_image(&mut self, image: crate::model::pixels::ImageSize) -> Result<(), ScenarioError> {
        if self.model.traced().is_some() {
            return self.set_traced_image(image);
        }
        let Some(p) = self.model.patches() else {
            return Err(ScenarioError::Invalid(no_image_input(&self.model)));
        };
        p.check(image).map_err(ScenarioError::Invalid)?;
        self.image = Some(image);
        self.seq = p.tokens(image);
        Ok(())
    }

    /// The weight format and LoRA.
    fn check_weights(&self) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::Invalid(m));
        if self.mode == Mode::Train && self.precision.is_quantized() && self.lora.is_none() {
            return bad(format!(
                "precision {} stores weights for inference only; to train on a quantized base use --lora with --base-quant nf4|int8",
                self.precision
            ));
        }
        if self.base_quant != BaseQuant::None && self.mode == Mode::Train && self.lora.is_none() {
            return bad("--base-quant in training applies to the frozen base of a LoRA run (--lora)".into());
        }
        if self.base_quant != BaseQuant::None && self.precision.is_quantized() {
            return bad(
                "--base-quant and a quantized --precision both set the weight format; pick one".into()
            );
        }
        if let Some(l) = self.lora {
            if !(0.0..1.0).contains(&l.dropout) {
                return bad(format!("LoRA dropout {} is outside [0, 1)", l.dropout));
            }
            let Some(t) = self.model.transformer() else {
                return bad("LoRA is modelled for transformer models (not yet for ResNet, ConvNeXt or Swin, nor for layer tables)".into());
            };
            if !self.model.param_groups().iter().any(|g| crate::estimate::states::adapted(&l, t, g.kind)) {
                return bad(format!(
                    "--lora targets {} match no nn.Linear of this model (PEFT would refuse; routed experts are fused 3-D parameters it does not wrap)",
                    l.targets.names()
                ));
            }
        }
        Ok(())
    }

    /// The training stack.
    fn check_stack(&self) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::Invalid(m));
        if self.stack.bnb_compute_dtype.is_some()
            && !matches!(self.base_quant, BaseQuant::Nf4 | BaseQuant::Nf4NoDq)
        {
            return bad("--bnb-compute-dtype applies to a 4-bit base (--base-quant nf4 or nf4-nodq)".into());
        }
        self.stack.validate().map_err(ScenarioError::Invalid)?;
        if self.mode == Mode::Train && self.stack.optimizer_in_backward && self.optimizer == Optimizer::None {
            return bad("--optimizer-in-backward needs an optimizer".into());
        }
        Ok(())
    }

    /// The parallel degrees against each other and against the model.
    fn check_parallel(&self) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::Invalid(m));
        let p = self.parallel;
        for (name, v) in
            [("data", p.dp), ("tensor", p.tp), ("pipeline", p.pp), ("context", p.cp), ("expert", p.ep)]
        {
            if v == 0 || v > 1 << 20 {
                return bad(format!("{name}-parallel degree {v} is out of range (1 to 1048576)"));
            }
        }
        if p.zero > 3 {
            return bad(format!("ZeRO stage {} does not exist (0 to 3)", p.zero));
        }
        if p.virtual_stages == 0 {
            return bad("virtual pipeline stages must be at least 1".into());
        }
        let Some(t) = self.model.transformer() else {
            if p.tp > 1 || p.pp > 1 || p.cp > 1 || p.ep > 1 {
                return bad(
                    "tensor, pipeline, context and expert parallelism are modelled for transformer language models (not for layer tables, ResNet, ConvNeXt or Swin)".into()
                );
            }
            return Ok(());
        };
        if p.tp > t.num_heads {
            return bad(format!("tensor parallelism {} exceeds the {} attention heads", p.tp, t.num_heads));
        }
        if p.tp > 1 {
            // Megatron's column/row split needs whole heads and whole MLP columns per rank;
            // KV heads are split, or replicated when there are fewer than ranks
            if !t.num_heads.is_multiple_of(p.tp) {
                return bad(format!("--tp {} does not divide the {} attention heads", p.tp, t.num_heads));
            }
            let kv = t.num_kv_heads.max(1);
            if !kv.is_multiple_of(p.tp) && !p.tp.is_multiple_of(kv) {
                return bad(format!(
                    "--tp {} neither divides the {kv} KV heads nor is a multiple of them (to replicate them)",
                    p.tp
                ));
            }
            let shared = t.moe.map_or(0, |m| m.shared_intermediate_size);
            for (what, n) in [
                ("MLP width", t.intermediate_size),
                ("dense MLP width", t.dense_intermediate_size),
                ("shared-expert MLP width", shared),
            ] {
                if n > 0 && !n.is_multiple_of(p.tp) {
                    return bad(format!("--tp {} does not divide the {what} {n}", p.tp));
                }
            }
        }
        if p.pp * p.virtual_stages > t.num_layers {
            return bad(format!(
                "{} pipeline stages x {} virtual stages exceed the {} blocks",
                p.pp, p.virtual_stages, t.num_layers
            ));
        }
        // Megatron-LM's interleaved schedule gives every virtual stage the same blocks
        if p.virtual_stages > 1 && !t.num_layers.is_multiple_of(p.pp * p.virtual_stages) {
            return bad(format!(
                "--virtual-stages {}: the {} blocks must divide into {} pipeline stages x {} virtual stages (Megatron-LM's interleaved schedule)",
                p.virtual_stages, t.num_layers, p.pp, p.virtual_stages
            ));
        }
        match t.moe.map(|m| m.experts) {
            None if p.ep > 1 => {
                return bad(format!(
                    "expert parallelism {} needs a mixture-of-experts model ({} has no experts)",
                    p.ep, self.model.name
                ));
            }
            Some(experts) if p.ep > experts => {
                return bad(format!("expert parallelism {} exceeds the {experts} experts", p.ep));
            }
            Some(experts) if !experts.is_multiple_of(p.ep) => {
                return bad(format!("--ep {} does not divide the {experts} experts", p.ep));
            }
            // expert parallelism lives inside the data-parallel group (Megatron-LM, DeepSpeed-MoE)
            Some(_) if !p.dp.is_multiple_of(p.ep) => {
                return bad(format!(
                    "--ep {} needs --dp a multiple of it (the experts are spread over data-parallel ranks; --dp is {})",
                    p.ep, p.dp
                ));
            }
            _ => {}
        }
        if p.cp > self.seq {
            return bad(format!("context parallelism {} exceeds the sequence length {}", p.cp, self.seq));
        }
        Ok(())
    }

    /// The allocator reserve, checkpointing and the KV-cache dtype.
    fn check_steps(&self) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::Invalid(m));
        let o = self.overhead;
        if !(0.0..=1.0).contains(&o.allocator_reserve_fraction) {
            return bad(format!(
                "allocator reserve fraction {} is outside [0, 1]",
                o.allocator_reserve_fraction
            ));
        }
        if let Checkpointing::Every(k) | Checkpointing::Segments(k) = self.checkpointing
            && k == 0
        {
            return bad("checkpoint interval / segment count must be at least 1".into());
        }
        if let Some(t) = self.model.transformer() {
            let blocks = t.num_layers;
            match self.checkpointing {
                // checkpoint_sequential: segment_size = len // segments, 0 when there are more
                // segments than blocks, and range(0, end, 0) raises
                Checkpointing::Segments(n) if n > blocks => {
                    return bad(format!(
                        "--checkpoint segments:{n} exceeds the {blocks} blocks (PyTorch's checkpoint_sequential raises there)"
                    ));
                }
                Checkpointing::Every(k) if k > blocks => {
                    return bad(format!("--checkpoint every:{k} exceeds the {blocks} blocks"));
                }
                _ => {}
            }
        }
        if self.mode == Mode::Train && self.kv_cache_dtype.is_some() {
            return bad(
                "--kv-dtype applies to inference (--mode infer): a training step keeps no KV cache".into()
            );
        }
        Ok(())
    }
}

/// Why a model takes no image size: a text model, or a layer table with a fixed input.
pub(super) fn no_image_input(m: &ModelSpec) -> String {
    match m.transformer() {
        Some(t) if t.vision.is_some() => format!(
            "{}'s image tokens are not modelled yet (its vision tower is counted, frozen): images apply to a vision model (ViT, DINOv2, SigLIP) or a vision-language model whose image tokens are modelled (Qwen2.5-VL, Qwen3-VL, LLaVA, Gemma 3, Mistral 3)",
            m.name
        ),
        Some(_) => format!(
            "{} reads text, not images: an image size applies to a vision model (ViT, DINOv2, SigLIP) or a vision-language model whose image tokens are modelled (Qwen2.5-VL, Qwen3-VL, LLaVA, Gemma 3, Mistral 3)",
            m.name
        ),
        None => format!(
            "{} is a layer table whose activations are given for one input size: an image size applies to a patch-embedding vision model (ViT, DINOv2, SigLIP)",
            m.name
        ),
    }
}
