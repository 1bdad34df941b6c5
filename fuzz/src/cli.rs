//! The `pando-host` command line's argument, input and output modules, from
//! its library crate: the targets fuzz the code the CLI runs.

pub use pando_cli::{args, failure, input, output};
