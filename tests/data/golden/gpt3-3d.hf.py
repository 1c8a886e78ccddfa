# vramscope plan for GPT-3 175B (Megatron-LM): 1 x 2048 per GPU
import torch
from transformers import AutoModelForCausalLM, TrainingArguments

# weights are loaded in torch.float32 (fp32 weights; autocast computes in half precision)
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
# launch on 256 GPU(s): torchrun --nproc_per_node 8 train.py
