//! Sessions with a workload's running or newest pod: `exec` (R-084,
//! R-228), `run` and `logs`, the host's streams handed on.

pub mod exec;
pub mod logs;
