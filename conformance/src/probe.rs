//! Commands the suite runs inside its own workloads to see what the
//! runtime did: whether a workload reaches an address (`C-CAP-04`).
//! Through `run` where the adapter declares it, else `exec`; with neither,
//! what only a command in the workload can show is unproven, naming both.
//! Also what the sessions cases (`C-EXEC-01`, `C-RUN-01`) share with
//! them: `sh -c`, reading a stream to its end, one `run` collected.

use std::time::Duration;

use tokio::io::AsyncReadExt;

use pando_host::CallError;
use pando_host::streams::ByteStream;
use pando_host::types::{ExecRequest, RunRequest, RuntimeCapabilities, WorkloadRef};

use super::fixture::{Check, Fixture, fail, failed};

/// The most output a probe's or a session's stream is read to.
const MAX_OUTPUT: usize = 1 << 20;

/// How long a probe's fetch may take (`timeout`): a policy that drops
/// packets answers nothing, so "unreached" is this long. Not `wget -T`:
/// Debian's static busybox 1.35 (`busybox-static`) dies of SIGSEGV with it.
pub(crate) const CONNECT_SECS: u32 = 5;

/// `sh -c SCRIPT`.
pub(crate) fn sh(script: &str) -> Vec<String> {
    vec!["sh".into(), "-c".into(), script.into()]
}

/// The call a probe goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// `run`: stdout streamed back, the exit status as `command-failed`.
    Run,
    /// `exec` without stdin or a terminal.
    Exec,
}

impl Via {
    /// `run` if declared, else `exec` if declared; `None` with neither.
    pub(crate) fn of(caps: &RuntimeCapabilities) -> Option<Via> {
        if caps.run {
            Some(Via::Run)
        } else if caps.exec {
            Some(Via::Exec)
        } else {
            None
        }
    }

    /// The call's name, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Via::Run => "run",
            Via::Exec => "exec",
        }
    }
}

/// Why a probe cannot run: neither call is declared.
pub(crate) const NO_PROBE: &str = "the suite shows it with a command run inside a workload, and \
     the adapter declares neither `run` nor `exec`";

/// What `script` printed on stdout, run in `workload` through `via`. The
/// script is written to exit 0; another status fails, naming it.
pub(crate) async fn output(
    fx: &Fixture<'_>,
    via: Via,
    workload: &WorkloadRef,
    script: &str,
) -> Check<String> {
    let what = format!(
        "{} in `{}/{}` of `{script}`",
        via.name(),
        workload.bundle,
        workload.workload
    );
    match via {
        Via::Run => {
            let request = RunRequest {
                command: sh(script),
                env: vec![],
            };
            let (r, out) = run_collect(fx, workload, &request).await;
            r.map_err(|e| failed(&what, &e))?;
            out
        }
        Via::Exec => {
            let request = ExecRequest {
                command: sh(script),
                stdin: false,
                tty: false,
                size: None,
            };
            let ctx = fx.ctx();
            let mut session = fx
                .adapter
                .exec(&ctx, workload, &request)
                .await
                .map_err(|e| failed(&what, &e))?;
            let mut stdout = session
                .stdout()
                .await
                .map_err(|e| failed(&format!("the stdout of {what}"), &e))?
                .ok_or_else(|| fail(format!("{what}: the session has no stdout")))?;
            let read = read_all(fx, &format!("the stdout of {what}"), &mut stdout).await?;
            let code = session
                .wait(&fx.ctx())
                .await
                .map_err(|e| failed(&format!("waiting for {what}"), &e))?;
            if code != 0 {
                return Err(fail(format!("{what} exited {code}")));
            }
            Ok(read)
        }
    }
}

/// A session's stream to its end (at most [`MAX_OUTPUT`] bytes), within the
/// settle timeout, as text.
pub(crate) async fn read_all(
    fx: &Fixture<'_>,
    what: &str,
    stream: &mut ByteStream,
) -> Check<String> {
    match tokio::time::timeout(fx.options.settle_timeout, stream.read_to_end(MAX_OUTPUT)).await {
        Ok(Ok(bytes)) => Ok(String::from_utf8_lossy(&bytes).into_owned()),
        Ok(Err(e)) => Err(fail(format!("reading {what} failed: {e}"))),
        Err(_) => Err(fail(format!(
            "{what} did not end within {} s",
            fx.options.settle_timeout.as_secs()
        ))),
    }
}

/// One `run`, its stdout collected.
pub(crate) async fn run_collect(
    fx: &Fixture<'_>,
    workload: &WorkloadRef,
    request: &RunRequest,
) -> (Result<u64, CallError>, Check<String>) {
    let (writer, mut reader) = tokio::io::duplex(1 << 16);
    let collect = async {
        let mut out = String::new();
        match tokio::time::timeout(Duration::from_secs(120), reader.read_to_string(&mut out)).await
        {
            Ok(Ok(_)) => Ok(out),
            Ok(Err(e)) => Err(fail(format!("reading run's stdout failed: {e}"))),
            Err(_) => Err(fail("run's stdout did not end")),
        }
    };
    let ctx = fx.ctx();
    tokio::join!(fx.adapter.run(&ctx, workload, request, writer), collect)
}

/// What a fetch of a URL from inside a workload showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fetch {
    /// An answer came, with this body (trimmed).
    Reached(String),
    /// No answer: refused, dropped, or a proxy's refusal.
    Unreached,
}

/// The script that fetches `url` with busybox `wget` and prints `reached
/// BODY` or `unreached`, exiting 0 either way.
pub(crate) fn fetch_script(url: &str) -> String {
    format!(
        "if out=$(timeout {CONNECT_SECS} wget -q -O - '{url}' 2>/dev/null); then \
         echo \"reached $out\"; else echo unreached; fi"
    )
}

/// What [`fetch_script`] printed; anything else fails, quoting it.
pub(crate) fn parse_fetch(out: &str) -> Check<Fetch> {
    let line = out.trim();
    if line == "unreached" {
        return Ok(Fetch::Unreached);
    }
    match line.strip_prefix("reached") {
        Some(body) => Ok(Fetch::Reached(body.trim().to_string())),
        None => Err(fail(format!(
            "the fetch printed {out:?}, neither `reached …` nor `unreached`: the probe's command \
             did not run as written (the workloads' image needs busybox `wget`)"
        ))),
    }
}

/// Fetches `url` from `workload`.
pub(crate) async fn fetch(
    fx: &Fixture<'_>,
    via: Via,
    workload: &WorkloadRef,
    url: &str,
) -> Check<Fetch> {
    parse_fetch(&output(fx, via, workload, &fetch_script(url)).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fetch_reads_back_as_what_the_script_prints() {
        assert_eq!(
            parse_fetch("reached 1234\n").ok(),
            Some(Fetch::Reached("1234".into()))
        );
        assert_eq!(parse_fetch("unreached\n").ok(), Some(Fetch::Unreached));
        assert!(parse_fetch("").is_err());
        assert!(parse_fetch("wget: not found\n").is_err());
        let script = fetch_script("http://a.test:80/x");
        assert!(
            script.contains("timeout 5 wget -q -O - 'http://a.test:80/x'"),
            "{script}"
        );
    }
}
