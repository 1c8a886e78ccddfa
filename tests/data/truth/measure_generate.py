#!/usr/bin/env python3
"""Ground truth for HF `generate` (greedy, DynamicCache): what `model.generate(ids,
max_new_tokens=N, do_sample=False)` allocates, measured on real CPU tensors.

`generate` cannot run under FakeTensorMode (its stopping check reads `unfinished.max() == 0`
back to the host), so these cases run real tensors on CPU with storages rounded up to 512 B
as the CUDA caching allocator does (MemTracker, as in `measure_families.py`). Inference keeps
nothing for backward, so the CPU and CUDA dispatch decisions that matter for training
(dropout masks, SDPA kernels' saved tensors) do not change these numbers.

Per case it records:
  param_bytes           the model's parameter storages
  kv_cache_bytes        the returned DynamicCache's key/value storages after generation
                        (prompt + N - 1 tokens: the last token is never fed back)
  prefill_peak_bytes    MemTracker's peak up to the start of the second forward (the prompt's
                        forward with logits_to_keep=1, the fp32 copy of the last logits, argmax)
  peak_bytes            MemTracker's peak over the whole generate call
The model's generation config has no EOS token, so every sequence runs N steps.

Put it beside `measure_families.py` in a copy of this folder (it reads `configs/`):
  python measure_generate.py --out reference_generate.json
"""
import argparse
import gc
import json
import math
import os
import sys
import time

import torch
import transformers
import torch.distributed._tools.mem_tracker as _mt_mod
from torch.distributed._tools.mem_tracker import MemTracker

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_families as mf  # noqa: E402

MiB = 2 ** 20


def G(cfg, b, s, new, dtype="bfloat16", attn="sdpa"):
    short = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}[dtype]
    return dict(case=f"{cfg}-{short}-{attn}-b{b}s{s}-gen{new}", config=cfg, batch=b, seq=s,
                new_tokens=new, dtype=dtype, attn=attn, mode="generate", grad_ckpt=False,
                backend="cpu-real")


CASES = [
    # tiny: decode-dominated (many new tokens) and prefill-dominated
    G("llama_tiny_gqa", 2, 256, 32),
    G("llama_tiny_gqa", 2, 64, 512),
    G("llama_tiny", 1, 256, 128, "float32", "eager"),
    G("gpt2_tiny", 2, 128, 64, "float32"),
    G("qwen3_tiny", 2, 128, 128),
    G("mistral_tiny", 4, 64, 64),
    # sliding-window layers (window 64): the cache keeps the window, the mask is not skipped
    G("gemma3_text_tiny", 2, 128, 64),
    # decode-dominated: eager scores and repeated K/V over the whole cache; a masked sliding decode
    G("llama_tiny_gqa", 4, 32, 480, "bfloat16", "eager"),
    G("qwen3_tiny", 2, 16, 600, "float32", "eager"),
    G("gemma3_text_tiny", 4, 16, 400),
    # real size: a large vocabulary (the last token's logits), tied embeddings
    G("qwen3-0.6b", 1, 512, 16, "float32"),
    G("qwen3-0.6b", 4, 128, 64, "float32"),
    G("gemma-3-1b", 1, 256, 16, "float32"),
    # real size in bf16 (measured after the rules were written)
    G("qwen3-0.6b", 2, 256, 128),
    G("olmo-2-1b", 1, 512, 32),
    G("gemma-2-2b", 1, 256, 16, "bfloat16", "eager"),
    G("phi-3-mini-4k", 1, 256, 8),
]


def run(case):
    cfg = mf.load_config(case["config"])
    b, s, new = case["batch"], case["seq"], case["new_tokens"]
    torch.manual_seed(0)
    model = mf.build(case, cfg)
    model.eval()
    gc_ = model.generation_config
    gc_.eos_token_id = None
    gc_.pad_token_id = None
    gc_.bos_token_id = None
    params = list(model.parameters())
    out = dict(case=case["case"], config_file=f"configs/{case['config']}.json", batch=b, seq=s,
               new_tokens=new, dtype=case["dtype"], attn=case["attn"], mode="generate", grad_ckpt=False,
               backend="cpu-real", n_params=sum(p.numel() for p in params),
               param_bytes=mf.uniq_storage_bytes(params))
    ids = torch.randint(0, cfg.get_text_config().vocab_size, (b, s))
    calls = [0]
    prefill = {}

    orig_calc = _mt_mod._WeakRefInfo._calculate_mem_consumed
    _mt_mod._WeakRefInfo._calculate_mem_consumed = lambda self: math.ceil(self.size * self.element_size / 512) * 512
    mt = MemTracker()

    def pre(mod, args, kwargs):
        calls[0] += 1
        if calls[0] == 2:
            prefill["peak"], _ = mf.mem_snapshot_peak(mt)

    def post(mod, args, kwargs, output):
        # MemTracker refuses a module called twice in one session; its device peak survives this
        mt.reset_mod_stats()

    h = model.register_forward_pre_hook(pre, with_kwargs=True)
    h2 = model.register_forward_hook(post, with_kwargs=True)
    t0 = time.time()
    try:
        mt.track_external(model, ids)
        with torch.no_grad(), mt:
            res = model.generate(ids, max_new_tokens=new, do_sample=False, use_cache=True,
                                 return_dict_in_generate=True)
        out["peak_bytes"], out["peak_breakdown"] = mf.mem_snapshot_peak(mt)
    finally:
        h.remove()
        h2.remove()
        _mt_mod._WeakRefInfo._calculate_mem_consumed = orig_calc
    cache = getattr(res, "cache", None) or getattr(res, "past_key_values", None)
    out["kv_cache_bytes"] = mf.kv_cache_bytes(cache)
    out["kv_cache_layer_shapes"] = mf.kv_cache_shapes(cache)
    out["forward_calls"] = calls[0]
    out["sequence_length"] = int(res.sequences.shape[1])
    out["prefill_peak_bytes"] = prefill.get("peak", out["peak_bytes"])
    out["seconds"] = round(time.time() - t0, 2)
    out["torch_version"] = torch.__version__
    out["transformers_version"] = transformers.__version__
    del res, model, params
    gc.collect()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=None)
    ap.add_argument("--out", default="reference_generate.json")
    a = ap.parse_args()
    mf.write_configs()
    rows = []
    for c in CASES:
        if a.only and a.only not in c["case"]:
            continue
        print(c["case"], flush=True)
        try:
            r = run(c)
            print(f"    kv={r['kv_cache_bytes']} prefill_peak={r['prefill_peak_bytes'] / MiB:.2f} MiB "
                  f"peak={r['peak_bytes'] / MiB:.2f} MiB calls={r['forward_calls']} ({r['seconds']}s)", flush=True)
        except Exception as e:  # record and go on
            r = dict(case=c["case"], error=f"{type(e).__name__}: {e}")
            print("    error:", r["error"], flush=True)
        rows.append(r)
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
