#!/usr/bin/env python3
"""vramscope's tracer: records what one training step and one inference forward of a PyTorch
model allocate, without a GPU and without weights, for `vramscope estimate --model FILE`.

Write a model file (any name) with:

    def model():                       # built under fake tensors: no weights are allocated
        return MyNet(...)
    def inputs(batch, height, width):  # the named dims; returns a tensor, a tuple or a dict
        return torch.randn(batch, 3, height, width)
    def loss(output, inputs):          # optional; default: output.loss, else the output's mean
        return output.float().mean()

then run (only `torch` is needed, plus what the model file imports):

    python vramscope_trace.py my_model.py --dim batch=1,2,3 --dim height=64,96,128 \\
        --dim width=64,96,128 --precision bf16 --trainable all --out my_model.vstrace.json

Every combination of the dims' values is traced (a grid). vramscope fits each tensor dimension
as a multilinear function of the dims on the grid's first two values of each dim, checks it at
every other point, and says where it does not hold. Trace 3 values of a dim to check it.

What runs, per grid point, under `FakeTensorMode` on CPU fake tensors with the CUDA dispatch
decisions that change memory (dropout saves a bool mask; SDPA takes flash for half precision
without a mask, else the memory-efficient kernel):
  * train: model.train(); out = model(inputs); loss = loss(out); del out; loss.backward()
  * infer: model.eval(); with torch.no_grad(): model(inputs)
Recorded: the parameters (name, shape, dtype, trained or not), every storage an aten op makes
(its shape, element size, op and module) and when it is freed, which storages autograd saves,
and which storage becomes which parameter's gradient. The optimizer is not run: vramscope adds
its states from the parameter list for the optimizer a user picks.

Precisions: fp32, bf16, fp16 (the whole model and its inputs in that dtype); bf16-amp and
fp16-amp: `torch.autocast("cuda", dtype)` around the forward (CUDA's op lists, emulated on CPU),
the weights that train in fp32, the frozen ones (a LoRA base) and the inputs in the autocast
dtype, as diffusers' and PEFT's training scripts hold them (`weight_dtype`).
Trainable: all | lora:NAME,NAME[:r=16,alpha=32] (PEFT-style adapters on the nn.Linear modules
whose names end with NAME) | only:PREFIX,PREFIX (train those modules, freeze the rest).

For `vramscope estimate --checkpoint full`, the trace also records each module call (its class
and its events), which module saved each tensor, when a tensor would be freed if nothing saved
it (a second forward whose saves are dropped), and when backward first reads each save; the
blocks that checkpointing wraps are the classes `--blocks` names, else the model's
`_no_split_modules` (diffusers and transformers name their blocks there).
"""
import argparse
import contextlib
import functools
import gc
import importlib.util
import inspect
import itertools
import json
import math
import os
import sys
import weakref

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

FORMAT = "vramscope-trace"
VERSION = 1
# a precision: (the weights' dtype, the autocast dtype or None)
PRECISIONS = {"fp32": (torch.float32, None), "bf16": (torch.bfloat16, None), "fp16": (torch.float16, None),
              "bf16-amp": (torch.float32, torch.bfloat16), "fp16-amp": (torch.float32, torch.float16)}


class Recorder(TorchDispatchMode):
    """Every storage an aten op makes, in order, and when it dies."""

    def __init__(self, trace):
        super().__init__()
        self.t = trace

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        outs = out if isinstance(out, (list, tuple)) else (out,)
        for o in outs:
            if isinstance(o, torch.Tensor):
                self.t.made(o, func.overloadpacket.__name__)
        return out


class Trace:
    """One grid point's events."""

    def __init__(self, model, strings):
        self.strings = strings
        self.known = set()          # parameter and buffer storages
        for p in itertools.chain(model.parameters(), model.buffers()):
            self.known.add(p.untyped_storage()._cdata)
        self.live = {}              # storage pointer -> storage id
        self.refs = {}              # storage id -> weakref (kept so the callback runs)
        self.events = []            # (kind, sid, shape, itemsize, op, module, phase)
        self.saved = set()
        self.n = 0
        self.stack = []             # (module id, index of its first event)
        self.names = {id(m): n for n, m in model.named_modules()}
        self.modules = list(model.modules())
        self.phase = "train"
        self.calls = []             # (module, class, first event, end event, input storages)
        self.savers = {}            # storage id -> the modules whose ops saved it (train)
        self.unpacked = {}          # storage id -> event index when backward first read it

    def s(self, text):
        if text not in self.strings:
            self.strings[text] = len(self.strings)
        return self.strings[text]

    def module(self):
        if self.phase == "backward" or not self.stack:
            return ""
        return self.names.get(self.stack[-1][0], "")

    def made(self, t, op):
        st = t.untyped_storage()
        k = st._cdata
        if k in self.known or k in self.live:
            return
        sid = self.n
        self.n += 1
        self.live[k] = sid
        nbytes = st.nbytes()
        if nbytes == t.numel() * t.element_size():
            shape, item = list(t.shape), t.element_size()
        else:
            shape, item = [nbytes], 1
        self.events.append(("a", sid, shape, item, self.s(op), self.s(self.module()), self.phase))

        def dead(_ref, k=k, sid=sid):
            if self.live.get(k) == sid:
                del self.live[k]
            self.events.append(("f", sid, None, 0, 0, 0, self.phase))

        self.refs[sid] = weakref.ref(st, dead)

    def pack(self, t):
        sid = self.live.get(t.untyped_storage()._cdata)
        if sid is not None:
            self.saved.add(sid)
            if self.phase == "train":
                self.savers.setdefault(sid, set()).add(self.s(self.module()))
        return t

    def unpack(self, t):
        sid = self.live.get(t.untyped_storage()._cdata)
        if sid is not None and self.phase == "backward":
            self.unpacked.setdefault(sid, len(self.events))
        return t

    def sid(self, t):
        return self.live.get(t.untyped_storage()._cdata)

    @contextlib.contextmanager
    def hooks(self):
        def pre(mod, args, kwargs):
            ins = [self.sid(t) for t in tensors_of(list(args) + list(kwargs.values()))]
            self.stack.append((id(mod), len(self.events), [i for i in ins if i is not None]))

        def post(mod, args, out):
            while self.stack:
                key, first, ins = self.stack.pop()
                if key == id(mod):
                    if self.phase == "train" and key in self.names:
                        self.calls.append((self.s(self.names[key]), self.s(type(mod).__name__),
                                           first, len(self.events), ins))
                    break

        hs = [h for m in self.modules for h in (m.register_forward_pre_hook(pre, with_kwargs=True),
                                                 m.register_forward_hook(post))]
        try:
            yield
        finally:
            for h in hs:
                h.remove()


@contextlib.contextmanager
def cuda_dispatch():
    """The CPU-vs-CUDA dispatch decisions that change what is saved, taken as an sm80+ GPU
    takes them (the real aten kernels with their real autograd formulas)."""
    orig_dropout, orig_sdpa = F.dropout, F.scaled_dot_product_attention

    def dropout(input, p=0.5, training=True, inplace=False):
        if training and 0.0 < p < 1.0 and input.numel() > 0:
            out, _mask = torch.native_dropout(input, p, True)
            if inplace:
                with torch.no_grad():
                    input.copy_(out)
                return input
            return out
        return orig_dropout(input, p, training, inplace)

    def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        q, k, v = query, key, value
        if CudaAutocast.active():
            # SDPA is on autocast's lower-precision list: the kernel is chosen on the cast inputs
            low = CudaAutocast.lower_dtype()
            q, k, v = (CudaAutocast.cast(t, low) for t in (q, k, v))
            if attn_mask is not None and attn_mask.is_floating_point():
                attn_mask = CudaAutocast.cast(attn_mask, low)
        hd = q.shape[-1]
        half = q.dtype in (torch.float16, torch.bfloat16)
        grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
        if q.dim() == 4 and half and attn_mask is None and hd <= 256 and hd % 8 == 0 and v.shape[-1] == hd:
            return torch.ops.aten._scaled_dot_product_flash_attention(
                q, k, v, dropout_p, is_causal, False, scale=scale)[0]
        if q.dim() == 4 and hd % (8 if half else 4) == 0:
            bias = attn_mask
            if bias is not None and bias.dtype == torch.bool:
                bias = torch.zeros(bias.shape, dtype=q.dtype).masked_fill(bias.logical_not(), float("-inf"))
            return torch.ops.aten._scaled_dot_product_efficient_attention(
                q, k, v, bias, grad, dropout_p, is_causal, scale=scale)[0]
        return orig_sdpa(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                         scale=scale, enable_gqa=enable_gqa)

    F.dropout, F.scaled_dot_product_attention = dropout, sdpa
    try:
        yield
    finally:
        F.dropout, F.scaled_dot_product_attention = orig_dropout, orig_sdpa


# CUDA autocast's op lists (ATen/autocast_mode.h: AT_FORALL_LOWER_PRECISION_FP, AT_FORALL_FP32,
# AT_FORALL_FP32_SET_OPT_DTYPE, AT_FORALL_PROMOTE), overload names as the dispatcher has them
AMP_LOWER = """_convolution _convolution.deprecated conv1d conv2d conv3d conv_tbc conv_transpose1d
conv_transpose2d.input conv_transpose3d.input convolution prelu addmm addmv addr matmul einsum mm mv
linalg_vecdot linear addbmm baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell
_thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell
_scaled_dot_product_flash_attention scaled_dot_product_attention""".split()
AMP_FP32 = """acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan
pow.Tensor_Scalar pow.Tensor_Tensor pow.Scalar softplus layer_norm native_layer_norm rms_norm
group_norm frobenius_norm.dim nuclear_norm nuclear_norm.dim cosine_similarity poisson_nll_loss
cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss kl_div l1_loss smooth_l1_loss
huber_loss mse_loss margin_ranking_loss multilabel_margin_loss soft_margin_loss
triplet_margin_loss multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm
logsumexp upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d
_upsample_nearest_exact2d upsample_nearest3d _upsample_nearest_exact3d upsample_linear1d
upsample_bilinear2d _upsample_bilinear2d_aa upsample_trilinear3d upsample_bicubic2d
_upsample_bicubic2d_aa""".split()
AMP_FP32_OPT = """prod prod.dim_int softmax.int log_softmax.int cumprod cumsum linalg_vector_norm
linalg_matrix_norm linalg_matrix_norm.str_ord sum sum.dim_IntList""".split()
AMP_PROMOTE = "addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add".split()


class CudaAutocast:
    """CUDA autocast on CPU fake tensors: CUDA's op lists and casts, registered as the
    AutocastCPU kernels (CPU autocast's own kernels fall through), so the casts sit above
    autograd as on a GPU and the backward keeps the cast copies. fp32 leaf parameters that train
    are cast once per autocast region (the cast cache), as `cached_cast` does."""

    lib = None
    dtype = None
    cache = {}

    @classmethod
    def install(cls):
        if cls.lib is not None:
            return
        cls.lib = torch.library.Library("aten", "IMPL")
        ours = set(AMP_LOWER + AMP_FP32 + AMP_FP32_OPT + AMP_PROMOTE)
        for name in torch._C._dispatch_get_all_op_names():
            short = name.removeprefix("aten::")
            if name.startswith("aten::") and short not in ours and \
                    torch._C._dispatch_has_kernel_for_dispatch_key(name, "AutocastCPU"):
                cls.lib.impl(short, torch.library.fallthrough_kernel, "AutocastCPU")
        for names, policy in ((AMP_LOWER, cls.lower), (AMP_FP32, cls.fp32),
                              (AMP_FP32_OPT, cls.fp32_opt), (AMP_PROMOTE, cls.promote)):
            for short in names:
                base, _, ov = short.partition(".")
                packet = getattr(torch.ops.aten, base, None)
                op = getattr(packet, ov or "default", None) if packet is not None else None
                if op is not None:
                    cls.lib.impl(short, policy(op), "AutocastCPU")

    @classmethod
    def active(cls):
        """Inside an autocast region (or a checkpoint's recompute, which restores one)."""
        return cls.lib is not None and torch.is_autocast_enabled("cpu")

    @staticmethod
    def lower_dtype():
        return torch.get_autocast_dtype("cpu")

    @staticmethod
    def eligible(t):
        return isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != torch.float64

    @classmethod
    def cast(cls, t, dtype):
        if not cls.eligible(t) or t.dtype == dtype:
            return t
        # the cast cache lives for the region (a recompute's casts are not cached)
        cacheable = (cls.dtype is not None and dtype == cls.dtype and t.dtype == torch.float32
                     and t.requires_grad and t.is_leaf and not t._is_view())
        if not cacheable:
            return t.to(dtype)
        hit = cls.cache.get(id(t))
        if hit is None or hit[0]() is not t:
            hit = (weakref.ref(t), t.to(dtype))
            cls.cache[id(t)] = hit
        return hit[1]

    @classmethod
    def run(cls, op, dtype_of, args, kwargs):
        from torch.utils._pytree import tree_flatten, tree_map_only
        ks = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
        with torch._C._ExcludeDispatchKeyGuard(ks):
            dt = dtype_of(tree_flatten((args, kwargs))[0])
            if dt is not None:
                args, kwargs = tree_map_only(torch.Tensor, lambda t: cls.cast(t, dt), (args, kwargs))
            return op(*args, **kwargs)

    @classmethod
    def lower(cls, op):
        return lambda *a, **k: cls.run(op, lambda _: cls.lower_dtype(), a, k)

    @classmethod
    def fp32(cls, op):
        return lambda *a, **k: cls.run(op, lambda _: torch.float32, a, k)

    @classmethod
    def promote(cls, op):
        def widest(flat):
            ts = [t for t in flat if cls.eligible(t)]
            return functools.reduce(torch.promote_types, [t.dtype for t in ts]) if ts else None
        return lambda *a, **k: cls.run(op, widest, a, k)

    @classmethod
    def fp32_opt(cls, op):
        """Runs in fp32 (its `dtype` argument set) when the first argument is eligible."""
        def kernel(*a, **k):
            ks = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
            with torch._C._ExcludeDispatchKeyGuard(ks):
                if a and cls.eligible(a[0]) and k.get("dtype") is None:
                    k = dict(k, dtype=torch.float32)
                return op(*a, **k)
        return kernel

    @classmethod
    @contextlib.contextmanager
    def region(cls, dtype):
        """`with torch.autocast("cuda", dtype)`, on CPU fake tensors."""
        if dtype is None:
            yield
            return
        cls.install()
        cls.dtype, cls.cache = dtype, {}
        try:
            with torch.autocast("cpu", dtype=dtype):
                yield
        finally:
            cls.cache, cls.dtype = {}, None


class LoraLinear(nn.Module):
    """PEFT's LoRA forward on an nn.Linear: base(x) + B(A(dropout(x))) * alpha / r."""

    def __init__(self, base, r, alpha):
        super().__init__()
        self.base_layer = base
        dt = base.weight.dtype
        self.lora_A = nn.Linear(base.in_features, r, bias=False, dtype=dt)
        self.lora_B = nn.Linear(r, base.out_features, bias=False, dtype=dt)
        self.scaling = alpha / r

    def forward(self, x):
        result = self.base_layer(x)
        return result + self.lora_B(self.lora_A(x)) * self.scaling


def apply_trainable(model, spec):
    """Sets requires_grad (and wraps LoRA targets) as `spec` says; returns a description."""
    kind, _, rest = spec.partition(":")
    if kind == "all":
        return "all"
    if kind == "only":
        prefixes = [p for p in rest.split(",") if p]
        for name, p in model.named_parameters():
            p.requires_grad_(any(name == x or name.startswith(x + ".") for x in prefixes))
        return spec
    if kind == "lora":
        targets, _, opts = rest.partition(":")
        kw = dict(r=16, alpha=32)
        for o in filter(None, opts.split(",")):
            key, _, val = o.partition("=")
            kw[key] = int(val)
        names = [t for t in targets.split(",") if t]
        for p in model.parameters():
            p.requires_grad_(False)
        wrapped = 0
        for name, mod in list(model.named_modules()):
            for cname, child in list(mod.named_children()):
                full = f"{name}.{cname}" if name else cname
                if isinstance(child, nn.Linear) and any(full == t or full.endswith("." + t) for t in names):
                    setattr(mod, cname, LoraLinear(child, kw["r"], kw["alpha"]))
                    wrapped += 1
        if wrapped == 0:
            sys.exit(f"error: --trainable {spec}: no nn.Linear module's name ends with {names}")
        return f"lora:{','.join(names)}:r={kw['r']},alpha={kw['alpha']}"
    sys.exit(f"error: --trainable {spec}: expected all, lora:NAMES[:r=R,alpha=A] or only:PREFIXES")


def call(fn, dims):
    want = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in dims.items() if k in want})


def forward(model, x):
    if isinstance(x, dict):
        return model(**x)
    if isinstance(x, (list, tuple)):
        return model(*x)
    return model(x)


def default_loss(out, _inputs):
    loss = getattr(out, "loss", None)
    if isinstance(out, dict):
        loss = out.get("loss")
    if loss is None:
        t = out
        while isinstance(t, (list, tuple)) or (isinstance(t, dict) and t):
            t = t[0] if isinstance(t, (list, tuple)) else next(iter(t.values()))
        if not isinstance(t, torch.Tensor):
            t = getattr(out, "sample", None) if hasattr(out, "sample") else out[0]
        loss = t.mean()
    return loss


def tensors_of(x):
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in tensors_of(v)]
    return []


def build(user, dims, precision, trainable):
    """The model, its trainable set and its inputs, as a training script holds them in
    `precision` (under autocast: the weights that train in fp32, the rest and the inputs in the
    autocast dtype)."""
    weights, amp = PRECISIONS[precision]
    old = torch.get_default_dtype()
    torch.set_default_dtype(weights)
    try:
        model = user.model()
        desc = apply_trainable(model, trainable)
        if amp is not None:
            with torch.no_grad():
                for p in model.parameters():
                    if not p.requires_grad and p.is_floating_point():
                        p.data = p.data.to(amp)
        torch.set_default_dtype(amp or weights)
        x = call(user.inputs, dims)
    finally:
        torch.set_default_dtype(old)
    return model, x, desc


def blocks_of(model, names):
    """The block classes checkpointing wraps: `names`, else the model's `_no_split_modules`."""
    want = [n for n in (names or "").split(",") if n] or list(getattr(model, "_no_split_modules", None) or [])
    present = {type(m).__name__ for m in model.modules()}
    missing = [n for n in names.split(",") if n and n not in present] if names else []
    if missing:
        sys.exit(f"error: --blocks: the model has no module of class {', '.join(missing)}")
    return [n for n in want if n in present]


def start_trace(model, x, strings):
    """A trace of `model` whose first events are its inputs, made before the step."""
    tr = Trace(model, strings)
    tr.phase = "input"
    for t in tensors_of(x):
        tr.made(t, "input")
    return tr


def train_step(model, x, lossf, tr, amp):
    """The recorded training step; returns which storage became which parameter's gradient."""
    model.train()
    tr.phase = "train"
    with tr.hooks(), Recorder(tr), torch.autograd.graph.saved_tensors_hooks(tr.pack, tr.unpack):
        with CudaAutocast.region(amp):
            out = forward(model, x)
        loss = lossf(out, x)
        del out
        tr.phase = "backward"
        loss.backward()
        grads = {}
        for i, (_, p) in enumerate(model.named_parameters()):
            if p.grad is not None and tr.sid(p.grad) is not None:
                grads[tr.sid(p.grad)] = i
        tr.phase = "end"
        del loss
        for p in model.parameters():
            p.grad = None
        gc.collect()
    return grads


def natural_frees(model, x, lossf, tr, amp, strings):
    """When each storage autograd saved would be freed if nothing saved it: the forward run
    again with every save dropped, its frees placed after the same allocation in `tr`."""
    model.train()
    sh = start_trace(model, x, strings)
    sh.phase = "train"
    with sh.hooks(), Recorder(sh), torch.autograd.graph.saved_tensors_hooks(lambda t: None, lambda _: None):
        with CudaAutocast.region(amp):
            out = forward(model, x)
        loss = lossf(out, x)
        del out, loss
        gc.collect()
    made = [e[1] for e in tr.events if e[0] == "a" and e[6] == "train"]
    at = [i for i, e in enumerate(tr.events) if e[0] == "a" and e[6] == "train"]
    shadow = [e for e in sh.events if e[6] == "train"]
    if sum(e[0] == "a" for e in shadow) != len(made):
        print("warning: the forward ran differently with its saves dropped: no checkpointing", file=sys.stderr)
        return {}
    order = {}          # shadow storage id -> its allocation's ordinal
    natural, n = {}, 0
    for e in shadow:
        if e[0] == "a":
            order[e[1]] = n
            n += 1
        elif e[1] in order and made[order[e[1]]] in tr.saved:
            natural[made[order[e[1]]]] = at[n - 1]
    return natural


def trace_point(user, dims, args, strings, shadow):
    """One grid point: the parameters, the train events and the infer events (and, when
    `shadow`, the natural frees of the saves)."""
    amp = PRECISIONS[args.precision][1]
    with FakeTensorMode(allow_non_fake_inputs=True), cuda_dispatch():
        model, x, trainable = build(user, dims, args.precision, args.trainable)
        params = []
        for name, p in model.named_parameters():
            params.append(dict(name=name, shape=list(p.shape), dtype=str(p.dtype).replace("torch.", ""),
                               trainable=p.requires_grad))
        buffers = [dict(name=n, shape=list(b.shape), dtype=str(b.dtype).replace("torch.", ""))
                   for n, b in model.named_buffers()]
        lossf = getattr(user, "loss", None) or default_loss
        tr = start_trace(model, x, strings)
        grads = train_step(model, x, lossf, tr, amp)
        model.eval()
        tr.phase = "infer"
        with tr.hooks(), Recorder(tr), torch.no_grad(), CudaAutocast.region(amp):
            out = forward(model, x)
            del out
            gc.collect()
        tr.phase = "done"
        natural = natural_frees(model, x, lossf, tr, amp, strings) if shadow else {}
        blocks = blocks_of(model, args.blocks)
        del x
        gc.collect()
    return dict(params=params, buffers=buffers, trainable=trainable, events=tr.events,
                saved=sorted(tr.saved), grads=grads, calls=tr.calls, blocks=blocks,
                savers={k: sorted(v) for k, v in tr.savers.items()}, unpacked=tr.unpacked, natural=natural)


def same_structure(a, b, at_a, at_b):
    """Every point must run the same ops making and freeing the same storages; only sizes differ."""
    key = lambda e: (e[0], e[1], e[3], e[4], e[5], e[6], None if e[2] is None else len(e[2]))
    ka, kb = [key(e) for e in a["events"]], [key(e) for e in b["events"]]
    if ka != kb or a["saved"] != b["saved"] or a["grads"] != b["grads"] or a["calls"] != b["calls"]:
        j = next((i for i, (x, y) in enumerate(zip(ka, kb)) if x != y), min(len(ka), len(kb)))
        hint = (" A dim of 1 makes PyTorch skip some copies (a size-1 dim is contiguous either way):"
                " trace from 2 (e.g. batch=2,3,4)." if 1 in at_a + at_b else "")
        sys.exit(f"error: the model ran differently at {at_b} than at {at_a} (event {j} of"
                 f" {len(kb)} against {len(ka)}): trace such sizes apart.{hint}")


def parse_dims(items):
    dims = []
    for it in items:
        name, _, vals = it.partition("=")
        try:
            values = [int(v) for v in vals.split(",") if v]
        except ValueError:
            sys.exit(f"error: --dim {it}: expected NAME=INT,INT,...")
        if not name.isidentifier() or not values or min(values) < 1 or len(set(values)) != len(values):
            sys.exit(f"error: --dim {it}: expected NAME=INT,INT,... (distinct positive values)")
        dims.append((name, values))
    return dims


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_file")
    ap.add_argument("--dim", action="append", default=[], help="NAME=V1,V2,V3 (repeat per dim)")
    ap.add_argument("--precision", default="fp32", choices=list(PRECISIONS))
    ap.add_argument("--trainable", default="all")
    ap.add_argument("--blocks", default="", help="CLASS,CLASS: the modules --checkpoint full wraps"
                    " (default: the model's _no_split_modules)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    dims = parse_dims(args.dim)
    spec = importlib.util.spec_from_file_location("vramscope_user_model", args.model_file)
    if spec is None or spec.loader is None:
        sys.exit(f"error: {args.model_file}: not a Python file")
    user = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(user)
    for fn in ("model", "inputs"):
        if not callable(getattr(user, fn, None)):
            sys.exit(f"error: {args.model_file}: defines no {fn}() function")
    strings = {"": 0}
    points, first = [], None
    for values in itertools.product(*[v for _, v in dims]):
        d = dict(zip([n for n, _ in dims], values))
        print(f"tracing {d}", file=sys.stderr)
        p = trace_point(user, d, args, strings, first is None)
        if first is None:
            first = p
        else:
            same_structure(first, p, points[0]["dims"], list(values))
        points.append(dict(dims=list(values), shapes=[e[2] for e in p["events"] if e[0] == "a"]))
    doc = dict(format=FORMAT, version=VERSION, torch=torch.__version__,
               python=sys.version.split()[0], model_file=os.path.basename(args.model_file),
               precision=args.precision, trainable=first["trainable"],
               dims=[dict(name=n, values=v) for n, v in dims],
               params=first["params"], buffers=first["buffers"],
               strings=sorted(strings, key=strings.get),
               events=[[e[0], e[1], e[3], e[4], e[5], e[6]] for e in first["events"]],
               saved=first["saved"], grads=[[s, i] for s, i in first["grads"].items()],
               calls=[list(c[:4]) for c in first["calls"]], call_inputs=[c[4] for c in first["calls"]],
               blocks=first["blocks"],
               savers=[[s, m] for s, m in sorted(first["savers"].items())],
               unpacked=sorted([s, e] for s, e in first["unpacked"].items()),
               natural=sorted([s, e] for s, e in first["natural"].items()), points=points)
    with open(args.out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    n = sum(math.prod(p["shape"]) for p in first["params"])
    print(f"wrote {args.out}: {len(points)} points, {n:,} parameters", file=sys.stderr)


if __name__ == "__main__":
    main()
