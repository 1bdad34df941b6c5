//! The verbs that move bytes: logs, exec, run, volume snapshots and
//! restores, and the bundle watch.

use std::io::{self, Write};
use std::path::Path;

use pando_host::CallError;
use pando_host::streams::{ByteSink, ByteStream};
use pando_host::types::{
    EnvVar, Error as AdapterError, ExecRequest, LogOptions, RunRequest, TerminalSize, WatchEnd,
    WorkloadRef,
};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};
use tokio::sync::mpsc;

use super::args::{ExecArgs, Format, LogsArgs, RunArgs};
use super::failure::{EXIT_CALL, Failure, Outcome, exit_status_code};
use super::output;
use super::session::Call;
use super::terminal;
use super::verbs::volume_handle;

/// Exit code after Ctrl-C.
pub const EXIT_INTERRUPTED: u8 = 130;

fn workload(app: &str, name: &str) -> WorkloadRef {
    WorkloadRef {
        bundle: app.into(),
        workload: name.into(),
    }
}

fn is_broken_pipe(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::BrokenPipe
}

/// `logs APP WORKLOAD …`: the log to stdout.
pub async fn logs(call: &Call, a: &LogsArgs) -> Outcome {
    let options = LogOptions {
        follow: a.follow,
        tail_lines: a.tail,
        since_seconds: a.since,
        timestamps: a.timestamps,
        limit_bytes: a.limit_bytes,
    };
    let ctx = if a.follow {
        call.long_ctx()
    } else {
        call.ctx()
    };
    let mut stream = call
        .adapter
        .logs(&ctx, &workload(&a.app, &a.workload), &options)
        .await?;
    let mut out = tokio::io::stdout();
    tokio::select! {
        copied = stream.copy_to(&mut out) => match copied {
            Ok(_) => Ok(()),
            Err(e) if is_broken_pipe(&e) => Ok(()),
            Err(e) => Err(Failure::other("copying the log", e)),
        },
        // Ctrl-C is how a followed log is meant to end.
        () = call.cancel.cancelled() => if a.follow {
            Ok(())
        } else {
            Err(Failure::Exit(EXIT_INTERRUPTED))
        },
    }
}

/// `run APP WORKLOAD -- CMD…`: stdout to ours; a failed command's stderr to
/// ours and its exit code as ours.
pub async fn run(call: &Call, a: &RunArgs) -> Outcome {
    let request = RunRequest {
        command: a.command.clone(),
        env: a
            .env
            .iter()
            .map(|(name, value)| EnvVar {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
    };
    let wref = workload(&a.app, &a.workload);
    match call
        .adapter
        // Runs to the command's end, as `kubectl exec` does: a dump or a
        // migration outlasts the default 60 s deadline.
        .run(&call.long_ctx(), &wref, &request, tokio::io::stdout())
        .await
    {
        Ok(_) => Ok(()),
        Err(CallError::Adapter(AdapterError::CommandFailed(f))) => {
            let mut err = io::stderr().lock();
            // Best effort: the exit code is what matters now.
            let _ = err
                .write_all(f.stderr.as_bytes())
                .and_then(|()| err.flush());
            Err(Failure::Exit(match exit_status_code(f.exit_code) {
                0 => EXIT_CALL,
                code => code,
            }))
        }
        Err(e) => Err(e.into()),
    }
}

/// The terminal's size from `COLUMNS` and `LINES`, when both are set and
/// neither stdout nor stdin is a terminal to ask.
fn terminal_size() -> Option<TerminalSize> {
    let get = |name: &str| std::env::var(name).ok()?.trim().parse::<u16>().ok();
    Some(TerminalSize {
        cols: get("COLUMNS")?,
        rows: get("LINES")?,
    })
}

/// `exec APP WORKLOAD [--tty] [-i] -- CMD…`: our stdin to the session's
/// (with `-i`), its stdout and stderr to ours, and its exit code as ours.
pub async fn exec(call: &Call, a: &ExecArgs) -> Outcome {
    let request = ExecRequest {
        command: a.command.clone(),
        stdin: a.interactive,
        tty: a.tty,
        size: if a.tty {
            terminal::size().or_else(terminal_size)
        } else {
            None
        },
    };
    let mut session = call
        .adapter
        .exec(&call.ctx(), &workload(&a.app, &a.workload), &request)
        .await?;
    let stdin = if a.interactive {
        session.stdin().await?
    } else {
        None
    };
    let stdout = session.stdout().await?;
    let stderr = session.stderr().await?;
    // Until the end of this function, its output copied: restored on every way out.
    let _raw = if a.tty && a.interactive {
        terminal::RawMode::enter()
            .map_err(|e| Failure::other("putting the terminal in raw mode", e))?
    } else {
        None
    };

    let stdin_task = stdin.map(|sink| tokio::spawn(copy_stdin(sink)));
    let stdout_task = stdout.map(|s| tokio::spawn(copy_out(s, tokio::io::stdout())));
    let stderr_task = stderr.map(|s| tokio::spawn(copy_out(s, tokio::io::stderr())));

    let exited = session.wait(&call.long_ctx()).await;
    // The process is gone: whatever we have not sent of stdin goes nowhere.
    if let Some(task) = stdin_task {
        task.abort();
    }
    for task in [stdout_task, stderr_task].into_iter().flatten() {
        match task.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "copying the session's output failed"),
            Err(e) => tracing::warn!(error = %e, "the session's output task failed"),
        }
    }
    match exited? {
        0 => Ok(()),
        code => Err(Failure::Exit(match exit_status_code(code) {
            0 => EXIT_CALL,
            c => c,
        })),
    }
}

async fn copy_stdin(mut sink: ByteSink) {
    let mut stdin = tokio::io::stdin();
    let mut buf = vec![0u8; 64 << 10];
    let copied: io::Result<()> = async {
        loop {
            let n = stdin.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            sink.write_all(&buf[..n]).await?;
        }
        sink.close().await
    }
    .await;
    if let Err(e) = copied
        && !is_broken_pipe(&e)
    {
        tracing::warn!(error = %e, "copying stdin to the session failed");
    }
}

async fn copy_out<W: AsyncWrite + Unpin>(mut stream: ByteStream, mut w: W) -> io::Result<()> {
    match stream.copy_to(&mut w).await {
        Ok(_) => Ok(()),
        Err(e) if is_broken_pipe(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

/// What `volume snapshot` reports when the snapshot went to a file.
#[derive(Debug, Serialize)]
struct Written<'a> {
    file: &'a str,
    bytes: u64,
}

/// `volume snapshot APP NAME [-f FILE|-]`.
pub async fn snapshot(call: &Call, app: &str, name: &str, file: &Path) -> Outcome {
    let handle = volume_handle(app, name);
    if file.as_os_str() == "-" {
        call.adapter
            .snapshot_volume(&call.long_ctx(), &handle, tokio::io::stdout())
            .await?;
        return Ok(());
    }
    let into = tokio::fs::File::create(file)
        .await
        .map_err(|e| Failure::input(format!("cannot create {}: {e}", file.display())))?;
    let bytes = call
        .adapter
        .snapshot_volume(&call.long_ctx(), &handle, into)
        .await?;
    let shown = file.display().to_string();
    let written = Written {
        file: &shown,
        bytes,
    };
    output::print(call.format, &written, |w| {
        format!("wrote {} bytes to {}\n", w.bytes, w.file)
    })
}

/// `volume restore APP NAME [-f FILE|-]`.
pub async fn restore(call: &Call, app: &str, name: &str, file: &Path) -> Outcome {
    let from: Box<dyn AsyncRead + Send + Unpin> = if file.as_os_str() == "-" {
        Box::new(tokio::io::stdin())
    } else {
        Box::new(
            tokio::fs::File::open(file)
                .await
                .map_err(|e| Failure::input(format!("cannot open {}: {e}", file.display())))?,
        )
    };
    call.adapter
        .restore_volume(&call.long_ctx(), &volume_handle(app, name), from)
        .await?;
    #[derive(Serialize)]
    struct Done {
        ok: bool,
    }
    output::print(call.format, &Done { ok: true }, |_| {
        format!("restored volume {app}/{name}\n")
    })
}

/// `watch`: one event per line until Ctrl-C, or until the watch expires.
pub async fn watch(call: &Call) -> Outcome {
    let (tx, mut rx) = mpsc::channel(256);
    let ctx = call.long_ctx();
    let format = call.format;
    let print = async move {
        while let Some(event) = rx.recv().await {
            let line = match format {
                Format::Json => serde_json::to_string(&event).map_err(|e| e.to_string()),
                Format::Yaml => pando_host::yaml::to_string(&event)
                    .map(|y| format!("---\n{}", y.trim_end()))
                    .map_err(|e| e.to_string()),
                Format::Text | Format::Junit => Ok(output::event(&event)),
            };
            let written = match line {
                Ok(line) => {
                    let mut out = io::stdout().lock();
                    writeln!(out, "{line}").and_then(|()| out.flush())
                }
                Err(e) => Err(io::Error::other(e)),
            };
            if let Err(e) = written {
                if !is_broken_pipe(&e) {
                    tracing::warn!(error = %e, "printing an event failed; ending the watch");
                }
                // Dropping the receiver closes the sink: the adapter ends
                // the watch as cancelled.
                return;
            }
        }
    };
    let (end, ()) = tokio::join!(call.adapter.watch_bundles(&ctx, tx), print);
    match end? {
        // Ctrl-C is how a watch is meant to end.
        WatchEnd::Cancelled => Ok(()),
        WatchEnd::Expired => {
            eprintln!(
                "the watch expired: the runtime can no longer resume it; list the apps again \
                 (observe) and start a new watch"
            );
            Ok(())
        }
    }
}
