//! The calls that carry a byte stream, on a 0.2.0 adapter.
//!
//! `logs`, `snapshot-volume` and `run` return one: each runs on an instance
//! of its own, which then runs the adapter's tasks until the stream is done
//! (`drive.rs`). `logs` hands core the stream; `snapshot-volume` and `run`
//! copy it into core's writer within the call's deadline, and their outcome
//! is the stream's verdict: a command's `command-failed` arrives through
//! `done`.
//!
//! `watch-bundles` returns a stream of events and a future of its end,
//! driven alike, its events sent on to core's channel.
//!
//! `restore-volume` and `import-image` take one: core's reader becomes a
//! `stream<u8>` the adapter reads within its call (`crate::pipes::ReadPipe`,
//! straight into the adapter's buffer), and the instance is discarded after,
//! as 0.1.0's are.

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use wasmtime::component::StreamReader;
use wasmtime_wasi::p2::pipe::AsyncReadStream;

use super::Adapter;
use super::drive::{Driven, Driver, Stopped, WholeReader, drive, driver_lost, within};
use super::invoke::After;
use crate::call::CallContext;
use crate::error::CallError;
use crate::pipes::{CHUNK, ReadPipe};
use crate::runtime::instance::{Guest, run_v0_2};
use crate::streams::ByteStream;
use crate::types::*;

/// A 0.2.0 instance's interface, for the calls made here only on a 0.2.0
/// adapter: an adapter's instances are all of its one line.
pub(super) fn v0_2_only(
    g: Guest<'_>,
) -> wasmtime::Result<&crate::bindings::v0_2::exports::pando::runtime::adapter::Guest> {
    match g {
        Guest::V0_2(g) => Ok(g),
        Guest::V0_1(_) => Err(wasmtime::Error::msg(
            "a 0.2.0 stream call made on a 0.1.0 instance",
        )),
    }
}

/// Calls `$method` on a 0.2.0 instance of its own and drives the byte
/// stream it returns.
macro_rules! driven {
    ($self:expr, $ctx:expr, $name:literal, $method:ident($($arg:expr),*)) => {{
        let (stream, lease) = $self
            .call_driven($ctx, $name, async |g, s| {
                let g = v0_2_only(g)?;
                run_v0_2(s, async |a| g.$method(a, $($arg),*).await).await
            })
            .await?;
        drive($self, $name, lease, stream)?
    }};
}

impl Adapter {
    /// [`Adapter::logs`] on a 0.2.0 adapter: the stream core reads ends in
    /// an error unless the adapter's `done` says it was whole.
    pub(super) async fn logs_on_v0_2(
        &self,
        ctx: &CallContext,
        workload: &WorkloadRef,
        options: &LogOptions,
    ) -> Result<ByteStream, CallError> {
        let (workload, options) = (workload.clone(), *options);
        let driven = driven!(self, ctx, "logs", call_logs(workload, options));
        Ok(ByteStream::new(Box::new(AsyncReadStream::new(
            WholeReader::new(driven),
        ))))
    }

    /// [`Adapter::snapshot_volume`] on a 0.2.0 adapter.
    pub(super) async fn snapshot_volume_on_v0_2<W>(
        &self,
        ctx: &CallContext,
        volume: &VolumeHandle,
        into: W,
    ) -> Result<u64, CallError>
    where
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let volume = volume.clone();
        let driven = driven!(self, ctx, "snapshot-volume", call_snapshot_volume(volume));
        self.copy_out(ctx, "snapshot-volume", driven, into).await
    }

    /// [`Adapter::run`] on a 0.2.0 adapter.
    pub(super) async fn run_on_v0_2<W>(
        &self,
        ctx: &CallContext,
        workload: &WorkloadRef,
        request: &RunRequest,
        stdout: W,
    ) -> Result<u64, CallError>
    where
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let (workload, request) = (workload.clone(), request.clone());
        let driven = driven!(self, ctx, "run", call_run(workload, request));
        self.copy_out(ctx, "run", driven, stdout).await
    }

    /// [`Adapter::restore_volume`] on a 0.2.0 adapter.
    pub(super) async fn restore_volume_on_v0_2<R>(
        &self,
        ctx: &CallContext,
        volume: &VolumeHandle,
        from: R,
    ) -> Result<(), CallError>
    where
        R: AsyncRead + Send + Unpin + 'static,
    {
        let volume = volume.clone();
        self.call(ctx, "restore-volume", After::Discard, async |g, s| {
            let g = v0_2_only(g)?;
            run_v0_2(s, async |a| {
                let from =
                    a.with(|mut a| StreamReader::new(&mut a, ReadPipe::new(from, None, ())))?;
                g.call_restore_volume(a, volume, from).await
            })
            .await
        })
        .await
    }

    /// [`Adapter::import_image`] on a 0.2.0 adapter.
    pub(super) async fn import_image_on_v0_2<R>(
        &self,
        ctx: &CallContext,
        from: R,
    ) -> Result<String, CallError>
    where
        R: AsyncRead + Send + Unpin + 'static,
    {
        self.call(ctx, "import-image", After::Discard, async |g, s| {
            let g = v0_2_only(g)?;
            run_v0_2(s, async |a| {
                let from =
                    a.with(|mut a| StreamReader::new(&mut a, ReadPipe::new(from, None, ())))?;
                g.call_import_image(a, from).await
            })
            .await
        })
        .await
    }

    /// [`Adapter::watch_bundles`] on a 0.2.0 adapter: the adapter's events
    /// stream sent on to `events` as they come, until its `end`. Core
    /// cancelling is told to the adapter (`call.cancelled`, and its writes
    /// fail once `events` is dropped); its own `cancelled` end, or the host's
    /// after the grace, is the answer.
    pub(super) async fn watch_bundles_on_v0_2(
        &self,
        ctx: &CallContext,
        events: mpsc::Sender<BundleEvent>,
    ) -> Result<WatchEnd, CallError> {
        let name = &self.inner.identity.name;
        let method = "watch-bundles";
        let (watch, lease) = self
            .call_driven(ctx, method, async |g, s| {
                let g = v0_2_only(g)?;
                run_v0_2(s, async |a| g.call_watch_bundles(a).await).await
            })
            .await?;
        let mut driver = Driver::new(self, method, lease);
        driver.items(watch.events, events)?;
        let end = driver.value(watch.end, None)?;
        let (mut end, guard) = driver.spawn(end);
        let ended = |r: Result<Result<WatchEnd, CallError>, _>| {
            r.unwrap_or_else(|_| Err(driver_lost(name, method, "watch")))
        };
        let default = self.inner.limits.default_timeout;
        match within(ctx, default, &mut end).await {
            Ok(r) => return ended(r),
            Err(Stopped::Cancelled) => {}
            Err(stopped) => return Err(stopped.error(name, method, ctx, default)),
        }
        // Cancelled: the adapter is told, and has the grace to end.
        drop(guard);
        ended(end.await)
    }

    /// Copies a driven stream into `into` to its end, then takes its
    /// verdict, all within the call's deadline and cancellation: the bytes
    /// written, or why the stream was not whole. `into` is shut down at
    /// the end, as 0.1.0's calls do.
    async fn copy_out<W>(
        &self,
        ctx: &CallContext,
        method: &'static str,
        mut driven: Driven,
        mut into: W,
    ) -> Result<u64, CallError>
    where
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let adapter = &self.inner.identity.name;
        let default = self.inner.limits.default_timeout;
        let work = async {
            // In the pipes' 64 KiB: `tokio::io::copy`'s 8 KiB buffer made a
            // snapshot 12 % slower than 0.1.0's (the `versions` bench).
            let mut bytes = tokio::io::BufReader::with_capacity(CHUNK, &mut driven.bytes);
            let copied = tokio::io::copy_buf(&mut bytes, &mut into).await;
            let shut = into.shutdown().await;
            let verdict = (&mut driven.verdict)
                .await
                .unwrap_or_else(|_| Err(driver_lost(adapter, method, "stream")));
            verdict?;
            let n = copied.map_err(|e| CallError::Host {
                adapter: adapter.clone(),
                method,
                message: format!("writing the adapter's output failed: {e}"),
            })?;
            shut.map_err(|e| CallError::Host {
                adapter: adapter.clone(),
                method,
                message: format!("closing the output failed: {e}"),
            })?;
            Ok(n)
        };
        within(ctx, default, work)
            .await
            .unwrap_or_else(|stopped| Err(stopped.error(adapter, method, ctx, default)))
    }
}
