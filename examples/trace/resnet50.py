"""ResNet-50 (torchvision's `resnet50()`, weights=None: the published ImageNet configuration,
Bottleneck blocks of [3, 4, 6, 3], 1000 classes), for `vramscope_trace.py`. The input is an
image batch of (batch, 3, height, width). Loss: cross-entropy over the 1000 classes against
random labels, on the logits cast to fp32, as an ImageNet training script computes it.

    python vramscope_trace.py resnet50.py --dim batch=2,3,4 --dim height=224,256,288 \\
        --dim width=224,256,288 --precision bf16-amp --trainable all --blocks Bottleneck \\
        --out resnet50.vstrace.json
"""
import torch
import torch.nn.functional as F
from torchvision.models import resnet50


def model():
    return resnet50(weights=None)


def inputs(batch, height, width):
    return dict(x=torch.randn(batch, 3, height, width))


def loss(output, inputs):
    labels = torch.randint(0, 1000, (output.shape[0],), device=output.device)
    return F.cross_entropy(output.float(), labels)
