# vramscope plan for Llama-2-7B: FSDP FULL_SHARD over 8 GPUs, micro-batch 2, accumulation 4
# PyTorch FSDP: load the model in torch.bfloat16 before wrapping: pure bf16 weights, gradients and moments (MixedPrecision is then a no-op)
# PyTorch FSDP: ZeRO stage 3 is written as its FSDP sharding strategy
# matches the scenario: 15.27 GiB per GPU (vramscope estimate --model llama-2-7b --mode train --batch 2 --seq 4096 --precision bf16 --optimizer adamw --checkpoint full --grad-accum 4 --gpu a100-80gb --context-mib 500 --workspace-mib 32 --dp 8 --zero 3)
import functools
import os
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy, MixedPrecision, CPUOffload
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoModelForCausalLM

MAX_SEQ_LEN = 4096  # every micro-batch: 2 sequences of this many tokens; accumulation 4
model = AutoModelForCausalLM.from_pretrained(
    MODEL_ID,
    torch_dtype=torch.bfloat16,
    attn_implementation="sdpa",
)
wrap = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
model = FSDP(
    model,
    auto_wrap_policy=wrap,
    sharding_strategy=ShardingStrategy.FULL_SHARD,
    mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16, buffer_dtype=torch.bfloat16),
    cpu_offload=CPUOffload(offload_params=False),
    device_id=torch.cuda.current_device(),
    use_orig_params=True,
)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)  # foreach, the CUDA default
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))
# every setting of the scenario is expressed above
# launch on 8 GPUs: torchrun --nproc_per_node 8 train.py
