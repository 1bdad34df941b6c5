//! `pando:runtime/kubernetes@0.2.0`: the same Kubernetes API as 0.1.0's,
//! through the same admission, budgets, object rules and audit
//! ([`KubeContext`]), lent as `async func`s whose streams are the
//! component model's own: a log is a `stream<u8>` and a future of how it
//! ended, a watch a `stream<watch-event>` and a future of its end, an exec
//! session streams and a future of its exit, fed a `stream<u8>` as stdin
//! and a `stream<terminal-size>` as the terminal's sizes while it runs.
//!
//! Each import takes what it needs of the store (the context, the caller,
//! the deadline, the cancellation, its place in the stream budget) before
//! it waits, and lets go of the store while it waits: other tasks of the
//! instance run meanwhile.

mod convert;
mod pipes;

use std::sync::Arc;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{Accessor, FutureReader, GuardedStreamReader, StreamReader};

use super::lend::{bounded, no_cluster, over_limit};
use super::{KubeContext, Kubernetes};
use crate::bindings::v0_1::pando::runtime::kubernetes as v1;
use crate::bindings::v0_2::pando::runtime::kubernetes as v2;
use crate::capability::env::Identity;
use crate::capability::held::Held;
use crate::capability::{Lend, StoreData, View};
use crate::pipes::{CHUNK, ReadPipe, WritePipe};
use pipes::{Keep, ResizePipe, WatchPipe};

/// What an import takes from the store before it waits.
struct Taken {
    kube: Arc<KubeContext>,
    adapter: Arc<Identity>,
    deadline: Option<std::time::Instant>,
    cancel: CancellationToken,
    held: Option<Held>,
}

/// Takes the call's context, and `hold` of the adapter's stream budget.
fn take<T: Send>(
    accessor: &Accessor<T, Lend<Kubernetes>>,
    hold: Option<(&'static str, u64)>,
) -> Result<Taken, v1::ApiError> {
    accessor.with(|mut access| {
        let view: View<'_, Kubernetes> = access.get();
        let (deadline, cancel) = view.env.call_bounds();
        let Some(kube) = view.this.clone() else {
            return Err(no_cluster());
        };
        let held = match hold {
            Some((what, bytes)) => Some(view.env.hold(what, bytes).map_err(over_limit)?),
            None => None,
        };
        Ok(Taken {
            kube,
            adapter: Arc::clone(&view.env.identity),
            deadline,
            cancel,
            held,
        })
    })
}

/// The guest's answer: 0.1.0's records, as 0.2.0's.
type Answer<T> = wasmtime::Result<Result<T, v2::ApiError>>;

macro_rules! taken {
    ($e:expr) => {
        match $e {
            Ok(t) => t,
            Err(e) => return Ok(Err(v2::ApiError::from(e))),
        }
    };
}

impl<T: Send> v2::HostWithStore<T> for Lend<Kubernetes> {
    async fn send(accessor: &Accessor<T, Self>, request: v2::Request) -> Answer<v2::Response> {
        let t = taken!(take(accessor, None));
        let request = v1::Request::from(request);
        let send = async {
            let path = request.path.clone();
            let audit =
                super::audit::Audit::start(&t.kube.denial_runs, &t.adapter.name, "send", &path);
            let parsed = t.kube.admit_send(&audit, &request).await?;
            t.kube.send(&audit, parsed, request, t.deadline).await
        };
        Ok(bounded(t.cancel.clone(), send)
            .await
            .map(Into::into)
            .map_err(Into::into))
    }

    async fn watch(
        accessor: &Accessor<T, Self>,
        request: v2::WatchRequest,
    ) -> Answer<v2::WatchStream> {
        let t = taken!(take(accessor, Some(("watch", super::watch::BUFFER_BYTES))));
        let open = t.kube.watch(&t.adapter.name, request.into());
        let mut watch = taken!(bounded(t.cancel.clone(), open).await);
        watch.held = t.held;
        let (end_tx, end_rx) = oneshot::channel();
        let pipe = WatchPipe {
            watch,
            cancel: Box::pin(t.cancel.cancelled_owned()),
            end: Some(end_tx),
        };
        accessor.with(|mut access| {
            let events = StreamReader::new(&mut access, pipe)?;
            let end = FutureReader::new(&mut access, async move {
                // A watch the guest closed (dropped its events) ended as the
                // server closing it would have.
                wasmtime::error::Ok(end_rx.await.map_or(v2::WatchEnd::Closed, Into::into))
            })?;
            Ok(Ok(v2::WatchStream { events, end }))
        })
    }

    async fn logs(accessor: &Accessor<T, Self>, request: v2::LogRequest) -> Answer<v2::LogStream> {
        let t = taken!(take(accessor, Some(("logs", CHUNK as u64))));
        let open = t.kube.log_reader(&t.adapter.name, request.into());
        let reader = taken!(bounded(t.cancel.clone(), open).await);
        let (done_tx, done_rx) = oneshot::channel();
        let pipe = ReadPipe::new(reader, Some(done_tx), Keep::new(t.held, None));
        accessor.with(|mut access| {
            let bytes = StreamReader::new(&mut access, pipe)?;
            let done = FutureReader::new(&mut access, async move {
                wasmtime::error::Ok(pipes::done(done_rx).await)
            })?;
            Ok(Ok(v2::LogStream { bytes, done }))
        })
    }

    async fn exec(
        accessor: &Accessor<T, Self>,
        request: v2::ExecRequest,
        stdin: Option<StreamReader<u8>>,
        resize: Option<StreamReader<v2::TerminalSize>>,
    ) -> Answer<v2::ExecSession> {
        // Closed on every way out but being piped to the session.
        let stdin = stdin.map(|s| GuardedStreamReader::new(accessor, s));
        let resize = resize.map(|s| GuardedStreamReader::new(accessor, s));
        if stdin.is_some() != request.stdin {
            return Ok(Err(v2::ApiError::InvalidRequest(format!(
                "exec in pod `{}`: `exec-request.stdin` is {} but a stdin stream was {}given; \
                 pass one exactly when asking for stdin",
                request.pod,
                request.stdin,
                if stdin.is_some() { "" } else { "not " }
            ))));
        }
        if resize.is_some() && !request.tty {
            return Ok(Err(v2::ApiError::InvalidRequest(format!(
                "exec in pod `{}`: a resize stream was given without `exec-request.tty`; \
                 only a terminal has a size",
                request.pod
            ))));
        }
        let bytes = held_bytes(&request);
        let t = taken!(take(accessor, Some(("exec", bytes))));
        let open = t.kube.attach(&t.adapter.name, request.into());
        let session = taken!(bounded(t.cancel.clone(), open).await);
        let exited = session.exit.waiter();
        let keep = Keep::new(t.held, Some(session.exit));
        let stdin = stdin.map(StreamReader::from);
        let resize = resize.map(StreamReader::from);
        accessor.with(|mut access| {
            if let (Some(from), Some(writer)) = (stdin, session.stdin) {
                from.pipe(&mut access, WritePipe::new(writer, keep.clone()))?;
            }
            if let (Some(from), Some(tx)) = (resize, session.resize) {
                from.pipe(
                    &mut access,
                    ResizePipe {
                        tx,
                        _keep: keep.clone(),
                    },
                )?;
            }
            let reader = session
                .stdout
                .unwrap_or_else(|| Box::new(tokio::io::empty()));
            let stdout = StreamReader::new(&mut access, ReadPipe::new(reader, None, keep.clone()))?;
            let stderr = match session.stderr {
                Some(reader) => Some(StreamReader::new(
                    &mut access,
                    ReadPipe::new(reader, None, keep.clone()),
                )?),
                None => None,
            };
            let exit = FutureReader::new(&mut access, async move {
                let code = exited.await;
                drop(keep);
                wasmtime::error::Ok(code.map_err(v2::ApiError::from))
            })?;
            Ok(Ok(v2::ExecSession {
                stdout,
                stderr,
                exit,
            }))
        })
    }
}

impl v2::Host for View<'_, Kubernetes> {}

/// What a 0.2.0 exec session takes of the adapter's stream budget: each
/// output holds kube-rs's pipe and one chunk the host reads for a reader
/// that is not a guest; stdin kube-rs's pipe (the guest's writes go
/// straight into it).
fn held_bytes(request: &v2::ExecRequest) -> u64 {
    let pipe = super::exec::PIPE_BUFFER as u64;
    let outputs = 1 + u64::from(!request.tty);
    outputs * (pipe + CHUNK as u64) + u64::from(request.stdin) * pipe
}

/// Adds `pando:runtime/kubernetes@0.2.0` to a 0.2 linker.
pub(super) fn add_to_linker<T: StoreData>(
    linker: &mut wasmtime::component::Linker<T>,
) -> wasmtime::Result<()> {
    v2::add_to_linker::<T, Lend<Kubernetes>>(linker, crate::capability::view::<T, Kubernetes>)
}
