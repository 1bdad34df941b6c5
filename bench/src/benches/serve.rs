//! Calls through `pando-host serve` from Go against the same calls in
//! process: what the plugin hop costs Pando's Go core.
//!
//! Through the service ("host" column): `pandohost-bench`
//! ([`super::go_client`]) loads the Kubernetes adapter and kube-probe
//! through package pandohost — go-plugin's client, `pando-host serve` of
//! the same build as this binary, gRPC over its unix socket — and times
//! its calls itself. In process ("native" column): the same components,
//! grants and configurations loaded into a host in this process, the same
//! calls on the Rust API. Both reach the cluster as the `pando` identity.
//! The two sides alternate sample by sample.
//!
//! - `upstream`: batches of calls, each sample the mean of a batch.
//! - The 3-GET call: kube-probe's `apply` of plan `flood:3` (as
//!   `kube-3rtt`), one call a sample.
//! - A log: kube-probe's `logs` of the log benchmark's pod, read to its
//!   end (Go into a 64 KiB buffer, in process `ByteStream::next_chunk`).
//! - A snapshot: the Kubernetes adapter's `snapshot_volume` of the
//!   snapshot benchmark's volume into a counting sink; one untimed round
//!   first, as there.
//!
//! Unary calls go on call channels, the log and the snapshot on byte
//! channels (docs/go.md); each also has a row "on gRPC" or "as gRPC chunks"
//! from a second plugin with both channels off, in the same rounds, so the
//! transports are compared in one sitting.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, Result, ensure};
use pando_host::types::WorkloadRef;

use super::go_client::{self, GoClient, Load};
use super::snapshot::{self, Volume};
use super::upstream::{self, PORT};
use super::{call_ctx, logs, us, what};
use crate::cpu;
use crate::env::{self, Identity};
use crate::report::{Bench, Row, Unit};
use crate::stats::Summary;

/// Runs it.
pub async fn run(quick: bool) -> Result<Bench> {
    let (Some(go), Some(pando_host)) = (go_client::binary(), go_client::pando_host()) else {
        return Ok(Bench::skipped(
            "serve",
            what("serve"),
            "needs target/gotools/bin/pandohost-bench and pando-host beside pando-bench: \
             scripts/bench builds both",
        ));
    };
    let Some(helper_root) = snapshot::helper_root() else {
        return Ok(Bench::skipped(
            "serve",
            what("serve"),
            snapshot::NO_HELPER_ROOT,
        ));
    };
    let (batch, samples, rtts, mib, rounds) = if quick {
        (200u64, 15usize, 20usize, 16u64, 2usize)
    } else {
        (2_000, 50, 300, 256, 3)
    };
    let size = mib << 20;
    let mut bench = Bench::new("serve", what("serve"));
    let admin = env::client(Identity::Admin).await?;
    let client = env::client(Identity::Pando).await?;
    let (pod, log_size) = logs::prepare(&mut bench, &admin, &client, size).await?;
    let Volume {
        ns: volume_ns,
        handle,
        ..
    } = snapshot::prepare(&admin, &helper_root, size).await?;

    let scratch = env::scratch_dir()?.join("serve");
    std::fs::create_dir_all(&scratch)?;
    let loads = write_loads(&scratch)?;
    let mut go = GoClient::start(&go, &pando_host, &scratch, &loads).await?;
    let host = env::host()?;
    let kubernetes = env::load_kubernetes_unbudgeted(&host, client.clone()).await?;
    let probe = env::load_probe(&host, client.clone()).await?;

    // upstream: the same answer both ways, then batches.
    let wref = WorkloadRef {
        bundle: "shop".into(),
        workload: "web".into(),
    };
    let upstream = format!("upstream kube shop web {PORT}");
    let served = go.ask(&format!("{upstream} 1")).await?;
    let here = kubernetes.upstream(&call_ctx(), &wref, PORT).await?;
    ensure!(
        served.answer == format!("{}:{}", here.host, here.port),
        "through serve `{}`, in process `{}:{}`",
        served.answer,
        here.host,
        here.port
    );
    go.ask(&format!("{upstream} {batch}")).await?;
    upstream::host_batch(&kubernetes, &wref, batch).await?;
    let grpc_upstream = format!("upstream kube-grpc shop web {PORT}");
    go.ask(&format!("{grpc_upstream} {batch}")).await?;
    let (mut go_us, mut grpc_us, mut here_us, mut ping_us) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let per_call = |ns: f64| ns / 1e3 / batch as f64;
    for _ in 0..samples {
        go_us.push(per_call(
            go.ask(&format!("{upstream} {batch}")).await?.ns as f64,
        ));
        grpc_us.push(per_call(
            go.ask(&format!("{grpc_upstream} {batch}")).await?.ns as f64,
        ));
        here_us.push(per_call(
            upstream::host_batch(&kubernetes, &wref, batch).await?,
        ));
        ping_us.push(per_call(go.ask(&format!("ping {batch}")).await?.ns as f64));
    }
    let floor = Summary::of(&ping_us).map_or(f64::NAN, |s| s.median);
    bench.rows.push(
        added(
            Row::new("upstream, per call", Unit::Us, &go_us, &here_us).per_sample(batch),
            &go_us,
            &here_us,
        )
        .extra(
            "the gRPC floor: go-plugin's health check from Go, no adapter, p50",
            format!("{floor:.1} µs"),
        ),
    );
    bench.rows.push(
        added_only(
            Row::new("upstream, per call, on gRPC", Unit::Us, &grpc_us, &here_us).per_sample(batch),
            &grpc_us,
            &here_us,
        )
        .extra("what", GRPC_ROW),
    );

    // The 3-GET call, one a sample.
    let plan = super::kube_rtt::flood_plan();
    for _ in 0..5 {
        go.ask("apply probe flood:3 1").await?;
        go.ask("apply probe-grpc flood:3 1").await?;
        probe.apply(&call_ctx(), &plan).await?;
    }
    let (mut go_us, mut grpc_us, mut here_us) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rtts {
        for (name, into) in [("probe", &mut go_us), ("probe-grpc", &mut grpc_us)] {
            let a = go.ask(&format!("apply {name} flood:3 1")).await?;
            ensure!(
                a.answer == "3",
                "kube-probe answered {} of 3 GETs ({name})",
                a.answer
            );
            into.push(a.ns as f64 / 1e3);
        }
        let t = Instant::now();
        let h = probe.apply(&call_ctx(), &plan).await?;
        here_us.push(us(t.elapsed()));
        ensure!(
            h.location == "3",
            "kube-probe answered {} of 3 GETs",
            h.location
        );
    }
    bench.rows.push(added(
        Row::new("call with 3 GETs", Unit::Us, &go_us, &here_us),
        &go_us,
        &here_us,
    ));
    bench.rows.push(
        added_only(
            Row::new("call with 3 GETs, on gRPC", Unit::Us, &grpc_us, &here_us),
            &grpc_us,
            &here_us,
        )
        .extra("what", GRPC_ROW),
    );

    // The log: on a byte channel, and as gRPC chunks (a plugin with the
    // channels off), each against the same read in process.
    let (mut go_mibps, mut chunk_mibps, mut here_mibps) = (Vec::new(), Vec::new(), Vec::new());
    let log_mib = log_size as f64 / f64::from(1 << 20);
    for _ in 0..rounds {
        for (name, into) in [("probe", &mut go_mibps), ("probe-grpc", &mut chunk_mibps)] {
            let a = go
                .ask(&format!("logs {name} {} {pod} {log_size}", logs::NAMESPACE))
                .await?;
            ensure!(
                a.bytes == log_size,
                "Go read {} of {log_size} bytes ({name})",
                a.bytes
            );
            into.push(log_mib / (a.ns as f64 / 1e9));
        }
        let t = logs::host_read(&probe, pod, log_size).await?;
        here_mibps.push(log_mib / t.as_secs_f64());
    }
    let log_row = format!("{} MiB log", log_size >> 20);
    bench.rows.push(at_least_90(Row::new(
        &log_row,
        Unit::MibPerS,
        &go_mibps,
        &here_mibps,
    )));
    bench.rows.push(
        Row::new(
            &format!("{log_row}, as gRPC chunks"),
            Unit::MibPerS,
            &chunk_mibps,
            &here_mibps,
        )
        .extra("what", CHUNKS_ROW),
    );

    // The snapshot, on a byte channel and as gRPC chunks; round 0 untimed
    // (the namespace's first helper pod).
    let (mut go_mibps, mut chunk_mibps, mut here_mibps) = (Vec::new(), Vec::new(), Vec::new());
    // The machine's CPU time during each side's timed rounds: the snapshot
    // keeps both cores busy (the helper's tar, the API server, KWOK, the
    // guest), so what the hop costs in CPU shows up as throughput.
    let (mut go_cpu, mut chunk_cpu, mut here_cpu, mut tar_bytes) = (0u64, 0u64, 0u64, 0u64);
    for round in 0..=rounds {
        let mut served = Vec::new();
        for name in ["kube", "kube-grpc"] {
            let c0 = cpu::machine_busy_ns();
            let a = go
                .ask(&format!(
                    "snapshot {name} {} {}",
                    handle.bundle, handle.name
                ))
                .await?;
            served.push((a, cpu::machine_busy_ns() - c0));
        }
        let c1 = cpu::machine_busy_ns();
        let t = Instant::now();
        let n = kubernetes
            .snapshot_volume(&call_ctx(), &handle, tokio::io::sink())
            .await?;
        let here = t.elapsed();
        ensure!(
            n > size,
            "the snapshot was {n} bytes, the volume holds {size}"
        );
        for (a, _) in &served {
            ensure!(a.bytes == n, "Go read {} bytes, in process {n}", a.bytes);
        }
        if round > 0 {
            here_cpu += cpu::machine_busy_ns() - c1;
            tar_bytes += n;
            let tar_mib = n as f64 / f64::from(1 << 20);
            for ((a, c), (mibps, cpu)) in served.iter().zip([
                (&mut go_mibps, &mut go_cpu),
                (&mut chunk_mibps, &mut chunk_cpu),
            ]) {
                mibps.push(tar_mib / (a.ns as f64 / 1e9));
                *cpu += c;
            }
            here_mibps.push(tar_mib / here.as_secs_f64());
        }
    }
    let per_mib = |ns: u64| ns as f64 / 1e6 / (tar_bytes as f64 / f64::from(1 << 20));
    let snap_row = format!("{mib} MiB volume snapshot, whole call");
    bench.rows.push(
        at_least_90(Row::new(&snap_row, Unit::MibPerS, &go_mibps, &here_mibps)).extra(
            "machine CPU per MiB (all processes, both cores)",
            format!(
                "through serve {:.2} ms (as gRPC chunks {:.2} ms), in process {:.2} ms",
                per_mib(go_cpu),
                per_mib(chunk_cpu),
                per_mib(here_cpu)
            ),
        ),
    );
    bench.rows.push(
        Row::new(
            &format!("{snap_row}, as gRPC chunks"),
            Unit::MibPerS,
            &chunk_mibps,
            &here_mibps,
        )
        .extra("what", CHUNKS_ROW),
    );

    go.stop().await?;
    bench.note(
        "host column: the call from Go through pando-host serve (package pandohost, go-plugin, \
         gRPC on a unix socket); native column: the same call on the Rust API in this process",
    );
    logs::cleanup(&mut bench, admin.clone()).await;
    super::delete_namespace(&mut bench, admin, &volume_ns).await;
    Ok(bench)
}

/// What the rows "as gRPC chunks" are.
const CHUNKS_ROW: &str = "the same stream from a second pando-host serve with byte and call \
     channels off (NoByteChannels, NoCallChannels): its bytes in gRPC Chunk messages, as \
     before the channels; no target, the row above holds it";

/// What the rows "on gRPC" are.
const GRPC_ROW: &str = "the same call from a second pando-host serve with byte and call \
     channels off (NoByteChannels, NoCallChannels): on gRPC's HTTP/2, as before the call \
     channels; no target, the row above holds it";

/// The adapters' files for the Go side, the in-process loads' equals:
/// the Kubernetes adapter unbudgeted, kube-probe with the probe's grants.
fn write_loads(scratch: &Path) -> Result<Vec<Load<'static>>> {
    let write = |name: &str, text: String| -> Result<std::path::PathBuf> {
        let path = scratch.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    };
    let kube_grants = env::unbudgeted_grants(env::kubernetes_grants()?);
    Ok(vec![
        Load {
            name: "kube",
            component: env::kubernetes_adapter()?,
            grants: write("kube-grants.json", serde_json::to_string(&kube_grants)?)?,
            config: Some(write(
                "kube-config.json",
                env::unbudgeted(env::KUBERNETES_CONFIG)?,
            )?),
        },
        Load {
            name: "probe",
            component: env::kube_probe()?,
            grants: write("probe-grants.yaml", env::PROBE_GRANTS.to_string())?,
            config: None,
        },
    ])
}

/// The row with what the hop adds at p50, against its target.
fn added(row: Row, served: &[f64], here: &[f64]) -> Row {
    let row = added_only(row, served, here);
    match p50_added(served, here) {
        Some(added) => row.target("≤ 50 µs added per call at p50", added <= 50.0),
        None => row,
    }
}

/// The row with what the hop adds at p50, no target.
fn added_only(row: Row, served: &[f64], here: &[f64]) -> Row {
    match p50_added(served, here) {
        Some(added) => row.extra("added at p50", format!("{added:.1} µs")),
        None => row,
    }
}

/// Host p50 − native p50.
fn p50_added(served: &[f64], here: &[f64]) -> Option<f64> {
    Some(Summary::of(served)?.median - Summary::of(here)?.median)
}

/// The row against the streams' target.
fn at_least_90(row: Row) -> Row {
    let met = row.ratio.is_some_and(|r| r >= 0.90);
    row.target(
        "through serve ≥ 90% of in-process throughput (ratio ≥ 0.90)",
        met,
    )
}
