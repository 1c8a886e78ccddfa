//! Where each fact about a model came from ([`Fact`]), and a checkpoint's safetensors header
//! checked against its family's parameter list ([`HeaderCheck`]): the header is the truth for
//! the parameters (names, shapes, dtypes; quantized tensors unpacked to the weights they hold),
//! the config for the structure.

use super::preset::Loaded;
use super::quant::WeightFormat;
use super::safetensors::TensorInfo;
use super::{Head, ParamKind, TransformerSpec};
use serde::Serialize;
use std::collections::BTreeMap;

/// Facts read from a safetensors header.
pub const FROM_HEADER: &str = "safetensors header";
/// Facts counted from the family's tensor list over config.json's shape.
pub const FROM_FAMILY: &str = "family tensor list over config.json";

/// One fact about the model and where it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Fact {
    /// What (`parameters`, `num_hidden_layers`, `rope_theta`, …).
    pub fact: String,
    /// Where from: `config.json`, `class default`, `vramscope default`, `safetensors header`, ….
    pub from: String,
    /// The value, where it is not read from a config key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

impl Fact {
    /// A fact without a value.
    pub fn new(fact: impl Into<String>, from: &str) -> Self {
        Self { fact: fact.into(), from: from.to_owned(), value: None }
    }
}

/// Tensors of one (canonical) shape that the family lists and the header does not hold.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Missing {
    /// The shape as the family lists it (`[rows, cols]`).
    pub shape: [u64; 2],
    /// How many.
    pub count: u64,
    /// What they are (`embedding`, `head`, `linear q`, `experts gate`, `vector`, …).
    pub kind: String,
}

/// Tensors of one (canonical) shape in the header beyond the family's list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Extra {
    /// Shape as stored (quantized tensors unpacked).
    pub shape: Vec<u64>,
    /// How many beyond the family's list.
    pub count: u64,
    /// Their names (every one when the family lists none of that shape, else those of that shape).
    pub names: Vec<String>,
}

/// A header checked against the family's parameter list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HeaderCheck {
    /// The file read (a `.safetensors` or its index).
    pub file: String,
    /// Parameter tensors in the header.
    pub tensors: usize,
    /// Quantization's side tensors (scales, zero points, `g_idx`, absmax), not parameters.
    pub quant_aux_tensors: usize,
    /// Buffers saved with the weights (`inv_freq`, `position_ids`, GPT-2's causal-mask
    /// `attn.bias`, BatchNorm statistics), not parameters.
    pub buffers: usize,
    /// Parameters the header holds (packed 4-bit and MXFP4 blocks unpacked).
    pub header_params: u64,
    /// Parameters the family's list over config.json describes.
    pub family_params: u64,
    /// The two agree.
    pub agrees: bool,
    /// The element types of the parameter tensors, most parameters first (`BF16`, …).
    pub dtypes: Vec<String>,
    /// Listed by the family, not in the header.
    pub missing: Vec<Missing>,
    /// In the header, not listed by the family.
    pub extra: Vec<Extra>,
    /// What was changed to make the count the header's.
    pub resolved: Vec<String>,
}

/// Suffixes of quantization's side tensors (not parameters).
const AUX: &[&str] = &[
    ".qzeros",
    ".scales",
    ".g_idx",
    ".weight_scale_inv",
    ".weight_scale",
    ".input_scale",
    "_scales",
    ".absmax",
    ".quant_map",
    ".nested_absmax",
    ".nested_quant_map",
    ".quant_state.bitsandbytes__nf4",
    ".quant_state.bitsandbytes__fp4",
    ".SCB",
    ".weight_format",
];

/// A buffer some checkpoints save beside the parameters (transformers ignores them on load).
fn is_buffer(t: &TensorInfo) -> bool {
    const BUFFERS: &[&str] = &[
        ".inv_freq",
        ".position_ids",
        ".masked_bias",
        ".num_batches_tracked",
        ".running_mean",
        ".running_var",
    ];
    BUFFERS.iter().any(|b| t.name.ends_with(b))
        || (t.name.ends_with(".attn.bias") && t.shape.len() == 4)
        || (t.name.ends_with("position_ids") && t.dtype.starts_with('I'))
}

/// The parameter tensors a header holds, quantized ones unpacked to the weights they stand for
/// (`false`: a bitsandbytes 4-bit weight, stored flat, whose count alone is known), the number
/// of quantization's side tensors and the number of buffers left out.
fn logical(tensors: &[TensorInfo], quant: Option<WeightFormat>) -> (Vec<(TensorInfo, bool)>, usize, usize) {
    let mut out = Vec::with_capacity(tensors.len());
    let (mut aux, mut buffers) = (0, 0);
    for t in tensors {
        if is_buffer(t) {
            buffers += 1;
            continue;
        }
        let Some(q) = quant else {
            out.push((t.clone(), true));
            continue;
        };
        if AUX.iter().any(|s| t.name.ends_with(s)) {
            aux += 1;
            continue;
        }
        let mut l = t.clone();
        let mut shaped = true;
        match (q, t.shape.as_slice()) {
            (WeightFormat::Gptq { bits, .. }, [packed, out_f]) if t.name.ends_with(".qweight") => {
                l.shape = vec![*out_f, packed * 32 / bits.max(1)];
                l.name = t.name.replace(".qweight", ".weight");
            }
            (WeightFormat::Awq { bits, .. }, [in_f, packed]) if t.name.ends_with(".qweight") => {
                l.shape = vec![packed * 32 / bits.max(1), *in_f];
                l.name = t.name.replace(".qweight", ".weight");
            }
            (WeightFormat::Bnb4 { .. }, _) if t.dtype == "U8" => {
                l.shape = vec![t.numel() * 2];
                shaped = false;
            }
            (WeightFormat::Mxfp4, [lead @ .., g, b]) if t.name.ends_with("_blocks") => {
                l.shape = lead.to_vec();
                l.shape.push(g * b * 2);
                l.name = t.name.trim_end_matches("_blocks").to_owned();
            }
            _ => {}
        }
        out.push((l, shaped));
    }
    (out, aux, buffers)
}

/// A shape as compared: two dimensions, the larger first (GPT-2's Conv1D stores its weights
/// transposed), leading dimensions folded into the first.
fn canonical(shape: &[u64]) -> [u64; 2] {
    let (a, b) = match shape {
        [] => (1, 1),
        [n] => (*n, 1),
        [lead @ .., b] => (lead.iter().product(), *b),
    };
    [a.max(b), a.min(b)]
}

fn kind_name(k: ParamKind) -> String {
    match k {
        ParamKind::Embedding => "embedding".into(),
        ParamKind::Head => "head".into(),
        ParamKind::Linear(r) => format!("linear {}", r.name()),
        ParamKind::Experts(r) => format!("experts {}", r.name()),
        ParamKind::Router | ParamKind::RouterFp32 => "router".into(),
        ParamKind::Vector | ParamKind::VectorFp32 => "vector".into(),
        ParamKind::Frozen | ParamKind::FrozenFp32 | ParamKind::FrozenCompute => "frozen".into(),
    }
}

/// The header's tensors as canonical shapes, per-expert tensors (`….experts.7.w1.weight`) folded
/// into the fused 3-D tensors the family lists, with their names.
fn header_shapes(tensors: &[(TensorInfo, bool)]) -> BTreeMap<[u64; 2], Vec<String>> {
    let mut shapes: BTreeMap<[u64; 2], Vec<String>> = BTreeMap::new();
    // layer prefix → (shape → names)
    let mut experts: BTreeMap<String, BTreeMap<Vec<u64>, Vec<String>>> = BTreeMap::new();
    for (t, _) in tensors {
        if let Some((prefix, rest)) = t.name.split_once(".experts.")
            && rest.split('.').next().is_some_and(|i| i.parse::<u64>().is_ok())
            && t.shape.len() == 2
        {
            experts
                .entry(prefix.to_owned())
                .or_default()
                .entry(t.shape.clone())
                .or_default()
                .push(t.name.clone());
            continue;
        }
        shapes.entry(canonical(&t.shape)).or_default().push(t.name.clone());
    }
    for per_shape in experts.into_values() {
        for (shape, names) in per_shape {
            let fused = [names.len() as u64 * shape[0], shape[1]];
            shapes.entry(canonical(&fused)).or_default().push(names.join(" + "));
        }
    }
    shapes
}

/// Compares the header's parameter tensors with the family's list over `spec`.
fn compare(spec: &TransformerSpec, tensors: &[(TensorInfo, bool)]) -> (Vec<Missing>, Vec<Extra>) {
    let mut family: BTreeMap<[u64; 2], (u64, [u64; 2], String)> = BTreeMap::new();
    for g in spec.param_groups() {
        let e = family.entry(canonical(&[g.rows, g.cols])).or_insert((0, [g.rows, g.cols], String::new()));
        e.0 += g.count;
        let k = kind_name(g.kind);
        if !e.2.split(" or ").any(|x| x == k) {
            e.2 = if e.2.is_empty() { k } else { format!("{} or {k}", e.2) };
        }
    }
    let header = header_shapes(tensors);
    let mut missing = Vec::new();
    for (key, (n, shape, kind)) in &family {
        let have = header.get(key).map_or(0, |v| v.len() as u64);
        if have < *n {
            missing.push(Missing { shape: *shape, count: n - have, kind: kind.clone() });
        }
    }
    let mut extra = Vec::new();
    for (key, names) in header {
        let listed = family.get(&key).map_or(0, |f| f.0);
        if names.len() as u64 > listed {
            let shape = tensors
                .iter()
                .find(|(t, _)| names.first().is_some_and(|n| n == &t.name))
                .map_or(key.to_vec(), |(t, _)| t.shape.clone());
            extra.push(Extra { shape, count: names.len() as u64 - listed, names });
        }
    }
    (missing, extra)
}

/// Makes the parameter count of `loaded` the header's (`tensors`, read from `file`): where the
/// family's list over config.json agrees nothing changes; where not, the difference is reported
/// tensor by tensor in the notes and in [`Loaded::header`], and the model's count becomes the
/// header's (an untied head the header lacks ties the embeddings; other missing tensors leave
/// the list, extra ones count as one group). The structure (activations) stays the config's,
/// except for an architecture without a family, whose experts, dense blocks and blocks without
/// attention are read from the tensor names where `config` (the config.json read) is silent.
pub fn reconcile(
    loaded: &mut Loaded,
    file: &str,
    tensors: &[TensorInfo],
    config: Option<&serde_json::Value>,
) {
    let Some(t) = loaded.model.transformer_mut() else { return };
    // layers past `num_hidden_layers` are multi-token-prediction layers (DeepSeek-V3's,
    // GLM-4.5's `num_nextn_predict_layers`) that transformers does not load
    let layers = t.num_layers;
    let (loaded_tensors, mtp): (Vec<TensorInfo>, Vec<TensorInfo>) =
        tensors.iter().cloned().partition(|x| layer_index(&x.name).is_none_or(|i| i < layers));
    let (params, aux, buffers) = logical(&loaded_tensors, t.quant);
    let mut restructured = Vec::new();
    if t.family == crate::families::generic() {
        let shaped: Vec<&TensorInfo> = params.iter().filter(|(_, s)| *s).map(|(p, _)| p).collect();
        if let Some(l) = layout::read(&shaped, t.hidden_size, t.num_layers) {
            restructured = layout::apply(t, &l, config, &mut loaded.facts);
        }
    }
    let n_header: u64 = params.iter().map(|(p, _)| p.numel()).sum();
    let n_family = loaded.model.n_params();
    let mut by_dtype: BTreeMap<&str, u64> = BTreeMap::new();
    for (p, _) in &params {
        *by_dtype.entry(&p.dtype).or_default() += p.numel();
    }
    let mut dtypes: Vec<(&str, u64)> = by_dtype.into_iter().collect();
    dtypes.sort_by_key(|d| std::cmp::Reverse(d.1));
    let mut check = HeaderCheck {
        file: file.to_owned(),
        tensors: params.len(),
        quant_aux_tensors: aux,
        buffers,
        header_params: n_header,
        family_params: n_family,
        agrees: n_header == n_family,
        dtypes: dtypes.iter().map(|(d, _)| (*d).to_owned()).collect(),
        missing: Vec::new(),
        extra: Vec::new(),
        resolved: restructured,
    };
    loaded.facts.push(Fact {
        fact: "parameters".into(),
        from: FROM_HEADER.into(),
        value: Some(n_header.to_string()),
    });
    if let Some((d, _)) = dtypes.first() {
        loaded.facts.push(Fact {
            fact: "weights dtype".into(),
            from: FROM_HEADER.into(),
            value: Some((*d).into()),
        });
    }
    if !mtp.is_empty() {
        let n: u64 = mtp.iter().map(TensorInfo::numel).sum();
        check.resolved.push(format!(
            "{} tensors ({} parameters) of layers {layers} and up left out: multi-token-prediction layers that transformers does not load",
            mtp.len(),
            crate::units::grouped(n as f64, 0)
        ));
    }
    if !check.agrees {
        resolve(loaded, &params, &mut check);
    }
    loaded.header = Some(check);
}

/// The block index of a tensor named `….layers.N.…`.
fn layer_index(name: &str) -> Option<u64> {
    let rest = &name[name.find("layers.")? + "layers.".len()..];
    rest.split('.').next()?.parse().ok()
}

fn resolve(loaded: &mut Loaded, params: &[(TensorInfo, bool)], check: &mut HeaderCheck) {
    let Some(t) = loaded.model.transformer_mut() else { return };
    let (n_header, n_family) = (check.header_params, check.family_params);
    if t.unvalidated_type.is_some() && n_header > n_family && t.quant.is_none() {
        // an architecture without a family: what the generic decoder does not list is one group
        t.extra_params += n_header - n_family;
        check.resolved.push(format!(
            "{} parameters beyond the generic decoder's list counted as one group",
            n_header - n_family
        ));
    } else if params.iter().all(|(_, shaped)| *shaped) {
        let (missing, extra) = compare(t, params);
        let lm = canonical(&[t.vocab_size, t.hidden_size]);
        let untied_head = !t.tie_word_embeddings && matches!(t.head, Head::CausalLm | Head::MaskedLm);
        for m in &missing {
            if untied_head && m.count == 1 && canonical(&m.shape) == lm {
                t.tie_word_embeddings = true;
                check.resolved.push("the header has no LM head of its own: the embeddings are tied".into());
            } else {
                t.absent_tensors.push([m.shape[0], m.shape[1], m.count]);
            }
        }
        let more: u64 = extra.iter().map(|e| e.count * e.shape.iter().product::<u64>()).sum();
        t.extra_params += more;
        if !t.absent_tensors.is_empty() {
            check.resolved.push("the tensors the header lacks are left out of the parameter list".into());
        }
        if more > 0 {
            check.resolved.push(format!("the {more} parameters beyond the family's list count as one group"));
        }
        check.missing = missing;
        check.extra = extra;
    }
    let now = loaded.model.n_params();
    if now != n_header {
        // shapes the header does not give (bitsandbytes' flat 4-bit) or a layout the comparison
        // cannot pair: make the total right, with the difference as one group or left out
        let Some(t) = loaded.model.transformer_mut() else { return };
        let d = now.abs_diff(n_header);
        if now < n_header {
            t.extra_params += d;
            check.resolved.push(format!("{d} parameters the comparison could not pair count as one group"));
        } else if t.extra_params >= d {
            t.extra_params -= d;
            check.resolved.push(format!("{d} parameters the comparison could not pair are left out"));
        } else {
            check.resolved.push(format!(
                "{d} parameters the comparison could not pair stay counted (the family's count is kept for them)"
            ));
        }
    }
    let exact = loaded.model.n_params() == n_header;
    loaded.notes.push(mismatch_note(check, exact));
}

/// One note that names what differs.
fn mismatch_note(c: &HeaderCheck, exact: bool) -> String {
    let mut parts = Vec::new();
    for m in c.missing.iter().take(6) {
        parts.push(format!("missing {} × {} [{}, {}]", m.count, m.kind, m.shape[0], m.shape[1]));
    }
    for e in c.extra.iter().take(6) {
        let names: Vec<&str> = e.names.iter().take(3).map(String::as_str).collect();
        let more = if e.names.len() > 3 { format!(" and {} more", e.names.len() - 3) } else { String::new() };
        parts.push(format!("extra {} × {:?} ({}{more})", e.count, e.shape, names.join(", ")));
    }
    let what = if parts.is_empty() { String::new() } else { format!(": {}", parts.join("; ")) };
    let using = if exact {
        "using the header's exact count"
    } else {
        "the header and config.json disagree beyond what can be paired (is it this model's config?)"
    };
    format!(
        "{} holds {} parameters but the family's list over config.json describes {}{what}; {using} ({})",
        c.file,
        c.header_params,
        c.family_params,
        c.resolved.join("; ")
    )
}

mod layout;
#[cfg(test)]
mod tests;
