#!/usr/bin/env python3
"""Dump parameter/buffer shapes for every tests/data/hub/<dir>/config.json.

Builds each model exactly as count_params.py does (quantization_config and
auto_map dropped, same Auto class, torch meta device) and writes
<dir>/shapes.txt:
    <pattern>  [shape]  dtype  xN
one line per (name pattern, shape, dtype), layer indices replaced by `*`,
in order of first appearance.  Then `# buffers` with the same for
named_buffers (tagged persistent / non-persistent), then `# tied: ...`
(output embedding weight is the input embedding weight) and
`# total params N, tensors M` (deduplicated, as model.parameters() does).
    /tmp/truthvenv/bin/python tests/data/hub/dump_shapes.py [dir ...]
"""
import os, re, sys
import torch
from count_params import HERE, CLASS  # noqa: F401  (same class map)
import json, transformers
from transformers import AutoConfig

IDX = re.compile(r"(?<=\.)\d+(?=\.|$)|^\d+(?=\.)")


def build(path):
    # identical to count_params.count()
    raw = json.load(open(path))
    raw.pop("quantization_config", None)
    raw.pop("auto_map", None)
    cfg = AutoConfig.for_model(raw.pop("model_type"), **raw)
    auto = CLASS.get(cfg.model_type, "AutoModelForCausalLM")
    with torch.device("meta"):
        model = getattr(transformers, auto).from_config(cfg)
    return model, f"{auto} -> {type(model).__name__}"


def pattern(name):
    return IDX.sub("*", name)


def dtype_s(t):
    return str(t.dtype).replace("torch.", "")


def group(items):
    """items: iterable of (name, tensor, extra) -> ordered {(pat, shape, dtype, extra): count}"""
    out = {}
    for name, t, extra in items:
        k = (pattern(name), tuple(t.shape), dtype_s(t), extra)
        out[k] = out.get(k, 0) + 1
    return out


def fmt(groups, tag=False):
    rows = [(p, "[" + ", ".join(map(str, s)) + "]", d, f"x{n}" + (f"  {e}" if tag else ""))
            for (p, s, d, e), n in groups.items()]
    if not rows:
        return []
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    return [f"{p:<{w0}}  {s:<{w1}}  {d:<{w2}}  {n}".rstrip() for p, s, d, n in rows]


def tied_info(model):
    # canonical check: output embedding weight object is input embedding weight
    try:
        inp = model.get_input_embeddings()
        outp = model.get_output_embeddings()
    except Exception:
        inp = outp = None
    emb_tied = (inp is not None and outp is not None
                and getattr(inp, "weight", None) is not None
                and getattr(outp, "weight", None) is getattr(inp, "weight", None))
    # every parameter alias (same Parameter object under >1 name)
    seen, aliases = {}, []
    for n, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            aliases.append(f"{n} -> {seen[id(p)]}")
        else:
            seen[id(p)] = n
    return emb_tied, aliases


def dump(d):
    model, cls = build(os.path.join(HERE, d, "config.json"))
    lines = [f"# {d}: {cls}"]
    params = list(model.named_parameters())  # deduplicated, like parameters()
    lines += fmt(group((n, p, "") for n, p in params))
    # buffers: persistent flag lives on the owning module
    nonpers = set()
    for mn, m in model.named_modules(remove_duplicate=False):
        for b in getattr(m, "_non_persistent_buffers_set", ()):
            nonpers.add(f"{mn}.{b}" if mn else b)
    bufs = [(n, b, "non-persistent" if n in nonpers else "persistent")
            for n, b in model.named_buffers() if b is not None]
    lines.append("# buffers")
    lines += fmt(group(bufs), tag=True)
    emb_tied, aliases = tied_info(model)
    lines.append(f"# tied: {'yes' if emb_tied else 'no'}")
    for a in aliases:
        lines.append(f"#   alias {a}")
    n_total = sum(p.numel() for p in model.parameters())
    n_t = sum(1 for _ in model.parameters())
    lines.append(f"# total params {n_total}, tensors {n_t}")
    with open(os.path.join(HERE, d, "shapes.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return n_total, n_t, emb_tied


def main(dirs):
    dirs = dirs or sorted(x for x in os.listdir(HERE) if os.path.isfile(os.path.join(HERE, x, "config.json")))
    failed = []
    for d in dirs:
        try:
            n, t, tied = dump(d)
            print(f"{d:20s} {n:>16} {t:>6} tied={'yes' if tied else 'no'}", flush=True)
        except Exception as ex:
            failed.append(d)
            print(f"{d:20s} FAILED: {type(ex).__name__}: {ex}"[:400], flush=True)
    if failed:
        print("failed:", " ".join(failed))


if __name__ == "__main__":
    main(sys.argv[1:])
