use super::*;
use std::collections::HashMap;

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    move |k| m.get(k).cloned()
}

#[test]
fn hub_ids_are_told_from_paths_and_preset_names() {
    let id = parse_id("meta-llama/Llama-3.2-1B", None).unwrap().unwrap();
    assert_eq!((id.org.as_str(), id.name.as_str(), id.revision), ("meta-llama", "Llama-3.2-1B", None));
    let id = parse_id("Qwen/Qwen3-8B@v1.0", None).unwrap().unwrap();
    assert_eq!(id.revision.as_deref(), Some("v1.0"));
    let id = parse_id("a/b", Some("refs/pr/1")).unwrap().unwrap();
    assert_eq!(id.shown(), "a/b@refs/pr/1");
    assert!(parse_id("a/b@x", Some("y")).unwrap().is_err());
    assert!(parse_id("a/b@", None).unwrap().is_err());
    for not_an_id in [
        "llama-3.1-8b",
        "./a/b",
        "/a/b",
        "a/b/c",
        "a/b.json",
        "m/x.safetensors",
        "a/",
        "../x",
        "a--b/c",
        "-a/b",
        "a/b.",
    ] {
        assert!(parse_id(not_an_id, None).is_none(), "{not_an_id}");
    }
}

#[test]
fn the_environment_is_read_as_huggingface_hub_reads_it() {
    let a = Access::from_vars(false, vars(&[("HOME", "/h")]));
    assert_eq!(a.endpoint, "https://huggingface.co");
    assert_eq!(a.hf_cache.as_deref(), Some(Path::new("/h/.cache/huggingface/hub")));
    assert!(!a.offline && a.token.is_none());
    assert_eq!(a.timeout, Duration::from_secs(10));
    let a = Access::from_vars(
        false,
        vars(&[
            ("HOME", "/h"),
            ("XDG_CACHE_HOME", "/x"),
            ("HF_ENDPOINT", "https://hf-mirror.com/"),
            ("HF_TOKEN", " hf_abc \n"),
            ("HF_HUB_OFFLINE", "yes"),
            ("HF_HUB_DOWNLOAD_TIMEOUT", "2.5"),
        ]),
    );
    assert_eq!(a.endpoint, "https://hf-mirror.com");
    assert_eq!(a.hf_cache.as_deref(), Some(Path::new("/x/huggingface/hub")));
    if !cfg!(windows) && !cfg!(target_os = "macos") {
        assert_eq!(a.own_cache.as_deref(), Some(Path::new("/x/vramscope/hub")));
    }
    assert_eq!(a.token.as_deref(), Some("hf_abc"));
    assert!(a.offline);
    assert_eq!(a.timeout, Duration::from_millis(2500));
    let a = Access::from_vars(
        false,
        vars(&[("HF_HOME", "/hf"), ("HF_HUB_CACHE", "/c"), ("HF_HUB_OFFLINE", "0")]),
    );
    assert_eq!(a.hf_cache.as_deref(), Some(Path::new("/c")));
    assert!(!a.offline);
    assert!(Access::from_vars(true, vars(&[])).offline);
}

#[test]
fn the_token_file_is_read_when_hf_token_is_unset() {
    let dir = std::env::temp_dir().join(format!("vramscope-hub-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("token"), "hf_fromfile\n").unwrap();
    let home = dir.display().to_string();
    let a = Access::from_vars(false, vars(&[("HF_HOME", &home)]));
    assert_eq!(a.token.as_deref(), Some("hf_fromfile"));
    let a = Access::from_vars(false, vars(&[("HF_HOME", &home), ("HF_TOKEN", "hf_env")]));
    assert_eq!(a.token.as_deref(), Some("hf_env"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_are_one_line_and_name_what_to_do() {
    let e = HubError::Gated {
        token_var: "HF_TOKEN",
        repo: "meta-llama/Llama-3.1-8B".into(),
        status: 401,
        page: "https://huggingface.co/meta-llama/Llama-3.1-8B".into(),
        had_token: false,
    }
    .to_string();
    assert!(e.contains("HF_TOKEN") && e.contains("https://huggingface.co/meta-llama/Llama-3.1-8B"), "{e}");
    assert!(!e.contains('\n'));
}

proptest::proptest! {
    /// Whatever bytes a server sends as a shard's first bytes or as the API answer: an error or a
    /// header, never a panic.
    #[test]
    fn malformed_headers_and_answers_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256), n in 0u64..300) {
        if let Ok(len) = fetch::header_len("x.safetensors", &bytes) {
            let _ = fetch::check_header("x.safetensors", &bytes, len);
        }
        let _ = fetch::check_header("x.safetensors", &bytes, n);
        let mut framed = n.to_le_bytes().to_vec();
        framed.extend(&bytes);
        let _ = fetch::check_header("x.safetensors", &framed, n);
        let _ = fetch::parse_api("u", &bytes);
    }

    #[test]
    fn json_shaped_garbage_is_not_a_header(keys in proptest::collection::vec("[a-z.]{0,8}", 0..6), shape in proptest::collection::vec(proptest::num::i64::ANY, 0..4)) {
        let tensors: serde_json::Map<String, serde_json::Value> =
            keys.iter().map(|k| (k.clone(), serde_json::json!({"dtype": "BF16", "shape": shape}))).collect();
        let json = serde_json::Value::Object(tensors).to_string();
        let mut framed = (json.len() as u64).to_le_bytes().to_vec();
        framed.extend(json.as_bytes());
        let _ = fetch::check_header("x.safetensors", &framed, json.len() as u64);
    }
}

#[test]
fn a_header_is_checked_for_its_length_bound_and_json() {
    let too_long = (MAX_HEADER_BYTES + 1).to_le_bytes();
    assert!(fetch::header_len("s", &too_long).unwrap_err().to_string().contains("over the bound"));
    assert!(fetch::header_len("s", &[1, 2, 3]).unwrap_err().to_string().contains("truncated"));
    let json = br#"{"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}}"#;
    let mut ok = (json.len() as u64).to_le_bytes().to_vec();
    ok.extend(json);
    assert!(fetch::check_header("s", &ok, json.len() as u64).is_ok());
    assert!(
        fetch::check_header("s", &ok[..20], json.len() as u64).unwrap_err().to_string().contains("truncated")
    );
    let mut bad = 4u64.to_le_bytes().to_vec();
    bad.extend(b"nope");
    assert!(fetch::check_header("s", &bad, 4).unwrap_err().to_string().contains("not a safetensors header"));
}
