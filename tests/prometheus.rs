//! The cluster source against a real Prometheus server (Debian's `prometheus`, installed by
//! `.ci/run`, which runs it with `cargo test --test prometheus -- --ignored`; ignored by default,
//! so a machine without the binary shows it as ignored, not passed): the test serves a DCGM
//! exporter page on loopback (`tests/data/prometheus/dcgm-metrics.txt`: 8 GPUs on 2 hosts, the
//! values rewritten every scrape, node-b's GPU 3 leaking), Prometheus scrapes it, and
//! `vramscope monitor / diagnose --prometheus` read it back through the HTTP API. Also: the
//! server down mid-run and back, a 50 MB response, malformed JSON and a selector matching
//! nothing, against canned loopback servers. Every loop is bounded; the server is killed at the
//! end, pass or fail.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use vramscope::monitor::prometheus::{PromConfig, PromError, PrometheusSource};

fn cli(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vramscope")).args(args).output().expect("binary runs")
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Reads one HTTP request's head; returns its request line.
fn read_head(s: &mut TcpStream) -> String {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut first = String::new();
    let _ = r.read_line(&mut first);
    let mut line = String::new();
    while r.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    first
}

/// A loopback HTTP server answering every request with `respond(request_line)`, until stopped
/// or `limit` has passed.
struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
    served: Arc<AtomicU64>,
}

impl Server {
    fn start(limit: Duration, respond: impl Fn(&str, u64) -> Vec<u8> + Send + 'static) -> Self {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicU64::new(0));
        let (st, sv) = (stop.clone(), served.clone());
        std::thread::Builder::new()
            .name("test-http".into())
            .spawn(move || {
                let t0 = Instant::now();
                while !st.load(Ordering::Relaxed) && t0.elapsed() < limit {
                    match l.accept() {
                        Ok((mut s, _)) => {
                            let _ = s.set_nonblocking(false);
                            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                            let req = read_head(&mut s);
                            let n = sv.fetch_add(1, Ordering::Relaxed);
                            let _ = s.write_all(&respond(&req, n));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(5)),
                    }
                }
            })
            .unwrap();
        Self { port, stop, served }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn http(status: &str, ctype: &str, body: &[u8]) -> Vec<u8> {
    let mut v = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    v.extend_from_slice(body);
    v
}

const TOTAL_MIB: u64 = 81_559;
const RESERVED_MIB: u64 = 538;

/// Used MiB of host `h`'s GPU `g` at scrape `n`: a training loop (the activations come and go
/// every other scrape); node-b's GPU 3 keeps 300 MiB more each scrape.
fn used_mib(h: &str, g: u64, n: u64) -> u64 {
    let base = 30_000 + 1_000 * g;
    let act = if n % 2 == 1 { 12_000 } else { 0 };
    let leak = if h == "node-b" && g == 3 { 300 * n } else { 0 };
    (base + act + leak).min(TOTAL_MIB - RESERVED_MIB)
}

/// The recorded DCGM page with scrape `n`'s values.
fn metrics_page(n: u64) -> String {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/prometheus/dcgm-metrics.txt"
    ))
    .unwrap();
    text.lines()
        .map(|l| {
            if l.starts_with('#') {
                return l.to_owned();
            }
            let (series, _) = l.rsplit_once(' ').unwrap();
            let label = |k: &str| {
                let at = series.find(&format!("{k}=\"")).unwrap() + k.len() + 2;
                series[at..].split('"').next().unwrap().to_owned()
            };
            let (h, g) = (label("Hostname"), label("gpu").parse::<u64>().unwrap());
            let used = used_mib(&h, g, n);
            let v = match series.split('{').next().unwrap() {
                "DCGM_FI_DEV_FB_USED" => used,
                "DCGM_FI_DEV_FB_FREE" => TOTAL_MIB - RESERVED_MIB - used,
                "DCGM_FI_DEV_FB_RESERVED" => RESERVED_MIB,
                _ => 97,
            };
            format!("{series} {v}")
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// A Prometheus process, killed when dropped.
struct Prom {
    child: Child,
}

impl Drop for Prom {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_prometheus(dir: &std::path::Path, port: u16) -> Prom {
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--log.level=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("this test needs the prometheus binary on PATH (Debian: apt-get install prometheus): {e}")
        });
    let prom = Prom { child };
    // ready within 30 s
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = s.write_all(b"GET /-/ready HTTP/1.0\r\n\r\n");
            let mut r = String::new();
            let _ = s.read_to_string(&mut r);
            if r.starts_with("HTTP/1.0 200") || r.starts_with("HTTP/1.1 200") {
                return prom;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("prometheus did not become ready in 30 s");
}

#[test]
#[ignore = "needs the prometheus binary (Debian: apt-get install prometheus); .ci/run runs it: cargo test --test prometheus -- --ignored"]
fn a_real_prometheus_scraping_a_dcgm_exporter_is_read_back_and_the_leak_found() {
    let exporter = Server::start(Duration::from_secs(180), |req, n| {
        if req.starts_with("GET /metrics") {
            http("200 OK", "text/plain; version=0.0.4", metrics_page(n).as_bytes())
        } else {
            http("404 Not Found", "text/plain", b"not found")
        }
    });
    let dir = std::env::temp_dir().join(format!("vramscope-prom-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\nscrape_configs:\n  - job_name: dcgm\n    static_configs:\n      - targets: ['127.0.0.1:{}']\n",
            exporter.port
        ),
    )
    .unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut prom = start_prometheus(&dir, port);
    // 40 scrapes (20 s), bounded at 60 s
    let t0 = Instant::now();
    while exporter.served.load(Ordering::Relaxed) < 40 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(exporter.served.load(Ordering::Relaxed) >= 40, "Prometheus scraped too little");
    std::thread::sleep(Duration::from_millis(600));

    // the cluster now: 8 GPUs on 2 hosts, host-grouped, totals from used + free + reserved
    let src = PrometheusSource::new(PromConfig::new(&url)).unwrap();
    let now = src.instant().unwrap();
    assert_eq!(now.len(), 8, "{now:?}");
    let hosts: Vec<&str> = now.iter().map(|g| g.host.as_deref().unwrap()).collect();
    assert_eq!(hosts, ["node-a", "node-a", "node-a", "node-a", "node-b", "node-b", "node-b", "node-b"]);
    assert!(now.iter().all(|g| g.total == TOTAL_MIB << 20 && g.name == "NVIDIA H100 80GB HBM3"));
    assert_eq!(now.iter().map(|g| g.index).collect::<Vec<_>>(), [0, 1, 2, 3, 0, 1, 2, 3]);
    assert!(now.iter().all(|g| g.util_pct == Some(97)));

    // monitor --prometheus --json: the NVML snapshot's JSON plus the host
    let out = cli(&["monitor", "--prometheus", &url, "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["snapshot"]["gpus"].as_array().unwrap().len(), 8);
    assert_eq!(v["snapshot"]["gpus"][7]["host"], "node-b");

    // diagnose --prometheus: the leaking GPU is found, and only it
    let out = cli(&["diagnose", "--prometheus", &url, "--range", "18s", "--step-s", "0.5", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let gpus = v["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 8);
    let leaking: Vec<String> = gpus
        .iter()
        .filter(|g| g["verdict"] == "leak")
        .map(|g| format!("{} {}", g["host"].as_str().unwrap(), g["gpu_label"].as_str().unwrap()))
        .collect();
    assert_eq!(leaking, ["node-b 3"], "{v:#}");
    assert_eq!(v["trace"]["host"], "node-b");
    let text = String::from_utf8(cli(&["diagnose", "--prometheus", &url, "--range", "18s"]).stdout).unwrap();
    assert!(text.contains("fails: 1 of 8 GPUs (node-b GPU 3)"), "{text}");

    // a recording: monitor --range --json, read back into snapshots as the app's Live tab opens
    // it (VRAMSCOPE_WRITE_RECORDING=path keeps a copy: tests/data/prometheus/cluster-recording.json)
    let out = cli(&["monitor", "--prometheus", &url, "--range", "18s", "--step-s", "0.5", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    if let Ok(p) = std::env::var("VRAMSCOPE_WRITE_RECORDING") {
        std::fs::write(p, &text).unwrap();
    }
    let snaps = vramscope::monitor::recording::read(&text).unwrap();
    assert!(snaps.len() >= 30, "{} snapshots", snaps.len());
    assert!(snaps.iter().rev().take(20).all(|s| s.gpus.len() == 8));
    assert_eq!(snaps[snaps.len() - 1].gpus[4].host.as_deref(), Some("node-b"));
    // the source's history (the Live tab's "Load range") is the same range as snapshots
    {
        use vramscope::monitor::Sampler;
        let mut src = PrometheusSource::new(PromConfig::new(&url)).unwrap();
        let h = src.history(30.0).unwrap();
        assert!(h.len() >= 10 && h.last().unwrap().gpus.len() == 8, "{} snapshots", h.len());
        assert!(h.windows(2).all(|w| w[0].t_s < w[1].t_s));
        let now = src.sample().unwrap();
        assert!((now.t_s - vramscope::monitor::prometheus::unix_now()).abs() < 60.0, "unix time");
    }

    // a selector that matches nothing: the source failed (exit 3), said in one line
    let out = cli(&["monitor", "--prometheus", &url, "--selector", "{job=\"train-42\"}"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no series matched DCGM_FI_DEV_FB_USED{job=\"train-42\"}"), "{err}");
    let out = cli(&["monitor", "--prometheus", &url, "--selector", "{job=\"dcgm\"}", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // Prometheus down mid-run: reported, then recovered once it is back
    drop(prom);
    let mut fast = PromConfig::new(&url);
    fast.retries = 1;
    fast.timeout = Duration::from_secs(2);
    let src = PrometheusSource::new(fast).unwrap();
    match src.instant() {
        Err(PromError::Unreachable { .. }) => {}
        other => panic!("expected unreachable, got {other:?}"),
    }
    prom = start_prometheus(&dir, port);
    let t0 = Instant::now();
    let mut back = src.instant();
    while back.is_err() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(300));
        back = src.instant();
    }
    assert_eq!(back.unwrap().len(), 8, "the source recovers when Prometheus returns");
    drop(prom);
    drop(exporter);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_responses_are_named_and_bounded() {
    // 50 MB of a valid-looking response: refused at the 16 MiB bound, not read whole
    let big = Server::start(Duration::from_secs(30), |_, _| {
        let mut body = br#"{"status":"success","data":{"resultType":"vector","result":["#.to_vec();
        body.resize(50_000_000, b' ');
        http("200 OK", "application/json", &body)
    });
    let src = PrometheusSource::new(PromConfig::new(&format!("http://127.0.0.1:{}", big.port))).unwrap();
    match src.instant() {
        Err(e @ PromError::TooLarge { .. }) => assert!(e.to_string().contains("16 MiB"), "{e}"),
        other => panic!("expected too large, got {other:?}"),
    }
    // malformed JSON: not a Prometheus API
    let bad = Server::start(Duration::from_secs(30), |_, _| {
        http("200 OK", "application/json", b"{\"status\": \"succ")
    });
    let url = format!("http://127.0.0.1:{}", bad.port);
    let out = cli(&["monitor", "--prometheus", &url]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a Prometheus API"));
    // a 500 is retried, then reported
    let down = Server::start(Duration::from_secs(30), |_, _| {
        http("500 Internal Server Error", "text/plain", b"oops")
    });
    let mut cfg = PromConfig::new(&format!("http://127.0.0.1:{}", down.port));
    cfg.retries = 2;
    let src = PrometheusSource::new(cfg).unwrap();
    assert!(matches!(src.instant(), Err(PromError::Http { status: 500, .. })));
    assert_eq!(down.served.load(Ordering::Relaxed), 3, "one try and two retries");
    // Prometheus' own error body
    let refused = Server::start(Duration::from_secs(30), |_, _| {
        http(
            "400 Bad Request",
            "application/json",
            br#"{"status":"error","errorType":"bad_data","error":"1:21: parse error"}"#,
        )
    });
    let src = PrometheusSource::new(PromConfig::new(&format!("http://127.0.0.1:{}", refused.port))).unwrap();
    let e = src.instant().unwrap_err();
    assert!(e.to_string().contains("bad_data: 1:21: parse error"), "{e}");
    // nothing listening
    let out = cli(&["monitor", "--prometheus", &format!("http://127.0.0.1:{}", free_port())]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unreachable"));
    // bad flags are exit 2, one line
    for (args, want) in [
        (vec!["monitor", "--prometheus", "localhost:9090"], "not an http:// or https:// URL"),
        (vec!["monitor", "--prometheus", "http://x", "--selector", "job=\"a\""], "--selector"),
        (vec!["diagnose", "--prometheus", "http://x", "--range", "1w"], "--range 1w"),
    ] {
        let out = cli(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want) && err.trim().lines().count() == 1, "{args:?}: {err}");
    }
}

/// A Prometheus answer of `kind` ("matrix" / "vector") with `rows` (labels JSON, values JSON).
fn api(kind: &str, rows: &[(&str, String)]) -> Vec<u8> {
    let key = if kind == "matrix" { "values" } else { "value" };
    let result: Vec<String> =
        rows.iter().map(|(labels, values)| format!(r#"{{"metric":{labels},"{key}":{values}}}"#)).collect();
    let body =
        format!(r#"{{"status":"success","data":{{"resultType":"{kind}","result":[{}]}}}}"#, result.join(","));
    http("200 OK", "application/json", body.as_bytes())
}

#[test]
fn a_gpu_whose_node_stopped_reporting_keeps_its_total_and_is_named() {
    // node-b's GPU 0 stopped reporting after 10 of the 20 points: it has no current sample, so its
    // total comes from the range (used + free at its last point), and the diagnosis says so
    let a = r#"{"__name__":"x","Hostname":"node-a","gpu":"0","modelName":"H100"}"#;
    let b = r#"{"__name__":"x","Hostname":"node-b","gpu":"0","modelName":"H100"}"#;
    // node-b's GPU 1 came up at the very end: too few points for a curve
    let c = r#"{"__name__":"x","Hostname":"node-b","gpu":"1","modelName":"H100"}"#;
    let pts = |n: u64, mib: u64| {
        let v: Vec<String> = (0..n).map(|i| format!(r#"[{},"{mib}"]"#, 1000 + 10 * i)).collect();
        format!("[{}]", v.join(","))
    };
    let server = Server::start(Duration::from_secs(30), move |req, _| {
        let range = req.contains("/api/v1/query_range");
        let metric = if req.contains("FB_FREE") {
            "free"
        } else if req.contains("FB_RESERVED") {
            "reserved"
        } else if req.contains("FB_USED") {
            "used"
        } else {
            "other"
        };
        match (range, metric) {
            (true, "used") => {
                api("matrix", &[(a, pts(20, 40_000)), (b, pts(10, 60_000)), (c, pts(3, 1_000))])
            }
            (true, "free") => {
                api("matrix", &[(a, pts(20, 41_000)), (b, pts(10, 21_000)), (c, pts(3, 80_000))])
            }
            (true, _) => api("matrix", &[]),
            (false, "used") => api("vector", &[(a, r#"[1100,"40000"]"#.into())]),
            (false, "free") => api("vector", &[(a, r#"[1100,"41000"]"#.into())]),
            _ => api("vector", &[]),
        }
    });
    let url = format!("http://127.0.0.1:{}", server.port);
    let src = PrometheusSource::new(PromConfig::new(&url)).unwrap();
    let series = src.range(900.0, 1100.0, 10.0).unwrap();
    let totals: Vec<(String, u64)> = series.iter().map(|s| (s.host.clone(), s.total)).collect();
    let want = |h: &str| (h.to_owned(), 81_000u64 << 20);
    assert_eq!(totals, [want("node-a"), want("node-b"), want("node-b")]);

    let out = cli(&["diagnose", "--prometheus", &url, "--range", "1h", "--step-s", "10", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let gpus = v["gpus"].as_array().unwrap();
    assert_eq!(gpus.len(), 2, "{v:#}");
    assert_eq!(gpus[1]["host"], "node-b");
    assert_eq!(gpus[1]["stopped_reporting_s"], 100.0, "{v:#}");
    let skipped = v["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{v:#}");
    assert_eq!((skipped[0]["host"].as_str(), skipped[0]["gpu_label"].as_str()), (Some("node-b"), Some("1")));
    assert!(skipped[0]["reason"].as_str().unwrap().contains("3 points in the range"), "{v:#}");
    assert!(gpus[0].get("stopped_reporting_s").is_none());
    // 60,000 of 81,000 MiB held flat: not a model that is too large
    assert_ne!(gpus[1]["verdict"], "model_too_large", "{v:#}");
    let text =
        String::from_utf8(cli(&["diagnose", "--prometheus", &url, "--range", "1h", "--step-s", "10"]).stdout)
            .unwrap();
    assert!(text.contains("stopped reporting 100 s before the others"), "{text}");
    assert!(text.contains("node-b GPU 1 (rank 2): not diagnosed: 3 points"), "{text}");
    assert_eq!(
        (skipped[0]["rank"].as_u64(), gpus[1]["gpu"].as_u64(), gpus[1]["rank"].as_u64()),
        (Some(2), Some(0), Some(1))
    );
    assert!(text.contains("; 1 stopped reporting, 1 not diagnosed"), "{text}");
}
