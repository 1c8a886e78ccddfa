"""Stable Diffusion XL's UNet (diffusers' UNet2DConditionModel at the published SDXL base 1.0
configuration), for `vramscope_trace.py`. The two text encoders' outputs are inputs (77 tokens
of 2048, the pooled 1280) with the six size-and-crop time ids; the latents are the image's
size / 8. Loss: the denoising MSE in fp32, as diffusers' train_text_to_image_sdxl.py computes it.

    python vramscope_trace.py sdxl_unet.py --dim batch=2,3,4 --dim height=1024,1088,1152 \\
        --dim width=1024,1088,1152 --precision bf16-amp \\
        --trainable lora:to_q,to_k,to_v,to_out.0:r=4,alpha=4 --out sdxl-unet-lora-amp.vstrace.json
"""
import torch
import torch.nn.functional as F
from diffusers import UNet2DConditionModel


def model():
    return UNet2DConditionModel(
        sample_size=128,
        in_channels=4,
        out_channels=4,
        layers_per_block=2,
        block_out_channels=(320, 640, 1280),
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
        transformer_layers_per_block=(1, 2, 10),
        attention_head_dim=(5, 10, 20),
        cross_attention_dim=2048,
        use_linear_projection=True,
        addition_embed_type="text_time",
        addition_time_embed_dim=256,
        projection_class_embeddings_input_dim=2816,
    )


def inputs(batch, height, width):
    return dict(
        sample=torch.randn(batch, 4, height // 8, width // 8),
        timestep=torch.randint(0, 1000, (batch,)),
        encoder_hidden_states=torch.randn(batch, 77, 2048),
        added_cond_kwargs={"text_embeds": torch.randn(batch, 1280), "time_ids": torch.randn(batch, 6)},
    )


def loss(output, inputs):
    return F.mse_loss(output.sample.float(), inputs["sample"].float())
