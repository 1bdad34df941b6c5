//! `pando-wit-proto [--check]`: writes the proto file and the Go files the
//! contract's WIT gives (see the library's docs), or with `--check` says
//! which of them differ. Run from the repository's root.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context as _, Result, bail};
use pando_wit_proto::{Model, outputs};

fn main() -> Result<()> {
    let check = std::env::args().nth(1).is_some_and(|a| a == "--check");
    let model = Model::wire(Path::new("."))?;
    let mut stale = Vec::new();
    for (path, text) in outputs(&model) {
        let text = if path.ends_with(".go") {
            gofmt(&text)?
        } else {
            text
        };
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == text {
            continue;
        }
        if check {
            stale.push(path);
        } else {
            if let Some(dir) = Path::new(&path).parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            std::fs::write(&path, text).with_context(|| format!("writing {path}"))?;
            println!("wrote {path}");
        }
    }
    if !stale.is_empty() {
        bail!(
            "not what wit/ gives: {}; run `cargo run -p pando-wit-proto` (and scripts/gen-go for \
             the Go messages)",
            stale.join(", ")
        );
    }
    Ok(())
}

/// Go source as gofmt writes it (the committed files are gofmt-ed).
fn gofmt(source: &str) -> Result<String> {
    let mut child = Command::new("gofmt")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running gofmt (Go's formatter): is Go installed?")?;
    child
        .stdin
        .take()
        .context("gofmt's stdin")?
        .write_all(source.as_bytes())
        .context("writing to gofmt")?;
    let out = child.wait_with_output().context("waiting for gofmt")?;
    if !out.status.success() {
        bail!(
            "gofmt refused the generated Go (a bug in pando-wit-proto): {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).context("gofmt's output is not UTF-8")
}
