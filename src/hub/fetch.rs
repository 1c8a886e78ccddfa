//! The network side: the repo's file list and commit (`/api/models/ORG/NAME[/revision/REV]`),
//! then in parallel `config.json`, the index and each shard's 8-byte header length (a Range
//! request), then each shard's header, exactly: three sequential round trips whatever the number
//! of shards (four for a Sentence Transformers repository whose model sits in a module folder:
//! `modules.json` first), and not one byte of the weights. Every body is read up to a bound and
//! no further, so a server that ignores Range cannot make this read the weights either.
//!
//! Redirects are followed here, not by ureq: the token goes to the endpoint's own scheme, host and
//! port only, and the Range header follows the redirect.

use super::layout::{choose, plan};
use super::{Access, Hub, HubError, HubId, modelscope};
use crate::model::safetensors;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// The first bytes of each shard asked for: the header's 8-byte length, so the next request asks
/// for the header and nothing past it (a larger prefix would save a round trip for short headers
/// by reading weight bytes after them).
pub const PREFIX_BYTES: u64 = 8;
/// The largest safetensors header read from one shard.
pub const MAX_HEADER_BYTES: u64 = 16 << 20;
/// The largest sum of the headers read for one model.
pub const MAX_MODEL_HEADER_BYTES: u64 = 64 << 20;
/// The largest JSON file read (the API answer, config.json, the index).
const MAX_JSON_BYTES: u64 = 16 << 20;
/// The most shards a repository may list.
pub(super) const MAX_SHARDS: usize = 1024;
/// Redirects followed per request.
const MAX_REDIRECTS: u32 = 5;
/// The longest Retry-After honoured (once); longer, or a second 429, is an error.
const MAX_RETRY_AFTER_S: u64 = 5;
/// The wait before the one retry of a 5xx answer that names none (a Hub or CDN hiccup).
const SERVER_ERROR_WAIT: Duration = Duration::from_millis(500);

/// What was fetched for one commit: the API answer and the files to write, by name.
pub struct Fetched {
    /// The commit.
    pub sha: String,
    /// The API answer as received.
    pub api: Vec<u8>,
    /// `config.json`, the index and each shard's header (a header-only `.safetensors`).
    pub files: Vec<(String, Vec<u8>)>,
}

type Resp = ureq::http::Response<ureq::Body>;

/// A named download to run on its own thread.
type Job<'a> = (String, Box<dyn FnOnce() -> Result<Vec<u8>, HubError> + Send + 'a>);

struct Client<'a> {
    agent: ureq::Agent,
    access: &'a Access,
    id: &'a HubId,
    /// (`/resolve/COMMIT/`, `/resolve/REV/`): a file the commit's URL does not find (404) is
    /// asked for once more by the revision's, as a mirror that serves branches only needs.
    by_revision: Option<(String, String)>,
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> &str {
    let after = url.find("://").map_or(0, |i| i + 3);
    let end = url[after..].find(['/', '?', '#']).map_or(url.len(), |i| after + i);
    &url[..end]
}

/// A path segment (or a query value) with everything but unreserved characters escaped.
pub(super) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Client<'_> {
    fn timeout_err(&self, url: &str) -> HubError {
        HubError::Timeout { url: url.to_owned(), secs: self.access.timeout.as_secs_f64() }
    }

    fn io_err(&self, url: &str, e: &std::io::Error) -> HubError {
        if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) {
            return self.timeout_err(url);
        }
        self.unreachable(url, &e.to_string())
    }

    /// A connection that failed: where the endpoint comes from, and the way round the network.
    fn unreachable(&self, url: &str, why: &str) -> HubError {
        HubError::Http {
            url: url.to_owned(),
            why: format!(
                "{why} (the Hub is {}={}; --offline reads only the caches)",
                self.access.hub.endpoint_var(),
                self.access.endpoint
            ),
        }
    }

    /// One request, following redirects; a 429 (after its bounded Retry-After) or a 500, 502,
    /// 503 or 504 (after its Retry-After or half a second) is asked once more.
    fn get(&self, url: &str, range: Option<(u64, u64)>) -> Result<Resp, HubError> {
        let mut url = url.to_owned();
        let mut retried = false;
        let mut by_revision = self.by_revision.as_ref().filter(|(c, _)| url.contains(c.as_str()));
        let mut hops = 0;
        loop {
            let mut req = self.agent.get(&url).header("Accept-Encoding", "identity");
            if let Some((a, b)) = range {
                req = req.header("Range", &format!("bytes={a}-{b}"));
            }
            if let Some(t) = &self.access.token
                && origin(&url).eq_ignore_ascii_case(origin(&self.access.endpoint))
            {
                req = req.header("Authorization", &format!("Bearer {t}"));
                if self.access.hub == Hub::ModelScope {
                    // ModelScope's file endpoint authenticates by its session cookie
                    req = req.header("Cookie", &format!("m_session_id={t}"));
                }
            }
            let resp = match req.call() {
                Ok(r) => r,
                Err(ureq::Error::Timeout(_)) => return Err(self.timeout_err(&url)),
                Err(ureq::Error::Io(e)) => return Err(self.io_err(&url, &e)),
                Err(e) => return Err(self.unreachable(&url, &e.to_string())),
            };
            let status = resp.status().as_u16();
            let header = |k: &str| resp.headers().get(k).and_then(|v| v.to_str().ok()).map(str::to_owned);
            if (300..400).contains(&status)
                && let Some(loc) = header("location")
            {
                hops += 1;
                if hops > MAX_REDIRECTS {
                    return Err(HubError::Http { url, why: format!("more than {MAX_REDIRECTS} redirects") });
                }
                url = if loc.starts_with("http://") || loc.starts_with("https://") {
                    loc
                } else if loc.starts_with('/') {
                    format!("{}{loc}", origin(&url))
                } else {
                    return Err(HubError::Bad { what: url, why: format!("redirect to \"{loc}\"") });
                };
                continue;
            }
            if status == 429 {
                let after = header("retry-after").and_then(|s| s.trim().parse::<u64>().ok());
                if !retried && after.is_none_or(|s| s <= MAX_RETRY_AFTER_S) {
                    retried = true;
                    std::thread::sleep(Duration::from_secs(after.unwrap_or(1)));
                    continue;
                }
                return Err(HubError::RateLimited { url, retry_after: after });
            }
            if status == 404
                && let Some((commit, rev)) = by_revision.take()
            {
                url = url.replacen(commit.as_str(), rev, 1);
                continue;
            }
            if matches!(status, 500 | 502 | 503 | 504) && !retried {
                let after = header("retry-after").and_then(|s| s.trim().parse::<u64>().ok());
                if after.is_none_or(|s| s <= MAX_RETRY_AFTER_S) {
                    retried = true;
                    std::thread::sleep(after.map_or(SERVER_ERROR_WAIT, Duration::from_secs));
                    continue;
                }
            }
            return Ok(resp);
        }
    }

    /// The error of a status that is not 200/206, for `url`.
    fn status_err(&self, url: &str, resp: &Resp) -> HubError {
        let status = resp.status().as_u16();
        let code = resp.headers().get("x-error-code").and_then(|v| v.to_str().ok()).unwrap_or("");
        let repo = self.id.repo();
        match (status, code) {
            (_, "RevisionNotFound") => HubError::RevisionNotFound {
                repo,
                revision: self.id.revision.clone().unwrap_or_else(|| "main".into()),
            },
            (_, "RepoNotFound") => HubError::RepoNotFound {
                repo,
                endpoint: self.access.endpoint.clone(),
                token_var: self.access.hub.token_var(),
                had_token: self.access.token.is_some(),
            },
            (_, "EntryNotFound") => HubError::Bad {
                what: url.to_owned(),
                why: "the file the repository lists is not there (EntryNotFound)".into(),
            },
            (401 | 403, _) | (_, "GatedRepo") => HubError::Gated {
                token_var: self.access.hub.token_var(),
                page: match self.access.hub {
                    Hub::HuggingFace => format!("{}/{repo}", self.access.endpoint),
                    Hub::ModelScope => modelscope::page(&self.access.endpoint, &repo),
                },
                repo,
                status,
                had_token: self.access.token.is_some(),
            },
            (404, _) => self.not_found(),
            (500..=599, _) => HubError::Http {
                url: url.to_owned(),
                why: format!("HTTP {status}, the server's own error (asked twice); try again later"),
            },
            _ => HubError::Http { url: url.to_owned(), why: format!("HTTP {status}") },
        }
    }

    /// A 404 without an error code: the repository's own page tells a missing revision apart.
    fn not_found(&self) -> HubError {
        let repo = self.id.repo();
        if let Some(rev) = &self.id.revision {
            let base = list_url(self.access, self.id, None);
            if self.get(&base, None).is_ok_and(|r| r.status().as_u16() == 200) {
                return HubError::RevisionNotFound { repo, revision: rev.clone() };
            }
        }
        HubError::RepoNotFound {
            repo,
            endpoint: self.access.endpoint.clone(),
            token_var: self.access.hub.token_var(),
            had_token: self.access.token.is_some(),
        }
    }

    /// At most `limit` bytes of the body.
    fn read_at_most(&self, url: &str, resp: Resp, limit: u64) -> Result<Vec<u8>, HubError> {
        let mut out = Vec::new();
        let read = resp.into_body().into_reader().take(limit).read_to_end(&mut out);
        match read {
            Ok(_) => Ok(out),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) => {
                Err(self.timeout_err(url))
            }
            Err(e) => Err(HubError::Bad {
                what: url.to_owned(),
                why: format!(
                    "the answer ended before the length it announced, or the connection dropped ({e})"
                ),
            }),
        }
    }

    /// A whole JSON file (bounded).
    fn json_file(&self, url: &str) -> Result<Vec<u8>, HubError> {
        let resp = self.get(url, None)?;
        if resp.status().as_u16() != 200 {
            return Err(self.status_err(url, &resp));
        }
        let bytes = self.read_at_most(url, resp, MAX_JSON_BYTES + 1)?;
        if bytes.len() as u64 > MAX_JSON_BYTES {
            return Err(HubError::Bad {
                what: url.into(),
                why: format!("larger than {} MiB", MAX_JSON_BYTES >> 20),
            });
        }
        Ok(bytes)
    }

    /// Bytes `from..=to` of a file; a server that ignores Range (200) is read from the start up
    /// to `to` and no further.
    fn range(&self, url: &str, from: u64, to: u64) -> Result<Vec<u8>, HubError> {
        let resp = self.get(url, Some((from, to)))?;
        match resp.status().as_u16() {
            206 => {
                // a 206 must say which bytes it holds; one that names others is refused
                let cr = resp.headers().get("content-range").and_then(|v| v.to_str().ok());
                if let Some(cr) = cr
                    && !cr.starts_with(&format!("bytes {from}-"))
                {
                    return Err(HubError::Bad {
                        what: url.into(),
                        why: format!("asked for bytes {from}-{to}, the server sent \"{cr}\""),
                    });
                }
                self.read_at_most(url, resp, to - from + 1)
            }
            200 => {
                let all = self.read_at_most(url, resp, to + 1)?;
                Ok(all.get(from as usize..).map(<[u8]>::to_vec).unwrap_or_default())
            }
            _ => Err(self.status_err(url, &resp)),
        }
    }
}

/// A repository path (`0_Transformer/config.json`) with each segment escaped.
fn escape_path(p: &str) -> String {
    p.split('/').map(escape).collect::<Vec<_>>().join("/")
}

/// A repository path safe to read: relative, no empty, hidden or `..` segment, no `\\`.
fn path_ok(p: &str) -> bool {
    !p.contains('\\') && p.split('/').all(|s| !s.is_empty() && !s.starts_with('.'))
}

/// The commit and the file names (paths from the root) of the API answer.
pub(super) fn parse_api(url: &str, bytes: &[u8]) -> Result<(String, Vec<String>), HubError> {
    let bad = |why: &str| HubError::Bad { what: url.into(), why: why.into() };
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|_| bad("the answer is not JSON"))?;
    let sha = v.get("sha").and_then(|s| s.as_str()).ok_or_else(|| bad("the answer names no commit (sha)"))?;
    if sha.is_empty() || sha.len() > 64 || !sha.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(bad("the commit (sha) is not a commit id"));
    }
    let files = v
        .get("siblings")
        .and_then(|s| s.as_array())
        .ok_or_else(|| bad("the answer lists no files (siblings)"))?
        .iter()
        .filter_map(|f| f.get("rfilename").and_then(|n| n.as_str()))
        .filter(|n| path_ok(n))
        .map(str::to_owned)
        .collect();
    Ok((sha.to_owned(), files))
}

/// The header length a shard's first bytes give.
pub(super) fn header_len(name: &str, prefix: &[u8]) -> Result<u64, HubError> {
    let Some(first) = prefix.get(..8) else {
        return Err(HubError::Bad {
            what: name.into(),
            why: "shorter than the 8-byte header length (truncated)".into(),
        });
    };
    let mut len = [0u8; 8];
    len.copy_from_slice(first);
    let n = u64::from_le_bytes(len);
    if n > MAX_HEADER_BYTES {
        return Err(HubError::Bad {
            what: name.into(),
            why: format!(
                "a header of {n} bytes is over the bound of {} MiB (not a safetensors file?)",
                MAX_HEADER_BYTES >> 20
            ),
        });
    }
    Ok(n)
}

/// Checks a whole header (length + JSON) is a safetensors header.
pub(super) fn check_header(name: &str, bytes: &[u8], n: u64) -> Result<(), HubError> {
    let json = bytes.get(8..8 + n as usize).ok_or_else(|| HubError::Bad {
        what: name.into(),
        why: format!(
            "the server sent {} bytes of a {}-byte header (truncated)",
            bytes.len().saturating_sub(8),
            n
        ),
    })?;
    let text = std::str::from_utf8(json).map_err(|_| HubError::Bad {
        what: name.into(),
        why: "the header is not UTF-8 (not a safetensors file)".into(),
    })?;
    safetensors::parse_header(Path::new(name), text)
        .map(|_| ())
        .map_err(|e| HubError::Bad { what: name.into(), why: format!("not a safetensors header ({e})") })
}

/// Runs `jobs` on named threads, one each; the results in order.
fn parallel(jobs: Vec<Job<'_>>) -> Result<Vec<Vec<u8>>, HubError> {
    std::thread::scope(|s| {
        let mut handles = Vec::with_capacity(jobs.len());
        for (i, (name, job)) in jobs.into_iter().enumerate() {
            let h = std::thread::Builder::new()
                .name(format!("hub-fetch-{i}"))
                .spawn_scoped(s, job)
                .map_err(|e| HubError::Bad { what: name.clone(), why: format!("no thread: {e}") })?;
            handles.push((name, h));
        }
        handles
            .into_iter()
            .map(|(name, h)| {
                h.join().unwrap_or_else(|_| {
                    Err(HubError::Bad { what: name, why: "the fetch thread panicked".into() })
                })
            })
            .collect()
    })
}

/// The file list (and commit) of `id` at `rev` (`None`: the default branch).
fn list_url(access: &Access, id: &HubId, rev: Option<&str>) -> String {
    match access.hub {
        Hub::HuggingFace => {
            let base = format!("{}/api/models/{}/{}", access.endpoint, id.org, id.name);
            match rev {
                Some(r) => format!("{base}/revision/{}", escape(r)),
                None => base,
            }
        }
        Hub::ModelScope => {
            modelscope::list_url(&access.endpoint, &id.org, &id.name, modelscope::revision(rev))
        }
    }
}

/// Fetches the metadata of `id` (never the weights).
pub fn fetch(id: &HubId, access: &Access) -> Result<Fetched, HubError> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        // no connection kept open after its answer: most requests run in parallel on fresh
        // connections anyway, and a server that serves one connection at a time is not stalled
        .max_idle_connections(0)
        .timeout_connect(Some(access.timeout))
        .timeout_global(Some(access.timeout))
        .user_agent(concat!("vramscope/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut c = Client { agent, access, id, by_revision: None };
    let api_url = list_url(access, id, id.revision.as_deref());
    // round trip 1: the commit and the file list
    let api = c.json_file(&api_url)?;
    let rev = modelscope::revision(id.revision.as_deref());
    let (sha, all) = match access.hub {
        Hub::HuggingFace => parse_api(&api_url, &api)?,
        Hub::ModelScope => {
            let (sha, all) = modelscope::parse_list(&api_url, rev, &api)?;
            (sha, all.into_iter().filter(|n| path_ok(n)).collect())
        }
    };
    if access.hub == Hub::HuggingFace {
        let rev = id.revision.as_deref().unwrap_or("main");
        if rev != sha {
            c.by_revision = Some((format!("/resolve/{sha}/"), format!("/resolve/{}/", escape(rev))));
        }
    }
    let file_url = |n: &str| match access.hub {
        Hub::HuggingFace => {
            format!("{}/{}/{}/resolve/{sha}/{}", access.endpoint, id.org, id.name, escape_path(n))
        }
        Hub::ModelScope => modelscope::file_url(&access.endpoint, &id.org, &id.name, rev, n),
    };
    let plan = plan(id, &all)?;
    // round trip 2: the decider, every candidate's JSON files and each shard's first bytes, in
    // parallel
    let c = &c;
    let mut jobs: Vec<Job<'_>> = Vec::new();
    let decider = plan.decider.map(str::to_owned);
    let json: Vec<String> = plan.groups.iter().flat_map(|g| g.json.clone()).collect();
    let prefixed: Vec<String> = plan.groups.iter().flat_map(|g| g.shards.clone()).collect();
    for n in decider.iter().chain(&json).chain(&prefixed) {
        let url = file_url(n);
        let is_shard = n.ends_with(".safetensors");
        jobs.push((
            n.clone(),
            Box::new(move || if is_shard { c.range(&url, 0, PREFIX_BYTES - 1) } else { c.json_file(&url) }),
        ));
    }
    let mut got: BTreeMap<String, Vec<u8>> =
        decider.iter().chain(&json).chain(&prefixed).cloned().zip(parallel(jobs)?).collect();
    let mut files = Vec::new();
    let (groups, prefix) = choose(id, plan, decider.and_then(|d| got.remove(&d)), &mut files)?;
    let stored = |n: &str| n.strip_prefix(prefix.as_str()).unwrap_or(n).to_owned();
    let mut shards = Vec::new();
    let mut prefixes = Vec::new();
    for g in groups {
        for n in &g.json {
            files.push((stored(n), got.remove(n).unwrap_or_default()));
        }
        for n in g.shards {
            prefixes.push(got.remove(&n).unwrap_or_default());
            shards.push(n);
        }
    }
    // round trip 3: the rest of the headers longer than the prefix
    let mut total = 0u64;
    let mut rest: Vec<Job<'_>> = Vec::new();
    let mut lens = Vec::with_capacity(shards.len());
    for (name, prefix) in shards.iter().zip(&prefixes) {
        let n = header_len(name, prefix)?;
        total += n;
        if total > MAX_MODEL_HEADER_BYTES {
            return Err(HubError::Bad {
                what: id.shown(),
                why: format!(
                    "the shards' headers add up to more than the bound of {} MiB",
                    MAX_MODEL_HEADER_BYTES >> 20
                ),
            });
        }
        lens.push(n);
        let have = prefix.len() as u64;
        if 8 + n > have && have == PREFIX_BYTES {
            let url = file_url(name);
            rest.push((name.clone(), Box::new(move || c.range(&url, have, 8 + n - 1))));
        }
    }
    let mut more = parallel(rest)?.into_iter();
    for ((name, prefix), n) in shards.iter().zip(&prefixes).zip(lens) {
        let mut bytes = prefix.clone();
        if 8 + n > bytes.len() as u64 && bytes.len() as u64 == PREFIX_BYTES {
            bytes.extend(more.next().unwrap_or_default());
        }
        bytes.truncate((8 + n) as usize);
        check_header(name, &bytes, n)?;
        files.push((stored(name), bytes));
    }
    Ok(Fetched { sha, api, files })
}
