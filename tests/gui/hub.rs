//! The model section's Hub field against the fake Hub on loopback (tests/hub/fake.rs): an id typed
//! and entered loads the model with the headers' exact parameter count, the command shown names
//! its commit and prints the window's total when the built binary runs it, the id is among the recent ones and survives the saved state; a gated repo without
//! a token says so and keeps the scenario; a cancelled slow fetch frees the field at once and its
//! late answer is dropped.

#[path = "../hub/fake.rs"]
mod fake;

use super::test_harness;
use eframe::egui::{self, Key, accesskit::Role};
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;
use fake::{Behaviour, File, Hub, Repo, config, llama_tensors, weights};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use vramscope::gui::app::{StatusKind, VramApp};
use vramscope::gui::state::{AppState, ModelChoice};
use vramscope::hub::Access;

const SHA: &str = "fedcba9876543210fedcba9876543210fedcba98";

fn llama(gated: bool) -> Repo {
    let t = llama_tensors();
    let st = File::Safetensors { header: fake::header(&t, 0), weights: weights(&t) };
    let files = BTreeMap::from([("config.json".into(), config()), ("model.safetensors".into(), st)]);
    Repo { sha: SHA.into(), revisions: vec!["main".into()], files, gated }
}

fn fake_hub(latency: Duration) -> Hub {
    let repos = BTreeMap::from([
        ("acme/llama-single".into(), llama(false)),
        ("meta/llama-gated".into(), llama(true)),
    ]);
    Hub::start(repos, Behaviour { latency, error_codes: true, ..Behaviour::default() })
}

/// A folder of the test's own for both caches (empty: every fetch reaches the fake Hub).
fn home(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vramscope-gui-hub-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The app reaching the fake Hub, no token, the caches in `home` (the process's environment
/// untouched).
fn app(hub: &Hub, home: &std::path::Path) -> Harness<'static, VramApp> {
    let (url, home) = (hub.url.clone(), home.to_path_buf());
    let access = Access::from_vars(false, move |k| match k {
        "HF_ENDPOINT" => Some(url.clone()),
        "HF_HOME" => Some(home.join("hf").display().to_string()),
        "XDG_CACHE_HOME" => Some(home.join("cache").display().to_string()),
        _ => None,
    });
    assert_eq!(access.token, None);
    let mut app = VramApp::new(AppState::default());
    app.hub.access = access;
    let mut h = test_harness(egui::vec2(1280.0, 800.0), app);
    h.run();
    h
}

/// The total `cmd` (a `vramscope estimate` line the window shows) prints, run through the built
/// binary against the same fake Hub and caches, no other Hugging Face variable set.
fn cli_total(cmd: &str, hub: &Hub, home: &std::path::Path) -> u64 {
    assert!(!cmd.contains('\''), "a plain command: {cmd}");
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_vramscope"));
    c.args(cmd.split_whitespace().skip(1))
        .arg("--json")
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("HF_HOME", home.join("hf"))
        .env("HF_ENDPOINT", &hub.url);
    for k in ["HF_TOKEN", "HF_HUB_OFFLINE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN_PATH"] {
        c.env_remove(k);
    }
    let o = c.output().unwrap();
    assert!(o.status.success(), "{cmd}: {}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["bytes"]["total"].as_u64().unwrap()
}

/// Types `id` in the Hub field and presses Enter.
fn enter_id(h: &mut Harness<'_, VramApp>, id: &str) {
    h.get_by_role_and_label(Role::TextInput, "Hub id").focus();
    h.run();
    h.get_by_role_and_label(Role::TextInput, "Hub id").type_text(id);
    h.run();
    h.key_press(Key::Enter);
    // the spinner repaints every frame: step, not run, while it turns
    h.step();
}

/// Frames until the fetch's answer is taken (at most 20 s).
fn wait(h: &mut Harness<'_, VramApp>) {
    let t0 = Instant::now();
    while h.state().hub.pending().is_some() {
        assert!(t0.elapsed() < Duration::from_secs(20), "the fetch never ended");
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    h.run();
}

#[test]
fn a_hub_id_entered_loads_the_model_with_the_headers_parameter_count() {
    let hub = fake_hub(Duration::ZERO);
    let dir = home("public");
    let mut h = app(&hub, &dir);
    enter_id(&mut h, "acme/llama-single");
    assert_eq!(h.state().hub.pending(), Some("acme/llama-single"), "the fetch runs in the background");
    assert!(h.query_by_label_contains("Fetching acme/llama-single").is_some(), "the spinner's line");
    wait(&mut h);
    let (kind, msg) = h.state().status.clone();
    assert_eq!(kind, StatusKind::Info, "{msg}");
    assert!(msg.contains(&format!("acme/llama-single at commit {SHA}")), "where it came from: {msg}");
    let header_params: u64 = llama_tensors().iter().map(|(_, s)| s.iter().product::<u64>()).sum();
    let settings = h.state().state.settings.clone();
    assert!(
        matches!(&settings.model, ModelChoice::Custom { path, .. } if *path == format!("acme/llama-single@{SHA}")),
        "{:?}",
        settings.model
    );
    let Some(Ok(c)) = &h.state().derived.current else { panic!("no estimate") };
    assert_eq!(c.estimate.n_params, header_params);
    assert_eq!(c.estimate.n_params, 1_235_814_400, "Llama-3.2-1B");
    // the command shown gives the same answer: the commit, not the branch
    let cmd = vramscope::gui::slide::command(c, &settings);
    assert!(cmd.starts_with(&format!("vramscope estimate --model acme/llama-single@{SHA} ")), "{cmd}");
    assert_eq!(cli_total(&cmd, &hub, &dir), c.estimate.total, "{cmd} gives the window's total");
    assert_eq!(h.state().state.view.hub_recent, ["acme/llama-single"]);
    // the recent ids' menu fetches one again: from vramscope's metadata cache now
    h.get_by_role_and_label(Role::ComboBox, "Recent").click();
    h.run();
    h.get_all_by_label("acme/llama-single").last().unwrap().click();
    h.step();
    assert_eq!(h.state().hub.pending(), Some("acme/llama-single"), "picked from the recent ids");
    wait(&mut h);
    assert!(h.state().status.1.contains("metadata cache"), "{:?}", h.state().status);
    assert_eq!(h.state().state.settings.model, settings.model);
    // the recent ids and the model survive the saved state
    let back = AppState::from_stored(Some(&h.state().state.to_stored())).unwrap().unwrap();
    assert_eq!(back.view.hub_recent, ["acme/llama-single"]);
    assert_eq!(back.settings.model, settings.model);
    // the config and the header, once (the second time from the cache): not one byte of the
    // 2.4 GB of weights
    assert_eq!(hub.weight_bytes.load(std::sync::atomic::Ordering::Relaxed), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_why_panel_names_where_each_fact_came_from() {
    let hub = fake_hub(Duration::ZERO);
    let dir = home("facts");
    let mut h = app(&hub, &dir);
    enter_id(&mut h, "acme/llama-single");
    wait(&mut h);
    // at the Why column's foot: scrolled into view, then opened (which brings the list up)
    h.get_by_label("Where the model's facts come from").scroll_to_me();
    h.run();
    h.get_by_label("Where the model's facts come from").click();
    h.run();
    assert!(h.query_by_label("parameters = 1235814400").is_some(), "the header's count");
    assert!(
        !h.get_all_by_label("· safetensors header").collect::<Vec<_>>().is_empty(),
        "named as its source"
    );
    assert!(h.query_by_label("num_hidden_layers").is_some(), "a key of the file");
    assert!(!h.get_all_by_label("· config.json").collect::<Vec<_>>().is_empty());
    // kept with the model in the saved state
    let back = AppState::from_stored(Some(&h.state().state.to_stored())).unwrap().unwrap();
    let ModelChoice::Custom { facts, .. } = back.settings.model else { panic!("a fetched model") };
    assert!(facts.iter().any(|f| f.fact == "parameters" && f.from == "safetensors header"), "{facts:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_gated_repo_without_a_token_says_so_and_keeps_the_scenario() {
    let hub = fake_hub(Duration::ZERO);
    let dir = home("gated");
    let mut h = app(&hub, &dir);
    let before = h.state().state.settings.clone();
    enter_id(&mut h, "meta/llama-gated");
    wait(&mut h);
    let (kind, msg) = h.state().status.clone();
    assert_eq!(kind, StatusKind::Error, "{msg}");
    assert!(msg.contains("gated") && msg.contains("HF_TOKEN"), "{msg}");
    assert_eq!(msg.lines().count(), 1, "one line: {msg}");
    assert_eq!(h.state().state.settings, before, "the scenario as it was");
    assert!(h.state().state.view.hub_recent.is_empty(), "a failed fetch is not a recent id");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cancel_frees_the_field_at_once_and_drops_the_slow_fetchs_answer() {
    let hub = fake_hub(Duration::from_millis(300));
    let dir = home("cancel");
    let mut h = app(&hub, &dir);
    let before = h.state().state.settings.clone();
    enter_id(&mut h, "acme/llama-single");
    h.step();
    h.get_by_role_and_label(Role::Button, "Cancel").click();
    h.run();
    assert_eq!(h.state().hub.pending(), None);
    assert!(h.query_by_role_and_label(Role::TextInput, "Hub id").is_some(), "the field is back at once");
    assert!(h.state().status.1.contains("Stopped waiting for acme/llama-single"), "{:?}", h.state().status);
    // the answer comes later, and is dropped
    let t0 = Instant::now();
    while h.state().hub.dropped() == 0 {
        assert!(t0.elapsed() < Duration::from_secs(20), "the slow fetch never answered");
        h.run();
        std::thread::sleep(Duration::from_millis(20));
    }
    h.run();
    assert_eq!(h.state().state.settings, before, "the late answer changed nothing");
    assert!(h.state().state.view.hub_recent.is_empty());
    assert!(!hub.requests().is_empty(), "the fetch did reach the Hub");
    let _ = std::fs::remove_dir_all(&dir);
}
