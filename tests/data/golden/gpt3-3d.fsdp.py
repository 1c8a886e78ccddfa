# vramscope plan for GPT-3 175B (Megatron-LM): FSDP SHARD_GRAD_OP over 4 GPUs, micro-batch 1, accumulation 384
# PyTorch FSDP: load the model in fp32: MixedPrecision keeps fp32 sharded weights, gradients and moments and computes in half precision (fp16-amp)
# PyTorch FSDP: ZeRO stage 1 is written as its FSDP sharding strategy
# differs from the scenario in --precision fp16-amp: the framework's job is 83.13 GiB per GPU, which does NOT fit the card (vramscope estimate --model gpt3-175b-megatron --mode train --batch 1 --seq 2048 --precision fp16-amp --optimizer adamw --checkpoint selective --gpu a100-80gb --context-mib 500 --workspace-mib 32 --dp 4 --tp 8 --pp 8 --zero 1 --micro-batches 384 --sp), the scenario's 34.97 GiB
import functools
import os
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy, MixedPrecision, CPUOffload
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers import AutoModelForCausalLM

MAX_SEQ_LEN = 2048  # every micro-batch: 1 sequence of this many tokens; accumulation 384
model = AutoModelForCausalLM.from_pretrained(
    MODEL_ID,
    torch_dtype=torch.float32,
    attn_implementation="sdpa",
)
wrap = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={ParallelTransformerLayer})
model = FSDP(
    model,
    auto_wrap_policy=wrap,
    sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,
    mixed_precision=MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float16, buffer_dtype=torch.float16),
    cpu_offload=CPUOffload(offload_params=False),
    device_id=torch.cuda.current_device(),
    use_orig_params=True,
)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)  # foreach, the CUDA default
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, ParallelTransformerLayer))
# not expressed here (set them elsewhere or expect a different job): --tp 8 (no tensor, pipeline, context or expert parallelism here); --pp 8 (no tensor, pipeline, context or expert parallelism here); --sp (sequence parallelism); --checkpoint selective (gradient_checkpointing checkpoints every block)
# launch on 256 GPUs: torchrun --nnodes 32 --nproc_per_node 8 --node_rank $NODE_RANK --rdzv_endpoint $MASTER_ADDR:29500 train.py
