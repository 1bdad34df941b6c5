//! The typed calls core makes of an adapter, one per contract method: each
//! a call into the pipeline (`invoke.rs`) with what each contract line is
//! handed. Both lines share their argument and result types
//! (`crate::bindings`), so most methods call the same export on either
//! (`either!`, and `unary!` for a 0.2.0 `async func`, which runs inside
//! the store's event loop: `run_v0_2` on a pooled instance, or a lane's,
//! beside other calls, `shared.rs`). The plan's workloads carry `security`, which a 0.1.0
//! adapter cannot take ([`Adapter::for_v0_1`]). The calls that carry a
//! stream differ by line: on a 0.2.0 adapter they are `streams_v0_2.rs`'s
//! and `exec_v0_2.rs`'s.

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use wasmtime_wasi::p2::DynInputStream;
use wasmtime_wasi::p2::pipe::AsyncReadStream;

use super::invoke::After;
use super::shared::{in_lane, unary};
use super::{Adapter, ExecSession};
use crate::bindings::{Line, v0_1};
use crate::call::CallContext;
use crate::capability::events::BundleSink;
use crate::error::CallError;
use crate::runtime::instance::{Guest, either, run_v0_2};
use crate::streams::{ByteStream, channel_output};
use crate::types::*;

/// A 0.1.0 instance's interface, for the calls whose streams differ by line
/// (0.1.0's are `wasi:io` resources): each such call takes a 0.2.0 adapter
/// elsewhere (`streams_v0_2.rs`, `exec_v0_2.rs`) before an instance is
/// leased, so the error here is never an adapter's.
fn v0_1_only(g: Guest<'_>) -> wasmtime::Result<&v0_1::exports::pando::runtime::adapter::Guest> {
    match g {
        Guest::V0_1(g) => Ok(g),
        Guest::V0_2(_) => Err(wasmtime::Error::msg(
            "a call served to 0.1.0 adapters only, made on a 0.2.0 instance",
        )),
    }
}

/// An instance of one line serving an adapter loaded as the other: never,
/// since an adapter's instances are all made from its one component.
fn line_mismatch() -> wasmtime::Error {
    wasmtime::Error::msg("an instance of the other contract line than its adapter's")
}

impl Adapter {
    /// `value` as a 0.1.0 adapter takes it, when this adapter is one (none
    /// for a 0.2.0 adapter); refused `unsupported`, naming why, when 0.1.0
    /// cannot carry it.
    fn for_v0_1<T, U>(
        &self,
        value: &T,
        convert: impl FnOnce(&T) -> Result<U, String>,
    ) -> Result<Option<U>, CallError> {
        if self.inner.line != Line::V0_1 {
            return Ok(None);
        }
        convert(value)
            .map(Some)
            .map_err(|why| CallError::Adapter(Error::Unsupported(why)))
    }

    /// What this adapter can do.
    pub async fn capabilities(&self, ctx: &CallContext) -> Result<RuntimeCapabilities, CallError> {
        self.call(
            ctx,
            "capabilities",
            After::Reuse,
            async |g, s| either!(g, g => g.call_capabilities(s).await),
        )
        .await
    }

    /// Whether the runtime can be used now (O-43).
    pub async fn health_check(&self, ctx: &CallContext) -> Result<(), CallError> {
        unary!(self, ctx, "health-check", call_health_check())
    }

    /// What the runtime can hold for Pando.
    pub async fn capacity(&self, ctx: &CallContext) -> Result<CapacityReport, CallError> {
        unary!(self, ctx, "capacity", call_capacity())
    }

    /// The roomiest node for one app.
    pub async fn largest_fit_for(
        &self,
        ctx: &CallContext,
        bundle: &str,
    ) -> Result<Option<Fit>, CallError> {
        unary!(self, ctx, "largest-fit-for", call_largest_fit_for(bundle))
    }

    /// What Pando has on the runtime.
    pub async fn in_use(&self, ctx: &CallContext) -> Result<InUseReport, CallError> {
        unary!(self, ctx, "in-use", call_in_use())
    }

    /// Converges an app toward the plan. A plan that sets a workload's
    /// `security` is refused `unsupported` by a 0.1.0 adapter, which cannot
    /// carry it, before anything runs.
    pub async fn apply(
        &self,
        ctx: &CallContext,
        plan: &BundlePlan,
    ) -> Result<BundleHandle, CallError> {
        let v0_1 = self.for_v0_1(plan, BundlePlan::to_v0_1)?;
        self.call_async(
            ctx,
            "apply",
            async |g, s| match (g, &v0_1) {
                (Guest::V0_1(g), Some(plan)) => g.call_apply(s, plan).await,
                (Guest::V0_2(g), _) => {
                    let plan = plan.clone();
                    run_v0_2(s, async |a| g.call_apply(a, plan).await).await
                }
                (Guest::V0_1(_), None) => Err(line_mismatch()),
            },
            || {
                let plan = plan.clone();
                in_lane(move |a, g| Box::pin(async move { g.call_apply(a, plan).await }))
            },
        )
        .await
    }

    /// Reports what exists for an app.
    pub async fn observe(
        &self,
        ctx: &CallContext,
        bundle: &BundleRef,
    ) -> Result<ObservedBundle, CallError> {
        unary!(self, ctx, "observe", call_observe(bundle))
    }

    /// Stops an app's running workloads, keeping everything else.
    pub async fn stop(&self, ctx: &CallContext, bundle: &BundleRef) -> Result<(), CallError> {
        unary!(self, ctx, "stop", call_stop(bundle))
    }

    /// Removes an app; its volumes stay unless `options.keep_volumes` is
    /// false.
    pub async fn destroy(
        &self,
        ctx: &CallContext,
        bundle: &BundleRef,
        options: DestroyOptions,
    ) -> Result<(), CallError> {
        unary!(self, ctx, "destroy", call_destroy(bundle, options))
    }

    /// What an app uses.
    pub async fn usage(
        &self,
        ctx: &CallContext,
        bundle: &BundleRef,
    ) -> Result<BundleUsage, CallError> {
        unary!(self, ctx, "usage", call_usage(bundle))
    }

    /// Makes a volume.
    pub async fn create_volume(
        &self,
        ctx: &CallContext,
        request: &VolumeRequest,
    ) -> Result<VolumeHandle, CallError> {
        unary!(self, ctx, "create-volume", call_create_volume(request))
    }

    /// Deletes a volume and its data.
    pub async fn destroy_volume(
        &self,
        ctx: &CallContext,
        volume: &VolumeHandle,
    ) -> Result<(), CallError> {
        unary!(self, ctx, "destroy-volume", call_destroy_volume(volume))
    }

    /// Writes a volume's contents as a tar stream into `into`; the bytes
    /// written. `into` is flushed and shut down at the end.
    pub async fn snapshot_volume<W>(
        &self,
        ctx: &CallContext,
        volume: &VolumeHandle,
        into: W,
    ) -> Result<u64, CallError>
    where
        W: AsyncWrite + Send + Unpin + 'static,
    {
        if self.inner.line == Line::V0_2 {
            return self.snapshot_volume_on_v0_2(ctx, volume, into).await;
        }
        let (stream, writer) = channel_output(into);
        let done = self
            .call(ctx, "snapshot-volume", After::Discard, async |g, s| {
                let out = s.data_mut().env.table.push(stream)?;
                v0_1_only(g)?.call_snapshot_volume(s, volume, out).await
            })
            .await;
        // The writer ends once the instance, and with it the guest's end of
        // the stream, is gone: wait for it either way, so nothing is still
        // being written when the call's outcome is reported.
        let written = self.finish_writer("snapshot-volume", writer).await;
        done?;
        written
    }

    /// Replaces a volume's contents with a tar stream from `from`.
    pub async fn restore_volume<R>(
        &self,
        ctx: &CallContext,
        volume: &VolumeHandle,
        from: R,
    ) -> Result<(), CallError>
    where
        R: AsyncRead + Send + Unpin + 'static,
    {
        if self.inner.line == Line::V0_2 {
            return self.restore_volume_on_v0_2(ctx, volume, from).await;
        }
        let stream: DynInputStream = Box::new(AsyncReadStream::new(from));
        self.call(ctx, "restore-volume", After::Discard, async |g, s| {
            let inp = s.data_mut().env.table.push(stream)?;
            v0_1_only(g)?.call_restore_volume(s, volume, inp).await
        })
        .await
    }

    /// Whether an image can run without importing it.
    pub async fn has_image(&self, ctx: &CallContext, image: &str) -> Result<bool, CallError> {
        unary!(self, ctx, "has-image", call_has_image(image))
    }

    /// Loads an image from a tar stream; its reference.
    pub async fn import_image<R>(&self, ctx: &CallContext, from: R) -> Result<String, CallError>
    where
        R: AsyncRead + Send + Unpin + 'static,
    {
        if self.inner.line == Line::V0_2 {
            return self.import_image_on_v0_2(ctx, from).await;
        }
        let stream: DynInputStream = Box::new(AsyncReadStream::new(from));
        self.call(ctx, "import-image", After::Discard, async |g, s| {
            let inp = s.data_mut().env.table.push(stream)?;
            v0_1_only(g)?.call_import_image(s, inp).await
        })
        .await
    }

    /// A workload's log, its newest instance's.
    pub async fn logs(
        &self,
        ctx: &CallContext,
        workload: &WorkloadRef,
        options: &LogOptions,
    ) -> Result<ByteStream, CallError> {
        if self.inner.line == Line::V0_2 {
            return self.logs_on_v0_2(ctx, workload, options).await;
        }
        // Discarded after: a guest could return a pipe's reading end and keep
        // the writing end, writing into core's log from later calls.
        self.call(ctx, "logs", After::Discard, async |g, s| {
            Ok(
                match v0_1_only(g)?.call_logs(&mut *s, workload, *options).await? {
                    // The stream is a host object: out of the table, it no
                    // longer ties up the instance.
                    Ok(r) => Ok(ByteStream::new(s.data_mut().env.table.delete(r)?)),
                    Err(e) => Err(e),
                },
            )
        })
        .await
    }

    /// Runs a command to completion in a workload; its stdout goes
    /// into `stdout`, which is flushed and shut down at the end. A non-zero
    /// exit is the adapter error `command-failed`, with its stderr.
    pub async fn run<W>(
        &self,
        ctx: &CallContext,
        workload: &WorkloadRef,
        request: &RunRequest,
        stdout: W,
    ) -> Result<u64, CallError>
    where
        W: AsyncWrite + Send + Unpin + 'static,
    {
        if self.inner.line == Line::V0_2 {
            return self.run_on_v0_2(ctx, workload, request, stdout).await;
        }
        let (stream, writer) = channel_output(stdout);
        let ran = self
            .call(ctx, "run", After::Discard, async |g, s| {
                let out = s.data_mut().env.table.push(stream)?;
                v0_1_only(g)?.call_run(s, workload, request, out).await
            })
            .await;
        let written = self.finish_writer("run", writer).await;
        ran?;
        written
    }

    /// Runs a workload once, watched. Its `security`, if set, is
    /// refused by a 0.1.0 adapter as in [`Adapter::apply`].
    pub async fn trial(
        &self,
        ctx: &CallContext,
        request: &TrialRequest,
    ) -> Result<TrialResult, CallError> {
        let v0_1 = self.for_v0_1(request, TrialRequest::to_v0_1)?;
        self.call_async(
            ctx,
            "trial",
            async |g, s| match (g, &v0_1) {
                (Guest::V0_1(g), Some(request)) => g.call_trial(s, request).await,
                (Guest::V0_2(g), _) => {
                    let request = request.clone();
                    run_v0_2(s, async |a| g.call_trial(a, request).await).await
                }
                (Guest::V0_1(_), None) => Err(line_mismatch()),
            },
            || {
                let request = request.clone();
                in_lane(move |a, g| Box::pin(async move { g.call_trial(a, request).await }))
            },
        )
        .await
    }

    /// Where Pando's proxy reaches a workload's port.
    pub async fn upstream(
        &self,
        ctx: &CallContext,
        workload: &WorkloadRef,
        port: u16,
    ) -> Result<UpstreamAddress, CallError> {
        self.call(
            ctx,
            "upstream",
            After::Reuse,
            async |g, s| either!(g, g => g.call_upstream(s, workload, port).await),
        )
        .await
    }

    /// Creates or updates the edge.
    pub async fn apply_edge(&self, ctx: &CallContext, plan: &EdgePlan) -> Result<(), CallError> {
        unary!(self, ctx, "apply-edge", call_apply_edge(plan))
    }

    /// Whether an edge serves.
    pub async fn observe_edge(
        &self,
        ctx: &CallContext,
        name: &str,
    ) -> Result<EdgeState, CallError> {
        unary!(self, ctx, "observe-edge", call_observe_edge(name))
    }

    /// Removes an edge and everything made for it.
    pub async fn remove_edge(&self, ctx: &CallContext, name: &str) -> Result<(), CallError> {
        unary!(self, ctx, "remove-edge", call_remove_edge(name))
    }

    /// The edges that exist.
    pub async fn edges(&self, ctx: &CallContext) -> Result<Vec<String>, CallError> {
        unary!(self, ctx, "edges", call_edges())
    }

    /// Volumes the edge keeps.
    pub async fn edge_volumes(&self, ctx: &CallContext) -> Result<Vec<VolumeHandle>, CallError> {
        unary!(self, ctx, "edge-volumes", call_edge_volumes())
    }

    /// Watches every app's workloads, sending what changes into `events`
    /// (O-52) until `ctx` is cancelled, or until the runtime cannot resume
    /// ([`WatchEnd::Expired`]: list, sweep, and watch again). Runs on an
    /// instance of its own; give it a context without a deadline.
    pub async fn watch_bundles(
        &self,
        ctx: &CallContext,
        events: mpsc::Sender<BundleEvent>,
    ) -> Result<WatchEnd, CallError> {
        if self.inner.line == Line::V0_2 {
            return self.watch_bundles_on_v0_2(ctx, events).await;
        }
        let sink = BundleSink {
            tx: events,
            cancel: ctx.cancel_token().clone(),
        };
        let (end, _lease) = self
            .call_dedicated(ctx, "watch-bundles", async |g, s| {
                let sink = s.data_mut().env.table.push(sink)?;
                v0_1_only(g)?.call_watch_bundles(s, sink).await
            })
            .await?;
        Ok(end)
    }

    /// Opens an interactive session in a workload. The
    /// session holds an instance of its own until dropped.
    pub async fn exec(
        &self,
        ctx: &CallContext,
        workload: &WorkloadRef,
        request: &ExecRequest,
    ) -> Result<ExecSession, CallError> {
        if self.inner.line == Line::V0_2 {
            return self.exec_on_v0_2(ctx, workload, request).await;
        }
        let (session, lease) = self
            .call_dedicated(ctx, "exec", async |g, s| {
                v0_1_only(g)?.call_exec(s, workload, request).await
            })
            .await?;
        Ok(ExecSession {
            adapter: self.clone(),
            on: super::session::On::V0_1 { lease, session },
        })
    }
}
