"""FLUX.1-dev's transformer (diffusers' FluxTransformer2DModel at the published configuration:
19 double-stream and 38 single-stream blocks, 24 heads of 128, guidance embedding), for
`vramscope_trace.py`. The T5 (512 tokens of 4096) and CLIP pooled (768) outputs are inputs; the
latents are the image's size / 8, packed 2 x 2 into (height / 16) x (width / 16) tokens of 64
channels, as diffusers' train_dreambooth_lora_flux.py feeds them. Loss: the flow-matching MSE
in fp32.

    python vramscope_trace.py flux_transformer.py --dim batch=2,3,4 --dim height=512,576,640 \\
        --dim width=512,576,640 --precision bf16-amp \\
        --trainable lora:to_q,to_k,to_v,to_out.0:r=4,alpha=4 --out flux-dev-lora-amp.vstrace.json
"""
import torch
import torch.nn.functional as F
from diffusers import FluxTransformer2DModel


def model():
    return FluxTransformer2DModel(
        patch_size=1,
        in_channels=64,
        num_layers=19,
        num_single_layers=38,
        attention_head_dim=128,
        num_attention_heads=24,
        joint_attention_dim=4096,
        pooled_projection_dim=768,
        guidance_embeds=True,
        axes_dims_rope=(16, 56, 56),
    )


def inputs(batch, height, width):
    h, w = height // 16, width // 16
    return dict(
        hidden_states=torch.randn(batch, h * w, 64),
        encoder_hidden_states=torch.randn(batch, 512, 4096),
        pooled_projections=torch.randn(batch, 768),
        timestep=torch.rand(batch),
        img_ids=torch.zeros(h * w, 3),
        txt_ids=torch.zeros(512, 3),
        guidance=torch.full((batch,), 3.5),
        return_dict=False,
    )


def loss(output, inputs):
    return F.mse_loss(output[0].float(), inputs["hidden_states"].float())
