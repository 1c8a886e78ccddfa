"""What trace_bert.py and trace_causal.py share: the storage tracer and CUDA autocast's cast
policy, both on fake tensors."""
import weakref

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map_only
from torch.utils.weak import WeakIdKeyDictionary


class Trace(TorchDispatchMode):
    """Every storage an op returns, once: 'a ID BYTES' when first seen, 'f ID' when it dies,
    '# phase' marks. `optimizer` set: 0-dim tensors are left out (AdamW's `step` counters, CPU
    scalars on a GPU)."""

    def __init__(self):
        super().__init__()
        self.ev = []
        self.ids = WeakIdKeyDictionary()
        self.next = 0
        self.optimizer = False

    def track(self, t):
        if not isinstance(t, torch.Tensor):
            return
        if self.optimizer and t.dim() == 0:
            return
        st = t.untyped_storage()
        if st in self.ids:
            return
        n = st.nbytes()
        i = self.next
        self.next += 1
        self.ids[st] = i
        if n == 0:
            return
        self.ev.append(f"a {i} {n}")
        weakref.finalize(st, self.ev.append, f"f {i}")

    def mark(self, s):
        self.ev.append(f"# {s}")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        res = func(*args, **(kwargs or {}))
        tree_map_only(torch.Tensor, self.track, res)
        return res


class Autocast(TorchFunctionMode):
    """CUDA autocast's cast policy for the ops in `half` (to `low`; fp32 leaves that require
    grad cast once and cached for the region) and `fp32` (to fp32)."""

    def __init__(self, low, half, fp32):
        super().__init__()
        self.low, self.half, self.fp32 = low, half, fp32
        self.cache = {}

    def cast(self, t, dt):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.dtype == dt:
            return t
        if dt == self.low and t.dtype != torch.float32:
            return t
        leaf = t.is_leaf and t.requires_grad
        if leaf and id(t) in self.cache:
            return self.cache[id(t)][1]
        c = t.to(dt)
        if leaf:
            self.cache[id(t)] = (t, c)
        return c

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.half:
            args = tree_map_only(torch.Tensor, lambda t: self.cast(t, self.low), args)
            kwargs = tree_map_only(torch.Tensor, lambda t: self.cast(t, self.low), kwargs)
        elif func in self.fp32:
            args = tree_map_only(torch.Tensor, lambda t: self.cast(t, torch.float32), args)
            kwargs = tree_map_only(torch.Tensor, lambda t: self.cast(t, torch.float32), kwargs)
        return func(*args, **kwargs)
