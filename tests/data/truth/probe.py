#!/usr/bin/env python3
"""Saved-activation probe for the two recipes the reference harness does not cover:
autocast mixed precision (bf16-amp) and PEFT LoRA on a frozen base.

It reuses the reference harness (`measure.py` from ../shared/truth; copy both there or put this
file beside it) and measures the bytes autograd saves during one forward pass in train mode:

* amp:  fp32 model built on *fake CUDA* tensors, forward under `torch.autocast("cuda", bf16)`.
        Fake CUDA tensors run the forward (only backward needs a real device), so autocast's CUDA
        cast lists apply. `torch.cuda.is_available` is answered True for autocast's constructor,
        and the harness's SDPA emulation is wrapped so q/k/v are cast to bf16 first, as
        autocast does for `scaled_dot_product_attention` on a GPU.
* lora: real CPU tensors (PEFT moves adapters with `.to()`, which fake tensors refuse; use the
        small configs) with the harness's CUDA dispatch emulation, on a model in the given dtype
        wrapped by `peft.get_peft_model(LoraConfig(r, targets, dropout))`. Also prints the
        parameter bytes and the trainable parameters.

Usage: python probe.py amp  CONFIG B S ATTN
       python probe.py lora CONFIG B S ATTN DTYPE RANK TARGETS(comma) DROPOUT
Prints one JSON object.
"""
import json
import sys

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

import measure as M


def amp(cfgname, b, s, attn):
    cfg = M.load_config(cfgname)
    with FakeTensorMode(), M.cuda_dispatch_emulation(), M.hf_not_tracing_under_fake():
        patched = F.scaled_dot_product_attention

        def amp_sdpa(q, k, v, *a, **kw):
            if torch.is_autocast_enabled("cuda"):
                dt = torch.get_autocast_dtype("cuda")
                q, k, v = [x.to(dt) if x.dtype == torch.float32 else x for x in (q, k, v)]
                with torch.autocast("cuda", enabled=False):
                    return patched(q, k, v, *a, **kw)
            return patched(q, k, v, *a, **kw)

        F.scaled_dot_product_attention = amp_sdpa
        with torch.device("cuda"):
            model = M.build(dict(dtype="float32", attn=attn), cfg)
        model.train()
        ids = torch.randint(0, cfg.vocab_size, (b, s), device="cuda")
        labels = ids.clone()
        kw = dict(input_ids=ids, labels=labels)
        if cfg.model_type != "bert":
            kw["use_cache"] = False
        rec = M.SavedRecorder(model, [ids, labels])
        torch.cuda.is_available = lambda: True
        torch.cuda.is_bf16_supported = lambda *a, **k: True
        with torch.autocast("cuda", dtype=torch.bfloat16), rec.active():
            model(**kw)
        summ = rec.summary(cfg.num_hidden_layers)
    return dict(activation_saved_bytes=summ["activation_saved_bytes"],
                by_module_op=summ["activation_by_module_op"])


def lora(cfgname, b, s, attn, dtype, rank, targets, dropout):
    from peft import LoraConfig, get_peft_model
    cfg = M.load_config(cfgname)
    torch.manual_seed(0)
    with M.cuda_dispatch_emulation():
        base = M.build(dict(dtype=dtype, attn=attn), cfg)
        model = get_peft_model(base, LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=dropout,
                                                target_modules=targets.split(",")))
        model.train()
        params = list(model.parameters())
        trainable = [p for p in params if p.requires_grad]
        ids = torch.randint(0, cfg.vocab_size, (b, s))
        labels = ids.clone()
        kw = dict(input_ids=ids, labels=labels)
        if cfg.model_type != "bert":
            kw["use_cache"] = False
        rec = M.SavedRecorder(base, [ids, labels])
        for p in params:  # the recorder excludes parameter storages, adapters included
            rec.excl[M.skey(p)] = "param"
        with rec.active():
            model(**kw)
        summ = rec.summary(cfg.num_hidden_layers)
    return dict(activation_saved_bytes=summ["activation_saved_bytes"],
                param_bytes=M.uniq_storage_bytes(params),
                trainable_params=sum(p.numel() for p in trainable),
                adapter_dtype=str(trainable[0].dtype) if trainable else None,
                by_module_op=summ["activation_by_module_op"])


if __name__ == "__main__":
    kind, cfgname, b, s, attn = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    if kind == "amp":
        out = amp(cfgname, b, s, attn)
    else:
        out = lora(cfgname, b, s, attn, sys.argv[6], int(sys.argv[7]), sys.argv[8], float(sys.argv[9]))
    print(json.dumps(out, indent=1))
