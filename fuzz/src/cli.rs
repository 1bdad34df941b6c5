//! The `pando-host` binary's argument, input and output modules, compiled
//! in from `host/src/cli/` unchanged: the targets fuzz the code the CLI
//! runs, not a copy of it (they live in the binary crate, which a fuzz
//! target cannot depend on).
#![allow(dead_code)]

#[path = "../../host/src/cli/args.rs"]
pub mod args;

#[path = "../../host/src/cli/failure.rs"]
pub mod failure;

#[path = "../../host/src/cli/input.rs"]
pub mod input;

#[path = "../../host/src/cli/output.rs"]
pub mod output;
