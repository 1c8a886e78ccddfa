//! Unit tests of the op rules.

use super::*;
use crate::estimate::{Lora, Scenario};
use crate::model::preset::builtin;

fn ctx(lora: bool) -> Ctx {
    let mut sc = Scenario::new(builtin("llama-2-7b").unwrap());
    sc.batch = 2;
    sc.seq = 128;
    if lora {
        sc.lora = Some("8:q,v".parse::<Lora>().unwrap());
    }
    Ctx::new(&sc)
}

#[test]
fn a_linear_keeps_its_input_once_and_only_when_its_weight_trains() {
    let c = ctx(false);
    let mut g = Graph::new(&c);
    let x = g.tensor(256 * 64 * 2, 2, true, Cat::Norms);
    g.linear(x, 256, 64, 64, LinearRole::Q, Cat::AttentionIo, "q");
    g.linear(x, 256, 64, 16, LinearRole::K, Cat::AttentionIo, "k");
    // two consumers of one storage: kept once
    assert_eq!(g.kept.total(), 256 * 64 * 2);
    // LoRA on q only: the frozen k keeps nothing, the adapted q keeps its adapter tensors
    let c = ctx(true);
    let mut g = Graph::new(&c);
    let x = g.tensor(256 * 64 * 2, 2, false, Cat::Norms);
    let k = g.linear(x, 256, 64, 16, LinearRole::K, Cat::AttentionIo, "k");
    assert_eq!(g.kept.total(), 0);
    assert!(!g.rg(k), "a frozen Linear on a frozen input needs no gradient");
    let q = g.linear(x, 256, 64, 64, LinearRole::Q, Cat::AttentionIo, "q");
    assert!(g.rg(q));
    assert_eq!(g.kept.get(Cat::Adapters), 256 * 64 * 4 + 256 * 8 * 4, "fp32 input copy + lora_A output");
}

#[test]
fn a_view_of_a_fused_projection_keeps_the_whole_storage() {
    let c = ctx(false);
    let mut g = Graph::new(&c);
    let qkv = g.tensor(1000, 2, true, Cat::AttentionIo);
    let before = g.kept.total();
    g.keep(qkv); // flash keeps v, a view of qkv
    g.keep(qkv); // and q (another view): nothing more
    assert_eq!(g.kept.total() - before, 1000);
}

#[test]
fn mul_keeps_what_the_other_side_needs() {
    let c = ctx(false);
    let mut g = Graph::new(&c);
    let a = g.tensor(10, 2, true, Cat::Mlp);
    let b = g.tensor(20, 2, false, Cat::Mlp);
    g.mul(a, b, 5);
    // grad of a needs b; b needs no grad, so a is not kept
    assert_eq!(g.kept.total(), 20);
}

#[test]
fn dropout_keeps_a_bool_mask_only_in_training_with_p() {
    let c = ctx(false);
    let mut g = Graph::new(&c);
    let x = g.tensor(100 * 2, 2, true, Cat::Mlp);
    let y = g.dropout(x, 100, 0.0);
    assert_eq!(y, x, "p = 0 is the identity");
    g.dropout(x, 100, 0.1);
    assert_eq!(g.kept.get(Cat::DropoutMasks), 100);
}

#[test]
fn autocast_keeps_the_half_copy_of_an_fp32_weight_but_a_4_bit_one_has_none() {
    let mut sc = Scenario::new(builtin("llama-2-7b").unwrap());
    sc.batch = 2;
    sc.seq = 128;
    sc.precision = crate::units::Precision::Bf16Amp;
    sc.lora = Some("8:q,v".parse::<Lora>().unwrap());
    let walk = |sc: &Scenario| {
        let c = Ctx::new(sc);
        let mut g = Graph::new(&c);
        let x = g.tensor(256 * 64 * 2, 2, true, Cat::Norms);
        g.linear(x, 256, 64, 16, LinearRole::K, Cat::AttentionIo, "k");
        g.kept.get(Cat::WeightCasts)
    };
    // a frozen fp32 weight is cast to bf16 for the matmul, and the cast is kept for dX
    assert_eq!(walk(&sc), 16 * 64 * 2);
    // bitsandbytes' MatMul4Bit dequantizes inside its forward: autocast casts nothing
    sc.base_quant = crate::estimate::BaseQuant::Nf4;
    assert_eq!(walk(&sc), 0);
}
