#!/usr/bin/env python3
"""Saved-for-backward bytes and peak of a training step with PyTorch <= 1.10 softmax /
log_softmax autograd semantics (node kept INPUT and OUTPUT:
`_softmax_backward_data(grad, result, dim, self)`, changed by pytorch/pytorch#65242)
versus current PyTorch (node keeps only the output).

Uses the ground-truth harness (`measure_families.py` beside it: the shared `measure.py` with
this folder's additions) unmodified, imported as a module; only its CONFIG_DIR is pointed
at this folder's configs/ and a mixtral_tiny config spec is added to its CONFIG_SPECS in memory.
reference_V.json holds its results (torch 2.15.0, transformers 5.25.0, CPU, cuda-emu-fake).

Usage (from this folder): python measure_softmax_before_1_11.py [--seq 128] [--only SUBSTR] [--out results.json]
"""
import argparse
import collections
import contextlib
import json
import os
import shutil
import tempfile
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import measure_families as M  # noqa: E402  (the shared harness, with this folder's additions)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensor  # noqa: E402
from transformers import MixtralConfig  # noqa: E402

# the harness (re)writes its configs: let it write a scratch copy, not this folder's
M.CONFIG_DIR = tempfile.mkdtemp(prefix="truth-configs-")
for _f in os.listdir(os.path.join(HERE, "configs")):
    shutil.copy(os.path.join(HERE, "configs", _f), M.CONFIG_DIR)
M.CONFIG_SPECS["mixtral_tiny"] = (MixtralConfig, dict(
    architectures=["MixtralForCausalLM"], vocab_size=1000, hidden_size=256, intermediate_size=688,
    num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=1024,
    num_local_experts=4, num_experts_per_tok=2, sliding_window=None))

# --------------------------------------------------------------------------------------
# Old (<= 1.10) softmax / log_softmax autograd: save (input passed to _softmax, result)
# --------------------------------------------------------------------------------------
CALLS = []                 # one entry per patched call (while logging is on)
STATE = dict(log=False, in_apply=None, step=0)
REDUCED = (torch.float16, torch.bfloat16)

# "on CUDA": the harness emulates CUDA on CPU-device fake tensors, so the half_to_float
# decision (taken in ATen only for input.is_cuda()) is made as on CUDA.
EMULATE_CUDA = True


def _is_cuda_like(x):
    return x.is_cuda or (EMULATE_CUDA and isinstance(x, FakeTensor))


def _sm_fwd(x, dim, half_to_float, log):
    if not x.is_cuda and half_to_float and not isinstance(x, FakeTensor):
        # real CPU tensors have no half_to_float kernel: compute the same values
        f = torch._log_softmax if log else torch._softmax
        return f(x.float(), dim, False)
    return (torch._log_softmax if log else torch._softmax)(x, dim, half_to_float)


class OldSoftmaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, half_to_float):
        out = _sm_fwd(x, dim, half_to_float, log=False)
        ctx.dim = dim
        ctx.save_for_backward(x, out)          # <= 1.10: self AND result
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        return torch._softmax_backward_data(grad, out, ctx.dim, x.dtype), None, None


class OldLogSoftmaxFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, dim, half_to_float):
        out = _sm_fwd(x, dim, half_to_float, log=True)
        ctx.dim = dim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        return torch._log_softmax_backward_data(grad, out, ctx.dim, x.dtype), None, None


def _legacy_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def _autocast_dtype(x, dtype):
    """CUDA autocast policy fp32_set_opt_dtype for softmax/log_softmax: no explicit dtype and
    a reduced-precision input -> run with dtype=float32. (The harness uses no autocast.)"""
    dev = "cuda" if _is_cuda_like(x) else x.device.type
    try:
        on = torch.is_autocast_enabled(dev)
    except Exception:
        on = False
    if on and dtype is None and x.dtype in REDUCED:
        return torch.float32
    return dtype


def _old_softmax_impl(x, dim, dtype, log, entry):
    if dim is None:
        dim = _legacy_dim(x.dim())
    dtype = _autocast_dtype(x, dtype)
    orig = ORIG["log_softmax" if log else "softmax"]
    need_grad = torch.is_grad_enabled() and x.requires_grad
    if not need_grad:
        return orig(x, dim, dtype=dtype)
    # at::softmax / at::log_softmax
    if _is_cuda_like(x) and x.dtype == torch.float16 and dtype == torch.float32:
        kept, h2f, converted = x, True, False
    else:
        kept = x.to(dtype) if dtype is not None else x
        h2f, converted = False, kept is not x and (kept.untyped_storage()._cdata != x.untyped_storage()._cdata)
    fn = OldLogSoftmaxFn if log else OldSoftmaxFn
    rec = None
    if STATE["log"]:
        rec = dict(step=STATE["step"], entry=entry, op="_log_softmax" if log else "_softmax", dim=dim,
                   input_shape=list(x.shape), input_dtype=str(x.dtype).replace("torch.", ""),
                   dtype_arg=str(dtype).replace("torch.", "") if dtype is not None else None,
                   half_to_float=h2f, kept_input_is_converted_copy=converted,
                   kept_input_shape=list(kept.shape), kept_input_dtype=str(kept.dtype).replace("torch.", ""),
                   kept_input_numel=kept.numel(), kept_input_storage_nbytes=kept.untyped_storage().nbytes(),
                   kept_key=kept.untyped_storage()._cdata, module=M_where())
        CALLS.append(rec)
    STATE["in_apply"] = rec
    try:
        out = fn.apply(kept, dim, h2f)
    finally:
        STATE["in_apply"] = None
    if rec is not None:
        rec["output_dtype"] = str(out.dtype).replace("torch.", "")
        rec["out_key"] = out.untyped_storage()._cdata
    return out


_CUR_REC = [None]


def M_where():
    r = _CUR_REC[0]
    return r.where() if r is not None else None


def p_F_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _old_softmax_impl(input, dim, dtype, False, "F.softmax")


def p_F_log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _old_softmax_impl(input, dim, dtype, True, "F.log_softmax")


def p_torch_softmax(input, dim, dtype=None, **kw):
    dtype = kw.get("dtype", dtype)
    return _old_softmax_impl(input, dim, dtype, False, "torch.softmax")


def p_torch_log_softmax(input, dim, dtype=None, **kw):
    dtype = kw.get("dtype", dtype)
    return _old_softmax_impl(input, dim, dtype, True, "torch.log_softmax")


def p_T_softmax(self, dim, dtype=None):
    return _old_softmax_impl(self, dim, dtype, False, "Tensor.softmax")


def p_T_log_softmax(self, dim, dtype=None):
    return _old_softmax_impl(self, dim, dtype, True, "Tensor.log_softmax")


def p_cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                    reduction="mean", label_smoothing=0.0):
    """ATen cross_entropy_loss (class-index targets, no label smoothing):
    nll_loss_nd(log_softmax(self, class_dim, self.scalar_type()), target, weight, reduction, ignore_index)."""
    if size_average is not None or reduce is not None:
        reduction = torch.nn._reduction.legacy_get_string(size_average, reduce)
    if label_smoothing > 0.0 or target.is_floating_point():
        CALLS.append(dict(step=STATE["step"], entry="F.cross_entropy", note="fallback to original (not patched)"))
        return ORIG["cross_entropy"](input, target, weight, None, ignore_index, None, reduction, label_smoothing)
    # CUDA autocast: cross_entropy_loss is an fp32-policy op (inputs cast to fp32 first)
    dev = "cuda" if _is_cuda_like(input) else input.device.type
    try:
        if torch.is_autocast_enabled(dev) and input.dtype in REDUCED:
            input = input.float()
    except Exception:
        pass
    class_dim = 0 if input.dim() == 1 else 1
    logp = _old_softmax_impl(input, class_dim, input.dtype, True, "F.cross_entropy->log_softmax")
    return F.nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)


ORIG = {}


@contextlib.contextmanager
def old_softmax_semantics():
    ORIG.update(softmax=torch.softmax, log_softmax=torch.log_softmax, cross_entropy=F.cross_entropy,
                F_softmax=F.softmax, F_log_softmax=F.log_softmax, T_softmax=torch.Tensor.softmax,
                T_log_softmax=torch.Tensor.log_softmax)
    F.softmax, F.log_softmax = p_F_softmax, p_F_log_softmax
    torch.softmax, torch.log_softmax = p_torch_softmax, p_torch_log_softmax
    torch.Tensor.softmax, torch.Tensor.log_softmax = p_T_softmax, p_T_log_softmax
    F.cross_entropy = p_cross_entropy
    try:
        yield
    finally:
        F.softmax, F.log_softmax = ORIG["F_softmax"], ORIG["F_log_softmax"]
        torch.softmax, torch.log_softmax = ORIG["softmax"], ORIG["log_softmax"]
        torch.Tensor.softmax, torch.Tensor.log_softmax = ORIG["T_softmax"], ORIG["T_log_softmax"]
        F.cross_entropy = ORIG["cross_entropy"]


# --------------------------------------------------------------------------------------
# Recorder subclass: which storages were saved by our Functions vs by other ops
# --------------------------------------------------------------------------------------
class LoggingRecorder(M.SavedRecorder):
    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.other_savers = collections.Counter()   # storage -> # packs by ops other than ours
        self.ours = collections.Counter()
        _CUR_REC[0] = self
        STATE["log"] = True
        STATE["step"] += 1

    def pack(self, t):
        k = t.untyped_storage()._cdata
        if STATE["in_apply"] is not None:
            self.ours[k] += 1
        else:
            self.other_savers[k] += 1
        return super().pack(t)

    def summary(self, n_layers):
        s = super().summary(n_layers)
        STATE["log"] = False
        _CUR_REC[0] = None
        step_calls = [c for c in CALLS if c.get("step") == STATE["step"] and "kept_key" in c]
        out_keys = collections.Counter(c["out_key"] for c in step_calls)
        kin_keys = collections.Counter(c["kept_key"] for c in step_calls)
        for c in step_calls:
            k = c["kept_key"]
            c["kept_input_also_saved_by_other_op"] = self.other_savers.get(k, 0) > 0
            c["kept_input_is_another_softmax_output"] = k in out_keys
            c["kept_input_shared_with_other_softmax_input"] = kin_keys[k] > 1
            rec = self.records.get(k)
            c["kept_input_producer_op"] = rec["op"] if rec else None
            c["kept_input_producer_module"] = rec["module"] if rec else None
            c["output_also_saved_by_other_op"] = self.other_savers.get(c["out_key"], 0) > 0
        # extra bytes attributable to the kept inputs: storages that only our Functions saved as input
        extra = {}
        for c in step_calls:
            k = c["kept_key"]
            if not c["kept_input_also_saved_by_other_op"] and not c["kept_input_is_another_softmax_output"]:
                extra[k] = c["kept_input_storage_nbytes"]
        s["oldsm_extra_kept_input_bytes_from_log"] = sum(extra.values())
        return s

    def close(self):
        super().close()


# --------------------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------------------
BE = "cuda-emu-fake"


def cases(b, s):
    C = M.C
    t = f"b{b}s{s}"
    return [
        C(f"gpt2_tiny-fp32-eager-{t}", "gpt2_tiny", b, s, "float32", "eager", backend=BE),
        C(f"gpt2_tiny-bf16-eager-{t}", "gpt2_tiny", b, s, "bfloat16", "eager", backend=BE),
        C(f"bert_tiny-fp32-eager-{t}", "bert_tiny", b, s, "float32", "eager", backend=BE),
        C(f"bert_tiny-bf16-eager-{t}", "bert_tiny", b, s, "bfloat16", "eager", backend=BE),
        C(f"llama_tiny-fp32-eager-{t}", "llama_tiny", b, s, "float32", "eager", backend=BE),
        C(f"llama_tiny-bf16-eager-{t}", "llama_tiny", b, s, "bfloat16", "eager", backend=BE),
        C(f"llama_tiny-fp16-eager-{t}", "llama_tiny", b, s, "float16", "eager", backend=BE),
        C(f"llama_tiny-bf16-sdpa-{t}", "llama_tiny", b, s, "bfloat16", "sdpa", backend=BE),
        C(f"mixtral_tiny-bf16-eager-{t}", "mixtral_tiny", b, s, "bfloat16", "eager", backend=BE),
    ]


def cfg_summary(name):
    cfg = M.load_config(name)
    d = cfg.to_dict()
    keys = ["model_type", "vocab_size", "hidden_size", "n_embd", "num_hidden_layers", "n_layer",
            "num_attention_heads", "n_head", "num_key_value_heads", "head_dim", "intermediate_size", "n_inner",
            "num_local_experts", "num_experts_per_tok", "tie_word_embeddings",
            "attn_pdrop", "resid_pdrop", "embd_pdrop", "hidden_dropout_prob", "attention_probs_dropout_prob",
            "attention_dropout", "max_position_embeddings", "n_positions"]
    return {k: d[k] for k in keys if k in d}


KEEP = ("case", "config_file", "batch", "seq", "dtype", "attn", "backend", "n_params", "param_bytes",
        "activation_saved_bytes", "activation_by_dtype", "activation_by_phase", "activation_n_storages",
        "peak_bytes", "peak_bytes_first_step", "grad_bytes", "optimizer_state_bytes", "sdpa_kernels",
        "seconds", "torch_version", "transformers_version", "oldsm_extra_kept_input_bytes_from_log",
        "activation_by_op", "peak_breakdown")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=None)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    M.write_configs()
    M.SavedRecorder = LoggingRecorder   # run_case looks the class up by global name
    cs = cases(args.batch, args.seq)
    if args.only:
        cs = [c for c in cs if args.only in c["case"]]
    rows = []
    t_all = time.time()
    for c in cs:
        print(f"=== {c['case']}", flush=True)
        row = dict(case=c["case"], config=c["config"], config_values=cfg_summary(c["config"]),
                   batch=c["batch"], seq=c["seq"], dtype=c["dtype"], attn=c["attn"], backend=c["backend"])
        try:
            CALLS.clear()
            cur = M.run_case(c)
            cur_calls = list(CALLS)  # (none: not patched)
            CALLS.clear()
            with old_softmax_semantics():
                old = M.run_case(c)
            calls = [dict((k, v) for k, v in x.items() if k not in ("kept_key", "out_key")) for x in CALLS
                     if x.get("step") == STATE["step"]]
            n_calls_total = collections.Counter(x["entry"] for x in CALLS)
            row["current"] = {k: cur.get(k) for k in KEEP if k in cur}
            row["old_softmax"] = {k: old.get(k) for k in KEEP if k in old}
            row["diff_activation_saved_bytes"] = old["activation_saved_bytes"] - cur["activation_saved_bytes"]
            row["diff_peak_bytes"] = old["peak_bytes"] - cur["peak_bytes"]
            row["diff_peak_bytes_first_step"] = old["peak_bytes_first_step"] - cur["peak_bytes_first_step"]
            row["extra_kept_input_bytes_from_log"] = old.get("oldsm_extra_kept_input_bytes_from_log")
            row["patched_calls_first_step"] = calls
            row["patched_calls_all_steps_by_entry"] = dict(n_calls_total)
            # compact grouping of the extra kept tensors
            grp = collections.Counter()
            for x in calls:
                if "kept_input_shape" not in x:
                    continue
                new = not (x["kept_input_also_saved_by_other_op"] or x["kept_input_is_another_softmax_output"])
                key = (x["entry"], x["op"], tuple(x["input_shape"]), x["input_dtype"], x["dtype_arg"],
                       x["half_to_float"], tuple(x["kept_input_shape"]), x["kept_input_dtype"],
                       x["kept_input_is_converted_copy"], new, x["kept_input_storage_nbytes"],
                       x["kept_input_producer_op"])
                grp[key] += 1
            row["kept_input_groups"] = [dict(entry=k[0], op=k[1], input_shape=list(k[2]), input_dtype=k[3],
                                             dtype_arg=k[4], half_to_float=k[5], kept_shape=list(k[6]),
                                             kept_dtype=k[7], kept_is_converted_copy=k[8], kept_is_new=k[9],
                                             kept_storage_nbytes_each=k[10], kept_producer_op=k[11], count=n)
                                        for k, n in grp.items()]
            print(f"    act cur={cur['activation_saved_bytes']:,} old={old['activation_saved_bytes']:,} "
                  f"diff={row['diff_activation_saved_bytes']:,} (log says {row['extra_kept_input_bytes_from_log']:,}); "
                  f"peak cur={cur['peak_bytes']:,} old={old['peak_bytes']:,} diff={row['diff_peak_bytes']:,} "
                  f"({cur['seconds']}+{old['seconds']}s)", flush=True)
            for g in row["kept_input_groups"]:
                print(f"      {g['count']}x {g['entry']} in={g['input_shape']} {g['input_dtype']} dtype={g['dtype_arg']} "
                      f"h2f={g['half_to_float']} kept={g['kept_shape']} {g['kept_dtype']} "
                      f"conv={g['kept_is_converted_copy']} new={g['kept_is_new']} "
                      f"{g['kept_storage_nbytes_each']}B producer={g['kept_producer_op']}", flush=True)
        except Exception as e:
            traceback.print_exc()
            row["error"] = f"{type(e).__name__}: {e}"
        rows.append(row)
        with open(args.out, "w") as f:
            json.dump(dict(rows=rows, command=" ".join([sys.executable] + sys.argv),
                           torch=torch.__version__, harness="/work/shared/truth/measure.py (imported, unmodified)",
                           seconds=round(time.time() - t_all, 1)), f, indent=1)
    print(f"wrote {args.out} ({time.time() - t_all:.0f}s)")


if __name__ == "__main__":
    main()
