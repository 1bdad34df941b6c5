//! An exec session: an instance of the adapter kept for one interactive
//! process, its streams handed to core. A 0.1.0 session is a resource on
//! that instance, its calls through the pipeline; a 0.2.0 one is streams
//! and a future the host drives (`exec_v0_2.rs`).

use wasmtime::Store;
use wasmtime::component::{Resource, ResourceAny};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream};

use super::Adapter;
use super::exec_v0_2::SessionV0_2;
use super::invoke::{Settles, run};
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
    pub(super) on: On,
}

/// A session as its adapter's contract line has it.
pub(super) enum On {
    /// A resource on the session's instance.
    V0_1 {
        lease: Lease<'static>,
        session: ResourceAny,
    },
    /// Streams and a future, the instance driven apart.
    V0_2(Box<SessionV0_2>),
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
        let adapter = &self.adapter;
        let On::V0_1 { lease, session } = &mut self.on else {
            return Err(CallError::Host {
                adapter: adapter.inner.identity.name.clone(),
                method,
                message: "a 0.1.0 session call on a 0.2.0 session".into(),
            });
        };
        let session = *session;
        let default = adapter.inner.limits.default_timeout;
        let body = std::pin::pin!(run(
            lease.instance(),
            &adapter.inner.identity.name,
            method,
            ctx.deadline(default),
            ctx.cancel_token(),
            async |g, s| match g {
                Guest::V0_1(g) => f(g, s, session).await,
                // Only 0.1.0 sessions are resources (`On::V0_1`).
                Guest::V0_2(_) => Err(wasmtime::Error::msg(
                    "an exec-session resource call on a 0.2.0 instance",
                )),
            },
        ));
        adapter
            .pipeline(method, crate::clock::Stamp::now(), Settles::Now, body)
            .await
    }

    /// The session's stdin, once.
    pub async fn stdin(&mut self) -> Result<Option<ByteSink>, CallError> {
        if let On::V0_2(s) = &mut self.on {
            return Ok(s.stdin());
        }
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
        if let On::V0_2(s) = &mut self.on {
            return Ok(s.stdout());
        }
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
        if let On::V0_2(s) = &mut self.on {
            return Ok(s.stderr());
        }
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

    /// Resizes the terminal: on a 0.1.0 adapter a call into the session
    /// (which waits while the session's instance sits in `wait`); on a
    /// 0.2.0 one a size on the stream the adapter reads while it runs.
    pub async fn resize(&mut self, size: TerminalSize) -> Result<(), CallError> {
        if let On::V0_2(s) = &mut self.on {
            return s.resize(&self.adapter.inner.identity.name, size).await;
        }
        self.session_call(
            &CallContext::default(),
            "exec-session.resize",
            async |g, s, r| g.exec_session().call_resize(s, r, size).await,
        )
        .await
    }

    /// Waits for the process to exit; its exit code.
    pub async fn wait(mut self, ctx: &CallContext) -> Result<i32, CallError> {
        let ExecSession { adapter, on } = self;
        let on = match on {
            On::V0_2(s) => {
                let default = adapter.inner.limits.default_timeout;
                return s.wait(&adapter.inner.identity.name, ctx, default).await;
            }
            on @ On::V0_1 { .. } => on,
        };
        self = ExecSession { adapter, on };
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
