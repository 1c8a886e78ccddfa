# vramscope plan for Llama-2-13B: FSDP SHARD_GRAD_OP over 1 GPU, micro-batch 4, accumulation 1
# PyTorch FSDP: fp32 weights, gradients and optimizer states
# PyTorch FSDP: ZeRO stage 2 is written as its FSDP sharding strategy
# matches the scenario: 186.20 GiB per GPU, which does NOT fit the card (vramscope estimate --model llama-2-13b --mode train --batch 4 --seq 2048 --precision fp32 --optimizer adamw-8bit --checkpoint none --gpu rtx-4090 --context-mib 500 --workspace-mib 32 --zero 2 --offload optimizer)
import functools
import os
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy, MixedPrecision, CPUOffload
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoModelForCausalLM
import bitsandbytes as bnb

MAX_SEQ_LEN = 2048  # every micro-batch: 4 sequences of this many tokens; accumulation 1
model = AutoModelForCausalLM.from_pretrained(
    MODEL_ID,
    torch_dtype=torch.float32,
    attn_implementation="sdpa",
)
wrap = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
model = FSDP(
    model,
    auto_wrap_policy=wrap,
    sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,
    cpu_offload=CPUOffload(offload_params=True),
    device_id=torch.cuda.current_device(),
    use_orig_params=True,
)
optimizer = bnb.optim.AdamW8bit(model.parameters(), lr=1e-5)  # import bitsandbytes as bnb
# every setting of the scenario is expressed above
# launch on 1 GPU: torchrun --nproc_per_node 1 train.py
