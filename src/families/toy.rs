//! A toy family, added the way a new family is: this one file and one line in the registry. It
//! is a Llama-like decoder whose MLP is plain (`down(silu(up(x)))`); its tests estimate it end
//! to end.

use super::prelude::*;

const STYLE: Style = Style { gated: false, ..LLAMA };

/// The toy family.
pub(super) struct Toy;

impl FamilyDef for Toy {
    fn id(&self) -> &'static str {
        "toy"
    }

    fn model_types(&self) -> &'static [&'static str] {
        &["toy"]
    }

    fn block_class(&self, _: &TransformerSpec, _: &str) -> &'static str {
        "ToyDecoderLayer"
    }

    fn params(&self, p: &mut Params, m: &TransformerSpec) {
        let (h, l) = (m.hidden_size, m.num_layers);
        p.ends(m, false);
        p.qkvo(m, false, false);
        mlp_params(p, h, m.intermediate_size, l, false, false, false);
        p.norms(h, 2, l, false);
    }

    fn block(&self, g: &mut Graph<'_>, m: &TransformerSpec, flags: u8, x: Tensor) -> Tensor {
        sequential_block(g, m, flags, x, &STYLE)
    }

    fn ops(&self, _: &TransformerSpec) -> OpKinds {
        STYLE.kinds()
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::inputs::saved::Cat;
    use crate::estimate::{Scenario, estimate};
    use crate::model::{Architecture, ModelSpec, TransformerSpec};
    use crate::units::Precision;

    fn spec(family: &str) -> ModelSpec {
        let family = super::super::by_id(family).unwrap_or_else(|| panic!("{family} registered"));
        let t = TransformerSpec {
            family,
            hidden_size: 256,
            num_layers: 4,
            num_heads: 4,
            num_kv_heads: 4,
            head_dim: 64,
            intermediate_size: 1024,
            vocab_size: 1000,
            ..TransformerSpec::default()
        };
        ModelSpec { name: "toy".into(), arch: Architecture::Transformer(Box::new(t)) }
    }

    #[test]
    fn a_family_added_by_one_file_is_estimated_end_to_end() {
        let run = |family: &str| {
            let mut sc = Scenario::new(spec(family));
            sc.seq = 128;
            sc.batch = 2;
            sc.precision = Precision::Bf16;
            (sc.model.n_params(), estimate(&sc).unwrap_or_else(|e| panic!("{e}")))
        };
        let (toy_params, toy) = run("toy");
        let (llama_params, llama) = run("llama");
        // a plain MLP has no gate: one h × I matrix a layer fewer
        assert_eq!(llama_params - toy_params, 4 * 256 * 1024);
        // and keeps two of the gated MLP's four bf16 widths a layer: SiLU's input (up's output
        // here, the gate's there) and down's input (SiLU's output here, the product there); the
        // product's operands (SiLU's output and up's) are Llama's alone
        let (t, i, layers, bf16) = (2 * 128, 1024, 4, 2);
        let mlp = |e: &crate::estimate::Estimate| e.activation_breakdown.get(Cat::Mlp);
        assert_eq!(mlp(&toy), layers * 2 * t * i * bf16);
        assert_eq!(mlp(&llama) - mlp(&toy), layers * 2 * t * i * bf16);
        assert!(toy.total < llama.total);
        assert_eq!(crate::families::block_class(&sc_spec_transformer(), "toy"), "ToyDecoderLayer");
    }

    fn sc_spec_transformer() -> TransformerSpec {
        spec("toy").transformer().cloned().unwrap_or_else(|| panic!("a transformer"))
    }
}
