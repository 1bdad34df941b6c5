//! `logs` and `exec`: streams from the API server, opened once for both
//! lines: as `wasi:io` streams the guest can hand on without the bytes
//! entering its memory (0.1.0), or as readers and writers 0.2.0's
//! `stream<u8>`s are made of (`v0_2/pipes.rs`).
//!
//! A stream cut mid-way ends with an error, never as if it were whole: a
//! log's body breaking off is an error of the log stream (kube-rs), and an
//! exec session whose connection breaks fails its stdout, stderr and stdin
//! once what arrived has been read ([`Cut`]; kube-rs itself would leave them
//! open, waiting forever), and `wait` reports that no exit status came.

use std::future::Future;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Status;
use kube::api::{AttachParams, LogParams, TerminalSize};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_util::compat::FuturesAsyncReadCompatExt;
use wasmtime_wasi::p2::pipe::{AsyncReadStream, AsyncWriteStream};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream};

use super::KubeContext;
use super::audit::Audit;
use super::cut::{CloseOnDrop, Cut};
use crate::bindings::v0_1::pando::runtime::kubernetes::{
    ApiError, ApiStatus, ExecRequest, LogRequest,
};
use crate::capability::held::READ_AHEAD;
use crate::grants::request::{self, ApiRequest, Verb};

/// What kube-rs buffers of each of a session's pipes (stdin, stdout,
/// stderr) between the connection and us. kube-rs's default is 1 KiB:
/// every KiB then went through its own read, task hand-off and guest
/// `splice` (a 256 MiB snapshot at 0.78× kube-rs's own read), and each KiB
/// of stdin into its own websocket frame (a 256 MiB restore at 23.8 MiB/s,
/// 0.42× kube-rs at 64 KiB) (docs/history/benchmarks.md, "A session's output in
/// 64 KiB" and "The 16 MiB snapshot's fixed cost; a restore's input in
/// 64 KiB"). 64 KiB is the most
/// `wasi:io` hands over in one read (wasmtime-wasi's read size), the
/// stdin stream's write budget below, and the Kubernetes adapter's chunk.
/// The adapter's `limits.stream_buffer_bytes` is charged for each pipe the
/// session has ([`held_bytes`]).
pub(crate) const PIPE_BUFFER: usize = 64 << 10;

/// What an exec session takes of the adapter's stream budget, for each
/// pipe it has (stdout always, stderr unless a terminal merges it into
/// stdout, stdin when asked for): an output pipe holds kube-rs's
/// [`PIPE_BUFFER`] and wasmtime-wasi's [`READ_AHEAD`] (256 KiB), stdin
/// kube-rs's [`PIPE_BUFFER`] and the output stream's write budget of as
/// much (128 KiB).
pub(crate) fn held_bytes(request: &ExecRequest) -> u64 {
    let outputs = 1 + u64::from(!request.tty);
    let output = PIPE_BUFFER as u64 + READ_AHEAD;
    let input = 2 * PIPE_BUFFER as u64;
    outputs * output + u64::from(request.stdin) * input
}

/// How a session ended, once it has: its final `Status`, or `None` when
/// its connection ended without one (it broke).
pub(super) type Outcome = Option<Status>;

/// A pipe of a session the host reads: stdout or stderr.
pub(crate) type PipeOut = Box<dyn AsyncRead + Send + Unpin>;
/// A pipe of a session the host writes: stdin.
pub(crate) type PipeIn = Box<dyn AsyncWrite + Send + Unpin>;

/// A process started in a container, as the API server gave it: its pipes,
/// each cut when the connection breaks ([`Cut`]), its terminal and its
/// end. Both contract lines' sessions are made of one: 0.1.0's
/// [`ExecSession`] of `wasi:io` streams, 0.2.0's of `stream<u8>`s
/// (`v0_2::exec`).
pub(crate) struct Attached {
    pub(crate) stdin: Option<PipeIn>,
    pub(crate) stdout: Option<PipeOut>,
    pub(crate) stderr: Option<PipeOut>,
    pub(crate) resize: Option<futures::channel::mpsc::Sender<TerminalSize>>,
    pub(crate) exit: Exit,
}

/// How a session ends: its exit status, once the process has exited.
/// Holds the connection (kube-rs's process) while it lives.
pub(crate) struct Exit {
    /// `Some` once the session has ended.
    ended: watch::Receiver<Option<Outcome>>,
    /// Waits for the end and publishes it into `ended`.
    watcher: tokio::task::JoinHandle<()>,
    _process: kube::api::AttachedProcess,
}

impl Drop for Exit {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

impl Exit {
    /// Waits for the exit status.
    pub(crate) async fn wait(&mut self) -> Result<i32, ApiError> {
        self.waiter().await
    }

    /// The exit status, waited for apart from the session (0.2.0's exit
    /// future); the session must be kept alive while it waits.
    pub(crate) fn waiter(&self) -> impl Future<Output = Result<i32, ApiError>> + Send + 'static {
        let mut ended = self.ended.clone();
        async move {
            let outcome = match ended.wait_for(Option::is_some).await {
                Ok(ended) => ended.clone().flatten(),
                Err(_) => None,
            };
            exit_code(outcome).map_err(ApiError::Transport)
        }
    }
}

/// Sends a terminal size to the session's terminal.
pub(crate) async fn resize(
    tx: &mut futures::channel::mpsc::Sender<TerminalSize>,
    cols: u16,
    rows: u16,
) -> Result<(), ApiError> {
    use futures::SinkExt;
    tx.send(TerminalSize {
        width: cols,
        height: rows,
    })
    .await
    .map_err(|e| ApiError::Transport(format!("resizing the terminal: {e}")))
}

/// An exec session over the API server's streaming protocol, as 0.1.0
/// lends it: a resource of `wasi:io` streams.
pub struct ExecSession {
    pub(crate) stdin: Option<DynOutputStream>,
    pub(crate) stdout: Option<DynInputStream>,
    pub(crate) stderr: Option<DynInputStream>,
    resize: Option<futures::channel::mpsc::Sender<TerminalSize>>,
    exit: Exit,
    /// Its place in the adapter's `limits.max_streams`, while it lives.
    pub(crate) held: Option<crate::capability::held::Held>,
}

impl ExecSession {
    /// Resizes the session's terminal.
    pub(crate) async fn resize(&mut self, cols: u16, rows: u16) -> Result<(), ApiError> {
        let Some(tx) = self.resize.as_mut() else {
            return Err(ApiError::InvalidRequest(
                "the session has no terminal to resize".into(),
            ));
        };
        resize(tx, cols, rows).await
    }

    /// Waits for the exit status.
    pub(crate) async fn wait(&mut self) -> Result<i32, ApiError> {
        self.exit.wait().await
    }

    /// Ready once the process has exited.
    async fn exited(&mut self) {
        let _ = self.wait().await;
    }
}

#[async_trait::async_trait]
impl wasmtime_wasi::p2::Pollable for ExecSession {
    async fn ready(&mut self) {
        self.exited().await;
    }
}

/// The exit code from the final `Status` of an exec: `Success` is 0; a
/// non-zero exit is a `Failure` whose cause `ExitCode` carries the number.
fn exit_code(
    status: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>,
) -> Result<i32, String> {
    let Some(status) = status else {
        return Err("the session closed without reporting an exit status".into());
    };
    if status.status.as_deref() == Some("Success") {
        return Ok(0);
    }
    let code = status
        .details
        .as_ref()
        .and_then(|d| d.causes.as_ref())
        .and_then(|causes| {
            causes
                .iter()
                .find(|c| c.reason.as_deref() == Some("ExitCode"))
                .and_then(|c| c.message.as_deref())
                .and_then(|m| m.parse::<i32>().ok())
        });
    // Some kubelet stand-ins (KWOK's local exec among them) pass Go's
    // `exec.ExitError` through as the message instead of an `ExitCode`
    // cause: "... exit status 3".
    let message = status.message.unwrap_or_else(|| "no message".into());
    match code.or_else(|| go_exit_status(&message)) {
        Some(c) => Ok(c),
        None => Err(format!("the command could not be run: {message}")),
    }
}

/// The code in a message ending in Go's `exit status N`.
fn go_exit_status(message: &str) -> Option<i32> {
    let (_, tail) = message.trim_end().rsplit_once("exit status ")?;
    tail.parse().ok()
}

impl KubeContext {
    /// Admits a pod's streaming subresource: `get` on it (the path's verb)
    /// and, for exec, `create` too, as the API server checks both since
    /// 1.35. Waits for the rate budget and audits the opening.
    async fn admit_pod_stream(
        &self,
        adapter: &str,
        call: &'static str,
        also: Option<Verb>,
        namespace: &str,
        pod: &str,
        sub: &str,
    ) -> Result<(), ApiError> {
        let path = format!("/api/v1/namespaces/{namespace}/pods/{pod}/{sub}");
        let audit = Audit::start(&self.denial_runs, adapter, call, &path);
        let parsed = self
            .admit(&audit, request::Method::Get, &path, &[], None)
            .await?;
        if let (Some(verb), ApiRequest::Resource { target, .. }) = (also, &parsed)
            && let Err(e) = self.authorize(verb, target, None).await
        {
            audit.denied(Some(&parsed), &super::denial_message(&e));
            return Err(e);
        }
        let throttled = self.limiter.acquire().await;
        audit.opened(&parsed, throttled);
        Ok(())
    }

    /// Opens a container's log as a `wasi:io` stream (0.1.0).
    pub(crate) async fn logs(
        &self,
        adapter: &str,
        req: LogRequest,
    ) -> Result<DynInputStream, ApiError> {
        let log = self.log_reader(adapter, req).await?;
        Ok(Box::new(AsyncReadStream::new(log)))
    }

    /// Opens a container's log: its bytes, for either line. A body that
    /// breaks off is an error of the reader (kube-rs), never an end.
    pub(crate) async fn log_reader(
        &self,
        adapter: &str,
        req: LogRequest,
    ) -> Result<PipeOut, ApiError> {
        self.admit_pod_stream(adapter, "logs", None, &req.namespace, &req.pod, "log")
            .await?;
        let api: kube::Api<Pod> = kube::Api::namespaced(self.client.clone(), &req.namespace);
        let params = LogParams {
            container: req.container,
            follow: req.follow,
            limit_bytes: req.limit_bytes.and_then(|b| i64::try_from(b).ok()),
            previous: req.previous,
            since_seconds: req.since_seconds.and_then(|s| i64::try_from(s).ok()),
            tail_lines: req.tail_lines.and_then(|t| i64::try_from(t).ok()),
            timestamps: req.timestamps,
            ..LogParams::default()
        };
        let stream = api
            .log_stream(&req.pod, &params)
            .await
            .map_err(|e| api_error("opening the log", e))?;
        Ok(Box::new(stream.compat()))
    }

    /// Starts a process in a container, as 0.1.0 lends it.
    pub(crate) async fn exec(
        &self,
        adapter: &str,
        req: ExecRequest,
    ) -> Result<ExecSession, ApiError> {
        let a = self.attach(adapter, req).await?;
        Ok(ExecSession {
            stdin: a
                .stdin
                .map(|w| Box::new(AsyncWriteStream::new(PIPE_BUFFER, w)) as DynOutputStream),
            stdout: a
                .stdout
                .map(|r| Box::new(AsyncReadStream::new(r)) as DynInputStream),
            stderr: a
                .stderr
                .map(|r| Box::new(AsyncReadStream::new(r)) as DynInputStream),
            resize: a.resize,
            exit: a.exit,
            held: None,
        })
    }

    /// Starts a process in a container: its parts, for either line.
    pub(crate) async fn attach(
        &self,
        adapter: &str,
        req: ExecRequest,
    ) -> Result<Attached, ApiError> {
        // The API server checks both since 1.35; so do we.
        self.admit_pod_stream(
            adapter,
            "exec",
            Some(Verb::Create),
            &req.namespace,
            &req.pod,
            "exec",
        )
        .await?;
        let api: kube::Api<Pod> = kube::Api::namespaced(self.client.clone(), &req.namespace);
        let params = AttachParams {
            container: req.container,
            stdin: req.stdin,
            stdout: true,
            stderr: !req.tty,
            tty: req.tty,
            max_stdin_buf_size: Some(PIPE_BUFFER),
            max_stdout_buf_size: Some(PIPE_BUFFER),
            max_stderr_buf_size: Some(PIPE_BUFFER),
        };
        let mut process = api
            .exec(&req.pod, req.command, &params)
            .await
            .map_err(|e| api_error("starting the command", e))?;
        let (ended_tx, ended) = watch::channel(None);
        let status = process.take_status();
        let watcher = tokio::spawn(async move {
            let outcome = match status {
                Some(s) => s.await,
                None => None,
            };
            ended_tx.send_replace(Some(outcome));
        });
        let stdin = process
            .stdin()
            .map(|w| Box::new(Cut::new(CloseOnDrop(w), &ended)) as PipeIn);
        let stdout = process
            .stdout()
            .map(|r| Box::new(Cut::new(r, &ended)) as PipeOut);
        let stderr = process
            .stderr()
            .map(|r| Box::new(Cut::new(r, &ended)) as PipeOut);
        let resize = process.terminal_size();
        Ok(Attached {
            stdin,
            stdout,
            stderr,
            resize,
            exit: Exit {
                ended,
                watcher,
                _process: process,
            },
        })
    }
}

/// An error from the API server, for the guest: its status and message.
fn api_error(what: &str, e: kube::Error) -> ApiError {
    match e {
        kube::Error::Api(s) => ApiError::Rejected(ApiStatus {
            code: s.code,
            reason: s.reason.clone(),
            message: format!("{what}: {}", s.message),
        }),
        other => ApiError::Transport(format!("{what}: {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Status, StatusCause, StatusDetails};

    #[test]
    fn a_session_is_charged_the_buffers_of_each_pipe() {
        let req = |stdin, tty| ExecRequest {
            namespace: "ns".into(),
            pod: "p".into(),
            container: None,
            command: vec!["true".into()],
            stdin,
            tty,
        };
        let kib = |n: u64| n << 10;
        // An output: kube-rs's 64 KiB and wasmtime-wasi's three 64 KiB
        // reads ahead; stdin: kube-rs's 64 KiB and the write budget's 64.
        assert_eq!(held_bytes(&req(false, false)), kib(512), "stdout, stderr");
        assert_eq!(held_bytes(&req(true, false)), kib(640), "and stdin");
        assert_eq!(
            held_bytes(&req(false, true)),
            kib(256),
            "a terminal's one output"
        );
        assert_eq!(
            held_bytes(&req(true, true)),
            kib(384),
            "a terminal and its input"
        );
    }

    #[tokio::test]
    async fn a_session_cut_off_fails_its_streams_after_what_arrived() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // Its connection breaks: what arrived, then an error, not an end.
        let (ended_tx, ended) = watch::channel(None);
        let (reader, mut writer) = tokio::io::simplex(1024);
        writer.write_all(b"part of it").await.unwrap();
        let mut out = Cut::new(reader, &ended);
        let (stdin_reader, stdin) = tokio::io::simplex(4);
        let mut stdin = Cut::new(stdin, &ended);
        stdin.write_all(b"full").await.unwrap();
        ended_tx.send_replace(Some(None));
        let mut got = Vec::new();
        let err = out.read_to_end(&mut got).await.unwrap_err();
        assert_eq!(got, b"part of it");
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionAborted);
        let err = stdin.write_all(b"more").await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionAborted);
        drop((writer, stdin_reader));

        // It ended with a status: its pipes end as kube-rs ends them.
        let (ended_tx, ended) = watch::channel(None);
        let (reader, mut writer) = tokio::io::simplex(1024);
        let mut out = Cut::new(reader, &ended);
        writer.write_all(b"all of it").await.unwrap();
        ended_tx.send_replace(Some(Some(Status::default())));
        let finish = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            writer.shutdown().await.unwrap();
        });
        let mut got = Vec::new();
        out.read_to_end(&mut got).await.expect("a clean end");
        assert_eq!(got, b"all of it");
        finish.await.unwrap();
    }

    #[tokio::test]
    async fn dropping_stdin_ends_the_pipe_kube_rs_reads_it_from() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // kube-rs's stdin is a split half: dropped alone, it would leave the
        // reader waiting for ever.
        let (reader, writer) = tokio::io::simplex(1024);
        let mut stdin = CloseOnDrop(writer);
        stdin.write_all(b"the archive").await.unwrap();
        drop(stdin);
        let mut reader = reader;
        let mut got = Vec::new();
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            reader.read_to_end(&mut got),
        )
        .await
        .expect("the reader sees the end")
        .unwrap();
        assert_eq!(got, b"the archive");
    }

    #[test]
    fn exit_codes_are_read_from_the_final_status() {
        let success = Status {
            status: Some("Success".into()),
            ..Status::default()
        };
        assert_eq!(exit_code(Some(success)), Ok(0));
        let kubelet = Status {
            status: Some("Failure".into()),
            reason: Some("NonZeroExitCode".into()),
            details: Some(StatusDetails {
                causes: Some(vec![StatusCause {
                    reason: Some("ExitCode".into()),
                    message: Some("7".into()),
                    ..StatusCause::default()
                }]),
                ..StatusDetails::default()
            }),
            ..Status::default()
        };
        assert_eq!(exit_code(Some(kubelet)), Ok(7));
        let passed_through = Status {
            status: Some("Failure".into()),
            message: Some(
                "error executing command in container: cmd wait: sh: exit status 3".into(),
            ),
            ..Status::default()
        };
        assert_eq!(exit_code(Some(passed_through)), Ok(3));
        let broken = Status {
            status: Some("Failure".into()),
            message: Some("container not found".into()),
            ..Status::default()
        };
        assert!(exit_code(Some(broken)).is_err());
        assert!(exit_code(None).is_err());
    }
}
