#!/usr/bin/env python3
"""Ground truth for traced models: one model file (the tracer's format: model(), inputs(**dims),
optional loss()) measured at given dims, as measure.py measures the transformers families.

    python measure_traced.py MODEL_FILE --at batch=5,height=40,width=40 [--at ...]
        --precision fp32 --trainable all --out reference_traced.json

Per point, under FakeTensorMode on CPU fake tensors with the CUDA dispatch emulation
(dropout's bool mask; SDPA's flash / memory-efficient choice), nothing allocated:
  * peak_bytes: MemTracker's peak over a *second* training step (forward, loss, backward,
    AdamW(foreach).step(), zero_grad(set_to_none)), storages rounded to 512 B as the CUDA
    caching allocator rounds them; peak_gpu_bytes is that less the AdamW `step` scalars,
    which a real GPU run keeps on the CPU (non-fused, non-capturable AdamW);
  * activation_saved_bytes: the distinct storages autograd saves in the forward (parameters
    and buffers excluded; the inputs included), by saved-tensor hooks;
  * infer_peak_bytes: MemTracker's peak over model.eval() + no_grad forward.
The model is built with the tracer's own conventions (its LoRA wrapper, default loss, input
call), imported from src/trace/vramscope_trace.py: what is measured here is independent of
what the tracer records (no dispatch-mode events, no fitting).
"""
import argparse
import importlib.util
import inspect
import json
import math
import os
import sys

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools import mem_tracker as _mt_mod
from torch.distributed._tools.mem_tracker import MemTracker

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "src", "trace"))
import vramscope_trace as T  # noqa: E402


def load(path):
    spec = importlib.util.spec_from_file_location("truth_user_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def peak(mt):
    """The peak over every device, as measure.py reads it."""
    return sum(d.get("Total", 0) for d in mt.get_tracker_snapshot("peak").values())


class _NoHandle:
    def remove(self):
        pass


def checkpointed(module):
    """`module`'s forward under non-reentrant activation checkpointing, as diffusers'
    `enable_gradient_checkpointing` and transformers' `GradientCheckpointingLayer` run a block."""
    inner = module.forward
    sig = inspect.signature(inner)

    def forward(*args, **kwargs):
        if torch.is_grad_enabled():
            # positionally, as diffusers calls its blocks: the checkpoint saves them (and the
            # saved-tensor hooks count them)
            bound = sig.bind(*args, **kwargs)
            if not bound.kwargs:
                return torch.utils.checkpoint.checkpoint(inner, *bound.args, use_reentrant=False)
            return torch.utils.checkpoint.checkpoint(inner, *args, use_reentrant=False, **kwargs)
        return inner(*args, **kwargs)

    module.forward = forward


def measure(user, dims, precision, trainable, blocks=()):
    # MemTracker hooks every parameter's gradient; a frozen one (a LoRA base) has none to hook
    orig_hook, orig_post = torch.Tensor.register_hook, torch.Tensor.register_post_accumulate_grad_hook
    torch.Tensor.register_hook = lambda t, fn: orig_hook(t, fn) if t.requires_grad else _NoHandle()
    torch.Tensor.register_post_accumulate_grad_hook = (
        lambda t, fn: orig_post(t, fn) if t.requires_grad else _NoHandle())
    try:
        return _measure(user, dims, precision, trainable, blocks)
    finally:
        torch.Tensor.register_hook, torch.Tensor.register_post_accumulate_grad_hook = orig_hook, orig_post


def _measure(user, dims, precision, trainable, blocks):
    orig = _mt_mod._WeakRefInfo._calculate_mem_consumed
    _mt_mod._WeakRefInfo._calculate_mem_consumed = lambda self: math.ceil(self.size * self.element_size / 512) * 512
    out = dict(dims=dims)
    try:
        with FakeTensorMode(allow_non_fake_inputs=True), T.cuda_dispatch():
            model, x, _ = T.build(user, dims, precision, trainable)
            amp = T.PRECISIONS[precision][1]
            listed = lambda m: type(m).__name__ in blocks
            for m in model.modules():
                if listed(m) and not any(listed(c) for c in list(m.modules())[1:]):
                    checkpointed(m)
            lossf = getattr(user, "loss", None) or T.default_loss
            params = [p for p in model.parameters() if p.requires_grad]
            out["n_params"] = sum(p.numel() for p in model.parameters())
            out["n_trainable"] = sum(p.numel() for p in params)
            opt = torch.optim.AdamW(params, lr=1e-4, foreach=True)
            excl = {p.untyped_storage()._cdata for p in model.parameters()}
            excl |= {b.untyped_storage()._cdata for b in model.buffers()}
            saved = {}

            def pack(t):
                st = t.untyped_storage()
                if st._cdata not in excl and st._cdata not in saved:
                    saved[st._cdata] = (st.nbytes(), st)
                return t

            model.train()
            for step in range(2):
                mt = MemTracker()
                mt.track_external(model, opt, *T.tensors_of(x))
                with mt:
                    if step == 0:
                        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                            with T.CudaAutocast.region(amp):
                                o = T.forward(model, x)
                    else:
                        with T.CudaAutocast.region(amp):
                            o = T.forward(model, x)
                    loss = lossf(o, x)
                    del o
                    loss.backward()
                    del loss
                    opt.step()
                    opt.zero_grad(set_to_none=True)
                if step == 1:
                    out["peak_bytes"] = peak(mt)
                del mt
            steps = sum(s["step"].untyped_storage().nbytes() for s in opt.state.values())
            out["adamw_step_scalar_bytes"] = steps
            out["peak_gpu_bytes"] = out["peak_bytes"] - sum(
                math.ceil(s["step"].untyped_storage().nbytes() / 512) * 512 for s in opt.state.values())
            out["activation_saved_bytes"] = sum(math.ceil(n / 512) * 512 for n, _ in saved.values())
            saved.clear()
            del opt
            model.eval()
            with torch.no_grad():
                mt = MemTracker()
                mt.track_external(model, *T.tensors_of(x))
                with mt, T.CudaAutocast.region(amp):
                    o = T.forward(model, x)
                    del o
                out["infer_peak_bytes"] = peak(mt)
    finally:
        _mt_mod._WeakRefInfo._calculate_mem_consumed = orig
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_file")
    ap.add_argument("--at", action="append", required=True, help="NAME=V,NAME=V")
    ap.add_argument("--precision", default="fp32", choices=list(T.PRECISIONS))
    ap.add_argument("--trainable", default="all")
    ap.add_argument("--checkpoint", default="", help="CLASS,CLASS: checkpoint every module of these"
                    " classes (innermost: a listed module inside another listed one is not wrapped twice)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    user = load(args.model_file)
    rows = []
    for at in args.at:
        dims = {k: int(v) for k, v in (kv.split("=") for kv in at.split(","))}
        print(f"measuring {dims}", file=sys.stderr)
        blocks = [c for c in args.checkpoint.split(",") if c]
        row = measure(user, dims, args.precision, args.trainable, blocks)
        row.update(model_file=os.path.basename(args.model_file), precision=args.precision,
                   trainable=args.trainable, checkpoint=blocks, torch=torch.__version__)
        rows.append(row)
    with open(args.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
