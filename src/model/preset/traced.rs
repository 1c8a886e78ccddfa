//! Built-in traced models: diffusion networks and torchvision backbones traced at their published configurations by
//! `vramscope_trace.py` (the model files are `examples/trace/*.py`), shipped gzipped and parsed
//! on first use (a trace is megabytes of events: the app's picker and did-you-mean read none of
//! them; `vramscope presets` parses each to count its parameters).

use super::super::{Architecture, ModelSpec};
use std::io::Read;
use std::sync::{Arc, OnceLock};

/// `(name, what it is, the gzipped trace)`.
pub(super) const TRACED: &[(&str, &str, &[u8])] = &[
    (
        "sd1.5-unet",
        "Stable Diffusion 1.5 UNet (traced): full fine-tune, bf16",
        include_bytes!("../../../presets/traces/sd1.5-unet.vstrace.json.gz"),
    ),
    (
        "sd1.5-unet-lora",
        "Stable Diffusion 1.5 UNet (traced): LoRA r4 on attention, bf16-amp",
        include_bytes!("../../../presets/traces/sd1.5-unet-lora.vstrace.json.gz"),
    ),
    (
        "sdxl-unet-lora",
        "Stable Diffusion XL base UNet (traced): LoRA r4 on attention, bf16-amp",
        include_bytes!("../../../presets/traces/sdxl-unet-lora.vstrace.json.gz"),
    ),
    (
        "flux.1-dev-lora",
        "FLUX.1-dev transformer (traced): LoRA r4 on attention, bf16-amp",
        include_bytes!("../../../presets/traces/flux.1-dev-lora.vstrace.json.gz"),
    ),
    (
        "sd3.5-medium-lora",
        "Stable Diffusion 3.5 Medium transformer (traced): LoRA r4 on attention, bf16-amp",
        include_bytes!("../../../presets/traces/sd3.5-medium-lora.vstrace.json.gz"),
    ),
    (
        "sd-vae",
        "Stable Diffusion VAE, SD 1.5 / SDXL (traced): full fine-tune, bf16-amp",
        include_bytes!("../../../presets/traces/sd-vae.vstrace.json.gz"),
    ),
    (
        "tv-resnet50",
        "torchvision ResNet-50 (traced): full training, bf16-amp",
        include_bytes!("../../../presets/traces/tv-resnet50.vstrace.json.gz"),
    ),
    (
        "tv-vit-b16",
        "torchvision ViT-B/16 at 224² (traced): full training, bf16-amp",
        include_bytes!("../../../presets/traces/tv-vit-b16.vstrace.json.gz"),
    ),
];

const N: usize = TRACED.len();

/// Each trace parsed once (`None`: it did not parse, which a test rules out).
static PARSED: [OnceLock<Option<ModelSpec>>; N] = [const { OnceLock::new() }; N];

/// The built-in traced model `name`, parsed on first use.
pub(super) fn get(name: &str) -> Option<ModelSpec> {
    let k = TRACED.iter().position(|(n, ..)| *n == name)?;
    PARSED[k].get_or_init(|| parse(TRACED[k].0, TRACED[k].2)).clone()
}

/// The name of a built-in traced model (among those parsed so far) equal to `m`.
pub(super) fn name_of(m: &ModelSpec) -> Option<&'static str> {
    let Architecture::Traced(_) = &m.arch else { return None };
    PARSED.iter().zip(TRACED).find(|(p, _)| p.get().and_then(Option::as_ref) == Some(m)).map(|(_, t)| t.0)
}

/// What a built-in traced model is, without parsing it.
pub(super) fn describe(name: &str) -> Option<&'static str> {
    TRACED.iter().find(|(n, ..)| *n == name).map(|(_, d, _)| *d)
}

fn parse(name: &str, gz: &[u8]) -> Option<ModelSpec> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz).take(crate::trace::MAX_FILE).read_to_string(&mut text).ok()?;
    let t = crate::trace::TracedModel::parse(name, &text).ok()?;
    Some(ModelSpec { name: name.to_owned(), arch: Architecture::Traced(Arc::new(t)) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_trace_parses_and_answers_its_checkpointing() {
        for (name, ..) in TRACED {
            let m = get(name).unwrap_or_else(|| panic!("{name} parses"));
            let t = m.traced().expect("traced");
            assert!(t.n_params() > 20_000_000, "{name}");
            assert!(t.checkpoint.available(), "{name}: --checkpoint full answers");
            assert_eq!(name_of(&m), Some(*name));
        }
    }
}
