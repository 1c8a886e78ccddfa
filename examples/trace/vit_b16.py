"""ViT-B/16 (torchvision's `vit_b_16()`, weights=None: the published configuration, 12 encoder
blocks of 12 heads, hidden 768, MLP 3072, 16 x 16 patches of a 224 x 224 image, 1000 classes),
for `vramscope_trace.py`. torchvision fixes the image size at construction (224 here), so the
only dim is the batch. Loss: cross-entropy over the 1000 classes against random labels, on the
logits cast to fp32, as an ImageNet training script computes it.

    python vramscope_trace.py vit_b16.py --dim batch=2,3,4 --precision bf16-amp \\
        --trainable all --blocks EncoderBlock --out vit-b16.vstrace.json
"""
from unittest import mock

import torch
import torch.nn.functional as F
from torchvision.models import vit_b_16

IMAGE_SIZE = 224


def model():
    # torch's trunc_normal_ tests `mask.any()`, which fake tensors cannot answer; the weights'
    # values do not matter here, so the initialisation is skipped.
    with mock.patch.object(torch.nn.init, "trunc_normal_", lambda t, *a, **k: t):
        return vit_b_16(weights=None, image_size=IMAGE_SIZE)


def inputs(batch):
    return dict(x=torch.randn(batch, 3, IMAGE_SIZE, IMAGE_SIZE))


def loss(output, inputs):
    labels = torch.randint(0, 1000, (output.shape[0],), device=output.device)
    return F.cross_entropy(output.float(), labels)
