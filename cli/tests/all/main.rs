//! The CLI's tests, one binary of modules (as `tests/tests/all`): each links
//! the host once, not once per file.

mod common;
mod conformance;
mod grants;
mod metrics;
mod new;
mod schema;
mod settings;
mod shell;
mod tty;
mod verbs;
