//! `pando-host`: load, inspect and call Pando runtime adapters from the
//! command line. See `docs/cli.md`.

fn main() -> std::process::ExitCode {
    pando_cli::main()
}
