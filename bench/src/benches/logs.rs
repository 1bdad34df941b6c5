//! A large pod log streamed through the host vs read natively.
//!
//! The log is a file KWOK serves as the log of containers named
//! `bench-log` (`scripts/cluster` points its `ClusterLogs` there; the bench
//! writes the file, so `cluster up` does not pay for it). A cluster started
//! before that entry existed serves its default two-line log for that
//! container instead; the bench then falls back to the 64 MiB `big-log`
//! file every cluster has, and says so.
//!
//! Host: kube-probe's `logs` (the Kubernetes adapter's own `logs` asks for
//! container `workload`, which KWOK cannot map to a bench file without
//! serving it for every app's pods): the guest opens the log through the
//! host's Kubernetes import and returns the host's stream unchanged; the
//! bench reads the `ByteStream` to the end. Native: kube-rs
//! `Api::<Pod>::log_stream` of the same pod with the same `pando` client,
//! read to the end with `fill_buf`/`consume`. Both ask for exactly the
//! benchmark's size with `limitBytes`, and both clocks include opening the
//! stream. Runs alternate host and native.
//!
//! The log pods run on the bench's cordoned node (`observe_setup`), in
//! namespace `pando-bench-log`, which goes at the end; the file stays.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use futures::AsyncBufReadExt as _;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube::Api;
use kube::api::{LogParams, ObjectMeta, PostParams};
use pando_host::Adapter;
use pando_host::types::{LogOptions, WorkloadRef};

use super::observe_setup as setup;
use super::{call_ctx, what};
use crate::env::{self, Identity};
use crate::report::{Bench, Row, Unit};

/// The bench's namespace for its log pods.
pub(super) const NAMESPACE: &str = "pando-bench-log";
/// Bytes of one served log line (1023 of message, the newline).
const LINE: usize = 1024;
/// The CRI prefix KWOK strips from each line of the file.
const CRI_PREFIX: &str = "2026-01-01T00:00:00.000000000Z stdout F ";
/// The size of `big-log`, the fallback every test cluster serves.
const BIG_LOG: u64 = 64 << 20;

/// Runs the log benchmark.
pub async fn run(quick: bool) -> Result<Bench> {
    let (wanted, iterations) = if quick {
        (16u64 << 20, 3)
    } else {
        (256u64 << 20, 5)
    };
    let admin = env::client(Identity::Admin).await?;
    let client = env::client(Identity::Pando).await?;
    let mut bench = Bench::new("log", what("log"));
    let (pod, size) = prepare(&mut bench, &admin, &client, wanted).await?;

    let host = env::host()?;
    let adapter = env::load_probe(&host, client.clone()).await?;
    let pods: Api<Pod> = Api::namespaced(client, NAMESPACE);

    let (mut host_mibps, mut native_mibps) = (Vec::new(), Vec::new());
    let mib = size as f64 / f64::from(1 << 20);
    for _ in 0..iterations {
        let t = host_read(&adapter, pod, size).await?;
        host_mibps.push(mib / t.as_secs_f64());
        let t = native_read(&pods, pod, size).await?;
        native_mibps.push(mib / t.as_secs_f64());
    }
    let row = Row::new(
        &format!("{} MiB log", size >> 20),
        Unit::MibPerS,
        &host_mibps,
        &native_mibps,
    );
    // DESIGN.md §4: the stream through the host ≥ 95 % of kube-rs's.
    let met = row.ratio.is_some_and(|r| r >= 0.95);
    bench
        .rows
        .push(row.target("host ≥ 95% of native throughput (ratio ≥ 0.95)", met));
    cleanup(&mut bench, admin).await;
    Ok(bench)
}

/// The namespace and the pod whose log is read, the file it serves
/// written: the pod's name in [`NAMESPACE`] and the bytes to read (`wanted`,
/// or less on an old cluster, which `bench` is told of).
pub(super) async fn prepare(
    bench: &mut Bench,
    admin: &kube::Client,
    client: &kube::Client,
    wanted: u64,
) -> Result<(&'static str, u64)> {
    setup::ensure_node(admin).await?;
    ensure_namespace(admin).await?;
    write_log_file(wanted)?;
    if serves_bench_file(admin, client).await? {
        return Ok(("bench-log", wanted));
    }
    let size = wanted.min(BIG_LOG);
    bench.note(format!(
        "this cluster's KWOK does not serve the bench's log file (it was started before \
         scripts/cluster had the `bench-log` entry: restart it to get {} MiB); measured on \
         the {} MiB `big-log` instead",
        wanted >> 20,
        size >> 20
    ));
    ensure_pod(admin, "big-log", "big-log").await?;
    Ok(("big-log", size))
}

/// The namespace and its pods go; the log file stays for the next run.
pub(super) async fn cleanup(bench: &mut Bench, admin: kube::Client) {
    super::delete_namespace(bench, admin, NAMESPACE).await;
}

/// The file `scripts/cluster` points the `bench-log` container's log at.
pub fn log_file() -> PathBuf {
    env::repo_root().join("target/bench/bench-log.log")
}

/// Writes the log file unless it already serves at least `bytes`: lines of
/// `LINE` bytes, message N starting `bench NNNNNNNN `.
fn write_log_file(bytes: u64) -> Result<()> {
    use std::io::Write as _;
    let path = log_file();
    let lines = bytes.div_ceil(LINE as u64);
    let file_len = lines * (CRI_PREFIX.len() + LINE) as u64;
    if std::fs::metadata(&path).is_ok_and(|m| m.len() >= file_len) {
        return Ok(());
    }
    tracing::info!(path = %path.display(), mib = bytes >> 20, "writing the bench log file");
    env::scratch_dir()?;
    let tmp = path.with_extension("tmp");
    let mut out = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?,
    );
    let pad = "x".repeat(LINE);
    for n in 0..lines {
        let head = format!("bench {n:08} ");
        out.write_all(CRI_PREFIX.as_bytes())?;
        out.write_all(head.as_bytes())?;
        out.write_all(&pad.as_bytes()[..LINE - 1 - head.len()])?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    drop(out);
    std::fs::rename(&tmp, &path)?;
    Ok(())
}

async fn ensure_namespace(admin: &kube::Client) -> Result<()> {
    // `pando` reads logs here only through the adapter's namespace role.
    setup::bench_namespace(admin, NAMESPACE, false).await
}

/// A running pod `name` in the bench namespace whose one container is
/// `container` (KWOK picks the log file by container name).
async fn ensure_pod(admin: &kube::Client, name: &str, container: &str) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(admin.clone(), NAMESPACE);
    if pods.get_opt(name).await?.is_none() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                // On the bench's cordoned node, off the nodes other tests
                // count and fill.
                node_name: Some(setup::NODE.into()),
                restart_policy: Some("Never".into()),
                containers: vec![Container {
                    name: container.into(),
                    image: Some("registry.invalid/pando/bench:1".into()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            ..Pod::default()
        };
        // The service account admission controller wants the namespace's
        // `default` ServiceAccount; a fresh namespace gets it in a moment.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match pods.create(&PostParams::default(), &pod).await {
                Ok(_) => break,
                Err(e) if Instant::now() < deadline => {
                    tracing::debug!(error = %e, "creating the log pod; retrying");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    let running = kube::runtime::wait::await_condition(
        pods,
        name,
        kube::runtime::wait::conditions::is_pod_running(),
    );
    tokio::time::timeout(Duration::from_secs(60), running)
        .await
        .with_context(|| format!("pod {NAMESPACE}/{name} did not run within 60 s"))??;
    Ok(())
}

/// Whether KWOK serves the bench file for a `bench-log` container.
async fn serves_bench_file(admin: &kube::Client, client: &kube::Client) -> Result<bool> {
    ensure_pod(admin, "bench-log", "bench-log").await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    let params = LogParams {
        limit_bytes: Some(64),
        ..LogParams::default()
    };
    let head = pods.logs("bench-log", &params).await.unwrap_or_default();
    Ok(head.starts_with("bench 00000000 "))
}

/// Reads `size` bytes of the pod's log through the host.
pub(super) async fn host_read(adapter: &Adapter, pod: &str, size: u64) -> Result<Duration> {
    let options = LogOptions {
        follow: false,
        tail_lines: None,
        since_seconds: None,
        timestamps: false,
        limit_bytes: Some(size),
    };
    let wref = WorkloadRef {
        bundle: NAMESPACE.into(),
        workload: pod.into(),
    };
    let t = Instant::now();
    let mut stream = adapter.logs(&call_ctx(), &wref, &options).await?;
    let mut n = 0u64;
    while let Some(chunk) = stream.next_chunk().await {
        n += chunk?.len() as u64;
    }
    let elapsed = t.elapsed();
    ensure!(n == size, "the host streamed {n} bytes of {size}");
    Ok(elapsed)
}

/// Reads `size` bytes of the pod's log with kube-rs.
async fn native_read(pods: &Api<Pod>, pod: &str, size: u64) -> Result<Duration> {
    let params = LogParams {
        limit_bytes: Some(i64::try_from(size)?),
        ..LogParams::default()
    };
    let t = Instant::now();
    let stream = pods.log_stream(pod, &params).await?;
    futures::pin_mut!(stream);
    let mut n = 0u64;
    loop {
        let buf = stream.fill_buf().await?;
        if buf.is_empty() {
            break;
        }
        let len = buf.len();
        n += len as u64;
        stream.consume_unpin(len);
    }
    let elapsed = t.elapsed();
    ensure!(n == size, "kube-rs read {n} bytes of {size}");
    Ok(elapsed)
}
