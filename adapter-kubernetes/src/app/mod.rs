//! An app: its objects built from its plan, `apply` (O-41), `observe`,
//! `stop`, `destroy`, `usage` and `in-use`, the watch of its pods, and what
//! every namespace the adapter makes gets: its own binding, the quota and
//! the limit range, and (for an app's) Pando's RoleBinding.

pub mod apply;
pub mod binding;
pub mod lifecycle;
pub mod objects;
pub mod observe;
pub mod pods;
pub mod quota;
pub mod rbac;
pub mod watch;
