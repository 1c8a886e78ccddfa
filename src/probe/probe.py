#!/usr/bin/env python3
# vramscope probe: measures the GPU memory of one scenario with PyTorch and HF transformers.
# Written by: __VRAMSCOPE_COMMAND__
# Self-contained: the model is built from the config below with random weights (nothing is
# downloaded). Needs torch and transformers (peft for --lora, bitsandbytes for adamw-8bit).
#
#   python probe.py [--out probe.json] [--device cuda|cpu] [--steps N] [--warmup N] [--no-snapshot]
#
# Training: warm-up steps, then the measured steps of forward + loss, backward, optimizer step and
# zero_grad(set_to_none=True), with the peak statistics reset between the phases. Inference: a
# no_grad forward (prefill, KV cache kept), or model.generate with --new-tokens. The JSON it writes goes to `vramscope calibrate`.
# Exit codes: 0 done, 2 bad arguments, 3 missing package or no GPU, 4 out of memory (JSON written).
import argparse
import datetime
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time

true, false, null = True, False, None  # the spec below is JSON
SPEC = __VRAMSCOPE_SPEC__

EXIT_ENV = 3
EXIT_OOM = 4
MiB = 2 ** 20


def fail(msg, code=EXIT_ENV):
    print(f"probe: {msg}", file=sys.stderr)
    sys.exit(code)


def parse_args():
    run = SPEC["run"]
    ap = argparse.ArgumentParser(description="vramscope probe: " + SPEC["model"]["name"])
    ap.add_argument("--out", default=os.path.splitext(os.path.abspath(__file__))[0] + ".json",
                    help="result JSON (default: next to this script)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default=run["device"])
    ap.add_argument("--steps", type=int, default=run["steps"])
    ap.add_argument("--warmup", type=int, default=run["warmup"])
    ap.add_argument("--no-snapshot", action="store_true", help="skip the allocator snapshot pickle")
    a = ap.parse_args()
    if a.steps < 1 or a.warmup < 0:
        ap.error("--steps must be at least 1 and --warmup at least 0")
    return a


def import_stack():
    try:
        import torch
    except ImportError:
        fail(f"PyTorch is not installed in {sys.executable}: pip install torch transformers")
    try:
        import transformers
    except ImportError:
        fail(f"transformers is not installed in {sys.executable}: pip install transformers")
    return torch, transformers


def version_of(name):
    if importlib.util.find_spec(name) is None:
        return None
    try:
        return getattr(__import__(name), "__version__", "?")
    except Exception:  # a broken install is reported as missing
        return None


def storage_bytes(tensors):
    seen = {}
    for t in tensors:
        if t is None:
            continue
        st = t.untyped_storage()
        seen[(t.device.type, t.device.index, st.data_ptr())] = st.nbytes()
    return sum(seen.values())


def kv_cache_bytes(torch, pkv):
    if pkv is None:
        return None
    ts = []
    if hasattr(pkv, "layers"):
        for layer in pkv.layers:
            ts += [v for v in (getattr(layer, "keys", None), getattr(layer, "values", None))
                   if isinstance(v, torch.Tensor)]
    else:
        for kv in pkv:
            ts += [x for x in kv if isinstance(x, torch.Tensor)]
    return storage_bytes(ts)


def nvml_reading(torch):
    """(used bytes of the whole GPU, source, driver version); None where neither pynvml nor
    nvidia-smi answers."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    uuid = getattr(props, "uuid", None)
    ident = f"GPU-{uuid}" if uuid else str(torch.cuda.current_device())
    try:
        import pynvml
        pynvml.nvmlInit()
        h = (pynvml.nvmlDeviceGetHandleByUUID(ident) if uuid
             else pynvml.nvmlDeviceGetHandleByIndex(int(ident)))
        used = pynvml.nvmlDeviceGetMemoryInfo(h).used
        drv = pynvml.nvmlSystemGetDriverVersion()
        return int(used), "pynvml", drv.decode() if isinstance(drv, bytes) else drv
    except Exception:
        pass
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,driver_version",
                            "--format=csv,noheader,nounits", "-i", ident],
                           capture_output=True, text=True, timeout=30)
        used, drv = [x.strip() for x in r.stdout.strip().splitlines()[0].split(",")[:2]]
        return int(float(used)) * MiB, "nvidia-smi", drv
    except Exception:
        return None, None, None


def build(torch, transformers, run, device, notes):
    cfg_kw = dict(SPEC["config"])
    model_type = cfg_kw.pop("model_type", None)
    if not model_type:
        fail("the embedded config has no model_type", 2)
    try:
        cfg = transformers.AutoConfig.for_model(model_type, **cfg_kw)
    except (KeyError, ValueError) as e:
        fail(f"transformers {transformers.__version__} cannot build model_type {model_type!r}: {e}")
    if run["auto_class"] == "AutoModelForSequenceClassification" and getattr(cfg, "pad_token_id", None) is None:
        cfg.pad_token_id = 0  # batches over 1 need one; the ids are random anyway
    attn = run["attn_implementation"]
    if attn == "flash_attention_2":
        if device == "cpu":
            notes.append("flash_attention_2 needs CUDA: the CPU run uses sdpa")
            attn = "sdpa"
        elif importlib.util.find_spec("flash_attn") is None:
            fail("--attention flash needs the flash-attn package (pip install flash-attn); or probe --attention sdpa")
    dtype = getattr(torch, run["dtype"])
    auto = getattr(transformers, run["auto_class"])

    def make(impl):
        with torch.device(device):
            try:
                return auto.from_config(cfg, attn_implementation=impl, dtype=dtype)
            except TypeError:  # transformers 4 spells it torch_dtype
                return auto.from_config(cfg, attn_implementation=impl, torch_dtype=dtype)

    try:
        model = make(attn)
    except ValueError as e:
        if attn != "sdpa" or "sdpa" not in str(e).lower():
            raise
        notes.append(f"{type(e).__name__}: no SDPA path for this model in transformers; eager attention used")
        model = make("eager")
    ck = run["checkpoint"]
    if ck != "none" and run["mode"] == "train":
        every = ck["every"] if isinstance(ck, dict) else 1
        if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.24
            model.activation_checkpointing_enable(
                activation_checkpointing_kwargs={"use_reentrant": False}, every_n_layers=every)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            if every > 1:
                try:
                    from transformers.modeling_layers import GradientCheckpointingLayer
                except ImportError:
                    fail("--checkpoint every:K needs transformers' GradientCheckpointingLayer (transformers >= 4.52)")
                blocks = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
                for i, m in enumerate(blocks):
                    m.gradient_checkpointing = i % every == 0
        if every > 1:
            try:
                from transformers.modeling_layers import GradientCheckpointingLayer
                blocks = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
                on = sum(1 for m in blocks if m.gradient_checkpointing)
                notes.append(f"checkpointing blocks 0, {every}, ...: {on} of {len(blocks)}")
            except ImportError:
                pass
    if run["lora"]:
        try:
            import peft
        except ImportError:
            fail("--lora needs peft: pip install peft")
        lc = run["lora"]
        model = peft.get_peft_model(model, peft.LoraConfig(
            r=lc["r"], lora_alpha=lc["alpha"], lora_dropout=lc["dropout"],
            target_modules=lc["target_modules"], bias="none"))
    return cfg, model


def make_optimizer(torch, transformers, name, params, device):
    cuda = device == "cuda"
    if name in ("adamw", "adam"):
        cls = torch.optim.AdamW if name == "adamw" else torch.optim.Adam
        return cls(params, lr=1e-5, foreach=True if cuda else None)
    if name == "adamw-fused":
        return torch.optim.AdamW(params, lr=1e-5, fused=True)
    if name == "adamw-8bit":
        try:
            import bitsandbytes as bnb
        except ImportError:
            fail("--optimizer adamw-8bit needs bitsandbytes: pip install bitsandbytes")
        return bnb.optim.AdamW8bit(params, lr=1e-5)
    if name == "adafactor":
        from transformers.optimization import Adafactor
        return Adafactor(params, lr=None, scale_parameter=True, relative_step=True, warmup_init=False)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    return None


def inputs(torch, cfg, run, device, dtype):
    g = torch.Generator().manual_seed(0)
    b, s = run["batch"], run["seq"]
    train = run["mode"] == "train"
    if run["input"] == "pixels":
        c, (h, w) = cfg.num_channels, run["image"]
        kw = dict(pixel_values=torch.randn(b, c, h, w, generator=g).to(device, dtype))
        if run.get("interpolate_pos_encoding"):
            kw["interpolate_pos_encoding"] = True
        if train:
            kw["labels"] = torch.randint(0, cfg.num_labels, (b,), generator=g).to(device)
        return kw
    ids = torch.randint(0, run["vocab_size"], (b, s), generator=g).to(device)
    kw = dict(input_ids=ids)
    if run["causal_lm"]:
        kw["use_cache"] = not train
    if train and run["auto_class"] in ("AutoModelForCausalLM", "AutoModelForMaskedLM"):
        kw["labels"] = ids.clone()
    elif train and run["auto_class"] == "AutoModelForSequenceClassification":
        kw["labels"] = torch.randint(0, cfg.num_labels, (b,), generator=g).to(device)
    return kw


def main():
    args = parse_args()
    torch, transformers = import_stack()
    run = dict(SPEC["run"], device=args.device, steps=args.steps, warmup=args.warmup)
    device = args.device
    cuda = device == "cuda"
    if cuda and not torch.cuda.is_available():
        fail(f"no CUDA GPU visible to PyTorch {torch.__version__} (built for CUDA {torch.version.cuda}); "
             "--device cpu runs the same steps without memory statistics")
    transformers.logging.set_verbosity_error()
    import warnings
    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' deprecation notices
    torch.manual_seed(0)
    notes = []
    measured = dict(peak_allocated=None, peak_reserved=None,
                    per_phase=dict(forward=None, backward=None, optimizer_step=None),
                    per_phase_reserved=dict(forward=None, backward=None, optimizer_step=None),
                    model_allocated=None, memory_allocated_after_step=None, memory_reserved_after_step=None,
                    nvml_used=None, nvml_source=None, cuda_context_estimate=None)
    tensors = dict(parameters=None, trainable_parameters=None, buffers=None, gradients=None,
                   optimizer_states=None, kv_cache=None)
    env = dict(python=platform.python_version(), platform=platform.platform(), torch=torch.__version__,
               transformers=transformers.__version__, peft=version_of("peft"),
               bitsandbytes=version_of("bitsandbytes"), cuda=torch.version.cuda, device=device,
               gpu_name=None, gpu_total_memory=None, gpu_capability=None, driver=None,
               allocator_conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF"),
               date_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    if cuda:
        p = torch.cuda.get_device_properties(torch.cuda.current_device())
        env.update(gpu_name=p.name, gpu_total_memory=p.total_memory, gpu_capability=f"{p.major}.{p.minor}")
        torch.cuda.reset_peak_memory_stats()
    else:
        notes.append("--device cpu: no CUDA memory statistics (measured.* null); tensor bytes are exact")
    snap_path = None if args.no_snapshot or not cuda or not run["snapshot_entries"] else \
        os.path.splitext(args.out)[0] + ".snapshot.pickle"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def reset():
        if cuda:
            sync()
            torch.cuda.reset_peak_memory_stats()

    def record(phase):
        if not cuda:
            return
        sync()
        a, r = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
        pp, pr = measured["per_phase"], measured["per_phase_reserved"]
        pp[phase] = max(pp[phase] or 0, a)
        pr[phase] = max(pr[phase] or 0, r)
        measured["peak_allocated"] = max(measured["peak_allocated"] or 0, a)
        measured["peak_reserved"] = max(measured["peak_reserved"] or 0, r)

    cfg, model = build(torch, transformers, run, device, notes)
    env["attn_implementation"] = getattr(model.config, "_attn_implementation", None)
    params = list(model.parameters())
    trainable = [p for p in params if p.requires_grad]
    tensors.update(parameters=storage_bytes(params), trainable_parameters=sum(p.numel() for p in trainable),
                   buffers=storage_bytes(list(model.buffers())))
    if cuda:
        sync()
        measured["model_allocated"] = torch.cuda.memory_allocated()
    dtype = getattr(torch, run["dtype"])
    kw = inputs(torch, cfg, run, device, dtype)
    train = run["mode"] == "train"
    opt = make_optimizer(torch, transformers, run["optimizer"], trainable, device) if train else None
    env["optimizer"] = type(opt).__name__ if opt is not None else None
    scaler = torch.amp.GradScaler(device) if train and run["grad_scaler"] else None
    autocast = getattr(torch, run["autocast"]) if run["autocast"] else None
    model.train(train)
    new_tokens = run.get("new_tokens") or 0
    if new_tokens:
        for k in ("eos_token_id", "pad_token_id", "bos_token_id"):
            setattr(model.generation_config, k, None)
    step_seconds = []
    losses = []
    error = None
    try:
        for i in range(args.warmup + args.steps):
            is_measured = i >= args.warmup
            if is_measured and i == args.warmup and snap_path:
                torch.cuda.memory._record_memory_history(max_entries=run["snapshot_entries"])
            t0 = time.time()
            reset()
            with torch.autocast(device, dtype=autocast, enabled=autocast is not None), \
                    torch.set_grad_enabled(train):
                if new_tokens:
                    # HF generate: greedy, every row decodes to the end (no EOS)
                    out = model.generate(kw["input_ids"], max_new_tokens=new_tokens, do_sample=False,
                                         use_cache=True, return_dict_in_generate=True)
                else:
                    out = model(**kw)
                if train:
                    loss = out.loss if getattr(out, "loss", None) is not None else out[0].float().mean()
            if not train:
                if is_measured and run["causal_lm"]:
                    cache = getattr(out, "past_key_values", None)
                    if cache is None:  # GenerateDecoderOnlyOutput names it `cache` in transformers 5
                        cache = getattr(out, "cache", None)
                    tensors["kv_cache"] = kv_cache_bytes(torch, cache)
                del out
                if is_measured:
                    record("forward")
                    step_seconds.append(round(time.time() - t0, 4))
                continue
            del out  # outputs (full logits) are not held through backward
            if is_measured:
                record("forward")
            reset()
            (scaler.scale(loss) if scaler else loss).backward()
            losses.append(float(loss.detach()))
            del loss
            if is_measured:
                record("backward")
                tensors["gradients"] = storage_bytes([p.grad for p in trainable])
            reset()
            if opt is not None:
                if scaler:
                    scaler.step(opt)
                    scaler.update()
                else:
                    opt.step()
                if is_measured:
                    tensors["optimizer_states"] = storage_bytes(
                        [v for st in opt.state.values() for v in st.values()
                         if isinstance(v, torch.Tensor) and v.dim() > 0])
                opt.zero_grad(set_to_none=True)
            else:
                model.zero_grad(set_to_none=True)
            if is_measured:
                record("optimizer_step")
                step_seconds.append(round(time.time() - t0, 4))
    except torch.cuda.OutOfMemoryError as e:
        error = "out of memory: " + str(e).splitlines()[0]
        record("forward" if not step_seconds else "backward")
    if not train:
        measured["per_phase"]["backward"] = measured["per_phase"]["optimizer_step"] = None
    if opt is None:
        measured["per_phase"]["optimizer_step"] = None
    if cuda:
        sync()
        measured["memory_allocated_after_step"] = torch.cuda.memory_allocated()
        measured["memory_reserved_after_step"] = torch.cuda.memory_reserved()
        used, source, drv = nvml_reading(torch)
        env["driver"] = drv
        measured.update(nvml_used=used, nvml_source=source)
        if used is not None:
            measured["cuda_context_estimate"] = used - torch.cuda.memory_reserved()
            notes.append("nvml_used is the whole GPU's: other processes on it count too")
        else:
            notes.append("neither pynvml nor nvidia-smi answered: nvml_used is null")
        if snap_path:
            try:
                torch.cuda.memory._dump_snapshot(snap_path)
                torch.cuda.memory._record_memory_history(enabled=None)
            except Exception as e:  # the measurement stands without the snapshot
                notes.append(f"snapshot not written: {type(e).__name__}: {e}")
                snap_path = None
    else:
        try:
            import resource
            measured["cpu_max_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        except Exception:
            pass
    result = dict(schema=SPEC["schema"], kind="vramscope-probe", vramscope_version=SPEC["vramscope_version"],
                  args=SPEC["args"], scenario=SPEC["scenario"], model=SPEC["model"], run=run,
                  measured=measured, tensors=tensors, environment=env,
                  timing=dict(step_seconds=step_seconds), losses=losses, notes=notes,
                  snapshot=os.path.basename(snap_path) if snap_path else None, error=error,
                  config=SPEC["config"], predicted=SPEC["predicted"])
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, args.out)

    def mib(v):
        return "n/a" if v is None else f"{v / MiB:.1f} MiB"

    print(f"probe: {SPEC['model']['name']} on {env['gpu_name'] or device}: peak allocated "
          f"{mib(measured['peak_allocated'])}, reserved {mib(measured['peak_reserved'])}, "
          f"nvml {mib(measured['nvml_used'])}; parameters {mib(tensors['parameters'])}, gradients "
          f"{mib(tensors['gradients'])}, optimizer states {mib(tensors['optimizer_states'])}")
    for n in notes:
        print(f"  note: {n}")
    print(f"wrote {args.out}" + (f" and {snap_path}" if snap_path else ""))
    if error:
        fail(error, EXIT_OOM)


if __name__ == "__main__":
    main()
