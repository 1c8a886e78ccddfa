use serde_json::Value;
use vramscope::estimate::{AttentionImpl, Checkpointing, Mode, Optimizer, Scenario, estimate};
use vramscope::model::preset::load_path;
use vramscope::units::Precision;

#[test]
fn scratch() {
    let only = std::env::var("ONLY").unwrap_or_default();
    let text = std::fs::read_to_string("tests/data/truth/reference_F.json").unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    for r in v.as_array().unwrap() {
        let case = r["case"].as_str().unwrap();
        if !case.contains(&only) { continue; }
        let cfg = r["config_file"].as_str().unwrap().trim_start_matches("configs/").trim_end_matches(".json");
        let p = format!("/tmp/specs/{cfg}.ron");
        let Ok(l) = load_path(std::path::Path::new(&p)) else { println!("{case}: no spec"); continue };
        let mut sc = Scenario::new(l.model);
        sc.mode = if r["mode"] == "train" { Mode::Train } else { Mode::Infer };
        sc.batch = r["batch"].as_u64().unwrap();
        sc.seq = r.get("vit_tokens").and_then(|x| x.as_u64()).unwrap_or(r["seq"].as_u64().unwrap());
        sc.precision = if r["dtype"] == "float32" { Precision::Fp32 } else { Precision::Bf16 };
        sc.attention = if r["attn"] == "eager" { AttentionImpl::Eager } else { AttentionImpl::Sdpa };
        sc.checkpointing = if r["grad_ckpt"].as_bool().unwrap() { Checkpointing::Full } else { Checkpointing::None };
        sc.optimizer = Optimizer::Adamw;
        if std::env::var("OPS").is_ok() {
            let ctx = vramscope::estimate::activations::Ctx::new(&sc);
            let t = sc.model.transformer().unwrap();
            let mut flags: Vec<u8> = t.layer_flags.clone();
            flags.sort(); flags.dedup();
            if flags.is_empty() { flags.push(vramscope::model::families::default_flags(t)); }
            for f in flags {
                println!("  block flags {f}:");
                for r in vramscope::engine::walk::block_ops(&ctx, t, f) { println!("    {:>10} {}", r.kept_bytes, r.op); }
            }
        }
        let e = match estimate(&sc) { Ok(e) => e, Err(err) => { println!("{case}: {err}"); continue } };
        if std::env::var("MOM").is_ok() { for mo in &e.moments { println!("   {:?} {} {:?} total {}", mo.phase, mo.what, mo.alive, mo.alive.total()); } }
        let pct = |p: u64, m: Option<u64>| m.map_or("-".to_string(), |m| format!("{:+.2}%", 100.0 * (p as f64 - m as f64) / m as f64));
        let np = r["n_params"].as_u64();
        let act = r["activation_saved_bytes"].as_u64();
        let kv = r["kv_cache_bytes"].as_u64();
        println!(
            "{case:<44} np {:>9}/{:>9} pb {} gr {} act {:>10}/{:>10} {:>8} peak {:>8} kv {}",
            e.n_params, np.unwrap_or(0), pct(e.parameters, r["param_bytes"].as_u64()),
            pct(e.gradients, r["grad_bytes"].as_u64()),
            e.activations, act.unwrap_or(0), pct(e.activations, act),
            pct(e.peak_allocated, r["peak_bytes"].as_u64()), pct(e.kv_cache, kv)
        );
    }
}
#[test]
fn groups() {
    let l = load_path(std::path::Path::new("/tmp/specs/deepseek_v3_tiny.ron")).unwrap();
    for g in l.model.param_groups() { println!("{g:?}"); }
}
#[test]
fn megatron_ops() {
    use vramscope::estimate::Parallel;
    let mut sc = Scenario::new(vramscope::model::preset::builtin("gpt3-175b-megatron").unwrap());
    sc.seq = 2048; sc.batch = 1; sc.precision = Precision::Bf16Mixed; sc.attention = AttentionImpl::Eager;
    sc.parallel = Parallel { tp: 8, sp: true, ..Parallel::default() };
    let t = vramscope::estimate::shard_spec(sc.model.transformer().unwrap(), &sc.parallel);
    let ctx = vramscope::estimate::activations::Ctx::new(&sc);
    println!("t {} ts {} c {} r {}", ctx.t, ctx.ts, ctx.c, ctx.r);
    for r in vramscope::engine::walk::block_ops(&ctx, &t, 0) { println!("    {:>10} {}", r.kept_bytes, r.op); }
}
