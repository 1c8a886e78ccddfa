# vramscope plan for Llama-2-13B: 1 GPU(s) = dp 1 x tp 1 x pp 1 x cp 1
MEGATRON_ARGS=(
    --tensor-model-parallel-size 1
    --pipeline-model-parallel-size 1
    --num-layers 40
    --hidden-size 5120
    --ffn-hidden-size 13824
    --num-attention-heads 40
    --max-position-embeddings 2048
    --swiglu
    --normalization RMSNorm
    --position-embedding-type rope
    --disable-bias-linear
    --untie-embeddings-and-output-weights
    --seq-length 2048
    --micro-batch-size 4
    --global-batch-size 4
    --use-distributed-optimizer
)
torchrun --nproc_per_node 8 pretrain_gpt.py "${MEGATRON_ARGS[@]}"
