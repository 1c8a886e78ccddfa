# vramscope plan for Llama-2-7B: 8 GPU(s) = dp 8 x tp 1 x pp 1 x cp 1
MEGATRON_ARGS=(
    --tensor-model-parallel-size 1
    --pipeline-model-parallel-size 1
    --num-layers 32
    --hidden-size 4096
    --ffn-hidden-size 11008
    --num-attention-heads 32
    --max-position-embeddings 4096
    --swiglu
    --normalization RMSNorm
    --position-embedding-type rope
    --disable-bias-linear
    --untie-embeddings-and-output-weights
    --seq-length 4096
    --micro-batch-size 2
    --global-batch-size 64
    --bf16
    --use-distributed-optimizer
    --recompute-granularity full
    --recompute-method uniform
    --recompute-num-layers 1
)
torchrun --nproc_per_node 8 pretrain_gpt.py "${MEGATRON_ARGS[@]}"
