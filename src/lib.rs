//! vramscope core: how much GPU memory a deep-learning job needs, why, and what to change so it fits.
//!
//! The core modules (all but [`gui`]) are pure and fast and hold no GUI or driver types; the CLI
//! and the GUI both call them.
//!
//! * [`model`] — model descriptions (HF `config.json`, presets, safetensors headers).
//! * [`mod@estimate`] — the per-op estimator: parameters, gradients, optimizer states, saved activations,
//!   KV cache and the peak of a steady-state step.
//! * [`fit`] — the largest micro-batch that fits a GPU, and what-if sweeps.
//! * [`gpu`] — the GPU catalog.
//! * [`report`] — JSON and text renderings of an estimate (shared by the CLI and exports).
//! * [`explain`] — each component's formula with the numbers substituted.
//! * [`plan`] — step time, speed-up and the multi-GPU layout search.
//! * [`probe`] — the PyTorch script that measures a scenario on a GPU; [`calibrate`] compares its
//!   result with the estimate and turns it into a GPU's calibration profile.
//! * [`cluster`] — a cluster's GPUs mapped to the job's ranks, each against its pipeline stage.
//! * [`i18n`] — the language of the texts (English, zh-CN) and [`text!`] that writes a sentence in both.
//! * [`gui`] — the eframe explorer (the only module that uses egui).

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod alloc;
pub mod calibrate;
pub mod cluster;
pub mod cost;
pub mod diagnose;
pub mod engine;
pub mod estimate;
pub mod explain;
pub mod export;
pub mod families;
pub mod fit;
pub mod flags;
pub mod gpu;
pub mod gui;
pub mod hub;
pub mod i18n;
pub mod model;
pub mod monitor;
pub mod options;
pub mod plan;
pub mod probe;
pub mod report;
pub mod roadmap;
pub mod serve;
pub mod tokens;
pub mod trace;
pub mod units;

pub use estimate::{Estimate, Scenario, estimate};
