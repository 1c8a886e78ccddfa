# vramscope plan for Llama-2-7B: 2 x 4096 per GPU
# Hugging Face Trainer + DeepSpeed: the Trainer hands precision and optimizer to the DeepSpeed config it names
# Hugging Face Trainer + DeepSpeed: `bf16: {enabled: true}` keeps bf16 weights and gradients, with fp32 master weights and fp32 Adam moments in the optimizer (the bf16-mixed recipe)
# Hugging Face Trainer + DeepSpeed: Adam/AdamW runs as DeepSpeed's FusedAdam, a multi-tensor kernel with no foreach temporary (as `--optimizer adamw-fused`)
# Hugging Face Trainer + DeepSpeed: not expressed in the config (set on the model): sequence length 4096 (the data); attention sdpa (attn_implementation at load); --checkpoint full (the model's gradient_checkpointing_enable; activation_checkpointing here configures deepspeed.checkpointing only)
# Hugging Face Trainer + DeepSpeed: ZeRO-3 keeps one reduce bucket of reduce_bucket_size 500,000,000 bf16 elements (DeepSpeed's default) all run: 0.93 GiB ("ZeRO buckets")
# differs from the scenario in --precision bf16-mixed --optimizer adamw-fused: the framework's job is 26.62 GiB per GPU (vramscope estimate --model llama-2-7b --mode train --batch 2 --seq 4096 --precision bf16-mixed --optimizer adamw-fused --checkpoint full --grad-accum 4 --gpu a100-80gb --context-mib 500 --workspace-mib 32 --dp 8 --zero 3), the scenario's 15.27 GiB
import os
import torch
from transformers import AutoModelForCausalLM, TrainingArguments

MAX_SEQ_LEN = 4096  # tokenize / pack every example to this length (TrainingArguments has no sequence length)
model = AutoModelForCausalLM.from_pretrained(
    MODEL_ID,
    torch_dtype=torch.bfloat16,
    attn_implementation="sdpa",
)

args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=2,
    gradient_accumulation_steps=4,
    bf16=True,
    gradient_checkpointing=True,
    gradient_checkpointing_kwargs={"use_reentrant": False},
    optim="adamw_torch",
    deepspeed="ds_config.json",  # vramscope export --format deepspeed
)
# every setting of the scenario is expressed above
# launch on 8 GPUs: torchrun --nproc_per_node 8 train.py
