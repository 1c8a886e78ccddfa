# vramscope plan for GPT-3 175B (Megatron-LM): 1 x 2048 per GPU
# Hugging Face Trainer + DeepSpeed: the Trainer hands precision and optimizer to the DeepSpeed config it names
# Hugging Face Trainer + DeepSpeed: `fp16: {enabled: true}` keeps fp16 weights and gradients, with fp32 master weights and fp32 moments and a dynamic loss scale (the fp16-mixed recipe)
# Hugging Face Trainer + DeepSpeed: Adam/AdamW runs as DeepSpeed's FusedAdam, a multi-tensor kernel with no foreach temporary (as `--optimizer adamw-fused`)
# differs from the scenario in --optimizer adamw-fused: the framework's job is 31.96 GiB per GPU (vramscope estimate --model gpt3-175b-megatron --mode train --batch 1 --seq 2048 --precision fp16-mixed --optimizer adamw-fused --checkpoint selective --gpu a100-80gb --context-mib 500 --workspace-mib 32 --dp 4 --tp 8 --pp 8 --zero 1 --micro-batches 384 --sp), the scenario's 34.79 GiB
import torch
from transformers import AutoModelForCausalLM, TrainingArguments

model = AutoModelForCausalLM.from_pretrained(MODEL_ID, torch_dtype=torch.float32)

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
# launch on 256 GPUs: torchrun --nnodes 32 --nproc_per_node 8 --node_rank $NODE_RANK --rdzv_endpoint $MASTER_ADDR:29500 train.py
