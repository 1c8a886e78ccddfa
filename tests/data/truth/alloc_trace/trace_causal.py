"""Allocation trace of plain PyTorch training steps of a transformers causal LM: every storage
the steps allocate and free, in order, on fake tensors (nothing is allocated, no GPU).

The loop is the one the estimator's default stack describes: `model(input_ids, labels=...)`,
`loss.backward()`, `torch.optim.AdamW(foreach=True).step()` (the CUDA default),
`zero_grad(set_to_none=True)`; gradient checkpointing as `gradient_checkpointing_enable()` gives
it (non-reentrant); pure bf16 (`from_config(dtype=bfloat16)`) or bf16 autocast over fp32 weights
(CUDA's cast policy: linears, matmuls and SDPA in bf16 with the weight casts cached for the
autocast region; softmax, the loss and the fp32-list ops in fp32). CUDA's dispatch where it
differs from the CPU's: dropout as `native_dropout` (bool mask); SDPA as the flash kernel (bf16,
no mask) or the memory-efficient one. The optimizer's `step` counters are CPU scalars on a GPU
(not fused, not capturable), so the optimizer's 0-dim tensors are left out of the trace.

torchtune's stack as `../pending_T/measure_T.diff` reimplements it (torchtune v0.7.0 @ bd2a0fc7):
LOSS `chunked:N` is `CEWithChunkedOutputLoss` over the decoder's `chunked_output` (the output
projection per `tensor_split` of the normed hidden state, the chunks' logits a list; labels
shifted as torchtune's data pipeline shifts them; `del outputs` before backward, as the recipe's
`_loss_step`); OPT `inbwd` is `OptimizerInBackward`: one AdamW (foreach) per parameter, stepped
and `zero_grad`ed by its post-accumulate-grad hook.

Usage: python trace_causal.py CONFIG.json BATCH SEQ bf16|bf16-amp full|none STEPS OUT.trace [hf|chunked:N] [after|inbwd]
Writes lines 'a ID BYTES' and 'f ID' (and '# phase' marks), as trace_bert.py."""
import sys

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
import transformers
import transformers.masking_utils as mu
from transformers import AutoConfig, AutoModelForCausalLM

from trace_common import Autocast, Trace

cfg_path, batch, seq, prec, ckpt, steps, out = sys.argv[1:8]
loss_kind = sys.argv[8] if len(sys.argv) > 8 else "hf"
inbwd = len(sys.argv) > 9 and sys.argv[9] == "inbwd"
batch, seq, steps = int(batch), int(seq), int(steps)
chunks = int(loss_kind.split(":")[1]) if loss_kind.startswith("chunked:") else 0
IGNORE_INDEX = -100
amp = prec == "bf16-amp"
LOW = torch.bfloat16


# ---- CUDA dispatch (as measure.py's cuda_dispatch_emulation) ------------------------------
def dropout(input, p=0.5, training=True, inplace=False):
    if training and 0.0 < p < 1.0 and input.numel() > 0:
        return torch.native_dropout(input, p, True)[0]
    return input


def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    if amp:
        query, key, value = (AC.cast(t, LOW) for t in (query, key, value))
    hd = query.shape[-1]
    half = query.dtype in (torch.float16, torch.bfloat16)
    if query.dim() == 4 and half and attn_mask is None and hd <= 256 and hd % 8 == 0:
        # grouped K/V go in as they are (the kernel reads each group's heads)
        return torch.ops.aten._scaled_dot_product_flash_attention(
            query, key, value, dropout_p, is_causal, False, scale=scale)[0]
    bias = attn_mask
    if bias is not None and bias.dtype == torch.bool:
        bias = torch.zeros(bias.shape, dtype=query.dtype).masked_fill(bias.logical_not(), float("-inf"))
    return torch.ops.aten._scaled_dot_product_efficient_attention(
        query, key, value, bias, True, dropout_p, is_causal, scale=scale)[0]


F.dropout = dropout
F.scaled_dot_product_attention = sdpa
mu.is_tracing = lambda tensor=None: False
mu.find_packed_sequence_indices = lambda position_ids: None

# ---- CUDA autocast (bf16) -------------------------------------------------------------------
HALF = {F.linear, torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.bmm, torch.mm,
        torch.addmm, torch.baddbmm}
FP32 = {F.softmax, torch.softmax, torch.Tensor.softmax, F.cross_entropy, F.log_softmax, F.nll_loss,
        torch.rsqrt, torch.pow, torch.Tensor.pow, F.layer_norm}


AC = Autocast(LOW, HALF, FP32)
IN_FORWARD = [False]


def recompute_under_autocast(checkpoint):
    def run_checkpointed(fn, *args):
        def run(*a):
            if IN_FORWARD[0]:
                return fn(*a)
            # the recompute may stop early (non-reentrant checkpoint raises once the block's
            # saved tensors are back): the autocast region is left either way
            try:
                with AC:
                    return fn(*a)
            finally:
                AC.cache.clear()
        return checkpoint(run, *args)
    return run_checkpointed

cfg = AutoConfig.from_pretrained(cfg_path)
tr = Trace()
with FakeTensorMode():
    dtype = torch.float32 if amp else LOW
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa", dtype=dtype)
    if ckpt == "full":
        model.gradient_checkpointing_enable()
        if amp:
            # checkpoint's recompute re-enters the forward's autocast state; the outermost
            # autocast region's exit clears its weight-cast cache, so in backward each block's
            # recompute casts its weights again and releases them with the block
            for m in model.modules():
                if getattr(m, "gradient_checkpointing", False):
                    m._gradient_checkpointing_func = recompute_under_autocast(m._gradient_checkpointing_func)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    with tr:
        tr.mark("load")
        for p in model.parameters():
            tr.track(p)
        for b in model.buffers():
            tr.track(b)
        if inbwd:
            # torchtune OptimizerInBackward: an optimizer per parameter, stepped by its hook
            opts = {}

            def step_and_clear(p):
                tr.optimizer = True
                opts[p].step()
                opts[p].zero_grad()
                tr.optimizer = False

            for p in params:
                opts[p] = torch.optim.AdamW([p], lr=1e-5, foreach=True)
                p.register_post_accumulate_grad_hook(step_and_clear)
        else:
            opt = torch.optim.AdamW(params, lr=1e-5, foreach=True)

        def forward(ids):
            if not chunks:
                return model(input_ids=ids, labels=ids).loss
            # CEWithChunkedOutputLoss over TransformerDecoder.chunked_output
            h = model.model(input_ids=ids, use_cache=False).last_hidden_state
            outputs = [model.lm_head(c) for c in h.tensor_split(chunks, dim=1)]
            del h
            labels = torch.hstack((ids[..., 1:], torch.full((batch, 1), IGNORE_INDEX, dtype=ids.dtype)))
            total_elements = (labels != IGNORE_INDEX).sum()
            labels = [t.reshape(-1) for t in labels.tensor_split(chunks, dim=1)]
            logits = [c.reshape(-1, c.size(-1)) for c in outputs]
            del outputs
            total = 0.0
            for lg, lb in zip(logits, labels):
                total += F.cross_entropy(lg.float(), lb, ignore_index=IGNORE_INDEX, reduction="sum")
            del logits, lg
            return total / total_elements
        for step in range(steps):
            tr.mark(f"step {step} forward")
            ids = torch.randint(100, cfg.vocab_size, (batch, seq))
            if amp:
                IN_FORWARD[0] = True
                with AC:
                    loss = forward(ids)
                AC.cache.clear()
                IN_FORWARD[0] = False
            else:
                loss = forward(ids)
            tr.mark(f"step {step} backward")
            loss.backward()
            del loss, ids
            if not inbwd:
                tr.mark(f"step {step} optimizer")
                tr.optimizer = True
                opt.step()
                tr.optimizer = False
                opt.zero_grad(set_to_none=True)
        tr.mark("end")
with open(out, "w") as f:
    f.write("\n".join(tr.ev) + "\n")
print(out, len(tr.ev), "events")
