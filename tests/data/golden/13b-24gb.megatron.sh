# vramscope plan for Llama-2-13B: 1 GPU = dp 1 x tp 1 x pp 1 x cp 1
# Megatron-LM: fp32 weights, gradients and optimizer states
# Megatron-LM: Megatron-LM has no adamw-8bit optimizer; the flags use its Adam
# Megatron-LM: `--optimizer adam` is a fused AdamW kernel with no foreach temporary
# Megatron-LM: `--use-distributed-optimizer` shards the fp32 main weights and moments over data parallel (ZeRO stage 1)
# Megatron-LM: these flags do not offload to the CPU
# Megatron-LM: dropout as the model's config: --attention-dropout 0 --hidden-dropout 0 (Megatron's default is 0.1)
# differs from the scenario in --optimizer adamw-fused --framework megatron --loss hf --adapter-dtype fp32 --zero 1 --offload none: the framework's job is 307.68 GiB per GPU, which does NOT fit the card (vramscope estimate --model llama-2-13b --mode train --batch 4 --seq 2048 --precision fp32 --optimizer adamw-fused --checkpoint none --framework megatron --loss hf --adapter-dtype fp32 --gpu rtx-4090 --context-mib 500 --workspace-mib 32 --zero 1), the scenario's 186.20 GiB
MEGATRON_ARGS=(
    --tensor-model-parallel-size 1
    --pipeline-model-parallel-size 1
    --num-layers 40
    --hidden-size 5120
    --ffn-hidden-size 13824
    --num-attention-heads 40
    --max-position-embeddings 2048
    --attention-dropout 0
    --hidden-dropout 0
    --swiglu
    --normalization RMSNorm
    --position-embedding-type rope
    --disable-bias-linear
    --untie-embeddings-and-output-weights
    --rotary-base 10000
    --seq-length 2048
    --micro-batch-size 4
    --global-batch-size 4
    --optimizer adam
    --use-distributed-optimizer
)
# not expressed here (set them elsewhere or expect a different job): --optimizer adamw-8bit (Megatron's are adam and sgd); --offload optimizer (no ZeRO offload)
torchrun --nproc_per_node 1 pretrain_gpt.py "${MEGATRON_ARGS[@]}"
