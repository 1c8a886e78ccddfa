"""Stable Diffusion 1.5's UNet (diffusers' UNet2DConditionModel at the published SD 1.5
configuration), for `vramscope_trace.py`. The text encoder's output is an input (77 CLIP tokens
of 768); the latents are the image's size / 8. Loss: the denoising MSE in fp32, as diffusers'
train_text_to_image.py computes it.

    python vramscope_trace.py sd15_unet.py --dim batch=2,3,4 --dim height=512,576,640 \\
        --dim width=512,576,640 --precision bf16 --out sd15-unet-bf16.vstrace.json
"""
import torch
import torch.nn.functional as F
from diffusers import UNet2DConditionModel


def model():
    return UNet2DConditionModel(
        sample_size=64,
        in_channels=4,
        out_channels=4,
        layers_per_block=2,
        block_out_channels=(320, 640, 1280, 1280),
        down_block_types=("CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=768,
        attention_head_dim=8,
    )


def inputs(batch, height, width):
    return dict(
        sample=torch.randn(batch, 4, height // 8, width // 8),
        timestep=torch.randint(0, 1000, (batch,)),
        encoder_hidden_states=torch.randn(batch, 77, 768),
    )


def loss(output, inputs):
    return F.mse_loss(output.sample.float(), inputs["sample"].float())
