"""Stable Diffusion 3.5 Medium's transformer (diffusers' SD3Transformer2DModel at the published
stabilityai/stable-diffusion-3.5-medium `transformer/config.json`: 24 MMDiT-X blocks of 24 heads
of 64, dual attention in blocks 0-12, RMS QK-norm, caption projection 1536, patch 2,
pos_embed_max_size 384), for `vramscope_trace.py`. The text encoders' outputs are inputs (333
tokens of 4096: 77 CLIP + 256 T5, and the pooled 2048); the latents are the image's size / 8
with 16 channels, as diffusers' train_dreambooth_lora_sd3.py feeds them. Loss: the
flow-matching MSE in fp32.

    python vramscope_trace.py sd35_medium.py --dim batch=2,3,4 --dim height=512,576,640 \\
        --dim width=512,576,640 --precision bf16-amp \\
        --trainable lora:to_q,to_k,to_v,to_out.0:r=4,alpha=4 --out sd3.5-medium-lora.vstrace.json
"""
import torch
import torch.nn.functional as F
from diffusers import SD3Transformer2DModel


def model():
    return SD3Transformer2DModel(
        sample_size=128,
        patch_size=2,
        in_channels=16,
        num_layers=24,
        attention_head_dim=64,
        num_attention_heads=24,
        joint_attention_dim=4096,
        caption_projection_dim=1536,
        pooled_projection_dim=2048,
        out_channels=16,
        pos_embed_max_size=384,
        dual_attention_layers=tuple(range(13)),
        qk_norm="rms_norm",
    )


def inputs(batch, height, width):
    return dict(
        hidden_states=torch.randn(batch, 16, height // 8, width // 8),
        encoder_hidden_states=torch.randn(batch, 77 + 256, 4096),
        pooled_projections=torch.randn(batch, 2048),
        timestep=torch.rand(batch) * 1000,
        return_dict=False,
    )


def loss(output, inputs):
    return F.mse_loss(output[0].float(), inputs["hidden_states"].float())
