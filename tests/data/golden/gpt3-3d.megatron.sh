# vramscope plan for GPT-3 175B (Megatron-LM): 256 GPUs = dp 4 x tp 8 x pp 8 x cp 1
# Megatron-LM: `--fp16` keeps fp16 weights with fp32 main weights and moments in the optimizer and a loss scale (fp16-mixed)
# Megatron-LM: `--optimizer adam` is a fused AdamW kernel with no foreach temporary
# Megatron-LM: `--use-distributed-optimizer` shards the fp32 main weights and moments over data parallel (ZeRO stage 1)
# Megatron-LM: dropout as the model's config: --attention-dropout 0.1 --hidden-dropout 0.1 (Megatron's default is 0.1)
# Megatron-LM: selective recomputation recomputes the attention core
# differs from the scenario in --optimizer adamw-fused --framework megatron --loss hf --adapter-dtype fp32: the framework's job is 31.96 GiB per GPU (vramscope estimate --model gpt3-175b-megatron --mode train --batch 1 --seq 2048 --precision fp16-mixed --optimizer adamw-fused --checkpoint selective --framework megatron --loss hf --adapter-dtype fp32 --gpu a100-80gb --context-mib 500 --workspace-mib 32 --dp 4 --tp 8 --pp 8 --zero 1 --micro-batches 384 --sp), the scenario's 34.97 GiB
MEGATRON_ARGS=(
    --tensor-model-parallel-size 8
    --pipeline-model-parallel-size 8
    --sequence-parallel
    --num-layers 96
    --hidden-size 12288
    --ffn-hidden-size 49152
    --num-attention-heads 96
    --max-position-embeddings 2048
    --attention-dropout 0.1
    --hidden-dropout 0.1
    --seq-length 2048
    --micro-batch-size 1
    --global-batch-size 1536
    --fp16
    --optimizer adam
    --use-distributed-optimizer
    --recompute-granularity selective
)
# every setting of the scenario is expressed above
torchrun --nnodes 32 --nproc_per_node 8 --node_rank $NODE_RANK --rdzv_endpoint $MASTER_ADDR:29500 pretrain_gpt.py "${MEGATRON_ARGS[@]}"
