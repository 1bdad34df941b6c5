//! An exec session: an instance of the adapter kept for one interactive
//! process, its streams handed to core, its calls through the pipeline.

use wasmtime::Store;
use wasmtime::component::{Resource, ResourceAny};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream};

use super::Adapter;
use super::invoke::run;
use crate::bindings::v0_1::exports::pando::runtime::adapter::Guest as GuestV0_1;
use crate::call::CallContext;
use crate::error::CallError;
use crate::runtime::instance::Guest;
use crate::runtime::pool::Lease;
use crate::runtime::state::HostState;
use crate::streams::{ByteSink, ByteStream};
use crate::types::{Error, TerminalSize};

/// An interactive session in a workload. It keeps an instance of the
/// adapter to itself; dropping the session discards it.
pub struct ExecSession {
    pub(super) adapter: Adapter,
    pub(super) lease: Lease<'static>,
    pub(super) session: ResourceAny,
}

impl std::fmt::Debug for ExecSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecSession")
            .field("adapter", &self.adapter.name())
            .finish_non_exhaustive()
    }
}

impl ExecSession {
    /// One call on the session's own instance, through the pipeline every
    /// call takes: its span, and its fault counted toward quarantine.
    async fn session_call<R>(
        &mut self,
        ctx: &CallContext,
        method: &'static str,
        f: impl AsyncFnOnce(
            &GuestV0_1,
            &mut Store<HostState>,
            ResourceAny,
        ) -> wasmtime::Result<Result<R, Error>>,
    ) -> Result<R, CallError> {
        let (adapter, lease, session) = (&self.adapter, &mut self.lease, self.session);
        let default = adapter.inner.limits.default_timeout;
        let body = std::pin::pin!(run(
            lease.instance(),
            &adapter.inner.identity.name,
            method,
            ctx.deadline(default),
            ctx.cancel_token(),
            async |g, s| match g {
                Guest::V0_1(g) => f(g, s, session).await,
                // Only 0.1.0 sessions are resources (`Adapter::only_v0_1`).
                Guest::V0_2(_) => Err(wasmtime::Error::msg(
                    "an exec-session resource call on a 0.2.0 instance",
                )),
            },
        ));
        adapter
            .pipeline(method, crate::clock::Stamp::now(), body)
            .await
    }

    /// The session's stdin, once.
    pub async fn stdin(&mut self) -> Result<Option<ByteSink>, CallError> {
        self.session_call(
            &CallContext::default(),
            "exec-session.stdin",
            async |g, s, r| {
                let out = g.exec_session().call_stdin(&mut *s, r).await?;
                let out: Option<DynOutputStream> = match out {
                    Some(o) => Some(s.data_mut().env.table.delete(o)?),
                    None => None,
                };
                Ok(Ok(out.map(ByteSink::new)))
            },
        )
        .await
    }

    /// The session's stdout, once.
    pub async fn stdout(&mut self) -> Result<Option<ByteStream>, CallError> {
        self.session_call(
            &CallContext::default(),
            "exec-session.stdout",
            async |g, s, r| {
                let inp = g.exec_session().call_stdout(&mut *s, r).await?;
                take_input(s, inp)
            },
        )
        .await
    }

    /// The session's stderr, once; none with a terminal.
    pub async fn stderr(&mut self) -> Result<Option<ByteStream>, CallError> {
        self.session_call(
            &CallContext::default(),
            "exec-session.stderr",
            async |g, s, r| {
                let inp = g.exec_session().call_stderr(&mut *s, r).await?;
                take_input(s, inp)
            },
        )
        .await
    }

    /// Resizes the terminal.
    pub async fn resize(&mut self, size: TerminalSize) -> Result<(), CallError> {
        self.session_call(
            &CallContext::default(),
            "exec-session.resize",
            async |g, s, r| g.exec_session().call_resize(s, r, size).await,
        )
        .await
    }

    /// Waits for the process to exit; its exit code.
    pub async fn wait(mut self, ctx: &CallContext) -> Result<i32, CallError> {
        self.session_call(ctx, "exec-session.wait", async |g, s, r| {
            g.exec_session().call_wait(s, r).await
        })
        .await
    }
}

fn take_input(
    s: &mut Store<HostState>,
    inp: Option<Resource<DynInputStream>>,
) -> wasmtime::Result<Result<Option<ByteStream>, Error>> {
    Ok(Ok(match inp {
        Some(i) => Some(ByteStream::new(s.data_mut().env.table.delete(i)?)),
        None => None,
    }))
}
