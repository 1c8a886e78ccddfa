//! Diagnosis of memory problems from what a run leaves behind: out-of-memory messages
//! ([`oom`]), memory-usage curves ([`trace`]), allocator reports ([`allocator`]) and memory snapshots
//! ([`snapshot`]). All parsers take untrusted text: size-capped,
//! never panicking, and saying what they did not understand.

pub mod allocator;
pub mod fixes;
pub mod oom;
pub mod snapshot;
pub mod trace;

pub use oom::{Finding, MAX_INPUT_BYTES, OomError, OomNumbers, OomReport, Source, explain_oom};
