//! The Go side of the `serve` benchmark: `pandohost-bench`
//! (go/pandohost/cmd/pandohost-bench), which loads adapters through
//! package pandohost — go-plugin's client starting `pando-host serve` — as
//! Pando's core does, and times the calls asked of it. One command a line
//! on its stdin, one JSON answer a line on its stdout; it times only the
//! calls, so the pipe between the two processes is not measured.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::env;

/// One adapter the Go side loads, as `pando-host serve --adapters` takes it.
pub struct Load<'a> {
    pub name: &'a str,
    pub component: PathBuf,
    pub grants: PathBuf,
    pub config: Option<PathBuf>,
}

/// The Go program, running, with its plugin started.
pub struct GoClient {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

/// An answer: nanoseconds of the calls, bytes read, the last result.
#[derive(Debug, Default, Deserialize)]
pub struct Answer {
    #[serde(default)]
    pub ns: u64,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub answer: String,
    #[serde(default)]
    error: String,
}

/// The `pandohost-bench` binary (`scripts/bench` builds it), if built.
pub fn binary() -> Option<PathBuf> {
    let path = env::repo_root().join("target/gotools/bin/pandohost-bench");
    path.is_file().then_some(path)
}

/// The `pando-host` binary beside this one (the same build profile).
pub fn pando_host() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.join("pando-host");
    path.is_file().then_some(path)
}

impl GoClient {
    /// Starts `bin` with the adapters, all from `pando_host` reaching the
    /// cluster as the `pando` identity; returns once they are loaded.
    pub async fn start(
        bin: &Path,
        pando_host: &Path,
        scratch: &Path,
        loads: &[Load<'_>],
    ) -> Result<GoClient> {
        let kubeconfig = env::repo_root().join("target/test-cluster/pando.kubeconfig");
        let adapters: serde_json::Map<String, serde_json::Value> = loads
            .iter()
            .map(|l| {
                let mut a = serde_json::json!({
                    "component": l.component,
                    "grants": l.grants,
                    "kubeconfig": kubeconfig,
                });
                if let Some(c) = &l.config {
                    a["config"] = serde_json::json!(c);
                }
                (l.name.to_string(), a)
            })
            .collect();
        let config = serde_json::json!({
            "pando_host": pando_host,
            "cache_dir": env::cache_dir()?,
            "adapters": adapters,
        });
        let file = scratch.join("go-client.json");
        std::fs::write(&file, serde_json::to_vec_pretty(&config)?)
            .with_context(|| format!("writing {}", file.display()))?;
        let mut child = Command::new(bin)
            .arg(&file)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stdin = child.stdin.take().ok_or_else(|| anyhow!("no stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
        Ok(GoClient {
            child,
            stdin,
            stdout: BufReader::new(stdout).lines(),
        })
    }

    /// Sends one command and reads its answer (the first also waits for the
    /// plugin to start: a load from the compile cache).
    pub async fn ask(&mut self, command: &str) -> Result<Answer> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .context("writing to pandohost-bench (did it exit? its stderr is above)")?;
        let line = tokio::time::timeout(Duration::from_secs(600), self.stdout.next_line())
            .await
            .map_err(|_| anyhow!("pandohost-bench did not answer `{command}` in 10 minutes"))??
            .ok_or_else(|| {
                anyhow!("pandohost-bench exited before answering `{command}` (its stderr is above)")
            })?;
        let answer: Answer = serde_json::from_str(&line)
            .with_context(|| format!("pandohost-bench answered `{line}`"))?;
        if !answer.error.is_empty() {
            bail!("pandohost-bench: `{command}`: {}", answer.error);
        }
        Ok(answer)
    }

    /// Closes its stdin, so that it stops its plugin and exits.
    pub async fn stop(mut self) -> Result<()> {
        drop(self.stdin);
        match tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    bail!("pandohost-bench exited with {status}");
                }
                Ok(())
            }
            Err(_) => {
                self.child.kill().await?;
                bail!("pandohost-bench did not exit within 30 s of its input ending")
            }
        }
    }
}
