//! What a step costs, op by op: the op kinds with their autograd rules ([`ops`], the one table)
//! and the interpreter that walks a family's block ([`walk`]). Families (in
//! [`crate::families`]) are short op lists; the estimator composes the walk's result.

pub mod inputs;
pub mod ops;
pub mod walk;
