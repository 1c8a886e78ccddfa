# vramscope plan for Llama-2-7B: 8 GPUs = dp 8 x tp 1 x pp 1 x cp 1
# Megatron-LM: `--bf16` keeps bf16 weights with fp32 main weights and moments in the optimizer (bf16-mixed); Megatron also accumulates gradients in an fp32 buffer (accumulate_allreduce_grads_in_fp32 is forced with bf16), which bf16-mixed holds only during the step
# Megatron-LM: `--optimizer adam` is a fused AdamW kernel with no foreach temporary
# Megatron-LM: `--use-distributed-optimizer` shards the fp32 main weights and moments over data parallel (ZeRO stage 1)
# Megatron-LM: dropout as the model's config: --attention-dropout 0 --hidden-dropout 0 (Megatron's default is 0.1)
# differs from the scenario in --precision bf16-mixed --optimizer adamw-fused --framework megatron --loss hf --adapter-dtype fp32 --zero 1: the framework's job is 47.05 GiB per GPU (vramscope estimate --model llama-2-7b --mode train --batch 2 --seq 4096 --precision bf16-mixed --optimizer adamw-fused --checkpoint full --framework megatron --loss hf --adapter-dtype fp32 --grad-accum 4 --gpu a100-80gb --context-mib 500 --workspace-mib 32 --dp 8 --zero 1), the scenario's 15.27 GiB
# not in that total: Megatron's fp32 gradient buffer during the backward (bf16-mixed counts bf16 gradients), about 12.55 GiB more per GPU
MEGATRON_ARGS=(
    --tensor-model-parallel-size 1
    --pipeline-model-parallel-size 1
    --num-layers 32
    --hidden-size 4096
    --ffn-hidden-size 11008
    --num-attention-heads 32
    --max-position-embeddings 4096
    --attention-dropout 0
    --hidden-dropout 0
    --swiglu
    --normalization RMSNorm
    --position-embedding-type rope
    --disable-bias-linear
    --untie-embeddings-and-output-weights
    --rotary-base 10000
    --seq-length 4096
    --micro-batch-size 2
    --global-batch-size 64
    --bf16
    --optimizer adam
    --use-distributed-optimizer
    --recompute-granularity full
    --recompute-method uniform
    --recompute-num-layers 1
)
# every setting of the scenario is expressed above
torchrun --nproc_per_node 8 pretrain_gpt.py "${MEGATRON_ARGS[@]}"
