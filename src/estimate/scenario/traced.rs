//! A traced model's scenario: its dims (batch and image from the scenario's own inputs, the
//! rest from `--dim`), and what a trace cannot tell refused with what to trace instead.

use super::*;
use crate::trace::TracedModel;

impl Scenario {
    /// A traced model's dim `name` as this scenario sets it: `batch` is the batch, `height`
    /// and `width` the image, any other a `--dim`.
    pub fn dim(&self, name: &str) -> Option<u64> {
        match name {
            "batch" => Some(self.batch),
            "height" => self.image.map(|i| i.height),
            "width" => self.image.map(|i| i.width),
            _ => self.dims.get(name).copied(),
        }
    }

    /// A traced model's scenario starts at the first values it was traced at, in its precision.
    pub(super) fn at_traced(&mut self) {
        let Some(t) = self.model.traced() else { return };
        let first = |n: &str| t.dim(n).map(|d| t.dims[d].first());
        let batch = first("batch").unwrap_or(1);
        let image = match (first("height"), first("width")) {
            (Some(height), Some(width)) => Some(crate::model::pixels::ImageSize { height, width }),
            _ => None,
        };
        let precision = traced_precision(t).unwrap_or(Precision::Fp32);
        (self.batch, self.seq, self.image, self.precision) = (batch, 1, image, precision);
    }

    /// Sets a traced model's image (its `height` and `width` dims).
    pub(super) fn set_traced_image(
        &mut self,
        image: crate::model::pixels::ImageSize,
    ) -> Result<(), ScenarioError> {
        match self.model.traced() {
            Some(t) if t.dim("height").is_some() && t.dim("width").is_some() => {
                self.image = Some(image);
                Ok(())
            }
            _ => Err(ScenarioError::Invalid(format!(
                "{} was traced without height and width dims: --image-size does not apply",
                self.model.name
            ))),
        }
    }

    /// What a trace answers: the precision and trainable set it ran with, no parallelism
    /// but data parallelism and ZeRO / FSDP, dims it was traced in.
    pub(super) fn check_traced(&self, t: &TracedModel) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::Invalid(m));
        let name = &self.model.name;
        if let Some(k) = self
            .dims
            .keys()
            .find(|k| t.dim(k).is_none() || matches!(k.as_str(), "batch" | "height" | "width"))
        {
            let dims: Vec<&str> = t.dims.iter().map(|d| d.name.as_str()).collect();
            return bad(match k.as_str() {
                "batch" => "--dim batch: set the batch with --batch".to_owned(),
                "height" | "width" => format!("--dim {k}: set the image with --image-size HxW"),
                _ => format!(
                    "--dim {k}: {name} was traced in {}",
                    if dims.is_empty() { "no dims".into() } else { dims.join(", ") }
                ),
            });
        }
        if t.dim("batch").is_none() && self.batch != 1 {
            return bad(format!(
                "{name} was traced without a batch dim (its inputs make the batch): --batch does not apply; trace with --dim batch=1,2,3"
            ));
        }
        if self.image.is_some() && (t.dim("height").is_none() || t.dim("width").is_none()) {
            return bad(format!(
                "{name} was traced without height and width dims: --image-size does not apply"
            ));
        }
        if traced_precision(t) != Some(self.precision) {
            return bad(format!(
                "{name} was traced in {}: --precision {} needs a trace in it (vramscope_trace.py --precision)",
                t.precision, self.precision
            ));
        }
        if self.lora.is_some() || self.base_quant != BaseQuant::None {
            return bad(format!(
                "{name}: what trains is fixed by the trace ({}); for LoRA trace with --trainable lora:MODULES",
                t.trainable
            ));
        }
        if self.mode == Mode::Train {
            self.check_traced_checkpoint(t)?;
        }
        if self.new_tokens > 0 || self.images > 0 || self.kv_cache_dtype.is_some() || self.parallel.sp {
            return bad(format!(
                "{name}: --new-tokens, --images, --kv-dtype and --sp are a language model's; a traced model has its own dims (--dim)"
            ));
        }
        if self.stack.loss != Loss::Hf || self.stack.compiled_loss {
            return bad(format!(
                "{name}: the loss is the trace's own; --loss and --compile-loss do not apply"
            ));
        }
        t.resolve(|d| self.dim(d)).map(|_| ()).map_err(|e| ScenarioError::Invalid(format!("{name}: {e}")))
    }
}

impl Scenario {
    /// `--checkpoint full` wraps the blocks the trace names; other schedules are a layer
    /// stack's.
    fn check_traced_checkpoint(&self, t: &TracedModel) -> Result<(), ScenarioError> {
        let name = &self.model.name;
        match self.checkpointing {
            Checkpointing::None => Ok(()),
            Checkpointing::Full if t.checkpoint.available() => Ok(()),
            Checkpointing::Full => Err(ScenarioError::Invalid(format!(
                "{name}: the trace does not say what checkpointing does (no block classes, or traced by an older vramscope_trace.py); trace again with --blocks CLASS,CLASS"
            ))),
            other => Err(ScenarioError::Invalid(format!(
                "{name}: --checkpoint {other} is a layer stack's schedule; a traced model checkpoints its blocks ({}) with --checkpoint full",
                if t.checkpoint.blocks.is_empty() {
                    "none traced".to_owned()
                } else {
                    t.checkpoint.blocks.join(", ")
                }
            ))),
        }
    }
}

/// The precision recipe a trace ran with.
fn traced_precision(t: &TracedModel) -> Option<Precision> {
    match t.precision.as_str() {
        "fp32" => Some(Precision::Fp32),
        "bf16" => Some(Precision::Bf16),
        "fp16" => Some(Precision::Fp16),
        "bf16-amp" => Some(Precision::Bf16Amp),
        "fp16-amp" => Some(Precision::Fp16Amp),
        _ => None,
    }
}
