//! A fake Hugging Face Hub on loopback: `/api/models/ORG/NAME[/revision/REV]` and
//! `/ORG/NAME/resolve/SHA/FILE` with Range requests, gated repos, redirects to another server,
//! 429s, slow answers, a server that ignores Range. It logs every request's headers and counts the
//! bytes it writes past each shard's header (the weights), so a test can assert none are read.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The token a gated repo accepts.
pub const GOOD_TOKEN: &str = "hf_good_token";

/// A file of a repo: plain bytes, or a safetensors file of a header and `weights` zero bytes
/// (generated as served, never held).
#[derive(Clone)]
pub enum File {
    Bytes(Vec<u8>),
    Safetensors { header: Vec<u8>, weights: u64 },
}

impl File {
    fn len(&self) -> u64 {
        match self {
            File::Bytes(b) => b.len() as u64,
            File::Safetensors { header, weights } => header.len() as u64 + weights,
        }
    }
}

/// A repo at one commit, with branch names pointing at it.
#[derive(Clone)]
pub struct Repo {
    pub sha: String,
    pub revisions: Vec<String>,
    pub files: BTreeMap<String, File>,
    pub gated: bool,
}

/// How the server misbehaves.
#[derive(Clone, Default)]
pub struct Behaviour {
    /// Delay before each answer.
    pub latency: Duration,
    /// Answer 200 with the whole file to a Range request.
    pub ignore_range: bool,
    /// Redirect every `resolve` to this base URL (another server).
    pub redirect_to: Option<String>,
    /// Send `X-Error-Code` with 404s, as the Hub does.
    pub error_codes: bool,
    /// Answer this many requests with 429 and this Retry-After first.
    pub rate_limit: Option<(u32, u64)>,
    /// Answer this many requests with this 5xx status first.
    pub server_error: Option<(u32, u16)>,
    /// Serve files by a branch's name only (`resolve/main/…`), a commit's URL is a 404, as
    /// some mirrors do.
    pub branches_only: bool,
    /// A 206 whose Content-Range names other bytes than those asked for.
    pub wrong_content_range: bool,
    /// A Content-Length 1000 bytes longer than the body sent before the connection closes.
    pub short_body: bool,
    /// One connection at a time, kept alive until the client closes it (as a single-threaded
    /// HTTP/1.1 server does).
    pub sequential: bool,
}

/// One request as received.
#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub headers: BTreeMap<String, String>,
    /// Requests answered before this one arrived: with a latency, the requests of one round
    /// trip share it (the client's sequential round trips are its distinct values).
    pub answered_before: u32,
}

/// The sequential round trips of `log` (each a set of requests made together).
pub fn round_trips(log: &[Request]) -> usize {
    let mut waves: Vec<u32> = log.iter().map(|r| r.answered_before).collect();
    waves.sort_unstable();
    waves.dedup();
    waves.len()
}

pub struct Hub {
    pub url: String,
    stop: Arc<AtomicBool>,
    pub log: Arc<Mutex<Vec<Request>>>,
    /// Bytes written past a safetensors header.
    pub weight_bytes: Arc<AtomicU64>,
    /// Bytes of response bodies written.
    pub body_bytes: Arc<AtomicU64>,
}

struct State {
    repos: BTreeMap<String, Repo>,
    b: Behaviour,
    log: Arc<Mutex<Vec<Request>>>,
    weight_bytes: Arc<AtomicU64>,
    body_bytes: Arc<AtomicU64>,
    limited: AtomicU32,
    answered: AtomicU32,
}

impl Hub {
    pub fn start(repos: BTreeMap<String, Repo>, b: Behaviour) -> Hub {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let url = format!("http://127.0.0.1:{}", l.local_addr().unwrap().port());
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let (weight_bytes, body_bytes) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let state = Arc::new(State {
            repos,
            b,
            log: log.clone(),
            weight_bytes: weight_bytes.clone(),
            body_bytes: body_bytes.clone(),
            limited: AtomicU32::new(0),
            answered: AtomicU32::new(0),
        });
        let st = stop.clone();
        std::thread::Builder::new()
            .name("fake-hub".into())
            .spawn(move || {
                let t0 = Instant::now();
                while !st.load(Ordering::Relaxed) && t0.elapsed() < Duration::from_secs(120) {
                    match l.accept() {
                        Ok((s, _)) if state.b.sequential => {
                            let _ = s.set_nonblocking(false);
                            while serve(&s, &state) {}
                        }
                        Ok((s, _)) => {
                            let state = state.clone();
                            let _ = std::thread::Builder::new()
                                .name("fake-hub-conn".into())
                                .spawn(move || serve(&s, &state));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(2)),
                    }
                }
            })
            .unwrap();
        Hub { url, stop, log, weight_bytes, body_bytes }
    }

    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn read_request(s: &TcpStream) -> Option<Request> {
    let mut r = BufReader::new(s.try_clone().ok()?);
    let mut first = String::new();
    r.read_line(&mut first).ok()?;
    let path = first.split_whitespace().nth(1)?.to_owned();
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? <= 2 {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    Some(Request { path, headers, answered_before: 0 })
}

fn head(s: &mut TcpStream, st: &State, status: &str, extra: &[(&str, String)], len: u64) -> bool {
    let mut h = format!("HTTP/1.1 {status}\r\nContent-Length: {len}\r\n");
    if !st.b.sequential {
        h += "Connection: close\r\n";
    }
    for (k, v) in extra {
        h += &format!("{k}: {v}\r\n");
    }
    h += "\r\n";
    s.write_all(h.as_bytes()).is_ok()
}

fn answer(s: &mut TcpStream, st: &State, status: &str, extra: &[(&str, String)], body: &[u8]) {
    if head(s, st, status, extra, body.len() as u64) && s.write_all(body).is_ok() {
        st.body_bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
    }
}

/// Answers one request; whether the connection stays open for another.
fn serve(s: &TcpStream, st: &State) -> bool {
    let Ok(mut s) = s.try_clone() else { return false };
    let Some(mut req) = read_request(&s) else { return false };
    req.answered_before = st.answered.load(Ordering::SeqCst);
    answer_request(&mut s, st, req);
    st.answered.fetch_add(1, Ordering::SeqCst);
    st.b.sequential
}

fn answer_request(s: &mut TcpStream, st: &State, req: Request) {
    st.log.lock().unwrap().push(req.clone());
    std::thread::sleep(st.b.latency);
    if let Some((n, after)) = st.b.rate_limit
        && st.limited.fetch_add(1, Ordering::Relaxed) < n
    {
        return answer(s, st, "429 Too Many Requests", &[("Retry-After", after.to_string())], b"slow down");
    }
    if let Some((n, code)) = st.b.server_error
        && st.limited.fetch_add(1, Ordering::Relaxed) < n
    {
        return answer(s, st, &format!("{code} Server Error"), &[], b"upstream hiccup");
    }
    let path = req.path.clone();
    if let Some(rest) = path.strip_prefix("/api/v1/models/") {
        return modelscope(s, st, &req, rest);
    }
    if let Some(rest) = path.strip_prefix("/api/models/") {
        return api(s, st, rest);
    }
    let parts: Vec<&str> = path.trim_start_matches('/').splitn(5, '/').collect();
    if let [org, name, "resolve", sha, file] = parts[..] {
        return resolve(s, st, &req, &format!("{org}/{name}"), sha, file);
    }
    answer(s, st, "404 Not Found", &[], b"no route");
}

fn not_found(s: &mut TcpStream, st: &State, code: &str) {
    let extra = if st.b.error_codes { vec![("X-Error-Code", code.to_owned())] } else { vec![] };
    answer(s, st, "404 Not Found", &extra, b"{\"error\":\"not found\"}");
}

fn api(s: &mut TcpStream, st: &State, rest: &str) {
    let parts: Vec<&str> = rest.splitn(4, '/').collect();
    let (repo, rev) = match parts[..] {
        [org, name] => (format!("{org}/{name}"), None),
        [org, name, "revision", rev] => (format!("{org}/{name}"), Some(rev.replace("%2F", "/"))),
        _ => return not_found(s, st, "RepoNotFound"),
    };
    let Some(r) = st.repos.get(&repo) else { return not_found(s, st, "RepoNotFound") };
    if let Some(rev) = &rev
        && *rev != r.sha
        && !r.revisions.contains(rev)
    {
        return not_found(s, st, "RevisionNotFound");
    }
    let siblings: Vec<_> = r.files.keys().map(|f| serde_json::json!({ "rfilename": f })).collect();
    let body = serde_json::json!({ "id": repo, "sha": r.sha, "gated": r.gated, "siblings": siblings });
    answer(s, st, "200 OK", &[("Content-Type", "application/json".into())], body.to_string().as_bytes());
}

/// `%XX` decoded.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) =
                std::str::from_utf8(&b[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// ModelScope's API: `/api/v1/models/ORG/NAME/repo/files?Revision=&Recursive=` (the file list)
/// and `/api/v1/models/ORG/NAME/repo?Revision=&FilePath=` (a file, with Range).
fn modelscope(s: &mut TcpStream, st: &State, req: &Request, rest: &str) {
    let (p, q) = rest.split_once('?').unwrap_or((rest, ""));
    let params: BTreeMap<String, String> =
        q.split('&').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_owned(), unescape(v))).collect();
    let parts: Vec<&str> = p.split('/').collect();
    let (repo, list) = match parts[..] {
        [org, name, "repo", "files"] => (format!("{org}/{name}"), true),
        [org, name, "repo"] => (format!("{org}/{name}"), false),
        _ => return answer(s, st, "404 Not Found", &[], b"no route"),
    };
    let missing = br#"{"Code":10010205001,"Message":"model not found","Success":false}"#;
    let Some(r) = st.repos.get(&repo) else { return answer(s, st, "404 Not Found", &[], missing) };
    let rev = params.get("Revision").cloned().unwrap_or_else(|| "master".into());
    if rev != "master" && rev != r.sha && !r.revisions.contains(&rev) {
        return answer(s, st, "404 Not Found", &[], missing);
    }
    if list {
        let files: Vec<_> = r
            .files
            .iter()
            .map(|(f, b)| serde_json::json!({ "Path": f, "Name": f.rsplit('/').next(), "Type": "blob", "Revision": r.sha, "Sha256": "", "Size": b.len() }))
            .collect();
        let body = serde_json::json!({ "Code": 200, "Data": { "Files": files }, "Success": true });
        return answer(
            s,
            st,
            "200 OK",
            &[("Content-Type", "application/json".into())],
            body.to_string().as_bytes(),
        );
    }
    let file = params.get("FilePath").cloned().unwrap_or_default();
    resolve(s, st, req, &repo, &r.sha, &file);
}

fn resolve(s: &mut TcpStream, st: &State, req: &Request, repo: &str, sha: &str, file: &str) {
    let known = |r: &&Repo| match st.b.branches_only {
        true => r.revisions.iter().any(|b| b == sha),
        false => r.sha == sha,
    };
    let Some(r) = st.repos.get(repo).filter(known) else {
        return not_found(s, st, "EntryNotFound");
    };
    let bearer = format!("Bearer {GOOD_TOKEN}");
    if r.gated && req.headers.get("authorization") != Some(&bearer) {
        return answer(s, st, "401 Unauthorized", &[("X-Error-Code", "GatedRepo".into())], b"gated");
    }
    if let Some(to) = &st.b.redirect_to {
        let loc = format!("{to}/{repo}/resolve/{sha}/{file}");
        return answer(s, st, "302 Found", &[("Location", loc)], b"");
    }
    let Some(f) = r.files.get(file) else { return not_found(s, st, "EntryNotFound") };
    let total = f.len();
    let range = req.headers.get("range").and_then(|v| v.strip_prefix("bytes=")).and_then(|v| {
        let (a, b) = v.split_once('-')?;
        Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?))
    });
    let (from, to, status, extra) = match range {
        Some((a, b)) if !st.b.ignore_range => {
            if a >= total {
                return answer(s, st, "416 Range Not Satisfiable", &[], b"");
            }
            let b = b.min(total - 1);
            let shown = if st.b.wrong_content_range { a + 8 } else { a };
            (a, b, "206 Partial Content", vec![("Content-Range", format!("bytes {shown}-{b}/{total}"))])
        }
        _ => (0, total.saturating_sub(1), "200 OK", vec![]),
    };
    let lie = if st.b.short_body { 1000 } else { 0 };
    if total == 0 || !head(s, st, status, &extra, to + 1 - from + lie) {
        return;
    }
    write_body(s, st, f, from, to);
}

/// Writes bytes `from..=to` of `f` in 64 KiB pieces until done or the client leaves.
fn write_body(s: &mut TcpStream, st: &State, f: &File, from: u64, to: u64) {
    let (bytes, header_len): (&[u8], u64) = match f {
        File::Bytes(b) => (b, u64::MAX),
        File::Safetensors { header, .. } => (header, header.len() as u64),
    };
    let mut at = from;
    let zeros = vec![0u8; 64 << 10];
    while at <= to {
        let end = (at + (64 << 10)).min(to + 1);
        let chunk: Vec<u8> = if at < bytes.len() as u64 {
            bytes[at as usize..(end as usize).min(bytes.len())].to_vec()
        } else {
            zeros[..(end - at) as usize].to_vec()
        };
        if chunk.is_empty() || s.write_all(&chunk).is_err() {
            return;
        }
        let n = chunk.len() as u64;
        st.body_bytes.fetch_add(n, Ordering::Relaxed);
        let past = (at + n).saturating_sub(header_len.max(at));
        st.weight_bytes.fetch_add(past, Ordering::Relaxed);
        at += n;
    }
}

/// A safetensors header (8-byte length + JSON, padded with spaces to `pad_to` bytes of JSON).
pub fn header(tensors: &[(String, Vec<u64>)], pad_to: usize) -> Vec<u8> {
    let mut map = serde_json::Map::new();
    map.insert("__metadata__".into(), serde_json::json!({ "format": "pt" }));
    let mut off = 0u64;
    for (name, shape) in tensors {
        let n: u64 = shape.iter().product::<u64>() * 2;
        map.insert(
            name.clone(),
            serde_json::json!({ "dtype": "BF16", "shape": shape, "data_offsets": [off, off + n] }),
        );
        off += n;
    }
    let mut json = serde_json::Value::Object(map).to_string().into_bytes();
    while json.len() < pad_to || !json.len().is_multiple_of(8) {
        json.push(b' ');
    }
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend(json);
    out
}

/// Llama-3.2-1B's parameter tensors (the tests run in the crate's root), from tests/data/hub/llama-3.2-1b/shapes.txt.
pub fn llama_tensors() -> Vec<(String, Vec<u64>)> {
    let text = std::fs::read_to_string("tests/data/hub/llama-3.2-1b/shapes.txt").unwrap();
    let mut out = Vec::new();
    for line in text.lines().take_while(|l| !l.starts_with("# buffers")).filter(|l| !l.starts_with('#')) {
        let (name, rest) = line.split_once(' ').unwrap();
        let (shape, after) = rest.trim_start().trim_start_matches('[').split_once(']').unwrap();
        let shape: Vec<u64> = shape.split(',').map(|d| d.trim().parse().unwrap()).collect();
        let times: usize = after.split_whitespace().nth(1).unwrap().trim_start_matches('x').parse().unwrap();
        if name.contains('*') {
            (0..times).for_each(|i| out.push((name.replace('*', &i.to_string()), shape.clone())));
        } else {
            out.push((name.to_owned(), shape));
        }
    }
    out
}

pub fn config() -> File {
    File::Bytes(std::fs::read("tests/data/hub/llama-3.2-1b/config.json").unwrap())
}

pub fn weights(t: &[(String, Vec<u64>)]) -> u64 {
    t.iter().map(|(_, s)| s.iter().product::<u64>() * 2).sum()
}
