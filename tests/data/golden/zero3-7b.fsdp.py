# vramscope plan for Llama-2-7B: FSDP FULL_SHARD over 8 GPU(s), micro-batch 2, accumulation 4
import functools
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy, MixedPrecision, CPUOffload
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

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
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))
