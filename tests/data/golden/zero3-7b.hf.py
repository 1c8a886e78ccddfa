# vramscope plan for Llama-2-7B: 2 x 4096 per GPU
import torch
from transformers import AutoModelForCausalLM, TrainingArguments

# weights are loaded in torch.bfloat16 (pure half precision: no fp32 master copy)
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
# launch on 8 GPU(s): torchrun --nproc_per_node 8 train.py
