//! How a job is split across GPUs: data (with ZeRO / FSDP sharding), tensor, sequence, pipeline,
//! context and expert parallelism, and offload.

use crate::tokens::Parse;
use serde::{Deserialize, Serialize};

crate::tokens::token_enum! {
    /// PyTorch FSDP sharding strategy.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum FsdpMode {
        /// Parameters, gradients and optimizer states sharded (like ZeRO-3).
        FullShard => "full_shard" | "full-shard",
        /// Gradients and optimizer states sharded (like ZeRO-2).
        ShardGradOp => "shard_grad_op" | "shard-grad-op",
        /// Full sharding inside a node, replicas across nodes.
        HybridShard => "hybrid_shard" | "hybrid-shard",
    }
    impl FromStr = Parse::named("FSDP mode");
}

crate::tokens::token_enum! {
    /// What ZeRO-Offload / ZeRO-Infinity moves off the GPU.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "lowercase")]
    pub enum Offload {
        /// Everything on the GPU.
        #[default]
        None => "none",
        /// ZeRO-Offload: optimizer states (and the fp32 gradients and the step) on the CPU.
        Optimizer => "optimizer" | "cpu",
        /// ZeRO-Infinity: parameters and optimizer states on NVMe, streamed in block by block.
        Params => "params" | "nvme",
    }
    impl FromStr = Parse::named("offload");
}

fn one() -> u64 {
    1
}

/// The default NCCL buffers of one communicator (`--nccl-mib` gives a measured total).
pub const NCCL_PER_COMMUNICATOR: u64 = 256 << 20;

/// How the job is split across GPUs. Results are per GPU, for the most loaded rank.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Parallel {
    /// Data-parallel degree (replicas, or shards under ZeRO/FSDP).
    pub dp: u64,
    /// ZeRO stage: 0 = plain DDP, 1 = optimizer states sharded, 2 = + gradients, 3 = + parameters.
    pub zero: u8,
    /// Tensor-parallel degree (Megatron column/row split).
    #[serde(default = "one")]
    pub tp: u64,
    /// Pipeline-parallel degree.
    #[serde(default = "one")]
    pub pp: u64,
    /// Context-parallel degree (sequence split across ranks, ring attention).
    #[serde(default = "one")]
    pub cp: u64,
    /// Expert-parallel degree (MoE experts split across ranks).
    #[serde(default = "one")]
    pub ep: u64,
    /// Sequence parallelism alongside tensor parallelism (Korthikanti et al. 2022).
    #[serde(default)]
    pub sp: bool,
    /// PyTorch FSDP instead of DeepSpeed ZeRO (overrides `zero`).
    #[serde(default)]
    pub fsdp: Option<FsdpMode>,
    /// Pipeline micro-batches per step (0 = as many as stages).
    #[serde(default)]
    pub micro_batches: u64,
    /// Virtual pipeline stages per rank (interleaved 1F1B); 1 = plain 1F1B.
    #[serde(default = "one")]
    pub virtual_stages: u64,
    /// ZeRO-Offload / ZeRO-Infinity.
    #[serde(default)]
    pub offload: Offload,
    /// GPUs per node (hybrid sharding group, fast-link domain).
    #[serde(default)]
    pub gpus_per_node: u64,
    /// NCCL communicator buffers per GPU when more than one GPU takes part (default 256 MiB a
    /// communicator: [`Parallel::nccl`]).
    #[serde(default)]
    pub nccl_bytes: Option<u64>,
}

impl Default for Parallel {
    fn default() -> Self {
        Self {
            dp: 1,
            zero: 0,
            tp: 1,
            pp: 1,
            cp: 1,
            ep: 1,
            sp: false,
            fsdp: None,
            micro_batches: 0,
            virtual_stages: 1,
            offload: Offload::None,
            gpus_per_node: 0,
            nccl_bytes: None,
        }
    }
}

impl Parallel {
    /// GPUs in the job.
    pub fn world(&self) -> u64 {
        self.dp * self.tp * self.pp * self.cp
    }

    /// The ZeRO stage in effect (FSDP modes mapped to their ZeRO equivalents).
    pub fn effective_zero(&self) -> u8 {
        match self.fsdp {
            Some(FsdpMode::FullShard | FsdpMode::HybridShard) => 3,
            Some(FsdpMode::ShardGradOp) => 2,
            None => self.zero,
        }
    }

    /// Ranks the sharded states are divided over.
    pub fn shard_degree(&self) -> u64 {
        match self.fsdp {
            Some(FsdpMode::HybridShard) => self.dp.min(self.node_size()),
            _ => self.dp,
        }
    }

    /// GPUs per node (8 unless set).
    pub fn node_size(&self) -> u64 {
        if self.gpus_per_node == 0 { 8 } else { self.gpus_per_node }
    }

    /// Pipeline micro-batches per step.
    pub fn micro_batches(&self) -> u64 {
        if self.micro_batches == 0 { self.pp } else { self.micro_batches }
    }

    /// The NCCL communicators a rank of this layout sets up: one per process group that carries
    /// collectives or sends (PyTorch creates a group's communicator at its first collective, with
    /// buffers of its own per channel and peer): the data-parallel group (ZeRO / FSDP's shards;
    /// under HSDP across nodes a shard group within the node and a replicate group across), and
    /// the tensor-, pipeline-, context- and expert-parallel groups, each where its degree is
    /// over 1; none on one GPU.
    pub fn communicators(&self) -> u64 {
        if self.world() <= 1 {
            return 0;
        }
        let data = match self.dp {
            0 | 1 => 0,
            dp if self.fsdp == Some(FsdpMode::HybridShard) && dp > self.node_size() => 2,
            _ => 1,
        };
        data + [self.tp, self.pp, self.cp, self.ep].iter().filter(|&&d| d > 1).count() as u64
    }

    /// NCCL buffers per GPU: `--nccl-mib` (all of them, as measured), else 256 MiB for each of
    /// [`Self::communicators`] — a default, not a measurement: NCCL's own buffers are channels ×
    /// connected peers × 9.19 MiB (its LL, LL128 and Simple FIFOs), and the channel count is
    /// NCCL's choice for the topology.
    pub fn nccl(&self) -> u64 {
        if self.world() <= 1 {
            return 0;
        }
        self.nccl_bytes.unwrap_or(self.communicators() * NCCL_PER_COMMUNICATOR)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_process_group_in_use_has_its_own_communicator() {
        let p = |dp, tp, pp| Parallel { dp, tp, pp, ..Parallel::default() };
        assert_eq!(p(1, 1, 1).nccl(), 0, "one GPU: no NCCL");
        assert_eq!(p(8, 1, 1).communicators(), 1);
        assert_eq!(p(8, 1, 1).nccl(), 256 << 20);
        // Megatron's 3-D layout: the data-, tensor- and pipeline-parallel groups
        assert_eq!(p(2, 8, 4).communicators(), 3);
        assert_eq!(p(2, 8, 4).nccl(), 3 * (256 << 20));
        // context and expert parallelism add theirs
        assert_eq!(Parallel { cp: 2, ep: 4, ..p(8, 1, 1) }.communicators(), 3);
        // HSDP: a shard group in the node, a replicate group across nodes (none within one node)
        let hsdp = |dp| Parallel { fsdp: Some(FsdpMode::HybridShard), gpus_per_node: 8, ..p(dp, 1, 1) };
        assert_eq!(hsdp(32).communicators(), 2);
        assert_eq!(hsdp(8).communicators(), 1);
        // a measured total wins, whatever the groups
        assert_eq!(Parallel { nccl_bytes: Some(1 << 30), ..p(2, 8, 4) }.nccl(), 1 << 30);
    }
}
