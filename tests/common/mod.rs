//! Scenarios more than one integration-test crate builds (each crate includes this as `mod common`).

use vramscope::estimate::{BaseQuant, Checkpointing, Framework, Optimizer, Scenario};
use vramscope::model::preset;
use vramscope::units::Precision;

/// torchtune's Llama-3.1-8B single-device recipes on an RTX 4090 (published rows 26a-c): batch
/// 2 × 2048 packed, activation checkpointing, chunked loss compiled (the README's table was
/// measured with `compile=True`); full fine-tuning with paged 8-bit AdamW stepped in backward, or
/// LoRA (rank 8 on every projection, fused AdamW) on a bf16 or NF4 base.
pub fn torchtune_8b(lora: bool, nf4: bool) -> Scenario {
    let l = preset::load("llama-3.1-8b").unwrap_or_else(|e| panic!("llama-3.1-8b: {e}"));
    let mut sc = Scenario::new(l.model);
    sc.seq = 2048;
    sc.batch = 2;
    sc.precision = Precision::Bf16;
    sc.checkpointing = Checkpointing::Full;
    sc.stack = Framework::Torchtune.stack();
    sc.stack.compiled_loss = true;
    if lora {
        sc.lora = Some("8:q,v,o,gate,up,down".parse().unwrap_or_else(|e| panic!("{e}")));
        sc.optimizer = Optimizer::AdamwFused;
        if nf4 {
            sc.base_quant = BaseQuant::Nf4;
        }
    } else {
        sc.optimizer = Optimizer::PagedAdamw8bit;
        sc.stack.optimizer_in_backward = true;
    }
    sc
}
