//! Diagnosis of memory problems from what a run leaves behind: out-of-memory messages
//! ([`oom`]), memory-usage curves ([`trace`]), allocator reports ([`allocator`]), memory snapshots
//! ([`snapshot`]) and the allocation traces inside them ([`memtrace`]). All parsers take untrusted
//! input: size-capped, never panicking, and saying what they did not understand.

pub mod allocator;
pub mod fixes;
pub mod memtrace;
pub mod oom;
pub mod snapshot;
pub mod trace;

pub use oom::{
    Finding, MAX_INPUT_BYTES, OomError, OomNumbers, OomReport, Source, explain_oom, explain_oom_in,
};

#[cfg(test)]
mod zh_tests;
