//! ModelScope as a second hub (`--hub modelscope`), read as its own library reads it: the
//! endpoint from `MODELSCOPE_DOMAIN` (a domain, `https://` added; default `www.modelscope.cn`),
//! the token from `MODELSCOPE_API_TOKEN`, the file list from
//! `/api/v1/models/ORG/NAME/repo/files?Revision=REV&Recursive=true` and each file from
//! `/api/v1/models/ORG/NAME/repo?Revision=REV&FilePath=PATH` (which honours Range, as
//! modelscope's own resumable download relies on). The default revision is `master`.

use super::HubError;

/// The endpoint `MODELSCOPE_DOMAIN` names (`https://` added to a bare domain).
pub(super) fn endpoint(domain: Option<String>) -> String {
    let d = domain.unwrap_or_else(|| "www.modelscope.cn".into());
    let d = d.trim().trim_end_matches('/');
    if d.starts_with("http://") || d.starts_with("https://") { d.to_owned() } else { format!("https://{d}") }
}

/// The revision asked for, or ModelScope's default branch.
pub(super) fn revision(r: Option<&str>) -> &str {
    r.unwrap_or("master")
}

/// A query value with everything but unreserved characters escaped (the path segments' escape).
fn query(s: &str) -> String {
    super::fetch::escape(s)
}

/// The file list of `org/name` at `rev`.
pub(super) fn list_url(endpoint: &str, org: &str, name: &str, rev: &str) -> String {
    format!("{endpoint}/api/v1/models/{org}/{name}/repo/files?Revision={}&Recursive=true", query(rev))
}

/// One file of `org/name` at `rev`.
pub(super) fn file_url(endpoint: &str, org: &str, name: &str, rev: &str, path: &str) -> String {
    format!("{endpoint}/api/v1/models/{org}/{name}/repo?Revision={}&FilePath={}", query(rev), query(path))
}

/// The model's page.
pub(super) fn page(endpoint: &str, repo: &str) -> String {
    format!("{endpoint}/models/{repo}")
}

/// A 64-bit FNV-1a digest, as hex.
fn digest(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// The commit key and the file paths of a ModelScope file list (`{"Code": 200, "Data": {"Files":
/// [{"Path", "Type", "Revision", "Sha256"}]}}`). ModelScope names no commit for a branch: the key
/// is the revision asked for and a digest of the files' paths, revisions and hashes, so a change
/// of any file is a new cache entry.
pub(super) fn parse_list(url: &str, rev: &str, bytes: &[u8]) -> Result<(String, Vec<String>), HubError> {
    let bad = |why: &str| HubError::Bad { what: url.into(), why: why.into() };
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|_| bad("the answer is not JSON"))?;
    if let Some(code) = v.get("Code").and_then(serde_json::Value::as_u64)
        && code != 200
    {
        let msg = v.get("Message").and_then(|m| m.as_str()).unwrap_or("");
        return Err(bad(&format!("ModelScope answered Code {code}: {msg}")));
    }
    let files = v
        .pointer("/Data/Files")
        .and_then(|f| f.as_array())
        .ok_or_else(|| bad("the answer lists no files (Data.Files)"))?;
    let mut paths = Vec::new();
    let mut parts = vec![rev.to_owned()];
    for f in files {
        if f.get("Type").and_then(|t| t.as_str()).is_some_and(|t| t != "blob") {
            continue;
        }
        let Some(p) = f.get("Path").and_then(|p| p.as_str()) else { continue };
        for k in ["Revision", "Sha256"] {
            parts.push(f.get(k).and_then(|x| x.as_str()).unwrap_or("").to_owned());
        }
        parts.push(p.to_owned());
        paths.push(p.to_owned());
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    let safe: String =
        rev.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).take(40).collect();
    Ok((format!("{safe}-{}", digest(&refs)), paths))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_list_and_file_urls_follow_the_modelscope_library() {
        assert_eq!(endpoint(None), "https://www.modelscope.cn");
        assert_eq!(endpoint(Some("modelscope.ai/".into())), "https://modelscope.ai");
        assert_eq!(endpoint(Some("http://127.0.0.1:9".into())), "http://127.0.0.1:9");
        assert_eq!(
            file_url("https://m", "Qwen", "Qwen3-8B", "master", "0_T/config.json"),
            "https://m/api/v1/models/Qwen/Qwen3-8B/repo?Revision=master&FilePath=0_T%2Fconfig.json"
        );
        let body = br#"{"Code":200,"Data":{"Files":[{"Path":"config.json","Type":"blob","Revision":"abc","Sha256":"1"},
            {"Path":"sub","Type":"tree"}]}}"#;
        let (sha, files) = parse_list("u", "master", body).unwrap();
        assert_eq!(files, ["config.json"]);
        assert!(sha.starts_with("master-") && sha.len() == 7 + 16, "{sha}");
        let other = br#"{"Code":200,"Data":{"Files":[{"Path":"config.json","Type":"blob","Revision":"abd","Sha256":"1"}]}}"#;
        assert_ne!(parse_list("u", "master", other).unwrap().0, sha);
        assert!(parse_list("u", "master", br#"{"Code":10010205001,"Message":"not found"}"#).is_err());
    }
}
