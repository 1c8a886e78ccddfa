"""The Stable Diffusion VAE (diffusers' AutoencoderKL at the published SD 1.5 / SDXL VAE
configuration, runwayml/stable-diffusion-v1-5 and stabilityai/sdxl-vae `vae/config.json`: four
DownEncoderBlock2D / UpDecoderBlock2D of 128, 256, 512, 512 channels, 2 layers per block,
4 latent channels, GroupNorm of 32, a mid block with one attention, sample_size 512), for
`vramscope_trace.py`. The input is an image batch of (batch, 3, height, width); the latents are
the image's size / 8. Trained as in fine-tuning the VAE: encode, sample from the posterior,
decode; loss: the reconstruction MSE in fp32 of the decoder's output against the input image.

    python vramscope_trace.py sd_vae.py --dim batch=2,3,4 --dim height=256,320,384 \\
        --dim width=256,320,384 --precision bf16-amp --trainable all \\
        --blocks ResnetBlock2D,Attention --out sd-vae.vstrace.json
"""
import torch
import torch.nn.functional as F
from diffusers import AutoencoderKL


def model():
    return AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=("DownEncoderBlock2D",) * 4,
        up_block_types=("UpDecoderBlock2D",) * 4,
        block_out_channels=(128, 256, 512, 512),
        layers_per_block=2,
        act_fn="silu",
        latent_channels=4,
        norm_num_groups=32,
        sample_size=512,
    )


def inputs(batch, height, width):
    return dict(
        sample=torch.randn(batch, 3, height, width),
        sample_posterior=True,
        return_dict=False,
    )


def loss(output, inputs):
    return F.mse_loss(output[0].float(), inputs["sample"].float())
