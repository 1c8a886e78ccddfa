//! Parameter counts from `.safetensors` headers (the header only: 8-byte length + JSON), and from
//! `model.safetensors.index.json` by reading each shard's header.
//!
//! With a `config.json` beside the file the architecture comes from it and the header, checked
//! against the family's list, gives the parameters ([`super::header_check`]); without one the model is a plain list of tensors (exact model states, no
//! activation model).

use super::preset::Loaded;
use super::{Architecture, LayerTable, ModelSpec, TableLayer, hf_config};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Largest header accepted (the format caps it at 100 MB).
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// What can go wrong reading safetensors files.
#[derive(Debug, Error)]
pub enum SafetensorsError {
    /// I/O failure.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
    /// Malformed header.
    #[error("{path}: {msg}")]
    Format {
        /// File.
        path: String,
        /// What is wrong.
        msg: String,
    },
}

/// One tensor in a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorInfo {
    /// Tensor name.
    pub name: String,
    /// Element type as written (`BF16`, `F32`, …).
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
}

impl TensorInfo {
    /// Number of elements.
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
    }
}

fn fmt_err(path: &Path, msg: impl Into<String>) -> SafetensorsError {
    SafetensorsError::Format { path: path.display().to_string(), msg: msg.into() }
}

/// Parses a header's JSON text.
pub fn parse_header(path: &Path, json: &str) -> Result<Vec<TensorInfo>, SafetensorsError> {
    let v: Value =
        serde_json::from_str(json).map_err(|e| fmt_err(path, format!("header is not valid JSON: {e}")))?;
    let obj = v.as_object().ok_or_else(|| fmt_err(path, "header is not a JSON object"))?;
    let mut out = Vec::with_capacity(obj.len());
    for (name, t) in obj {
        if name == "__metadata__" {
            continue;
        }
        let dtype = t
            .get("dtype")
            .and_then(Value::as_str)
            .ok_or_else(|| fmt_err(path, format!("tensor \"{name}\" has no dtype")))?
            .to_owned();
        let shape = t
            .get("shape")
            .and_then(Value::as_array)
            .ok_or_else(|| fmt_err(path, format!("tensor \"{name}\" has no shape")))?
            .iter()
            .map(|d| {
                d.as_u64().ok_or_else(|| {
                    fmt_err(path, format!("tensor \"{name}\": shape entries must be integers"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if shape.iter().try_fold(1u64, |a, d| a.checked_mul(*d)).is_none() {
            return Err(fmt_err(path, format!("tensor \"{name}\": shape overflows")));
        }
        out.push(TensorInfo { name: name.clone(), dtype, shape });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Reads the header of one `.safetensors` file (without reading the tensor data).
pub fn read_header(path: &Path) -> Result<Vec<TensorInfo>, SafetensorsError> {
    let io = |e| SafetensorsError::Io { path: path.display().to_string(), source: e };
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut len = [0u8; 8];
    f.read_exact(&mut len).map_err(|_| fmt_err(path, "file is shorter than the 8-byte header length"))?;
    let n = u64::from_le_bytes(len);
    if n > MAX_HEADER_BYTES {
        return Err(fmt_err(
            path,
            format!("header length {n} exceeds the 100 MB limit; not a safetensors file?"),
        ));
    }
    let mut buf = Vec::new();
    f.take(n).read_to_end(&mut buf).map_err(io)?;
    if buf.len() as u64 != n {
        return Err(fmt_err(path, "file ends inside the header"));
    }
    let text = std::str::from_utf8(&buf).map_err(|_| fmt_err(path, "header is not UTF-8"))?;
    parse_header(path, text)
}

/// Reads every shard named in a `model.safetensors.index.json`.
pub fn read_index(path: &Path) -> Result<Vec<TensorInfo>, SafetensorsError> {
    let io = |e| SafetensorsError::Io { path: path.display().to_string(), source: e };
    let text = std::fs::read_to_string(path).map_err(io)?;
    let v: Value = serde_json::from_str(&text).map_err(|e| fmt_err(path, format!("not valid JSON: {e}")))?;
    let map = v
        .get("weight_map")
        .and_then(Value::as_object)
        .ok_or_else(|| fmt_err(path, "missing key \"weight_map\""))?;
    let shards: BTreeSet<&str> = map.values().filter_map(Value::as_str).collect();
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut all = Vec::new();
    for shard in shards {
        if shard.contains("..") || Path::new(shard).is_absolute() {
            return Err(fmt_err(path, format!("shard name \"{shard}\" points outside the folder")));
        }
        all.extend(read_header(&dir.join(shard))?);
    }
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all.dedup_by(|a, b| a.name == b.name);
    Ok(all)
}

/// Loads a model from a `.safetensors` file or index.
pub fn load_model(path: &Path) -> Result<Loaded, SafetensorsError> {
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let tensors = if name.ends_with(".index.json") { read_index(path)? } else { read_header(path)? };
    let n_header: u64 = tensors.iter().map(TensorInfo::numel).sum();
    let dir = path.parent().unwrap_or(Path::new("."));
    let model_name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| name.clone());
    let cfg: PathBuf = dir.join("config.json");
    let mut notes = Vec::new();
    if cfg.exists() {
        let text = std::fs::read_to_string(&cfg)
            .map_err(|e| SafetensorsError::Io { path: cfg.display().to_string(), source: e })?;
        match hf_config::parse_model(&cfg.display().to_string(), &text) {
            Ok(hf_config::ParsedModel { arch, notes: cfg_notes, facts, .. }) => {
                notes.extend(cfg_notes);
                let model = ModelSpec { name: model_name, arch };
                let mut l = Loaded { model, notes, dtype: None, facts, header: None };
                let config = serde_json::from_str(&super::config::python_json(&text)).ok();
                super::header_check::reconcile(
                    &mut l,
                    &path.display().to_string(),
                    &tensors,
                    config.as_ref(),
                );
                return Ok(l);
            }
            Err(e) => notes.push(format!("ignoring {}: {e}", cfg.display())),
        }
    }
    notes.push(format!(
        "no usable config.json beside {}: parameters, gradients and optimizer states are exact, activations are not modelled",
        path.display()
    ));
    let layers = tensors
        .iter()
        .map(|t| TableLayer {
            name: t.name.clone(),
            params: t.numel(),
            saved_elems_per_sample: 0,
            output_elems_per_sample: 0,
            fixed_bytes_per_sample: 0,
        })
        .collect::<Vec<_>>();
    let n = layers.len() as u64;
    Ok(Loaded {
        model: ModelSpec {
            name: model_name,
            arch: Architecture::Table(LayerTable { layers, param_tensors: n }),
        },
        notes,
        dtype: None,
        facts: vec![super::header_check::Fact {
            fact: "parameters".into(),
            from: super::header_check::FROM_HEADER.into(),
            value: Some(n_header.to_string()),
        }],
        header: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, header: &str) -> PathBuf {
        let p = dir.join(name);
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn reads_header_only_and_counts() {
        let dir = tempdir("st1");
        let p = write(
            &dir,
            "model.safetensors",
            r#"{"__metadata__":{"format":"pt"},"a.weight":{"dtype":"BF16","shape":[4,8],"data_offsets":[0,64]},"b":{"dtype":"F32","shape":[3],"data_offsets":[64,76]}}"#,
        );
        let t = read_header(&p).unwrap();
        assert_eq!(t.iter().map(TensorInfo::numel).sum::<u64>(), 35);
        let loaded = load_model(&p).unwrap();
        assert_eq!(loaded.model.n_params(), 35);
        assert!(loaded.notes[0].contains("activations are not modelled"));
    }

    #[test]
    fn malformed_headers_are_errors() {
        let dir = tempdir("st2");
        std::fs::write(dir.join("short.safetensors"), [1u8, 2]).unwrap();
        assert!(read_header(&dir.join("short.safetensors")).is_err());
        let p = write(&dir, "bad.safetensors", "{not json");
        assert!(read_header(&p).unwrap_err().to_string().contains("not valid JSON"));
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(b"{}");
        std::fs::write(dir.join("huge.safetensors"), huge).unwrap();
        assert!(read_header(&dir.join("huge.safetensors")).unwrap_err().to_string().contains("100 MB"));
    }

    #[test]
    fn index_reads_every_shard() {
        let dir = tempdir("st3");
        write(&dir, "s1.safetensors", r#"{"x":{"dtype":"BF16","shape":[10,10],"data_offsets":[0,200]}}"#);
        write(&dir, "s2.safetensors", r#"{"y":{"dtype":"BF16","shape":[5],"data_offsets":[0,10]}}"#);
        let idx = dir.join("model.safetensors.index.json");
        std::fs::write(
            &idx,
            r#"{"metadata":{"total_size":210},"weight_map":{"x":"s1.safetensors","y":"s2.safetensors"}}"#,
        )
        .unwrap();
        assert_eq!(read_index(&idx).unwrap().iter().map(TensorInfo::numel).sum::<u64>(), 105);
        std::fs::write(&idx, r#"{"weight_map":{"x":"../evil.safetensors"}}"#).unwrap();
        assert!(read_index(&idx).is_err());
    }

    fn tempdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("vramscope-test-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
