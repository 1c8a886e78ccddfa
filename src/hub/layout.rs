//! What to read of a repository, from its file list: the plain layout (config.json, its index
//! and shards at the root), a Sentence Transformers repository (the Transformer module's folder
//! that `modules.json` names) or a Diffusers pipeline (the components `model_index.json` names).
//! The deciding file is read in the same round trip as every candidate folder's files.

use super::fetch::MAX_SHARDS;
use super::{HubError, HubId};

/// The files of one folder that may hold the model: its JSON files and its shards, as paths
/// in the repository.
pub(super) struct Group {
    /// `""` for the root, else the folder (`0_Transformer`, `unet`).
    folder: String,
    pub(super) json: Vec<String>,
    pub(super) shards: Vec<String>,
}

/// What to read of a repository: the file that decides which folders hold the model
/// (`modules.json`, `model_index.json`; none for a plain repository), and each candidate folder.
/// The decider and every candidate's JSON and shard lengths are read in one round trip.
pub(super) struct Plan {
    pub(super) decider: Option<&'static str>,
    pub(super) groups: Vec<Group>,
}

/// The folders of `all` (one level down) holding a file `pick` accepts.
fn folders_with(all: &[String], pick: impl Fn(&str) -> bool) -> Vec<&str> {
    let mut out: Vec<&str> = all
        .iter()
        .filter_map(|p| p.split_once('/'))
        .filter(|(f, n)| !f.is_empty() && !n.contains('/') && pick(n))
        .map(|(f, _)| f)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The plain files of `folder` (`""`: the root): config, generation config, index, shards.
fn plain_group(all: &[String], folder: &str) -> Group {
    let pre = if folder.is_empty() { String::new() } else { format!("{folder}/") };
    let here: Vec<&str> =
        all.iter().filter_map(|p| p.strip_prefix(pre.as_str())).filter(|n| !n.contains('/')).collect();
    let json = ["config.json", "generation_config.json", "model.safetensors.index.json"]
        .into_iter()
        .filter(|n| here.contains(n))
        .map(|n| format!("{pre}{n}"))
        .collect();
    let shards = here.iter().filter(|n| n.ends_with(".safetensors")).map(|n| format!("{pre}{n}")).collect();
    Group { folder: folder.to_owned(), json, shards }
}

/// Decides what to read of the repository whose files are `all`.
pub(super) fn plan(id: &HubId, all: &[String]) -> Result<Plan, HubError> {
    let has = |n: &str| all.iter().any(|m| m == n);
    let plan = if !has("config.json") && has("modules.json") {
        // Sentence Transformers: the Transformer module's folder, which modules.json names;
        // every folder with a config.json is a candidate until it is read
        let mut groups = vec![plain_group(all, "")];
        let folders = folders_with(all, |n| n == "config.json");
        groups.extend(folders.into_iter().map(|f| plain_group(all, f)));
        Plan { decider: Some("modules.json"), groups }
    } else if !has("config.json") && has("model_index.json") {
        // a Diffusers pipeline: each component's headers (model_index.json names them)
        let groups = folders_with(all, |n| n.ends_with(".safetensors"))
            .into_iter()
            .map(|f| Group {
                folder: f.to_owned(),
                json: Vec::new(),
                shards: super::diffusers::shards(f, all.iter().map(String::as_str)),
            })
            .collect();
        Plan { decider: Some("model_index.json"), groups }
    } else {
        Plan { decider: None, groups: vec![plain_group(all, "")] }
    };
    let shards: usize = plan.groups.iter().map(|g| g.shards.len()).sum();
    if plan.decider.is_none() && plan.groups.iter().all(|g| g.json.is_empty() && g.shards.is_empty()) {
        return Err(HubError::Bad {
            what: id.shown(),
            why: "no config.json nor .safetensors file at the repository's root (GGUF-only repositories are not read yet)".into(),
        });
    }
    if shards > MAX_SHARDS {
        return Err(HubError::Bad {
            what: id.shown(),
            why: format!("{shards} shards, more than {MAX_SHARDS}"),
        });
    }
    Ok(plan)
}

/// Keeps the groups the decider names, as (group, the prefix its files are stored without);
/// the decider's own file is pushed to `files`.
pub(super) fn choose(
    id: &HubId,
    plan: Plan,
    decider_bytes: Option<Vec<u8>>,
    files: &mut Vec<(String, Vec<u8>)>,
) -> Result<(Vec<Group>, String), HubError> {
    let (Some(decider), Some(bytes)) = (plan.decider, decider_bytes) else {
        return Ok((plan.groups, String::new()));
    };
    let bad = |why: String| HubError::Bad { what: format!("{}: {decider}", id.shown()), why };
    let chosen = if decider == "modules.json" {
        let p = super::st_module_path(&bytes).map_err(bad)?;
        let group = plan.groups.into_iter().find(|g| g.folder == p);
        let group =
            group.filter(|g| !g.json.is_empty() || !g.shards.is_empty()).ok_or_else(|| HubError::Bad {
                what: id.shown(),
                why: format!(
                    "no config.json nor .safetensors file in {p}/, the Transformer module modules.json names"
                ),
            })?;
        let prefix = if p.is_empty() { String::new() } else { format!("{p}/") };
        (vec![group], prefix)
    } else {
        let comps = super::diffusers::components(&bytes).map_err(bad)?;
        let groups = plan.groups.into_iter().filter(|g| comps.iter().any(|(n, _)| *n == g.folder)).collect();
        (groups, String::new())
    };
    files.push((decider.to_owned(), bytes));
    Ok(chosen)
}
