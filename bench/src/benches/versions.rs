//! A call on a 0.2.0 adapter against the same call on a 0.1.0 one, both
//! through the host: what the second contract line costs a call.
//!
//! Host column: the 0.2.0 test adapter (`tests/components/v02-adapter`),
//! on the 0.2 engine (concurrency on). Native column: the 0.1.0 test adapter
//! (`tests/components/test-adapter`), on the 0.1 engine. Both compute next
//! to nothing, so the rows are the call path: `upstream` is a plain export
//! on both lines (wasmtime runs it as a task on the 0.2 engine, a fiber call
//! on the 0.1 one); `health-check` is a plain export in 0.1.0 and an `async
//! func` in 0.2.0 (run inside `Store::run_concurrent`). Batches alternate
//! between the two, as in `upstream`.
//!
//! The stream rows move the same bytes the adapter writes itself: a 16 MiB
//! snapshot (0.1.0: the guest writes a `wasi:io` output stream the host
//! lends; 0.2.0: a task of the guest writes a `stream<u8>` after the call
//! returned, the host driving the instance until `done`), and a 16 MiB
//! restore the adapter reads to its end (0.1.0: a `wasi:io` input stream;
//! 0.2.0: a `stream<u8>`). Both test adapters do the same work around the
//! bytes: a snapshot makes the whole pattern (byte i is i % 251) and writes
//! it at once, a restore reads everything and compares it with the
//! pattern. Throughput in
//! MiB/s, and the host process's CPU time per MiB (user and system) beside
//! it. Each sample is a whole call, the instance made fresh (both lines
//! discard a streaming call's instance).

use std::hint::black_box;
use std::time::Instant;

use anyhow::{Result, ensure};
use pando_host::types::{VolumeHandle, WorkloadRef};
use pando_host::{Adapter, LoadOptions};

use super::{call_ctx, ns, what};
use crate::env;
use crate::report::{Bench, Row, Unit};

/// Runs it.
pub async fn run(quick: bool) -> Result<Bench> {
    let (batch, samples) = if quick {
        (1_000u64, 20usize)
    } else {
        (10_000, 100)
    };
    let host = env::host()?;
    let load = async |name: &str| {
        let path = env::component(name)?;
        host.load_file(&path, LoadOptions::default())
            .await
            .map_err(|e| anyhow::anyhow!("loading {}: {e}", path.display()))
    };
    let old = load("pando_test_adapter").await?;
    let new = load("pando_v02_adapter").await?;
    ensure!(
        old.shape().version == "0.1.0" && new.shape().version == "0.2.0",
        "expected a 0.1.0 and a 0.2.0 adapter, got {} and {}",
        old.shape().version,
        new.shape().version
    );
    let wref = WorkloadRef {
        bundle: "shop".into(),
        workload: "web".into(),
    };

    let mut bench = Bench::new("versions", what("versions"));
    for call in [Call::Upstream, Call::HealthCheck] {
        // Warm-up: each adapter's pooled instance, caches.
        batch_of(call, &old, &wref, batch).await?;
        batch_of(call, &new, &wref, batch).await?;
        let (mut v2, mut v1) = (Vec::new(), Vec::new());
        for _ in 0..samples {
            v2.push(batch_of(call, &new, &wref, batch).await? / batch as f64);
            v1.push(batch_of(call, &old, &wref, batch).await? / batch as f64);
        }
        bench.rows.push(
            Row::new(call.row(), Unit::Ns, &v2, &v1)
                .per_sample(batch)
                .extra("what", call.what()),
        );
    }
    let rounds = if quick { 3 } else { 15 };
    for stream in [Stream::Snapshot, Stream::Restore] {
        // Warm-up: code, allocator, the pool's slots.
        stream.once(&old).await?;
        stream.once(&new).await?;
        let (mut v2, mut v1, mut cpu2, mut cpu1) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let (mibps, cpu) = stream.once(&new).await?;
            v2.push(mibps);
            cpu2.push(cpu);
            let (mibps, cpu) = stream.once(&old).await?;
            v1.push(mibps);
            cpu1.push(cpu);
        }
        bench.rows.push(
            Row::new(stream.row(), Unit::MibPerS, &v2, &v1)
                .extra("what", stream.what())
                .extra(
                    "CPU µs per MiB, 0.2 / 0.1 (median)",
                    format!("{:.0} / {:.0}", median(&cpu2), median(&cpu1)),
                ),
        );
    }
    bench.note(
        "host column: the 0.2.0 test adapter on the 0.2 engine; native column: the 0.1.0 test \
         adapter on the 0.1 engine; both through `Adapter`, one caller",
    );
    Ok(bench)
}

/// Bytes each stream row moves.
const STREAM_BYTES: usize = 16 << 20;

#[derive(Clone, Copy)]
enum Stream {
    Snapshot,
    Restore,
}

impl Stream {
    fn row(self) -> &'static str {
        match self {
            Stream::Snapshot => "16 MiB the adapter writes (snapshot), 0.2 vs 0.1",
            Stream::Restore => "16 MiB the adapter reads (restore), 0.2 vs 0.1",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Stream::Snapshot => {
                "0.2: `stream<u8>` written after the call, driven; 0.1: `wasi:io` output stream"
            }
            Stream::Restore => "0.2: `stream<u8>` from core's reader; 0.1: `wasi:io` input stream",
        }
    }

    /// One call moving [`STREAM_BYTES`]: its MiB/s and the process's CPU
    /// µs per MiB.
    async fn once(self, adapter: &Adapter) -> Result<(f64, f64)> {
        let cx = call_ctx();
        let cpu = crate::cpu::process_ns();
        let t = Instant::now();
        match self {
            Stream::Snapshot => {
                let volume = VolumeHandle {
                    bundle: "shop".into(),
                    name: format!("bytes-{STREAM_BYTES}"),
                    location: String::new(),
                };
                let n = adapter
                    .snapshot_volume(&cx, &volume, tokio::io::sink())
                    .await?;
                ensure!(n == STREAM_BYTES as u64, "snapshot of {n} bytes");
            }
            Stream::Restore => {
                // Both test adapters check a restore against the pattern
                // their snapshot writes (byte i is i % 251).
                let name = format!("bytes-{STREAM_BYTES}");
                let data: Vec<u8> = (0..STREAM_BYTES).map(|i| (i % 251) as u8).collect();
                let volume = VolumeHandle {
                    bundle: "shop".into(),
                    name,
                    location: String::new(),
                };
                let cpu_before_copy = crate::cpu::process_ns();
                let t = Instant::now();
                adapter
                    .restore_volume(&cx, &volume, std::io::Cursor::new(data))
                    .await?;
                let secs = t.elapsed().as_secs_f64();
                let mib = STREAM_BYTES as f64 / f64::from(1u32 << 20);
                let cpu_us = (crate::cpu::process_ns() - cpu_before_copy) as f64 / 1e3;
                return Ok((mib / secs, cpu_us / mib));
            }
        }
        let secs = t.elapsed().as_secs_f64();
        let mib = STREAM_BYTES as f64 / f64::from(1u32 << 20);
        let cpu_us = (crate::cpu::process_ns() - cpu) as f64 / 1e3;
        Ok((mib / secs, cpu_us / mib))
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

#[derive(Clone, Copy)]
enum Call {
    Upstream,
    HealthCheck,
}

impl Call {
    fn row(self) -> &'static str {
        match self {
            Call::Upstream => "upstream, 0.2 vs 0.1",
            Call::HealthCheck => "health-check, 0.2 vs 0.1",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Call::Upstream => "a plain export on both lines",
            Call::HealthCheck => "an `async func` in 0.2.0, a plain export in 0.1.0",
        }
    }
}

/// `n` calls of `call`; the total in nanoseconds.
async fn batch_of(call: Call, adapter: &Adapter, wref: &WorkloadRef, n: u64) -> Result<f64> {
    let cx = call_ctx();
    let t = Instant::now();
    for _ in 0..n {
        match call {
            Call::Upstream => {
                black_box(adapter.upstream(&cx, black_box(wref), 8080).await?);
            }
            Call::HealthCheck => adapter.health_check(&cx).await?,
        }
    }
    Ok(ns(t.elapsed()))
}
