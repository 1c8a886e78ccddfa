#!/usr/bin/env python3
"""Count HF `model.parameters()` for every tests/data/hub/<dir>/config.json.

Instantiates each config on torch's meta device (allocates no memory) with the
matching Auto class and sums `p.numel()`.  quantization_config is dropped first,
so the count is the logical (unquantized) parameter count, as `from_config`
would build it.  Needs torch + transformers:
    /tmp/truthvenv/bin/python tests/data/hub/count_params.py
Updates n_params/class in params.json next to this file (keeps other fields).
"""
import json, os, sys
import torch, transformers
from transformers import AutoConfig

HERE = os.path.dirname(os.path.abspath(__file__))
CLASS = {  # model_type -> Auto class; default AutoModelForCausalLM
    "gemma3": "AutoModelForImageTextToText",
    "llama4": "AutoModelForImageTextToText",
    "mistral3": "AutoModelForImageTextToText",
    "qwen2_5_vl": "AutoModelForImageTextToText",
    "qwen3_vl": "AutoModelForImageTextToText",
    "llava": "AutoModelForImageTextToText",
    "vit": "AutoModelForImageClassification",
    "t5": "AutoModelForSeq2SeqLM",
    "whisper": "AutoModelForSpeechSeq2Seq",
}

def count(path):
    raw = json.load(open(path))
    raw.pop("quantization_config", None)
    raw.pop("auto_map", None)
    cfg = AutoConfig.for_model(raw.pop("model_type"), **raw)
    auto = CLASS.get(cfg.model_type, "AutoModelForCausalLM")
    with torch.device("meta"):
        model = getattr(transformers, auto).from_config(cfg)
    n = sum(p.numel() for p in model.parameters())
    return n, f"{auto} -> {type(model).__name__}"

def main(dirs):
    pj = os.path.join(HERE, "params.json")
    data = json.load(open(pj)) if os.path.exists(pj) else {}
    dirs = dirs or sorted(d for d in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, d, "config.json")))
    for d in dirs:
        e = data.setdefault(d, {"model_id": None, "n_params": None, "published": None, "class": None})
        try:
            e["n_params"], e["class"] = count(os.path.join(HERE, d, "config.json"))
        except Exception as ex:  # keep going; record failure
            e["n_params"], e["class"] = None, f"FAILED: {type(ex).__name__}: {ex}"[:300]
        print(f"{d:20s} {e['n_params']!s:>16} {e['class']}", flush=True)
    json.dump(data, open(pj, "w"), indent=2)
    open(pj, "a").write("\n")

if __name__ == "__main__":
    main(sys.argv[1:])
