//! `logs` and `exec`: streams from the API server, as `wasi:io` streams the
//! guest can hand on without the bytes entering its memory.

use k8s_openapi::api::core::v1::Pod;
use kube::api::{AttachParams, LogParams, TerminalSize};
use tokio_util::compat::FuturesAsyncReadCompatExt;
use wasmtime_wasi::p2::pipe::{AsyncReadStream, AsyncWriteStream};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream};

use super::KubeContext;
use super::audit::Audit;
use crate::bindings::v0_1::pando::runtime::kubernetes::{
    ApiError, ApiStatus, ExecRequest, LogRequest,
};
use crate::grants::path::{self, ApiRequest, Verb};

/// An exec session over the API server's streaming protocol.
pub struct ExecSession {
    pub(crate) stdin: Option<DynOutputStream>,
    pub(crate) stdout: Option<DynInputStream>,
    pub(crate) stderr: Option<DynInputStream>,
    resize: Option<futures::channel::mpsc::Sender<TerminalSize>>,
    status: Option<
        std::pin::Pin<
            Box<
                dyn std::future::Future<
                        Output = Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>,
                    > + Send,
            >,
        >,
    >,
    exit: Option<Result<i32, String>>,
    _process: kube::api::AttachedProcess,
}

impl ExecSession {
    /// Resizes the session's terminal.
    pub(crate) async fn resize(&mut self, cols: u16, rows: u16) -> Result<(), ApiError> {
        use futures::SinkExt;
        let Some(tx) = self.resize.as_mut() else {
            return Err(ApiError::InvalidRequest(
                "the session has no terminal to resize".into(),
            ));
        };
        tx.send(TerminalSize {
            width: cols,
            height: rows,
        })
        .await
        .map_err(|e| ApiError::Transport(format!("resizing the terminal: {e}")))
    }

    /// Waits for the exit status.
    pub(crate) async fn wait(&mut self) -> Result<i32, ApiError> {
        if self.exit.is_none() {
            let status = match self.status.take() {
                Some(s) => s.await,
                None => None,
            };
            self.exit = Some(exit_code(status));
        }
        match self.exit.clone() {
            Some(Ok(code)) => Ok(code),
            Some(Err(msg)) => Err(ApiError::Transport(msg)),
            None => Err(ApiError::Transport(
                "the session ended without a status".into(),
            )),
        }
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
        let audit = Audit::start(adapter, call, &path);
        let parsed = self
            .admit(&audit, path::Method::Get, &path, &[], None)
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

    /// Opens a container's log as a stream.
    pub(crate) async fn logs(
        &self,
        adapter: &str,
        req: LogRequest,
    ) -> Result<DynInputStream, ApiError> {
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
        Ok(Box::new(AsyncReadStream::new(stream.compat())))
    }

    /// Starts a process in a container.
    pub(crate) async fn exec(
        &self,
        adapter: &str,
        req: ExecRequest,
    ) -> Result<ExecSession, ApiError> {
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
            ..AttachParams::default()
        };
        let mut process = api
            .exec(&req.pod, req.command, &params)
            .await
            .map_err(|e| api_error("starting the command", e))?;
        let stdin = process
            .stdin()
            .map(|w| Box::new(AsyncWriteStream::new(64 << 10, w)) as DynOutputStream);
        let stdout = process
            .stdout()
            .map(|r| Box::new(AsyncReadStream::new(r)) as DynInputStream);
        let stderr = process
            .stderr()
            .map(|r| Box::new(AsyncReadStream::new(r)) as DynInputStream);
        let status = process
            .take_status()
            .map(|f| Box::pin(f) as std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send>>);
        let resize = process.terminal_size();
        Ok(ExecSession {
            stdin,
            stdout,
            stderr,
            resize,
            status,
            exit: None,
            _process: process,
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
