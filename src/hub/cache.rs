//! The two caches: the Hugging Face one (read only: `models--ORG--NAME/refs/REV` names a commit,
//! `snapshots/COMMIT/` holds its files, as transformers lays them out) and vramscope's own
//! (`HOST/ORG--NAME/refs/REV` and `HOST/ORG--NAME/COMMIT/`: the API answer, config.json, the
//! index and each shard's header as a header-only `.safetensors` file), written atomically.

use super::HubId;
use super::fetch::Fetched;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A commit id or a file name safe to use as one path component.
fn component_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s != "."
        && s != ".."
        && !s.contains(['/', '\\', '\0'])
        && !s.starts_with('.')
}

/// A full commit id (40 hex digits).
pub fn is_sha(s: &str) -> bool {
    s.len() == 40 && s.chars().all(|c| c.is_ascii_hexdigit())
}

fn read_ref(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let sha = text.trim().to_owned();
    component_ok(&sha).then_some(sha)
}

/// The snapshot of `id` in the Hugging Face cache at `root`: (commit, folder).
pub fn hf_snapshot(root: &Path, id: &HubId) -> Option<(String, PathBuf)> {
    let repo = root.join(format!("models--{}--{}", id.org, id.name));
    let rev = id.revision.as_deref().unwrap_or("main");
    let sha = if is_sha(rev) && repo.join("snapshots").join(rev).is_dir() {
        rev.to_owned()
    } else {
        if rev.split('/').any(|p| !component_ok(p)) {
            return None;
        }
        read_ref(&repo.join("refs").join(rev))?
    };
    let dir = repo.join("snapshots").join(&sha);
    dir.is_dir().then_some((sha, dir))
}

/// What a model from the ModelScope cache names as its commit: the cache keeps one version of
/// each file and records its revision only in a Python pickle.
pub const MS_UNKNOWN_COMMIT: &str = "unrecorded";

/// The folder of `id` in the ModelScope cache at `root` (`MODELSCOPE_CACHE`, else
/// `~/.cache/modelscope/hub`): `models/ORG/NAME` since modelscope 1.20, `ORG/NAME` before, the
/// dots of the name written `___` as the library writes them. The cache keeps one version: a
/// revision other than the default branch is not looked for here.
pub fn ms_snapshot(root: &Path, id: &HubId) -> Option<PathBuf> {
    if id.revision.as_deref().is_some_and(|r| r != "master") {
        return None;
    }
    if !component_ok(&id.org) || !component_ok(&id.name) {
        return None;
    }
    let escaped = id.name.replace('.', "___");
    let names = [escaped.as_str(), id.name.as_str()];
    [root.join("models"), root.to_path_buf()]
        .iter()
        .flat_map(|base| names.iter().map(move |n| base.join(&id.org).join(n)))
        .find(|d| ["config.json", "model_index.json", "modules.json"].iter().any(|f| d.join(f).is_file()))
}

/// A repository's place in vramscope's own cache.
pub struct Entry {
    /// `…/HOST/ORG--NAME`.
    root: PathBuf,
    /// The ref's file name (the revision with `/` escaped, or `_default`).
    key: String,
    /// The revision when it is a full commit id.
    sha: Option<String>,
}

/// The endpoint's host (and port) as a folder name.
fn host_key(endpoint: &str) -> String {
    let rest = endpoint.split_once("://").map_or(endpoint, |(_, r)| r);
    rest.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-') { c } else { '_' }).collect()
}

impl Entry {
    /// The entry of `id` fetched from `endpoint`, under `cache`.
    pub fn new(cache: &Path, endpoint: &str, id: &HubId) -> Self {
        let key = id.revision.as_deref().map_or_else(
            || "_default".to_owned(),
            |r| r.replace('%', "%25").replace('/', "%2F").replace('\\', "%5C"),
        );
        Self {
            root: cache.join(host_key(endpoint)).join(format!("{}--{}", id.org, id.name)),
            key,
            sha: id.revision.clone().filter(|r| is_sha(r)),
        }
    }

    /// The commit and folder cached for this revision, if any.
    pub fn lookup(&self) -> Option<(String, PathBuf)> {
        // the default branch and `main` (what it nearly always is) share an entry
        let refs = self.root.join("refs");
        let alias = match self.key.as_str() {
            "_default" => "main",
            "main" => "_default",
            _ => "",
        };
        let sha = match &self.sha {
            Some(s) => s.clone(),
            None => read_ref(&refs.join(&self.key))
                .or_else(|| (!alias.is_empty()).then(|| read_ref(&refs.join(alias))).flatten())?,
        };
        let dir = self.root.join(&sha);
        // the API answer is written with the rest: an entry without it is not one
        let api = std::fs::read(dir.join("api.json")).ok()?;
        serde_json::from_slice::<serde_json::Value>(&api).ok()?;
        Some((sha, dir))
    }

    /// Moves aside and removes the entry folder `dir`, which does not load (fetched again next).
    pub fn discard(&self, dir: &Path) {
        let old = self.root.join(format!(".old-{}-{}", std::process::id(), unique()));
        if std::fs::rename(dir, &old).is_ok() {
            let _ = std::fs::remove_dir_all(&old);
        }
    }

    /// Writes what was fetched: the files into a fresh folder renamed into place, then the ref.
    pub fn store(&self, f: &Fetched) -> std::io::Result<PathBuf> {
        if !component_ok(&f.sha) {
            return Err(std::io::Error::other(format!("commit id \"{}\" is not a folder name", f.sha)));
        }
        std::fs::create_dir_all(&self.root)?;
        let dir = self.root.join(&f.sha);
        // another process may store the same commit at the same time (entries are renamed into
        // place whole, so one that has a sound API answer is complete): keep the first
        let sound = |d: &Path| {
            std::fs::read(d.join("api.json"))
                .ok()
                .is_some_and(|b| serde_json::from_slice::<serde_json::Value>(&b).is_ok())
        };
        if !sound(&dir) {
            let tmp = self.root.join(format!(".tmp-{}-{}", std::process::id(), unique()));
            write_files(&tmp, f)?;
            // renaming onto a folder that has files fails: then it is a sound entry another
            // process put there meanwhile (kept), or a damaged one (moved aside, then replaced)
            let mut placed = std::fs::rename(&tmp, &dir);
            if placed.is_err() && dir.exists() && !sound(&dir) {
                let old = self.root.join(format!(".old-{}-{}", std::process::id(), unique()));
                if std::fs::rename(&dir, &old).is_ok() {
                    let _ = std::fs::remove_dir_all(&old);
                }
                placed = std::fs::rename(&tmp, &dir);
            }
            if let Err(e) = placed {
                let _ = std::fs::remove_dir_all(&tmp);
                if !sound(&dir) {
                    return Err(e);
                }
            }
        }
        let refs = self.root.join("refs");
        std::fs::create_dir_all(&refs)?;
        write_atomic(&refs.join(&self.key), f.sha.as_bytes())?;
        Ok(dir)
    }
}

fn unique() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

fn write_files(dir: &Path, f: &Fetched) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, bytes) in &f.files {
        // a plain name, or a component's folder and a name (a Diffusers pipeline's `unet/…`)
        if name.split('/').count() > 2 || !name.split('/').all(component_ok) {
            return Err(std::io::Error::other(format!("file name \"{name}\" is not a plain name")));
        }
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)?;
    }
    let mut api = std::fs::File::create(dir.join("api.json"))?;
    api.write_all(&f.api)?;
    api.sync_all()
}

/// Writes `bytes` to `path` through a temporary file renamed over it.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}-{}", std::process::id(), unique()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Where the fetched files go when there is no cache folder (no HOME): a fresh temporary folder.
pub fn store_temp(f: &Fetched) -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("vramscope-hub-{}-{}", std::process::id(), unique()));
    write_files(&dir, f)?;
    Ok(dir)
}
