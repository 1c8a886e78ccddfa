# vramscope plan for GPT-3 175B (Megatron-LM): FSDP SHARD_GRAD_OP over 4 GPU(s), micro-batch 1, accumulation 384
import functools
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy, MixedPrecision, CPUOffload
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

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
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, ParallelTransformerLayer))
