//! Habits of a shell tool: `--color` and `pando-host completions SHELL`.

use std::io::IsTerminal;

use clap::CommandFactory;

use crate::args::{Cli, Color};
use crate::failure::{Failure, Outcome};
use crate::output;

/// Whether to write colour escapes on stderr: `always`, `never`, or for
/// `auto` when stderr is a terminal and `NO_COLOR` is not set
/// (<https://no-color.org>).
pub fn colour(color: Color) -> bool {
    match color {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::io::stderr().is_terminal()
        }
    }
}

/// Prints the completion script of `shell` for the whole command line.
pub fn completions(shell: clap_complete::Shell) -> Outcome {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "pando-host", &mut script);
    let text = String::from_utf8(script)
        .map_err(|e| Failure::other("rendering the completion script", e))?;
    output::write_stdout(&text)
}
