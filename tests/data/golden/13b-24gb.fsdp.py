# vramscope plan for Llama-2-13B: FSDP SHARD_GRAD_OP over 1 GPU(s), micro-batch 4, accumulation 1
import functools
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import ShardingStrategy, MixedPrecision, CPUOffload
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

wrap = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
model = FSDP(
    model,
    auto_wrap_policy=wrap,
    sharding_strategy=ShardingStrategy.SHARD_GRAD_OP,
    cpu_offload=CPUOffload(offload_params=True),
    device_id=torch.cuda.current_device(),
    use_orig_params=True,
)
