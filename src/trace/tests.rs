//! The trace file's checks and the replay, on hand-made traces and on mutated real ones.

use super::*;
use crate::engine::ops::net::Net;
use crate::engine::walk::net::NetRun;

/// A one-dim trace: an input of `n` floats, a storage of `size(n)` elements saved for backward,
/// its gradient and a parameter's.
fn synthetic(values: &[u64], size: impl Fn(i64) -> i64) -> String {
    let points: Vec<String> = values
        .iter()
        .map(|&n| format!(r#"{{"dims":[{n}],"shapes":[[{n}],[{s}],[{s}],[8],[{s}]]}}"#, s = size(n as i64)))
        .collect();
    format!(
        r#"{{"format":"vramscope-trace","version":1,"torch":"2.15","model_file":"m.py","precision":"fp32","trainable":"all","dims":[{{"name":"n","values":[{}]}}],"params":[{{"name":"w","shape":[8],"dtype":"float32","trainable":true}}],"buffers":[],"strings":["","input","mm","lin","mm_backward"],"events":[["a",0,4,1,0,"input"],["a",1,4,2,3,"train"],["a",2,4,4,0,"backward"],["a",3,4,4,0,"backward"],["f",2,0,0,0,"backward"],["f",1,0,0,0,"backward"],["a",4,4,2,3,"infer"],["f",4,0,0,0,"infer"]],"saved":[1],"grads":[[3,0]],"points":[{}]}}"#,
        values.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
        points.join(",")
    )
}

#[test]
fn a_linear_size_extrapolates_and_replays_exactly() {
    let t = TracedModel::parse("t", &synthetic(&[2, 3, 4], |n| 1000 * n)).expect("parses");
    assert!(!t.dims[0].traced_only && t.dims[0].checked());
    let x = t.resolve(|_| Some(100)).expect("any n");
    let (net, run) = replay::run(&t, &x, false);
    let s = crate::units::round_alloc(4000 * 100);
    assert_eq!(run.held, 512);
    assert_eq!(run.saved_alloc, run.held + s);
    assert_eq!(run.forward_most.0, run.held + s);
    // the backward: the saved storage and its gradient alive, then the parameter's gradient
    assert_eq!(run.backward.len(), 2);
    assert_eq!(run.backward[0].buffers, s);
    assert_eq!(net.nodes[run.backward[1].node].params, [8]);
    assert_eq!(run.infer_peak, run.held + s);
}

#[test]
fn a_square_is_answered_only_where_it_was_traced() {
    let t = TracedModel::parse("t", &synthetic(&[2, 3, 4], |n| n * n)).expect("parses");
    assert!(t.dims[0].traced_only);
    assert!(t.misfits[0].contains("not multilinear in n"), "{:?}", t.misfits);
    assert!(t.resolve(|_| Some(3)).is_ok());
    let e = t.resolve(|_| Some(5)).expect_err("not traced");
    assert!(e.0.contains("the trace answers at 2, 3, 4 only"), "{e}");
}

#[test]
fn broken_structure_is_refused_in_one_line() {
    let good = synthetic(&[2, 3, 4], |n| n);
    for (from, to, says) in [
        (r#""version":1"#, r#""version":7"#, "trace version 7"),
        (r#""precision":"fp32""#, r#""precision":"int3""#, "precision \"int3\""),
        (r#""values":[2,3,4]"#, r#""values":[2,2,4]"#, "values must be distinct"),
        (r#"["f",2,0"#, r#"["f",9,0"#, "frees storage 9 before it was made"),
        (r#""grads":[[3,0]]"#, r#""grads":[[3,5]]"#, "a parameter the trace does not list"),
        (r#""dtype":"float32""#, r#""dtype":"quux""#, "dtype quux"),
    ] {
        let text = good.replace(from, to);
        assert_ne!(text, good, "{from}");
        let e = TracedModel::parse("f.vstrace.json", &text).expect_err(says).to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{e}");
    }
    // one point with a storage fewer: it ran other events
    let other = synthetic(&[2, 3, 4], |n| n).replacen(r#"[4],[8],[4]]"#, r#"[4],[8]]"#, 1);
    let e = TracedModel::parse("f", &other).expect_err("differs").to_string();
    assert!(e.contains("point [4] has 4 shapes for 5 storages made"), "{e}");
}

#[test]
fn mutated_and_truncated_real_traces_never_panic() {
    // a trace with every record: calls, savers, natural frees, first reads
    let good = include_str!("../../tests/data/traced/block-bf16-lora.vstrace.json");
    let t = TracedModel::parse("good", good).expect("the shipped trace parses");
    assert!(t.checkpoint.available());
    assert!(t.resolve(|d| if d == "batch" { Some(9) } else { Some(64) }).is_ok());
    let bytes = good.as_bytes();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..300 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut m = bytes.to_vec();
        let at = (seed % bytes.len() as u64) as usize;
        if round % 3 == 0 {
            m.truncate(at);
        } else {
            // a digit, a sign or a bracket in place of one byte
            m[at] = b"0123456789-[]{},\"9"[(seed >> 32) as usize % 18];
        }
        let text = String::from_utf8_lossy(&m);
        if let Ok(t) = TracedModel::parse("m", &text)
            && let Ok(x) = t.resolve(|_| Some(7))
        {
            let _ = replay::run(&t, &x, false);
            let _ = replay::run(&t, &x, true);
        }
    }
}

#[test]
fn checkpointing_drops_a_blocks_saves_and_reruns_its_forward_in_backward() {
    let t = TracedModel::parse("b", include_str!("../../tests/data/traced/block-bf16-lora.vstrace.json"))
        .expect("parses");
    assert_eq!(t.checkpoint.blocks, ["Block"]);
    assert_eq!(t.checkpoint.regions.len(), 2, "two blocks");
    let x = t.resolve(|d| if d == "batch" { Some(5) } else { Some(200) }).expect("resolves");
    let (net0, plain) = replay::run(&t, &x, false);
    let (net1, ckpt) = replay::run(&t, &x, true);
    assert!(ckpt.saved_alloc * 2 < plain.saved_alloc, "{} of {}", ckpt.saved_alloc, plain.saved_alloc);
    // each block's forward again in backward: more ops, the same parameter gradients
    assert!(net1.nodes.len() > net0.nodes.len() && ckpt.backward.len() > plain.backward.len());
    let grads = |n: &Net| n.nodes.iter().map(|n| n.params.len()).sum::<usize>();
    assert_eq!(grads(&net0), grads(&net1));
    // what backward holds at its most: never more than without checkpointing
    let most = |r: &NetRun| r.backward.iter().map(|b| b.acts + b.buffers).max().unwrap_or(0);
    assert!(most(&ckpt) < most(&plain));
    // the forward frees what it no longer keeps: its most alive is not above the plain one's
    assert!(ckpt.forward_most.0 + ckpt.forward_most.1 <= plain.forward_most.0 + plain.forward_most.1);
    assert_eq!(ckpt.infer_peak, plain.infer_peak);
}
