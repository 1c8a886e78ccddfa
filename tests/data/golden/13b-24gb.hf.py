# vramscope plan for Llama-2-13B: 4 x 2048 per GPU
# Hugging Face Trainer + DeepSpeed: the Trainer hands precision and optimizer to the DeepSpeed config it names
# Hugging Face Trainer + DeepSpeed: fp32 weights, gradients and optimizer states
# Hugging Face Trainer + DeepSpeed: the adamw-8bit optimizer is the client's, passed to `deepspeed.initialize` (`zero_allow_untested_optimizer`)
# Hugging Face Trainer + DeepSpeed: not expressed in the config (set on the model): sequence length 2048 (the data); attention sdpa (attn_implementation at load)
# Hugging Face Trainer + DeepSpeed: ZeRO-2 allocates 2 reduce bucket(s) of reduce_bucket_size 500,000,000 fp32 elements (DeepSpeed's default; two with overlap_comm) for each backward: 3.73 GiB ("ZeRO buckets"); allgather_bucket_size makes no buffer with NCCL's all_gather_into_tensor
# matches the scenario: 186.20 GiB per GPU, which does NOT fit the card (vramscope estimate --model llama-2-13b --mode train --batch 4 --seq 2048 --precision fp32 --optimizer adamw-8bit --checkpoint none --gpu rtx-4090 --context-mib 500 --workspace-mib 32 --zero 2 --offload optimizer)
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
    per_device_train_batch_size=4,
    gradient_accumulation_steps=1,
    optim="adamw_bnb_8bit",
    deepspeed="ds_config.json",  # vramscope export --format deepspeed
)
# every setting of the scenario is expressed above
# launch on 1 GPU: torchrun --nproc_per_node 1 train.py
