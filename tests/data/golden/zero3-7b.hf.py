# vramscope plan for Llama-2-7B: 2 x 4096 per GPU
# Hugging Face Trainer + DeepSpeed: the Trainer hands precision and optimizer to the DeepSpeed config it names
# Hugging Face Trainer + DeepSpeed: `bf16: {enabled: true}` keeps bf16 weights and gradients, with fp32 master weights and fp32 Adam moments in the optimizer (the bf16-mixed recipe)
# Hugging Face Trainer + DeepSpeed: Adam/AdamW runs as DeepSpeed's FusedAdam, a multi-tensor kernel with no foreach temporary (as `--optimizer adamw-fused`)
# differs from the scenario in --precision bf16-mixed --optimizer adamw-fused: the framework's job is 25.69 GiB per GPU (vramscope estimate --model llama-2-7b --mode train --batch 2 --seq 4096 --precision bf16-mixed --optimizer adamw-fused --checkpoint full --grad-accum 4 --gpu a100-80gb --context-mib 500 --workspace-mib 32 --dp 8 --zero 3), the scenario's 14.34 GiB
import torch
from transformers import AutoModelForCausalLM, TrainingArguments

model = AutoModelForCausalLM.from_pretrained(MODEL_ID, torch_dtype=torch.bfloat16)

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
# launch on 8 GPUs: torchrun --nproc_per_node 8 train.py
