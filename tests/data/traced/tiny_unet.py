"""A small SD-style UNet2DConditionModel (diffusers), latents and text states as inputs."""
import torch
from diffusers import UNet2DConditionModel

def model():
    return UNet2DConditionModel(
        sample_size=32, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(32, 64), down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32, attention_head_dim=8,
        norm_num_groups=8)

def inputs(batch, height, width):
    return dict(sample=torch.randn(batch, 4, height // 8, width // 8),
                timestep=torch.tensor([10] * batch),
                encoder_hidden_states=torch.randn(batch, 77, 32))

def loss(output, inputs):
    return torch.nn.functional.mse_loss(output.sample.float(), inputs["sample"].float())
