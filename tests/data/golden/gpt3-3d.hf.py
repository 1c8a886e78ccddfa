# vramscope plan for GPT-3 175B (Megatron-LM): 1 x 2048 per GPU
# Hugging Face Trainer + DeepSpeed: the Trainer hands precision and optimizer to the DeepSpeed config it names
# Hugging Face Trainer + DeepSpeed: `fp16: {enabled: true}` keeps fp16 weights and gradients, with fp32 master weights and fp32 moments and a dynamic loss scale (the fp16-mixed recipe)
# Hugging Face Trainer + DeepSpeed: Adam/AdamW runs as DeepSpeed's FusedAdam, a multi-tensor kernel with no foreach temporary (as `--optimizer adamw-fused`)
# Hugging Face Trainer + DeepSpeed: not expressed in the config (set on the model): sequence length 2048 (the data); attention sdpa (attn_implementation at load); --checkpoint selective (the model's gradient_checkpointing_enable; activation_checkpointing here configures deepspeed.checkpointing only)
# Hugging Face Trainer + DeepSpeed: ZeRO-1 allocates 2 reduce bucket(s) of reduce_bucket_size 500,000,000 fp16 elements (DeepSpeed's default; two with overlap_comm) for each backward: 1.86 GiB ("ZeRO buckets"); allgather_bucket_size makes no buffer with NCCL's all_gather_into_tensor
# differs from the scenario in --optimizer adamw-fused: the framework's job is 33.01 GiB per GPU (vramscope estimate --model gpt3-175b-megatron --mode train --batch 1 --seq 2048 --precision fp16-mixed --optimizer adamw-fused --checkpoint selective --gpu a100-80gb --context-mib 500 --workspace-mib 32 --dp 4 --tp 8 --pp 8 --zero 1 --micro-batches 384 --sp), the scenario's 34.97 GiB
import os
import torch
from transformers import AutoModelForCausalLM, TrainingArguments

MAX_SEQ_LEN = 2048  # tokenize / pack every example to this length (TrainingArguments has no sequence length)
model = AutoModelForCausalLM.from_pretrained(
    MODEL_ID,
    torch_dtype=torch.float32,
    attn_implementation="sdpa",
)

args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=1,
    gradient_accumulation_steps=384,
    fp16=True,
    gradient_checkpointing=True,
    gradient_checkpointing_kwargs={"use_reentrant": False},
    optim="adamw_torch",
    deepspeed="ds_config.json",  # vramscope export --format deepspeed
)
# not expressed here (set them elsewhere or expect a different job): --tp 8 (no tensor, pipeline, context or expert parallelism here); --pp 8 (no tensor, pipeline, context or expert parallelism here); --sp (sequence parallelism); --checkpoint selective (gradient_checkpointing checkpoints every block)
# launch on 256 GPUs: torchrun --nnodes 32 --nproc_per_node 8 --node_rank $NODE_RANK --rdzv_endpoint $MASTER_ADDR:29500 train.py
