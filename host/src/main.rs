//! `pando-host`: load, inspect and call Pando runtime adapters from the
//! command line. See `docs/cli.md`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
