//! Any model on the Hugging Face Hub by its id (`ORG/NAME`, `ORG/NAME@REV`): its `config.json`,
//! its safetensors index and each shard's **header only**, never the weights.
//!
//! Where a model is looked for, in order: the local Hugging Face cache (a model transformers has
//! downloaded: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`), then
//! vramscope's own metadata cache (`$XDG_CACHE_HOME/vramscope/hub`, keyed by endpoint, repo and
//! commit), then the network (`$HF_ENDPOINT`, default `https://huggingface.co`), unless
//! `HF_HUB_OFFLINE` is set or `--offline` is given. The token (`HF_TOKEN`, else the file
//! `$HF_TOKEN_PATH`, else `$HF_HOME/token`) is sent to the endpoint's own host only.
//!
//! This is a source (it talks HTTP): the estimator core does not depend on it; the CLI does.

mod cache;
mod diffusers;
mod fetch;
mod layout;
mod modelscope;

use crate::model::preset::{self, Loaded};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use fetch::{MAX_HEADER_BYTES, MAX_MODEL_HEADER_BYTES, PREFIX_BYTES};

/// A Hub model id with an optional revision (branch, tag or commit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubId {
    /// The owner (user or organisation).
    pub org: String,
    /// The repository name.
    pub name: String,
    /// The revision asked for, if any (default: the repository's default branch).
    pub revision: Option<String>,
}

impl HubId {
    /// `ORG/NAME`.
    pub fn repo(&self) -> String {
        format!("{}/{}", self.org, self.name)
    }

    /// `ORG/NAME@REV`, or `ORG/NAME`.
    pub fn shown(&self) -> String {
        match &self.revision {
            Some(r) => format!("{}@{r}", self.repo()),
            None => self.repo(),
        }
    }
}

/// One part of a repo id as the Hub allows it: letters, digits, `-`, `_`, `.`, at most 96
/// characters, not starting or ending with `-` or `.`, no `--` or `..`.
fn repo_part(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 96
        && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !s.starts_with(['-', '.'])
        && !s.ends_with(['-', '.'])
        && !s.contains("--")
        && !s.contains("..")
}

fn revision_ok(r: &str) -> bool {
    !r.is_empty() && r.len() <= 256 && !r.contains("..") && r.chars().all(|c| c.is_ascii_graphic())
}

/// Reads `ORG/NAME` or `ORG/NAME@REV` (a `revision` given separately wins over none, and must
/// agree with one in the id). `None` when `spec` is not shaped like a Hub id (a path, a preset
/// name); `Err` when it is, but the revision is not usable.
pub fn parse_id(spec: &str, revision: Option<&str>) -> Option<Result<HubId, String>> {
    let (repo, at) = match spec.split_once('@') {
        Some((r, rev)) => (r, Some(rev)),
        None => (spec, None),
    };
    let (org, name) = repo.split_once('/')?;
    if !repo_part(org) || !repo_part(name) || name.contains('/') {
        return None;
    }
    // `configs/config.json` is a file that is not there, not a repository
    let lower = name.to_ascii_lowercase();
    if [".json", ".safetensors", ".ron", ".bin", ".pt", ".pth", ".gguf"].iter().any(|e| lower.ends_with(e)) {
        return None;
    }
    let rev = match (at, revision) {
        (Some(a), Some(r)) if a != r => {
            return Some(Err(format!("{spec}: the id names revision {a} but --revision says {r}")));
        }
        (Some(a), _) => Some(a),
        (None, r) => r,
    };
    if let Some(r) = rev
        && !revision_ok(r)
    {
        return Some(Err(format!("revision \"{r}\" is not a branch, tag or commit name")));
    }
    Some(Ok(HubId { org: org.to_owned(), name: name.to_owned(), revision: rev.map(str::to_owned) }))
}

/// Which hub a Hub id is looked up on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hub {
    /// The Hugging Face Hub (`HF_ENDPOINT`, `HF_TOKEN`).
    #[default]
    HuggingFace,
    /// ModelScope (`MODELSCOPE_DOMAIN`, `MODELSCOPE_API_TOKEN`).
    ModelScope,
}

impl Hub {
    /// The variable that holds the token.
    pub fn token_var(self) -> &'static str {
        match self {
            Hub::HuggingFace => "HF_TOKEN",
            Hub::ModelScope => "MODELSCOPE_API_TOKEN",
        }
    }

    /// The variable that names the endpoint.
    pub fn endpoint_var(self) -> &'static str {
        match self {
            Hub::HuggingFace => "HF_ENDPOINT",
            Hub::ModelScope => "MODELSCOPE_DOMAIN",
        }
    }
}

/// What a missing repository may be: private, and the token (if one was sent) without access.
fn private_hint(had_token: bool, token_var: &str) -> String {
    if had_token {
        "a private repo looks missing to a token without access to it".into()
    } else {
        format!("a private repo needs {token_var}")
    }
}

/// How and where to reach the Hub, from the environment as huggingface_hub (or modelscope)
/// reads it.
#[derive(Clone, Debug)]
pub struct Access {
    /// Which hub.
    pub hub: Hub,
    /// Base URL, without a trailing `/` (`HF_ENDPOINT`, default `https://huggingface.co`).
    pub endpoint: String,
    /// The user access token, if any.
    pub token: Option<String>,
    /// No network (`HF_HUB_OFFLINE` or `--offline`).
    pub offline: bool,
    /// The Hugging Face cache (`models--ORG--NAME/…`).
    pub hf_cache: Option<PathBuf>,
    /// ModelScope's cache (`MODELSCOPE_CACHE`, else `~/.cache/modelscope/hub`: `models/ORG/NAME`,
    /// as the modelscope library lays it out), for `--hub modelscope`.
    pub ms_cache: Option<PathBuf>,
    /// vramscope's own metadata cache (`…/vramscope/hub`).
    pub own_cache: Option<PathBuf>,
    /// Connect and read timeout of each request (`HF_HUB_DOWNLOAD_TIMEOUT`, default 10 s).
    pub timeout: Duration,
    /// Ask the hub which commit a branch is at even when a cache holds one (`--refresh`).
    pub refresh: bool,
}

/// huggingface_hub's truthy values: `1`, `ON`, `YES`, `TRUE`, any case.
fn truthy(v: &str) -> bool {
    matches!(v.trim().to_ascii_uppercase().as_str(), "1" | "ON" | "YES" | "TRUE")
}

impl Access {
    /// From the environment; `offline` forces offline mode (`--offline`).
    pub fn from_env(offline: bool) -> Self {
        Self::from_vars(offline, |k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// ModelScope's access from the environment; `offline` forces offline mode.
    pub fn from_env_for(hub: Hub, offline: bool) -> Self {
        Self::from_vars_for(hub, offline, |k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    }

    /// `hub`'s access from the variables `var` gives: ModelScope's endpoint from
    /// `MODELSCOPE_DOMAIN`, its token from `MODELSCOPE_API_TOKEN`, no Hugging Face cache, and
    /// its own folder in vramscope's cache; the timeout and offline variables as for Hugging Face.
    pub fn from_vars_for(hub: Hub, offline: bool, var: impl Fn(&str) -> Option<String>) -> Self {
        let mut a = Self::from_vars(offline, &var);
        if hub == Hub::ModelScope {
            a.hub = hub;
            a.endpoint = modelscope::endpoint(var("MODELSCOPE_DOMAIN"));
            a.token = var("MODELSCOPE_API_TOKEN").map(|t| t.trim().to_owned()).filter(|t| !t.is_empty());
            a.hf_cache = None;
            let home = var("HOME").or_else(|| var("USERPROFILE")).map(PathBuf::from);
            a.ms_cache = var("MODELSCOPE_CACHE")
                .map(PathBuf::from)
                .or_else(|| home.map(|h| h.join(".cache").join("modelscope").join("hub")));
            a.own_cache = a.own_cache.map(|c| c.join("modelscope"));
        }
        a
    }

    /// From the variables `var` gives (tests pass their own).
    pub fn from_vars(offline: bool, var: impl Fn(&str) -> Option<String>) -> Self {
        let home = var("HOME").or_else(|| var("USERPROFILE")).map(PathBuf::from);
        let xdg =
            var("XDG_CACHE_HOME").map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".cache")));
        let hf_home =
            var("HF_HOME").map(PathBuf::from).or_else(|| xdg.as_ref().map(|x| x.join("huggingface")));
        let hf_cache = var("HF_HUB_CACHE")
            .or_else(|| var("HUGGINGFACE_HUB_CACHE"))
            .map(PathBuf::from)
            .or_else(|| hf_home.as_ref().map(|h| h.join("hub")));
        let token_file =
            var("HF_TOKEN_PATH").map(PathBuf::from).or_else(|| hf_home.as_ref().map(|h| h.join("token")));
        // huggingface_hub still reads the older HUGGING_FACE_HUB_TOKEN after HF_TOKEN
        let token = var("HF_TOKEN")
            .or_else(|| var("HUGGING_FACE_HUB_TOKEN"))
            .or_else(|| read_token(token_file.as_deref()));
        let timeout = var("HF_HUB_DOWNLOAD_TIMEOUT")
            .and_then(|t| t.trim().parse::<f64>().ok())
            .filter(|t| t.is_finite() && *t > 0.0)
            .map_or(Duration::from_secs(10), |t| Duration::from_secs_f64(t.min(600.0)));
        Self {
            hub: Hub::HuggingFace,
            endpoint: var("HF_ENDPOINT")
                .unwrap_or_else(|| "https://huggingface.co".into())
                .trim_end_matches('/')
                .to_owned(),
            token: token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()),
            offline: offline || var("HF_HUB_OFFLINE").is_some_and(|v| truthy(&v)),
            hf_cache,
            ms_cache: None,
            own_cache: own_cache_dir(&var, xdg),
            timeout,
            refresh: false,
        }
    }
}

fn read_token(path: Option<&Path>) -> Option<String> {
    let text = std::fs::read_to_string(path?).ok()?;
    text.lines().next().map(|l| l.trim().to_owned()).filter(|t| !t.is_empty())
}

/// The platform cache folder for vramscope's Hub metadata.
fn own_cache_dir(var: &impl Fn(&str) -> Option<String>, xdg: Option<PathBuf>) -> Option<PathBuf> {
    let base = if cfg!(windows) {
        var("LOCALAPPDATA").map(PathBuf::from)
    } else if cfg!(target_os = "macos") && var("XDG_CACHE_HOME").is_none() {
        var("HOME").map(|h| PathBuf::from(h).join("Library/Caches"))
    } else {
        xdg
    };
    base.map(|b| b.join("vramscope").join("hub"))
}

/// Where a model's files were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The local Hugging Face cache (downloaded by transformers / huggingface_hub).
    HfCache,
    /// The local ModelScope cache (downloaded by the modelscope library).
    MsCache,
    /// vramscope's metadata cache (fetched before).
    Cache,
    /// Fetched now.
    Network,
}

impl Origin {
    /// The token written in the JSON answer.
    pub fn token(self) -> &'static str {
        match self {
            Origin::HfCache => "hf-cache",
            Origin::MsCache => "modelscope-cache",
            Origin::Cache => "cache",
            Origin::Network => "network",
        }
    }
}

/// Where a Hub model came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// `ORG/NAME`.
    pub repo: String,
    /// The revision asked for (`None`: the default branch).
    pub revision: Option<String>,
    /// The commit the files are from.
    pub sha: String,
    /// Where they were found.
    pub origin: Origin,
    /// The folder read (a snapshot, or the metadata cache's entry).
    pub dir: PathBuf,
    /// The endpoint (for a network or cache origin).
    pub endpoint: String,
    /// Which hub.
    pub hub: Hub,
}

impl Source {
    /// One line for the notes.
    pub fn note(&self) -> String {
        let whence = match self.origin {
            Origin::HfCache => "the local Hugging Face cache, no network".to_owned(),
            Origin::MsCache => "the local ModelScope cache, no network".to_owned(),
            Origin::Cache => format!("vramscope's metadata cache of {}, no network", self.endpoint),
            Origin::Network => format!("{} (config.json and safetensors headers only)", self.endpoint),
        };
        format!("model {} at commit {} from {whence}", self.repo, self.sha)
    }

    /// The JSON object the answers carry as `source`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "hub_id": self.repo,
            "hub": match self.hub { Hub::HuggingFace => "huggingface", Hub::ModelScope => "modelscope" },
            "revision": self.revision,
            "sha": self.sha,
            "from": self.origin.token(),
            "endpoint": (!self.endpoint.is_empty()).then_some(&self.endpoint),
            "dir": self.dir.display().to_string(),
        })
    }
}

/// What went wrong; each a line a person can act on.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    /// 401/403, or a gated repo.
    #[error(
        "{repo} is gated or private ({status}): accept its licence at {page} and set {token_var}{login} to a token with access{have}",
        login = if *.token_var == "HF_TOKEN" { " (or run `hf auth login`)" } else { "" },
        have = if *.had_token { "; the token sent was refused".to_owned() } else if *.token_var == "HF_TOKEN" { "; no token was found (HF_TOKEN, $HF_HOME/token)".to_owned() } else { format!("; no token was found ({})", .token_var) }
    )]
    Gated {
        /// The variable that holds the token.
        token_var: &'static str,
        /// `ORG/NAME`.
        repo: String,
        /// HTTP status.
        status: u16,
        /// The model's page.
        page: String,
        /// A token was sent.
        had_token: bool,
    },
    /// 404 of the repository.
    #[error("{endpoint} has no model repository {repo} (check the id; {})", private_hint(*.had_token, .token_var))]
    RepoNotFound {
        /// The variable that holds the token.
        token_var: &'static str,
        /// A token was sent (a private repository it cannot see looks missing too).
        had_token: bool,
        /// `ORG/NAME`.
        repo: String,
        /// Endpoint.
        endpoint: String,
    },
    /// 404 of the revision in an existing repository.
    #[error("{repo} has no revision {revision} (a branch, tag or commit of the repository)")]
    RevisionNotFound {
        /// `ORG/NAME`.
        repo: String,
        /// The revision asked for.
        revision: String,
    },
    /// 429 again, or a Retry-After beyond the bound.
    #[error("{url}: rate-limited by the Hub (429){after}; try again later or set a token (HF_TOKEN, MODELSCOPE_API_TOKEN)", after = .retry_after.map_or(String::new(), |s| format!(", retry after {s} s")))]
    RateLimited {
        /// URL.
        url: String,
        /// Retry-After, seconds.
        retry_after: Option<u64>,
    },
    /// No answer in time.
    #[error("{url}: no answer within {secs} s (HF_HUB_DOWNLOAD_TIMEOUT sets the limit)")]
    Timeout {
        /// URL.
        url: String,
        /// The timeout.
        secs: f64,
    },
    /// Connection failures and other HTTP statuses.
    #[error("{url}: {why}")]
    Http {
        /// URL.
        url: String,
        /// What happened.
        why: String,
    },
    /// Something the server sent that is not what a Hub sends.
    #[error("{what}: {why}")]
    Bad {
        /// The file or URL.
        what: String,
        /// What is wrong.
        why: String,
    },
    /// Offline, and in neither cache.
    #[error(
        "{repo} is in neither the {which} cache ({hf}) nor vramscope's cache ({own}), and the Hub is not reached offline (HF_HUB_OFFLINE / --offline)"
    )]
    NotCached {
        /// `ORG/NAME[@REV]`.
        repo: String,
        /// Which hub's local cache: `Hugging Face` or `ModelScope`.
        which: &'static str,
        /// The local cache folder.
        hf: String,
        /// Own cache folder.
        own: String,
    },
    /// A Diffusers pipeline: each component's parameters and weight bytes, no estimate.
    #[error(
        "{repo} is a Diffusers pipeline: {summary}; activations of diffusion models are not modelled yet, so vramscope gives no memory estimate for it"
    )]
    Diffusers {
        /// `ORG/NAME`.
        repo: String,
        /// Each component's parameters and weight bytes.
        summary: String,
    },
    /// The files were read but are not a model.
    #[error("{repo}: {source}")]
    Load {
        /// `ORG/NAME`.
        repo: String,
        /// Why.
        source: preset::LoadError,
    },
}

/// A Diffusers pipeline at `dir`: its summary as the error.
fn diffusers_check(id: &HubId, dir: &Path) -> Result<(), HubError> {
    match diffusers::summary(dir) {
        None => Ok(()),
        Some(Ok(summary)) => Err(HubError::Diffusers { repo: id.repo(), summary }),
        Some(Err(why)) => Err(HubError::Bad { what: format!("{}: Diffusers pipeline", id.repo()), why }),
    }
}

/// Loads the model `id` names: from the HF cache, vramscope's cache, else the network.
pub fn load(id: &HubId, access: &Access) -> Result<(Loaded, Source), HubError> {
    // `--refresh` (online) asks the hub again, unless the revision is a commit id
    let cached = !access.refresh || access.offline || id.revision.as_deref().is_some_and(cache::is_sha);
    let local = local_snapshot(id, access).filter(|_| cached);
    if let Some((_, dir, _)) = &local {
        diffusers_check(id, dir)?;
    }
    let entry = access.own_cache.as_deref().map(|c| cache::Entry::new(c, &access.endpoint, id));
    let own = entry.as_ref().filter(|_| cached).and_then(cache::Entry::lookup);
    if let Some((_, dir)) = &own {
        diffusers_check(id, dir)?;
    }
    // a snapshot without its safetensors (transformers fetched the config alone) gives the
    // parameters from the config: taken only offline, when nothing better can be had
    let hf = local.map(|(s, d, o)| (s, model_dir(d), o));
    if let Some((sha, dir, origin)) = hf.clone().filter(|(_, d, _)| has_weights(d))
        && let Ok(l) = preset::load_path(&dir)
    {
        let src = source(id, sha, origin, dir, access);
        return Ok((named(l, id, &src), src));
    }
    if let (Some(e), Some((sha, dir))) = (&entry, own) {
        match preset::load_path(&dir) {
            Ok(l) => {
                let src = source(id, sha, Origin::Cache, dir, access);
                return Ok((named(l, id, &src), src));
            }
            // an entry that does not load is fetched again (not when offline: kept, and said)
            Err(_) if !access.offline => e.discard(&dir),
            Err(_) => {}
        }
    }
    if access.offline {
        if let Some((sha, dir, origin)) = hf {
            // in the cache but not a model this build reads: that, not "not cached"
            let mut l = preset::load_path(&dir).map_err(|e| HubError::Load { repo: id.repo(), source: e })?;
            if !has_weights(&dir) {
                let which = if origin == Origin::MsCache { "ModelScope" } else { "Hugging Face" };
                l.notes.push(format!(
                    "{}: no safetensors in the {which} cache's snapshot, and offline: the parameters follow config.json",
                    id.repo()
                ));
            }
            let src = source(id, sha, origin, dir, access);
            return Ok((named(l, id, &src), src));
        }
        let shown = |p: Option<&Path>| p.map_or("none".into(), |p| p.display().to_string());
        return Err(HubError::NotCached {
            repo: id.shown(),
            which: if access.hub == Hub::ModelScope { "ModelScope" } else { "Hugging Face" },
            hf: shown(access.hf_cache.as_deref().or(access.ms_cache.as_deref())),
            own: shown(access.own_cache.as_deref()),
        });
    }
    let fetched = fetch::fetch(id, access)?;
    let dir = match &entry {
        Some(e) => e
            .store(&fetched)
            .map_err(|e| HubError::Bad { what: "vramscope's metadata cache".into(), why: e.to_string() })?,
        None => cache::store_temp(&fetched)
            .map_err(|e| HubError::Bad { what: "a temporary folder".into(), why: e.to_string() })?,
    };
    diffusers_check(id, &dir)?;
    let mut l = preset::load_path(&dir).map_err(|e| HubError::Load { repo: id.repo(), source: e })?;
    if !has_weights(&dir) {
        l.notes.push(format!(
            "{}: no model.safetensors nor index in the repository: the parameters follow config.json",
            id.repo()
        ));
    }
    let src = source(id, fetched.sha.clone(), Origin::Network, dir, access);
    Ok((named(l, id, &src), src))
}

/// The folder of the Transformer module a Sentence Transformers `modules.json` names (`""` for
/// the repository's root).
pub fn st_module_path(modules_json: &[u8]) -> Result<String, String> {
    let v: serde_json::Value =
        serde_json::from_slice(modules_json).map_err(|e| format!("not valid JSON ({e})"))?;
    let list = v.as_array().ok_or("not a list of modules")?;
    let module = list
        .iter()
        .find(|m| m.get("type").and_then(|t| t.as_str()).is_some_and(|t| t.ends_with("models.Transformer")))
        .ok_or("no sentence_transformers.models.Transformer module")?;
    let path = module.get("path").and_then(|p| p.as_str()).unwrap_or("").trim_matches('/');
    let ok = path.is_empty()
        || (!path.contains('\\') && path.split('/').all(|s| !s.is_empty() && !s.starts_with('.')));
    if !ok {
        return Err(format!("the Transformer module's path \"{path}\" is not a folder of the repository"));
    }
    Ok(path.to_owned())
}

/// The folder holding the model in `dir`: `dir`, or the Transformer module's folder of a
/// Sentence Transformers repository whose root has no config.json.
fn model_dir(dir: PathBuf) -> PathBuf {
    if dir.join("config.json").exists() {
        return dir;
    }
    match std::fs::read(dir.join("modules.json")).ok().and_then(|m| st_module_path(&m).ok()) {
        Some(p) if !p.is_empty() && dir.join(&p).is_dir() => dir.join(p),
        _ => dir,
    }
}

/// A folder with safetensors weights (or their headers) the folder loader reads.
/// The model's files in the hub's local cache: (commit, folder, which cache).
fn local_snapshot(id: &HubId, access: &Access) -> Option<(String, PathBuf, Origin)> {
    if let Some((sha, dir)) = access.hf_cache.as_deref().and_then(|c| cache::hf_snapshot(c, id)) {
        return Some((sha, dir, Origin::HfCache));
    }
    let dir = access.ms_cache.as_deref().and_then(|c| cache::ms_snapshot(c, id))?;
    Some((cache::MS_UNKNOWN_COMMIT.to_owned(), dir, Origin::MsCache))
}

fn has_weights(dir: &Path) -> bool {
    dir.join("model.safetensors").exists() || dir.join("model.safetensors.index.json").exists()
}

fn source(id: &HubId, sha: String, origin: Origin, dir: PathBuf, access: &Access) -> Source {
    Source {
        repo: id.repo(),
        revision: id.revision.clone(),
        sha,
        origin,
        dir,
        endpoint: match origin {
            Origin::HfCache | Origin::MsCache => String::new(),
            _ => access.endpoint.clone(),
        },
        hub: access.hub,
    }
}

/// The model named as its repository, the source first in the notes.
fn named(mut l: Loaded, id: &HubId, src: &Source) -> Loaded {
    l.model.name.clone_from(&id.name);
    let st = [Some(src.dir.as_path()), src.dir.parent()]
        .into_iter()
        .flatten()
        .any(|d| d.join("modules.json").exists());
    if st {
        l.notes.insert(
            0,
            "Sentence Transformers model: its Transformer module is estimated (pooling and normalisation hold no parameters; a Dense module's weights are not counted)".into(),
        );
    }
    l.notes.insert(0, src.note());
    l
}

#[cfg(test)]
mod tests;
