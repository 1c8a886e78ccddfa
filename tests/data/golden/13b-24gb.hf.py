# vramscope plan for Llama-2-13B: 4 x 2048 per GPU
import torch
from transformers import AutoModelForCausalLM, TrainingArguments

# weights are loaded in torch.float32 (fp32 weights; autocast computes in half precision)
model = AutoModelForCausalLM.from_pretrained(MODEL_ID, torch_dtype=torch.float32)

args = TrainingArguments(
    output_dir="out",
    per_device_train_batch_size=4,
    gradient_accumulation_steps=1,
    optim="adamw_bnb_8bit",
    deepspeed="ds_config.json",  # vramscope export --format deepspeed
)
# launch on 1 GPU(s): torchrun --nproc_per_node 1 train.py
