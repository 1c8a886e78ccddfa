//! Repository layouts beside the plain one: a Sentence Transformers repository whose model sits
//! in its Transformer module's folder (fetched, and in the Hugging Face cache), and a checkpoint
//! whose header differs from its family's list (the count is the header's, the JSON says why).

use super::fake::{self, Behaviour, File, Hub, Repo};
use super::{LLAMA_1B, SHA, estimate, home, json, llama_tensors, weights};
use std::collections::BTreeMap;
use std::path::Path;

const BERT: &str = r#"{"model_type":"bert","architectures":["BertModel"],"hidden_size":32,
"num_hidden_layers":2,"num_attention_heads":2,"intermediate_size":64,"vocab_size":100,
"max_position_embeddings":64,"type_vocab_size":2}"#;

const MODULES: &str = r#"[{"idx":0,"name":"0","path":"0_Transformer","type":"sentence_transformers.models.Transformer"},
{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
{"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]"#;

/// A small BertModel's tensors (embeddings, 2 layers, pooler).
fn bert_tensors() -> Vec<(String, Vec<u64>)> {
    let mut t: Vec<(String, Vec<u64>)> = vec![
        ("embeddings.word_embeddings.weight".into(), vec![100, 32]),
        ("embeddings.position_embeddings.weight".into(), vec![64, 32]),
        ("embeddings.token_type_embeddings.weight".into(), vec![2, 32]),
        ("embeddings.LayerNorm.weight".into(), vec![32]),
        ("embeddings.LayerNorm.bias".into(), vec![32]),
    ];
    for l in 0..2 {
        for (n, s) in [
            ("attention.self.query", vec![32, 32]),
            ("attention.self.key", vec![32, 32]),
            ("attention.self.value", vec![32, 32]),
            ("attention.output.dense", vec![32, 32]),
            ("intermediate.dense", vec![64, 32]),
            ("output.dense", vec![32, 64]),
        ] {
            t.push((format!("encoder.layer.{l}.{n}.bias"), vec![s[0]]));
            t.push((format!("encoder.layer.{l}.{n}.weight"), s));
        }
        for n in ["attention.output.LayerNorm", "output.LayerNorm"] {
            t.push((format!("encoder.layer.{l}.{n}.weight"), vec![32]));
            t.push((format!("encoder.layer.{l}.{n}.bias"), vec![32]));
        }
    }
    t.push(("pooler.dense.weight".into(), vec![32, 32]));
    t.push(("pooler.dense.bias".into(), vec![32]));
    t
}

fn params(t: &[(String, Vec<u64>)]) -> u64 {
    t.iter().map(|(_, s)| s.iter().product::<u64>()).sum()
}

/// The files of a Sentence Transformers repository with its model in `0_Transformer/`.
fn st_files() -> BTreeMap<String, File> {
    let t = bert_tensors();
    BTreeMap::from([
        ("modules.json".into(), File::Bytes(MODULES.as_bytes().to_vec())),
        ("README.md".into(), File::Bytes(b"# st".to_vec())),
        ("0_Transformer/config.json".into(), File::Bytes(BERT.as_bytes().to_vec())),
        (
            "0_Transformer/model.safetensors".into(),
            File::Safetensors { header: fake::header(&t, 0), weights: weights(&t) },
        ),
        ("1_Pooling/config.json".into(), File::Bytes(br#"{"word_embedding_dimension":32}"#.to_vec())),
    ])
}

/// Llama-3.2-1B's checkpoint with its embeddings untied in config.json: the header has no
/// lm_head of its own.
fn untied_config() -> Repo {
    let mut cfg: serde_json::Value =
        serde_json::from_slice(&std::fs::read("tests/data/hub/llama-3.2-1b/config.json").unwrap()).unwrap();
    cfg["tie_word_embeddings"] = false.into();
    let t = llama_tensors();
    let files = BTreeMap::from([
        ("config.json".into(), File::Bytes(cfg.to_string().into_bytes())),
        ("model.safetensors".into(), File::Safetensors { header: fake::header(&t, 0), weights: weights(&t) }),
    ]);
    Repo { sha: SHA.into(), revisions: vec!["main".into()], files, gated: false }
}

fn layout_repos() -> BTreeMap<String, Repo> {
    let st = Repo { sha: SHA.into(), revisions: vec!["main".into()], files: st_files(), gated: false };
    BTreeMap::from([("acme/st-bert".into(), st), ("acme/untied".into(), untied_config())])
}

#[test]
fn a_sentence_transformers_repo_is_read_from_its_transformer_module_folder() {
    let latency = std::time::Duration::from_millis(60);
    let hub = Hub::start(layout_repos(), Behaviour { latency, ..Behaviour::default() });
    let h = home("st");
    let v = json(&estimate(&hub.url, &h, "acme/st-bert", &[]));
    let n = params(&bert_tensors());
    assert_eq!(v["model"]["n_params"], n, "{}", v["notes"]);
    assert_eq!(v["model"]["family"], "bert");
    assert_eq!(v["model"]["header_check"]["agrees"], true, "{}", v["model"]["header_check"]);
    assert!(v["notes"].to_string().contains("Sentence Transformers"), "{}", v["notes"]);
    let paths: Vec<String> = hub.requests().iter().map(|r| r.path.clone()).collect();
    assert!(paths.iter().any(|p| p.ends_with("/0_Transformer/model.safetensors")), "{paths:?}");
    // modules.json is read beside every folder's config.json (a pooling module's among them):
    // three round trips, as for any model
    assert!(!paths.iter().any(|p| p.contains("README")), "{paths:?}");
    assert_eq!(fake::round_trips(&hub.requests()), 3, "{paths:?}");
    // two Range requests of the shard: its header's length, then its header; no weight byte
    let shard: Vec<_> = hub.requests().into_iter().filter(|r| r.path.ends_with(".safetensors")).collect();
    assert_eq!(shard.len(), 2);
    assert_eq!(shard[0].headers.get("range").map(String::as_str), Some("bytes=0-7"));
    assert_eq!(hub.weight_bytes.load(std::sync::atomic::Ordering::Relaxed), 0);
    // the metadata cache answers next, offline
    let v = json(&estimate(&hub.url, &h, "acme/st-bert", &[("HF_HUB_OFFLINE", "1")]));
    assert_eq!(
        (v["model"]["n_params"].as_u64(), v["model"]["source"]["from"].as_str()),
        (Some(n), Some("cache"))
    );
    // the same repository in the Hugging Face cache, as transformers lays it out
    let snap = h.join(format!("hf/hub/models--someone--st-bert/snapshots/{SHA}"));
    for (name, f) in st_files() {
        let p = snap.join(&name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        match f {
            File::Bytes(b) => std::fs::write(&p, b).unwrap(),
            File::Safetensors { header, .. } => std::fs::write(&p, header).unwrap(),
        }
    }
    std::fs::create_dir_all(h.join("hf/hub/models--someone--st-bert/refs")).unwrap();
    std::fs::write(h.join("hf/hub/models--someone--st-bert/refs/main"), SHA).unwrap();
    let v = json(&estimate(&hub.url, &h, "someone/st-bert", &[("HF_HUB_OFFLINE", "1")]));
    assert_eq!(
        (v["model"]["n_params"].as_u64(), v["model"]["source"]["from"].as_str()),
        (Some(n), Some("hf-cache"))
    );
    assert!(Path::new(v["model"]["source"]["dir"].as_str().unwrap()).ends_with("0_Transformer"));
}

#[test]
fn a_header_that_differs_from_the_family_list_gives_the_count_and_says_which_tensors() {
    let hub = Hub::start(layout_repos(), Behaviour::default());
    let v = json(&estimate(&hub.url, &home("untied"), "acme/untied", &[]));
    // the header's count, not config.json's (which would add a 128256 × 2048 LM head)
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    let hc = &v["model"]["header_check"];
    assert_eq!((hc["agrees"].as_bool(), hc["header_params"].as_u64()), (Some(false), Some(LLAMA_1B)));
    assert_eq!(hc["family_params"], LLAMA_1B + 128_256 * 2048);
    assert_eq!(hc["missing"][0]["shape"], serde_json::json!([128_256, 2048]));
    assert!(v["notes"].to_string().contains("no LM head of its own"), "{}", v["notes"]);
    let facts = v["model"]["facts"].as_array().unwrap();
    let from =
        |k: &str| facts.iter().find(|f| f["fact"] == k).map(|f| f["from"].as_str().unwrap().to_owned());
    assert_eq!(from("parameters").as_deref(), Some("safetensors header"));
    assert_eq!(from("num_hidden_layers").as_deref(), Some("config.json"));
}

#[test]
fn modelscope_is_a_second_hub_with_its_own_endpoint_token_and_cache() {
    let hub = Hub::start(super::repos(), Behaviour::default());
    let h = home("modelscope");
    let ms = [("MODELSCOPE_DOMAIN", hub.url.as_str())];
    // HF_ENDPOINT points nowhere: only MODELSCOPE_DOMAIN is used
    let run = |model: &str, env: &[(&str, &str)]| {
        super::run(
            "http://127.0.0.1:9",
            &h,
            &["estimate", "--model", model, "--hub", "modelscope", "--json"],
            env,
        )
    };
    let v = json(&run("acme/llama-sharded", &ms));
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    assert_eq!(
        (v["model"]["source"]["hub"].as_str(), v["model"]["source"]["from"].as_str()),
        (Some("modelscope"), Some("network"))
    );
    let reqs = hub.requests();
    assert!(
        reqs.iter().all(|r| r.path.starts_with("/api/v1/models/acme/llama-sharded/repo")),
        "{:?}",
        reqs.iter().map(|r| &r.path).collect::<Vec<_>>()
    );
    assert!(reqs[0].path.contains("repo/files?Revision=master&Recursive=true"), "{}", reqs[0].path);
    // the shards' headers by Range, never the weights past the prefix
    assert!(reqs.iter().any(|r| r.headers.get("range").is_some_and(|g| g == "bytes=0-7")));
    assert_eq!(hub.weight_bytes.load(std::sync::atomic::Ordering::Relaxed), 0);
    // its own cache answers next, offline; Hugging Face's does not know it
    let v = json(&run("acme/llama-sharded", &[ms[0], ("HF_HUB_OFFLINE", "1")]));
    assert_eq!(v["model"]["source"]["from"], "cache");
    assert!(v["model"]["source"]["dir"].as_str().unwrap().contains("modelscope"), "{}", v["model"]["source"]);
    let o = estimate(&hub.url, &h, "acme/llama-sharded", &[("HF_HUB_OFFLINE", "1")]);
    assert_eq!(o.status.code(), Some(2));
    // a gated model: MODELSCOPE_API_TOKEN, and the page to accept the licence on
    let e = super::err(&run("meta/llama-gated", &ms));
    assert!(e.contains("MODELSCOPE_API_TOKEN") && e.contains("/models/meta/llama-gated"), "{e}");
    let v = json(&run("meta/llama-gated", &[ms[0], ("MODELSCOPE_API_TOKEN", fake::GOOD_TOKEN)]));
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    let e = super::err(&run("acme/nothing-here", &ms));
    assert!(e.contains("no model repository acme/nothing-here"), "{e}");
    // a revision that is not there
    let e = super::err(&run("acme/llama-single@v9", &ms));
    assert!(e.contains("no revision v9"), "{e}");
}

/// A model the modelscope library downloaded: read from its cache, no request, under both the
/// layout of modelscope 1.20 and later (`models/ORG/NAME`, dots written `___`) and the earlier one.
#[test]
fn the_modelscope_cache_is_read_without_the_network() {
    let h = home("ms-cache");
    let header = fake::header(&super::llama_tensors(), 0);
    let put = |dir: &Path| {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::copy("tests/data/hub/llama-3.2-1b/config.json", dir.join("config.json")).unwrap();
        std::fs::write(dir.join("model.safetensors"), &header).unwrap();
    };
    put(&h.join(".cache/modelscope/hub/models/acme/Llama-3___2-1B"));
    let other = h.join("elsewhere");
    put(&other.join("acme/Old-1B"));
    // the domain points nowhere: a request would fail
    let ms = ("MODELSCOPE_DOMAIN", "http://127.0.0.1:9");
    let run = |model: &str, env: &[(&str, &str)]| {
        super::run(
            "http://127.0.0.1:9",
            &h,
            &["estimate", "--model", model, "--hub", "modelscope", "--json"],
            env,
        )
    };
    let v = json(&run("acme/Llama-3.2-1B", &[ms]));
    assert_eq!(v["model"]["n_params"], LLAMA_1B);
    assert_eq!(v["model"]["source"]["from"], "modelscope-cache");
    let dir = other.display().to_string();
    let v = json(&run("acme/Old-1B", &[ms, ("MODELSCOPE_CACHE", dir.as_str())]));
    assert_eq!(v["model"]["source"]["from"], "modelscope-cache");
    // one version is kept: another revision is not taken from it
    let o = run("acme/Llama-3.2-1B@v2", &[ms, ("HF_HUB_OFFLINE", "1")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("modelscope"), "names the cache looked in");
}

/// A Stable-Diffusion-like pipeline: model_index.json, three components with weights (the unet
/// also as an fp16 variant), a scheduler without.
fn diffusers_repo() -> Repo {
    let unet =
        vec![("conv_in.weight".to_owned(), vec![320, 4, 3, 3]), ("conv_in.bias".to_owned(), vec![320])];
    let te = vec![("text_model.embeddings.token_embedding.weight".to_owned(), vec![1000, 64])];
    let vae = vec![("decoder.conv_out.weight".to_owned(), vec![3, 128, 3, 3])];
    let st = |t: &[(String, Vec<u64>)]| File::Safetensors { header: fake::header(t, 0), weights: weights(t) };
    let index = br#"{"_class_name":"StableDiffusionPipeline","_diffusers_version":"0.30.0",
        "unet":["diffusers","UNet2DConditionModel"],"text_encoder":["transformers","CLIPTextModel"],
        "vae":["diffusers","AutoencoderKL"],"scheduler":["diffusers","PNDMScheduler"],"safety_checker":[null,null]}"#;
    let files = BTreeMap::from([
        ("model_index.json".into(), File::Bytes(index.to_vec())),
        ("unet/config.json".into(), File::Bytes(b"{}".to_vec())),
        ("unet/diffusion_pytorch_model.safetensors".into(), st(&unet)),
        ("unet/diffusion_pytorch_model.fp16.safetensors".into(), st(&unet)),
        ("text_encoder/model.safetensors".into(), st(&te)),
        ("vae/diffusion_pytorch_model.safetensors".into(), st(&vae)),
        ("scheduler/scheduler_config.json".into(), File::Bytes(b"{}".to_vec())),
    ]);
    Repo { sha: SHA.into(), revisions: vec!["main".into()], files, gated: false }
}

#[test]
fn a_diffusers_pipeline_gives_each_components_parameters_and_weight_bytes_and_no_estimate() {
    let latency = std::time::Duration::from_millis(60);
    let hub = Hub::start(
        BTreeMap::from([("acme/sd".to_owned(), diffusers_repo())]),
        Behaviour { latency, ..Behaviour::default() },
    );
    let h = home("diffusers");
    let e = super::err(&estimate(&hub.url, &h, "acme/sd", &[]));
    for part in [
        "acme/sd is a Diffusers pipeline",
        "unet (UNet2DConditionModel): 11,840 parameters, 23,680 B of weights (BF16)",
        "text_encoder (CLIPTextModel): 64,000 parameters, 128,000 B",
        "vae (AutoencoderKL): 3,456 parameters, 6,912 B",
        "in all 79,296 parameters, 158,592 B of weights",
        "activations of diffusion models are not modelled yet",
    ] {
        assert!(e.contains(part), "{part}: {e}");
    }
    assert!(!e.contains("scheduler"), "{e}");
    let paths: Vec<String> = hub.requests().iter().map(|r| r.path.clone()).collect();
    assert!(!paths.iter().any(|p| p.contains("fp16") || p.contains("config.json")), "{paths:?}");
    // model_index.json beside each component's header length, then the headers
    assert_eq!(fake::round_trips(&hub.requests()), 3, "{paths:?}");
    // from the metadata cache, offline, the same answer
    let again = super::err(&estimate(&hub.url, &h, "acme/sd", &[("HF_HUB_OFFLINE", "1")]));
    assert_eq!(again, e);
    // in the Hugging Face cache as diffusers lays it out
    let repo = h.join("hf/hub/models--someone--sd");
    for (name, f) in diffusers_repo().files {
        let p = repo.join("snapshots").join(SHA).join(&name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        match f {
            File::Bytes(b) => std::fs::write(&p, b).unwrap(),
            File::Safetensors { header, .. } => std::fs::write(&p, header).unwrap(),
        }
    }
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), SHA).unwrap();
    let local = super::err(&estimate(&hub.url, &h, "someone/sd", &[("HF_HUB_OFFLINE", "1")]));
    assert_eq!(local, e.replace("acme/sd", "someone/sd"));
}
