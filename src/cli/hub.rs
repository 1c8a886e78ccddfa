//! `--model ORG/NAME` (with `--revision`, `--offline`, `--hub`): the one place the command line
//! reaches the Hugging Face Hub or ModelScope. A preset name, a preset's Hub id and an existing file or folder load as
//! before; any other `ORG/NAME[@REV]` is fetched (config.json and safetensors headers only).

use anyhow::{Result, bail};
use clap::Args;
use vramscope::hub;
use vramscope::model::preset;

/// Flags for a model named by its Hub id.
#[derive(Args, Debug, Clone, Default)]
pub struct HubArgs {
    /// With a Hub id in --model: the branch, tag or commit to read (default: the repository's
    /// default branch; `--model ORG/NAME@REV` says the same).
    #[arg(long, value_name = "REV")]
    pub revision: Option<String>,
    /// With a Hub id in --model: read only the local Hugging Face cache and vramscope's metadata
    /// cache, never the network (HF_HUB_OFFLINE=1 does the same).
    #[arg(long)]
    pub offline: bool,
    /// With a Hub id in --model: ask the hub again which commit the branch is at (the caches
    /// remember the commit a branch resolved to when it was read; a commit id never needs this).
    #[arg(long, conflicts_with = "offline")]
    pub refresh: bool,
    /// With a Hub id in --model: the hub it is on: huggingface (HF_ENDPOINT, HF_TOKEN) or
    /// modelscope (MODELSCOPE_DOMAIN, MODELSCOPE_API_TOKEN).
    #[arg(long, value_enum, default_value_t = HubKind::Huggingface)]
    pub hub: HubKind,
}

/// `--hub`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HubKind {
    /// The Hugging Face Hub.
    #[default]
    Huggingface,
    /// ModelScope (modelscope.cn).
    Modelscope,
}

/// A model loaded for a command, and where it came from when it is a Hub id.
pub struct Model {
    /// The model and the loader's notes.
    pub loaded: preset::Loaded,
    /// The Hub repository, commit and cache it came from.
    pub source: Option<hub::Source>,
}

/// Loads `--model`: a preset, a file or folder, or a Hub id.
pub fn load_model(spec: &str, h: &HubArgs) -> Result<Model> {
    let plain = h.revision.is_none() && !spec.contains('@') && h.hub == HubKind::Huggingface;
    if plain && std::path::Path::new(spec).exists() {
        return Ok(Model { loaded: preset::load(spec)?, source: None });
    }
    if plain && preset::builtin(spec).is_some() {
        // a preset's Hub id is the preset, unless the Hub is asked for: a mirror or another
        // endpoint named (HF_ENDPOINT), or --refresh; what it cannot answer the preset does
        let endpoint = std::env::var_os("HF_ENDPOINT").is_some_and(|v| !v.is_empty());
        let id = hub::parse_id(spec, None).and_then(Result::ok).filter(|_| endpoint || h.refresh);
        let Some(id) = id else { return Ok(Model { loaded: preset::load(spec)?, source: None }) };
        return match hub::load(&id, &access(h)) {
            Ok((loaded, source)) => Ok(Model { loaded, source: Some(source) }),
            Err(e) => {
                let mut loaded = preset::load(spec)?;
                loaded.notes.insert(0, format!("{e}: the built-in preset {spec} answers instead"));
                Ok(Model { loaded, source: None })
            }
        };
    }
    match hub::parse_id(spec, h.revision.as_deref()) {
        Some(id) => {
            let id = id.map_err(anyhow::Error::msg)?;
            let (loaded, source) = hub::load(&id, &access(h)).map_err(|e| {
                // a near miss of a preset's id is most likely that preset
                let missing =
                    matches!(e, hub::HubError::RepoNotFound { .. } | hub::HubError::NotCached { .. });
                match preset::nearest_preset(&id.repo()).filter(|_| missing) {
                    Some(n) => anyhow::anyhow!("{e}; did you mean the preset {n}?"),
                    None => anyhow::Error::new(e),
                }
            })?;
            Ok(Model { loaded, source: Some(source) })
        }
        None if h.hub == HubKind::Modelscope => {
            bail!("--hub modelscope applies to a Hub id (--model ORG/NAME), not to {spec}")
        }
        None if h.revision.is_some() => {
            bail!("--revision applies to a Hub id (--model ORG/NAME), not to {spec}")
        }
        None => Ok(Model { loaded: preset::load(spec)?, source: None }),
    }
}

/// How to reach the hub `--hub` names.
fn access(h: &HubArgs) -> hub::Access {
    let mut a = match h.hub {
        HubKind::Huggingface => hub::Access::from_env(h.offline),
        HubKind::Modelscope => hub::Access::from_env_for(hub::Hub::ModelScope, h.offline),
    };
    a.refresh = h.refresh;
    a
}
