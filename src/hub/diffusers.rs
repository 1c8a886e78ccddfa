//! Diffusers repositories (`model_index.json` at the root, each component in its own folder):
//! each component's safetensors headers give its exact parameters and the bytes its weights take
//! for inference. vramscope does not model a diffusion model's activations yet, so the answer is
//! that summary, never an estimate.

use crate::model::safetensors::{self, TensorInfo};
use std::path::Path;

/// The components `model_index.json` names with a library and a class (`"unet": ["diffusers",
/// "UNet2DConditionModel"]`), with their class, in the file's order.
pub(super) fn components(model_index: &[u8]) -> Result<Vec<(String, String)>, String> {
    let v: serde_json::Value = serde_json::from_slice(model_index)
        .map_err(|e| format!("model_index.json is not valid JSON ({e})"))?;
    let obj = v.as_object().ok_or("model_index.json is not a JSON object")?;
    let mut out = Vec::new();
    for (name, spec) in obj {
        if name.starts_with('_') || name.contains(['/', '\\']) || name.starts_with('.') {
            continue;
        }
        if let Some([lib, class]) = spec.as_array().map(Vec::as_slice)
            && lib.is_string()
            && let Some(class) = class.as_str()
        {
            out.push((name.clone(), class.to_owned()));
        }
    }
    Ok(out)
}

/// A weights file's variant (`diffusion_pytorch_model.fp16.safetensors` → `fp16`), `""` for none.
fn variant(file: &str) -> &str {
    let stem = file.trim_end_matches(".safetensors");
    stem.split_once('.').map_or("", |(_, v)| v)
}

/// The safetensors files to read of `component` among the repository's `paths`: those without a
/// variant, else those of the first variant (`fp16`) found.
pub(super) fn shards<'a>(component: &str, paths: impl Iterator<Item = &'a str>) -> Vec<String> {
    let prefix = format!("{component}/");
    let files: Vec<&str> = paths
        .filter_map(|p| p.strip_prefix(prefix.as_str()))
        .filter(|f| !f.contains('/') && f.ends_with(".safetensors"))
        .collect();
    let plain: Vec<&str> = files.iter().copied().filter(|f| variant(f).is_empty()).collect();
    let chosen = if plain.is_empty() {
        let v = files.first().map(|f| variant(f)).unwrap_or("");
        files.iter().copied().filter(|f| variant(f) == v).collect()
    } else {
        plain
    };
    chosen.into_iter().map(|f| format!("{prefix}{f}")).collect()
}

/// Bytes of one element of a safetensors dtype.
fn dtype_bytes(d: &str) -> Option<u64> {
    Some(match d {
        "F64" | "I64" | "U64" => 8,
        "F32" | "I32" | "U32" => 4,
        "F16" | "BF16" | "I16" | "U16" => 2,
        "F8_E4M3" | "F8_E5M2" | "F8_E8M0" | "I8" | "U8" | "BOOL" => 1,
        _ => return None,
    })
}

/// One component's parameters and weight bytes.
struct Component {
    name: String,
    class: String,
    params: u64,
    bytes: u64,
    dtypes: Vec<String>,
}

fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The one line a Diffusers repository at `dir` (`model_index.json` and each component's folder
/// of header-only or whole safetensors files) answers with; `None` when `dir` is not one.
pub(super) fn summary(dir: &Path) -> Option<Result<String, String>> {
    let mi = std::fs::read(dir.join("model_index.json")).ok()?;
    if dir.join("config.json").exists() {
        return None;
    }
    Some(summarise(dir, &mi))
}

fn summarise(dir: &Path, model_index: &[u8]) -> Result<String, String> {
    let mut comps = Vec::new();
    for (name, class) in components(model_index)? {
        let listing = std::fs::read_dir(dir.join(&name))
            .map(|rd| {
                rd.filter_map(|e| e.ok().map(|e| format!("{name}/{}", e.file_name().to_string_lossy())))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let files = shards(&name, listing.iter().map(String::as_str));
        if files.is_empty() {
            continue;
        }
        let mut tensors: Vec<TensorInfo> = Vec::new();
        for f in &files {
            tensors.extend(safetensors::read_header(&dir.join(f)).map_err(|e| e.to_string())?);
        }
        let mut c = Component { name, class, params: 0, bytes: 0, dtypes: Vec::new() };
        for t in &tensors {
            let size =
                dtype_bytes(&t.dtype).ok_or_else(|| format!("{}: dtype {} not known", t.name, t.dtype))?;
            c.params += t.numel();
            c.bytes += t.numel() * size;
            if !c.dtypes.contains(&t.dtype) {
                c.dtypes.push(t.dtype.clone());
            }
        }
        comps.push(c);
    }
    if comps.is_empty() {
        return Err("model_index.json names no component with safetensors weights".into());
    }
    let parts: Vec<String> = comps
        .iter()
        .map(|c| {
            format!(
                "{} ({}): {} parameters, {} B of weights ({})",
                c.name,
                c.class,
                grouped(c.params),
                grouped(c.bytes),
                c.dtypes.join("/")
            )
        })
        .collect();
    let (p, b): (u64, u64) = comps.iter().fold((0, 0), |(p, b), c| (p + c.params, b + c.bytes));
    Ok(format!("{}; in all {} parameters, {} B of weights", parts.join("; "), grouped(p), grouped(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_and_their_shards() {
        let mi = br#"{"_class_name":"StableDiffusionPipeline","_diffusers_version":"0.30.0",
            "unet":["diffusers","UNet2DConditionModel"],"scheduler":["diffusers","PNDMScheduler"],
            "safety_checker":[null,null],"vae":["diffusers","AutoencoderKL"]}"#;
        let c = components(mi).unwrap();
        assert_eq!(c.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["scheduler", "unet", "vae"]);
        let paths = [
            "unet/config.json",
            "unet/diffusion_pytorch_model.safetensors",
            "unet/diffusion_pytorch_model.fp16.safetensors",
            "vae/diffusion_pytorch_model.fp16.safetensors",
            "vae/sub/x.safetensors",
        ];
        assert_eq!(shards("unet", paths.iter().copied()), ["unet/diffusion_pytorch_model.safetensors"]);
        assert_eq!(shards("vae", paths.iter().copied()), ["vae/diffusion_pytorch_model.fp16.safetensors"]);
        assert!(shards("scheduler", paths.iter().copied()).is_empty());
        assert_eq!(grouped(1234567), "1,234,567");
    }
}
