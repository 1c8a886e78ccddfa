# vramscope plan for GPT-3 175B (Megatron-LM): 256 GPU(s) = dp 4 x tp 8 x pp 8 x cp 1
MEGATRON_ARGS=(
    --tensor-model-parallel-size 8
    --pipeline-model-parallel-size 8
    --sequence-parallel
    --num-layers 96
    --hidden-size 12288
    --ffn-hidden-size 49152
    --num-attention-heads 96
    --max-position-embeddings 2048
    --seq-length 2048
    --micro-batch-size 1
    --global-batch-size 1536
    --fp16
    --use-distributed-optimizer
    --recompute-granularity selective
)
torchrun --nproc_per_node 8 pretrain_gpt.py "${MEGATRON_ARGS[@]}"
