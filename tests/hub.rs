//! `--model ORG/NAME` against a fake Hub on loopback (tests/hub/fake.rs), run through the built
//! binary with its own environment (HF_ENDPOINT, HF_HOME, XDG_CACHE_HOME in a temporary folder):
//! public single-file and sharded repos (the parameter count is the headers' total, and no byte
//! past a header is served), gated repos and the token, a redirect to a second host (the token
//! does not follow), 404 of a repo and of a revision, 429, a slow answer, broken headers, the
//! Hugging Face cache as transformers lays it out, vramscope's metadata cache and offline mode.

#[path = "hub/fake.rs"]
mod fake;
#[path = "hub/layouts.rs"]
mod layouts;

use fake::{Behaviour, File, GOOD_TOKEN, Hub, Repo, config, llama_tensors, weights};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The prefix of each shard the first Range request asks for: the header's length.
const PREFIX: u64 = 8;
const SHA: &str = "0123456789abcdef0123456789abcdef01234567";
/// Llama-3.2-1B's parameters (tests/data/hub/params.json).
const LLAMA_1B: u64 = 1_235_814_400;

fn single(gated: bool) -> Repo {
    let t = llama_tensors();
    let st = File::Safetensors { header: fake::header(&t, 0), weights: weights(&t) };
    let files = BTreeMap::from([("config.json".into(), config()), ("model.safetensors".into(), st)]);
    Repo { sha: SHA.into(), revisions: vec!["main".into()], files, gated }
}

/// Two shards; the first's header 150 KiB.
fn sharded() -> Repo {
    sharded_n(2)
}

/// `n` shards and their index; the first shard's header 150 KiB.
fn sharded_n(n: usize) -> Repo {
    let t = llama_tensors();
    let per = t.len().div_ceil(n);
    let mut map = serde_json::Map::new();
    let mut files = BTreeMap::from([
        ("config.json".into(), config()),
        ("README.md".into(), File::Bytes(b"# sharded".to_vec())),
    ]);
    for (i, part) in t.chunks(per).enumerate() {
        let name = format!("model-{:05}-of-{n:05}.safetensors", i + 1);
        for (tensor, _) in part {
            map.insert(tensor.clone(), Value::from(name.clone()));
        }
        let pad = if i == 0 { 150 << 10 } else { 0 };
        files.insert(name, File::Safetensors { header: fake::header(part, pad), weights: weights(part) });
    }
    let index = serde_json::json!({ "metadata": { "total_size": weights(&t) }, "weight_map": map });
    files.insert("model.safetensors.index.json".into(), File::Bytes(index.to_string().into_bytes()));
    Repo { sha: SHA.into(), revisions: vec!["main".into(), "v1".into()], files, gated: false }
}

fn broken(st: Vec<u8>) -> Repo {
    let files =
        BTreeMap::from([("config.json".into(), config()), ("model.safetensors".into(), File::Bytes(st))]);
    Repo { sha: SHA.into(), revisions: vec!["main".into()], files, gated: false }
}

/// A new architecture: Llama's keys under an unknown model_type, a tensor more than a Llama has.
fn unknown_arch() -> Repo {
    let mut cfg: Value =
        serde_json::from_slice(&std::fs::read("tests/data/hub/llama-3.2-1b/config.json").unwrap()).unwrap();
    cfg["model_type"] = "mystery".into();
    cfg["architectures"] = serde_json::json!(["MysteryForCausalLM"]);
    let mut t = llama_tensors();
    t.push(("model.mystery_gate.weight".into(), vec![2048, 2048]));
    let st = File::Safetensors { header: fake::header(&t, 0), weights: weights(&t) };
    let files = BTreeMap::from([
        ("config.json".into(), File::Bytes(cfg.to_string().into_bytes())),
        ("model.safetensors".into(), st),
    ]);
    Repo { sha: SHA.into(), revisions: vec!["main".into()], files, gated: false }
}

fn repos() -> BTreeMap<String, Repo> {
    let mut truncated = 5000u64.to_le_bytes().to_vec();
    truncated.extend(b"{\"a\": {\"dtype\": \"BF16\", \"shape\": [2], \"data_offsets\": [0, 4]}");
    let mut not_json = 16u64.to_le_bytes().to_vec();
    not_json.extend(b"hello, not json!\0\0\0\0");
    let mut huge = (1u64 << 40).to_le_bytes().to_vec();
    huge.extend([b' '; 64]);
    BTreeMap::from([
        ("acme/llama-single".into(), single(false)),
        ("acme/llama-sharded".into(), sharded()),
        ("meta/llama-gated".into(), single(true)),
        ("acme/truncated".into(), broken(truncated)),
        ("acme/not-json".into(), broken(not_json)),
        ("acme/huge-header".into(), broken(huge)),
        ("acme/mystery".into(), unknown_arch()),
        ("meta-llama/Llama-3.2-1B".into(), single(false)),
        ("acme/llama-beams".into(), {
            let mut r = single(false);
            let g = br#"{"max_new_tokens": 512, "num_beams": 4, "cache_implementation": "static"}"#;
            r.files.insert("generation_config.json".into(), File::Bytes(g.to_vec()));
            r
        }),
        (
            "acme/gguf-only".into(),
            Repo {
                sha: SHA.into(),
                revisions: vec!["main".into()],
                files: BTreeMap::from([("model-q4.gguf".into(), File::Bytes(b"GGUF".to_vec()))]),
                gated: false,
            },
        ),
    ])
}

/// A fresh temporary home for one test, removed when dropped.
struct TempHome(PathBuf);

impl std::ops::Deref for TempHome {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn home(tag: &str) -> TempHome {
    let d = std::env::temp_dir().join(format!("vramscope-hub-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TempHome(d)
}

/// The binary with the Hub's and the caches' variables set, and no others of Hugging Face's.
fn run(endpoint: &str, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_vramscope"));
    c.args(args)
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("HF_HOME", home.join("hf"))
        .env("HF_ENDPOINT", endpoint)
        .env("HF_HUB_DOWNLOAD_TIMEOUT", "5");
    // and no proxy: the fake Hub is on loopback
    for k in [
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HF_HUB_OFFLINE",
        "HF_HUB_CACHE",
        "HUGGINGFACE_HUB_CACHE",
        "HF_TOKEN_PATH",
        "MODELSCOPE_DOMAIN",
        "MODELSCOPE_API_TOKEN",
        "MODELSCOPE_CACHE",
        "ALL_PROXY",
        "all_proxy",
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "http_proxy",
    ] {
        c.env_remove(k);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn estimate(hub: &str, home: &Path, model: &str, env: &[(&str, &str)]) -> Output {
    run(hub, home, &["estimate", "--model", model, "--json"], env)
}

fn json(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn err(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(2), "stdout {}", String::from_utf8_lossy(&o.stdout));
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(e.trim_end().lines().count(), 1, "one line: {e}");
    e
}

#[test]
fn a_single_file_repo_gives_the_headers_exact_count_and_nothing_past_the_prefix_is_served() {
    let hub = Hub::start(repos(), Behaviour::default());
    let h = home("single");
    let v = json(&estimate(&hub.url, &h, "acme/llama-single", &[]));
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    assert_eq!(v["model"]["family"], "llama");
    assert_eq!(v["model"]["name"], "llama-single");
    let src = &v["model"]["source"];
    assert_eq!(
        (src["hub_id"].as_str(), src["sha"].as_str(), src["from"].as_str()),
        (Some("acme/llama-single"), Some(SHA), Some("network"))
    );
    assert!(v["notes"].to_string().contains("acme/llama-single at commit"), "{}", v["notes"]);
    // the header's length, then the header: not one byte of the weights
    assert_eq!(hub.weight_bytes.load(std::sync::atomic::Ordering::Relaxed), 0, "weights served");
    let paths: Vec<String> = hub.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths.len(), 4, "{paths:?}");
    assert!(hub.requests().iter().all(|r| !r.headers.contains_key("authorization")));
}

#[test]
fn a_sharded_repo_reads_each_shards_header_in_three_round_trips_and_the_cache_answers_next() {
    let latency = Duration::from_millis(60);
    let hub = Hub::start(repos(), Behaviour { latency, ..Behaviour::default() });
    let h = home("sharded");
    let v = json(&estimate(&hub.url, &h, "acme/llama-sharded", &[]));
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    // each shard's length, then its header up to its end: no weight byte
    assert_eq!(hub.weight_bytes.load(std::sync::atomic::Ordering::Relaxed), 0, "weights served");
    let reqs = hub.requests();
    // api, config, index, 2 lengths, 2 headers (the first 150 KiB)
    assert_eq!(reqs.len(), 7, "{:?}", reqs.iter().map(|r| &r.path).collect::<Vec<_>>());
    assert_eq!(fake::round_trips(&reqs), 3);
    assert!(reqs.iter().all(|r| !r.path.contains("README")));
    let ranges: Vec<&str> = reqs.iter().filter_map(|r| r.headers.get("range").map(String::as_str)).collect();
    let prefix = format!("bytes=0-{}", PREFIX - 1);
    assert!(
        ranges.iter().filter(|r| **r == prefix).count() == 2
            && ranges.iter().filter(|r| r.starts_with(&format!("bytes={PREFIX}-"))).count() == 2,
        "{ranges:?}"
    );
    // the metadata cache answers the second run: no request
    let v = json(&estimate(&hub.url, &h, "acme/llama-sharded", &[]));
    assert_eq!(
        (v["model"]["n_params"].as_u64(), v["model"]["source"]["from"].as_str()),
        (Some(LLAMA_1B), Some("cache"))
    );
    assert_eq!(hub.requests().len(), 7, "the warm run made requests");
    // offline, from the same cache
    let v =
        json(&run(&hub.url, &h, &["estimate", "--model", "acme/llama-sharded", "--offline", "--json"], &[]));
    assert_eq!(v["model"]["source"]["from"], "cache");
    // --refresh asks the Hub again which commit the branch is at
    let before = hub.requests().len();
    let v =
        json(&run(&hub.url, &h, &["estimate", "--model", "acme/llama-sharded", "--refresh", "--json"], &[]));
    assert_eq!(v["model"]["source"]["from"], "network");
    assert_eq!(hub.requests().len(), before + 7);
    // a revision is its own cache key: fetched once
    let v = json(&estimate(&hub.url, &h, "acme/llama-sharded@v1", &[]));
    assert_eq!(
        (v["model"]["source"]["revision"].as_str(), v["model"]["source"]["from"].as_str()),
        (Some("v1"), Some("network"))
    );
    assert!(hub.requests().iter().any(|r| r.path.ends_with("/revision/v1")));
}

#[test]
fn a_corrupt_cache_entry_is_fetched_again() {
    let hub = Hub::start(repos(), Behaviour::default());
    let h = home("corrupt");
    json(&estimate(&hub.url, &h, "acme/llama-single", &[]));
    let entry = h.join("cache/vramscope/hub/127.0.0.1_").to_string_lossy().into_owned();
    let port = hub.url.rsplit(':').next().unwrap();
    let dir = PathBuf::from(format!("{entry}{port}/acme--llama-single/{SHA}"));
    std::fs::write(dir.join("model.safetensors"), b"\x05\0\0\0\0\0\0\0{{{{{").unwrap();
    let n = hub.requests().len();
    let v = json(&estimate(&hub.url, &h, "acme/llama-single", &[]));
    assert_eq!(
        (v["model"]["n_params"].as_u64(), v["model"]["source"]["from"].as_str()),
        (Some(LLAMA_1B), Some("network"))
    );
    assert!(hub.requests().len() > n);
}

#[test]
fn a_gated_repo_needs_the_token_which_does_not_follow_a_redirect_to_another_host() {
    let cdn = Hub::start(
        repos()
            .into_iter()
            .map(|(k, mut r)| {
                (k, {
                    r.gated = false;
                    r
                })
            })
            .collect(),
        Behaviour::default(),
    );
    let b = Behaviour { redirect_to: Some(cdn.url.clone()), ..Behaviour::default() };
    let hub = Hub::start(repos(), b);
    let h = home("gated");
    let e = err(&estimate(&hub.url, &h, "meta/llama-gated", &[]));
    assert!(
        e.contains("HF_TOKEN") && e.contains(&format!("{}/meta/llama-gated", hub.url)) && e.contains("401"),
        "{e}"
    );
    let v = json(&estimate(&hub.url, &h, "meta/llama-gated", &[("HF_TOKEN", GOOD_TOKEN)]));
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    let bearer = format!("Bearer {GOOD_TOKEN}");
    assert!(hub.requests().iter().any(|r| r.headers.get("authorization") == Some(&bearer)));
    assert!(!cdn.requests().is_empty());
    assert!(
        cdn.requests().iter().all(|r| !r.headers.contains_key("authorization")),
        "the token followed the redirect"
    );
    assert!(
        cdn.requests()
            .iter()
            .filter(|r| r.path.ends_with(".safetensors"))
            .all(|r| r.headers.contains_key("range"))
    );
    // the token file under HF_HOME is read when HF_TOKEN is unset
    let h2 = home("gated-file");
    std::fs::create_dir_all(h2.join("hf")).unwrap();
    std::fs::write(h2.join("hf/token"), format!("{GOOD_TOKEN}\n")).unwrap();
    json(&estimate(&hub.url, &h2, "meta/llama-gated", &[]));
    // a wrong token is refused, and said so
    let e = err(&estimate(&hub.url, &home("gated-bad"), "meta/llama-gated", &[("HF_TOKEN", "hf_wrong")]));
    assert!(e.contains("refused"), "{e}");
}

#[test]
fn a_missing_repo_and_a_missing_revision_are_told_apart() {
    for codes in [false, true] {
        let hub = Hub::start(repos(), Behaviour { error_codes: codes, ..Behaviour::default() });
        let h = home("404");
        let e = err(&estimate(&hub.url, &h, "acme/no-such-model", &[]));
        assert!(e.contains("no model repository acme/no-such-model"), "{e}");
        let e =
            err(&run(&hub.url, &h, &["estimate", "--model", "acme/llama-single", "--revision", "nope"], &[]));
        assert!(e.contains("acme/llama-single has no revision nope"), "{e}");
    }
}

#[test]
fn a_429_is_retried_once_after_its_retry_after_then_reported() {
    let hub = Hub::start(repos(), Behaviour { rate_limit: Some((1, 1)), ..Behaviour::default() });
    let t = Instant::now();
    json(&estimate(&hub.url, &home("429a"), "acme/llama-single", &[]));
    assert!(t.elapsed() >= Duration::from_secs(1));
    let hub = Hub::start(repos(), Behaviour { rate_limit: Some((10, 1)), ..Behaviour::default() });
    let e = err(&estimate(&hub.url, &home("429b"), "acme/llama-single", &[]));
    assert!(e.contains("429") && e.contains("retry after 1 s"), "{e}");
    let hub = Hub::start(repos(), Behaviour { rate_limit: Some((10, 3600)), ..Behaviour::default() });
    let t = Instant::now();
    let e = err(&estimate(&hub.url, &home("429c"), "acme/llama-single", &[]));
    assert!(e.contains("retry after 3600 s") && t.elapsed() < Duration::from_secs(5), "{e}");
}

#[test]
fn generation_config_is_read_with_the_config_and_named_in_facts_and_notes() {
    let hub = Hub::start(repos(), Behaviour::default());
    let h = home("beams");
    let v = json(&estimate(&hub.url, &h, "acme/llama-beams", &[]));
    assert_eq!(v["model"]["n_params"], LLAMA_1B, "the numbers are those the flags name");
    let facts = v["model"]["facts"].as_array().unwrap();
    let f = facts.iter().find(|f| f["fact"] == "num_beams").expect("a fact");
    assert_eq!((f["from"].as_str(), f["value"].as_str()), (Some("generation_config.json"), Some("4")));
    let notes = v["notes"].to_string();
    assert!(notes.contains("4 sequences per prompt") && notes.contains("cache_implementation"), "{notes}");
    // fetched in the round trip of config.json
    assert!(hub.requests().iter().any(|r| r.path.ends_with("/generation_config.json")));
    // and read from the metadata cache next time, offline
    let v = json(&estimate(&hub.url, &h, "acme/llama-beams", &[("HF_HUB_OFFLINE", "1")]));
    assert!(v["notes"].to_string().contains("4 sequences per prompt"));
}

#[test]
fn a_mirror_that_serves_branches_only_is_asked_by_the_branch() {
    let hub = Hub::start(repos(), Behaviour { branches_only: true, ..Behaviour::default() });
    let v = json(&estimate(&hub.url, &home("branches"), "acme/llama-sharded@v1", &[]));
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    assert_eq!(v["model"]["source"]["sha"], SHA, "still named by its commit");
    assert!(hub.requests().iter().any(|r| r.path.contains("/resolve/v1/")));
}

#[test]
fn a_server_error_is_asked_once_more_then_reported_in_one_line() {
    let hub = Hub::start(repos(), Behaviour { server_error: Some((1, 503)), ..Behaviour::default() });
    let v = json(&estimate(&hub.url, &home("503a"), "acme/llama-single", &[]));
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    let hub = Hub::start(repos(), Behaviour { server_error: Some((100, 502)), ..Behaviour::default() });
    let e = err(&estimate(&hub.url, &home("503b"), "acme/llama-single", &[]));
    assert!(e.contains("HTTP 502") && e.contains("try again later"), "{e}");
    assert_eq!(hub.requests().len(), 2, "asked twice, no more");
}

#[test]
fn a_slow_hub_times_out_with_the_variable_that_sets_the_limit() {
    let hub = Hub::start(repos(), Behaviour { latency: Duration::from_secs(4), ..Behaviour::default() });
    let t = Instant::now();
    let e = err(&estimate(&hub.url, &home("slow"), "acme/llama-single", &[("HF_HUB_DOWNLOAD_TIMEOUT", "1")]));
    assert!(e.contains("no answer within 1 s") && e.contains("HF_HUB_DOWNLOAD_TIMEOUT"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(4));
}

#[test]
fn broken_headers_are_one_line_errors() {
    let hub = Hub::start(repos(), Behaviour::default());
    let h = home("broken");
    let e = err(&estimate(&hub.url, &h, "acme/truncated", &[]));
    assert!(e.contains("truncated"), "{e}");
    let e = err(&estimate(&hub.url, &h, "acme/not-json", &[]));
    assert!(e.contains("not a safetensors header"), "{e}");
    let e = err(&estimate(&hub.url, &h, "acme/huge-header", &[]));
    assert!(e.contains("over the bound"), "{e}");
    let e = err(&estimate(&hub.url, &h, "acme/gguf-only", &[]));
    assert!(e.contains("no config.json nor .safetensors"), "{e}");
}

#[test]
fn a_server_that_ignores_range_is_read_no_further_than_the_prefix() {
    let hub = Hub::start(repos(), Behaviour { ignore_range: true, ..Behaviour::default() });
    let t = Instant::now();
    let v = json(&estimate(&hub.url, &home("norange"), "acme/llama-sharded", &[]));
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    // 2.4 GB of weights behind the headers: what the server managed to write before the client
    // hung up is the sockets' buffers, not the file
    let sent = hub.weight_bytes.load(std::sync::atomic::Ordering::Relaxed);
    assert!(sent < 32 << 20, "{sent} bytes of weights written");
    assert!(t.elapsed() < Duration::from_secs(20));
}

/// The Hugging Face cache as transformers writes it: blobs, refs/main, snapshots/SHA/ links.
fn hf_cache(root: &Path, repo: &str) {
    let dir = root.join(format!("models--{}", repo.replace('/', "--")));
    let t = llama_tensors();
    let mut st = fake::header(&t, 0);
    st.extend([0u8; 16]);
    let blobs = dir.join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    std::fs::create_dir_all(dir.join("refs")).unwrap();
    std::fs::write(dir.join("refs/main"), SHA).unwrap();
    let snap = dir.join("snapshots").join(SHA);
    std::fs::create_dir_all(&snap).unwrap();
    let cfg = std::fs::read("tests/data/hub/llama-3.2-1b/config.json").unwrap();
    for (name, bytes, blob) in [("config.json", cfg, "b1"), ("model.safetensors", st, "b2")] {
        std::fs::write(blobs.join(blob), bytes).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(format!("../../blobs/{blob}"), snap.join(name)).unwrap();
        #[cfg(not(unix))]
        std::fs::copy(blobs.join(blob), snap.join(name)).unwrap();
    }
}

#[test]
fn the_hugging_face_cache_answers_without_the_network_and_offline_says_what_is_missing() {
    let hub = Hub::start(repos(), Behaviour::default());
    let h = home("hfcache");
    hf_cache(&h.join("hf/hub"), "someone/cached-llama");
    let v = json(&estimate(&hub.url, &h, "someone/cached-llama", &[]));
    assert_eq!(
        (v["model"]["n_params"].as_u64(), v["model"]["source"]["from"].as_str()),
        (Some(LLAMA_1B), Some("hf-cache"))
    );
    assert_eq!(v["model"]["source"]["sha"], SHA);
    // HF_HUB_CACHE elsewhere, offline by the variable
    let other = h.join("elsewhere");
    hf_cache(&other, "someone/moved-llama");
    let o = other.to_string_lossy().into_owned();
    let v = json(&estimate(
        &hub.url,
        &h,
        "someone/moved-llama",
        &[("HF_HUB_CACHE", &o), ("HF_HUB_OFFLINE", "1")],
    ));
    assert_eq!(v["model"]["source"]["from"], "hf-cache");
    assert!(hub.requests().is_empty(), "{:?}", hub.requests());
    let e = err(&estimate(&hub.url, &h, "acme/llama-single", &[("HF_HUB_OFFLINE", "1")]));
    assert!(e.contains("neither the Hugging Face cache") && e.contains("offline"), "{e}");
    // in the cache but unreadable: that is the error, not "not cached"
    hf_cache(&h.join("hf/hub"), "someone/broken-llama");
    let snap = h.join(format!("hf/hub/models--someone--broken-llama/snapshots/{SHA}"));
    std::fs::remove_file(snap.join("config.json")).unwrap();
    std::fs::write(snap.join("config.json"), "{ not json").unwrap();
    let e = err(&estimate(&hub.url, &h, "someone/broken-llama", &[("HF_HUB_OFFLINE", "1")]));
    assert!(e.contains("someone/broken-llama") && e.contains("config.json") && !e.contains("neither"), "{e}");
    assert!(hub.requests().is_empty());
}

#[test]
fn presets_paths_and_other_subcommands_keep_working() {
    let hub = Hub::start(repos(), Behaviour::default());
    let h = home("presets");
    // a preset's Hub id is looked up on the endpoint HF_ENDPOINT names; where that has no such
    // repository the preset answers, and says why
    let v = json(&estimate(&hub.url, &h, "Qwen/Qwen3-8B", &[]));
    assert!(v["model"]["source"].is_null());
    assert!(
        v["notes"].to_string().contains("the built-in preset Qwen/Qwen3-8B answers instead"),
        "{}",
        v["notes"]
    );
    assert!(!hub.requests().is_empty());
    // one the endpoint holds is read from it
    let v = json(&estimate(&hub.url, &h, "meta-llama/Llama-3.2-1B", &[]));
    assert_eq!(v["model"]["source"]["from"], "network");
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    // without HF_ENDPOINT, no request: the preset
    let o = Command::new(env!("CARGO_BIN_EXE_vramscope"))
        .args(["estimate", "--model", "Qwen/Qwen3-8B", "--json"])
        .env("HOME", &*h)
        .env_remove("HF_ENDPOINT")
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["model"]["source"].is_null() && !v["notes"].to_string().contains("answers instead"));
    let v =
        json(&run(&hub.url, &h, &["serve", "--model", "acme/llama-single", "--gpu", "h100", "--json"], &[]));
    assert_eq!(
        (v["source"]["hub_id"].as_str(), v["source"]["from"].as_str()),
        (Some("acme/llama-single"), Some("network"))
    );
    let o = run(&hub.url, &h, &["plan", "--model", "acme/llama-single", "--gpu", "h100"], &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let e = err(&run(&hub.url, &h, &["estimate", "--model", "llama-3.1-8b", "--revision", "main"], &[]));
    assert!(e.contains("--revision applies to a Hub id"), "{e}");
}

/// The figures of docs/performance.md: a cold fetch against the fake Hub with 50 ms added to
/// every request (2 and 16 shards), and a warm run from the metadata cache, each a whole process.
/// `cargo test --test hub -- --ignored --nocapture timings`
#[test]
#[ignore = "a measurement, not a check"]
fn timings() {
    let b = Behaviour { latency: Duration::from_millis(50), ..Behaviour::default() };
    let repos =
        BTreeMap::from([("acme/two".to_owned(), sharded_n(2)), ("acme/sixteen".to_owned(), sharded_n(16))]);
    let hub = Hub::start(repos, b);
    let secs = |f: &dyn Fn() -> Output| {
        let t = Instant::now();
        let o = f();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        t.elapsed().as_secs_f64()
    };
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for repo in ["acme/two", "acme/sixteen"] {
        let mut cold = Vec::new();
        let mut warm = Vec::new();
        for i in 0..5 {
            let h = home(&format!("timing-{}-{i}", repo.replace('/', "-")));
            let n = hub.requests().len();
            cold.push(secs(&|| estimate(&hub.url, &h, repo, &[])));
            let reqs = hub.requests().len() - n;
            warm.push(secs(&|| estimate(&hub.url, &h, repo, &[])));
            assert_eq!(hub.requests().len() - n, reqs);
            if i == 0 {
                println!("{repo}: {reqs} requests cold");
            }
        }
        println!("{repo}: cold {:.3} s, warm {:.3} s (median of 5)", median(cold), median(warm));
    }
    let local: Vec<f64> = (0..5)
        .map(|_| {
            secs(&|| {
                estimate(&hub.url, &home("timing-local"), "tests/data/hub/llama-3.2-1b/config.json", &[])
            })
        })
        .collect();
    println!("local config.json: {:.3} s (median of 5)", median(local));
}

#[test]
fn an_unknown_architecture_counts_the_headers_tensors() {
    let hub = Hub::start(repos(), Behaviour::default());
    let v = json(&estimate(&hub.url, &home("mystery"), "acme/mystery", &[]));
    assert_eq!(v["model"]["n_params"], LLAMA_1B + 2048 * 2048);
    assert_eq!(v["model"]["validated"], false);
}

#[test]
fn a_config_only_snapshot_is_fetched_online_and_used_offline_with_a_note() {
    let hub = Hub::start(repos(), Behaviour::default());
    let h = home("cfgonly");
    let snap = h.join(format!("hf/hub/models--acme--llama-single/snapshots/{SHA}"));
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::copy("tests/data/hub/llama-3.2-1b/config.json", snap.join("config.json")).unwrap();
    std::fs::create_dir_all(h.join("hf/hub/models--acme--llama-single/refs")).unwrap();
    std::fs::write(h.join("hf/hub/models--acme--llama-single/refs/main"), SHA).unwrap();
    let v = json(&estimate(&hub.url, &h, "acme/llama-single", &[("HF_HUB_OFFLINE", "1")]));
    assert_eq!(v["model"]["source"]["from"], "hf-cache");
    assert!(v["notes"].to_string().contains("no safetensors in the Hugging Face cache"), "{}", v["notes"]);
    assert!(hub.requests().is_empty());
    let v = json(&estimate(&hub.url, &h, "acme/llama-single", &[]));
    assert_eq!(
        (v["model"]["source"]["from"].as_str(), v["model"]["n_params"].as_u64()),
        (Some("network"), Some(LLAMA_1B))
    );
}

#[test]
fn an_unreachable_hub_names_the_endpoint_and_offline() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let e = err(&estimate(&url, &home("down"), "acme/llama-single", &[]));
    assert!(e.contains(&format!("HF_ENDPOINT={url}")) && e.contains("--offline"), "{e}");
}

#[test]
fn a_response_that_lies_about_its_bytes_is_an_error() {
    let hub = Hub::start(repos(), Behaviour { wrong_content_range: true, ..Behaviour::default() });
    let e = err(&estimate(&hub.url, &home("lie-range"), "acme/llama-single", &[]));
    assert!(e.contains(&format!("asked for bytes 0-{}", PREFIX - 1)), "{e}");
    let hub = Hub::start(repos(), Behaviour { short_body: true, ..Behaviour::default() });
    let e = err(&estimate(&hub.url, &home("lie-length"), "acme/llama-single", &[]));
    assert!(e.contains("ended before"), "{e}");
}

#[test]
fn a_hub_that_serves_one_keep_alive_connection_at_a_time_is_not_stalled() {
    let hub = Hub::start(repos(), Behaviour { sequential: true, ..Behaviour::default() });
    let t = Instant::now();
    let v = json(&estimate(
        &hub.url,
        &home("sequential"),
        "acme/llama-sharded",
        &[("HF_HUB_DOWNLOAD_TIMEOUT", "3")],
    ));
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    assert!(t.elapsed() < Duration::from_secs(3));
}
