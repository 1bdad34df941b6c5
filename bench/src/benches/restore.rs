//! A volume restored through the host vs the same restore made natively
//! with kube-rs: the `snapshot` bench's second row, on its app and volume.
//!
//! The archive is the volume's snapshot, taken once through the host into
//! a file. The app's pod is deleted first: a restore refuses a volume a
//! running workload mounts.
//!
//! Host: the Kubernetes adapter's `restore_volume` reading the file: it
//! finds the claim and its users (2 requests), starts a helper pod with the
//! claim mounted read-write and waits for it to run (polling every 200 ms),
//! execs the unpack script with the archive on stdin (the guest reads the
//! caller's stream in 64 KiB chunks, looks for tar's end-of-archive marker
//! and writes them to the exec's stdin), then the swap script, and deletes
//! the helper. Native: the same steps with kube-rs as the same `pando`
//! identity, the adapter's own scripts, the file read in 64 KiB and written
//! to the exec's stdin, whose buffer is 64 KiB like the host's. Both clocks
//! cover the whole call; after each, the volume must hold the files the
//! bench wrote.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, anyhow, ensure};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, Client};
use pando_adapter_kubernetes::Config;
use pando_adapter_kubernetes::trial::snapshot::{SWAP_SCRIPT, UNPACK_SCRIPT};
use pando_host::Adapter;
use pando_host::types::VolumeHandle;
use tokio::io::{AsyncWriteExt as _, BufReader};

use super::call_ctx;
use super::snapshot::{
    CLAIM, delete_pod, drain, exec_params, helper_pod, mount_path, start_helper, volume_whole,
};
use crate::env;
use crate::mem::mib;
use crate::report::{Row, Unit};

/// What a restore is given.
pub struct Restore<'a> {
    /// The adapter, loaded without a request budget.
    pub adapter: &'a Adapter,
    /// The `pando` identity's client, for the native side.
    pub client: &'a Client,
    /// The admin's, to stop the app.
    pub admin: &'a Client,
    /// The app's namespace.
    pub ns: &'a str,
    /// The volume.
    pub handle: &'a VolumeHandle,
    /// Where the volume's files are on this machine, and their total size.
    pub dir: &'a Path,
    /// Their total size.
    pub size: u64,
    /// Rounds of host then native.
    pub iterations: usize,
}

/// The row: MiB of archive a second, the whole call, host against native.
pub async fn row(r: &Restore<'_>) -> Result<Row> {
    let archive = take_archive(r).await?;
    let bytes = std::fs::metadata(&archive)?.len();
    delete_pod(&Api::namespaced(r.admin.clone(), r.ns), "web").await?;
    // Parsed once, as the host's adapter parsed its configuration at load.
    let config = Config::parse(env::KUBERNETES_CONFIG).map_err(|e| anyhow!("{e:?}"))?;
    let (mut host, mut native) = (Vec::new(), Vec::new());
    for _ in 0..r.iterations {
        let t = Instant::now();
        let file = tokio::fs::File::open(&archive).await?;
        r.adapter
            .restore_volume(&call_ctx(), r.handle, file)
            .await
            .context("the host's restore")?;
        host.push(mib(bytes) / t.elapsed().as_secs_f64());
        ensure!(
            volume_whole(r.dir, r.size),
            "after the host's restore the volume does not hold the bench's files"
        );
        let t = Instant::now();
        native_restore(r.client, &config, r.ns, &archive).await?;
        native.push(mib(bytes) / t.elapsed().as_secs_f64());
        ensure!(
            volume_whole(r.dir, r.size),
            "after the native restore the volume does not hold the bench's files"
        );
    }
    let row = Row::new(
        &format!("{} MiB volume, restore", r.size >> 20),
        Unit::MibPerS,
        &host,
        &native,
    );
    let met = row.ratio.is_some_and(|x| x >= 0.95);
    Ok(row
        .target("host ≥ 95% of native throughput (ratio ≥ 0.95)", met)
        .extra("archive", format!("{:.1} MiB", mib(bytes))))
}

/// The volume's snapshot through the host, into a file.
async fn take_archive(r: &Restore<'_>) -> Result<PathBuf> {
    let path = env::scratch_dir()?.join("restore.tar");
    let file = tokio::fs::File::create(&path).await?;
    let n = r
        .adapter
        .snapshot_volume(&call_ctx(), r.handle, file)
        .await
        .context("the snapshot to restore")?;
    ensure!(
        n > r.size,
        "the snapshot was {n} bytes, the volume holds {}",
        r.size
    );
    Ok(path)
}

/// The restore with kube-rs: the adapter's steps.
async fn native_restore(client: &Client, config: &Config, ns: &str, archive: &Path) -> Result<()> {
    let name = "bench-native-restore";
    let path = mount_path(ns);
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    // Find the claim and its users, as `locate` does.
    Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns)
        .get(CLAIM)
        .await?;
    pods.list(&ListParams::default()).await?;
    start_helper(&pods, &helper_pod(name, config, None, &path, false)?).await?;
    unpack(&pods, name, &path, archive).await?;
    run(&pods, name, SWAP_SCRIPT, &path).await?;
    pods.delete(name, &DeleteParams::background().grace_period(0))
        .await?;
    Ok(())
}

/// The unpack script with the archive on its stdin.
async fn unpack(pods: &Api<Pod>, name: &str, path: &str, archive: &Path) -> Result<()> {
    let command = ["sh", "-c", UNPACK_SCRIPT, "sh", path];
    let mut process = pods.exec(name, command, &exec_params(true)).await?;
    let mut stdin = process
        .stdin()
        .ok_or_else(|| anyhow!("the exec has no stdin"))?;
    // Read in 64 KiB, the adapter's chunk.
    let mut file = BufReader::with_capacity(64 << 10, tokio::fs::File::open(archive).await?);
    let send = async move {
        tokio::io::copy_buf(&mut file, &mut stdin).await?;
        // The test cluster's KWOK never passes stdin's end on; GNU tar
        // stops at the archive's end-of-archive marker, as for the host.
        stdin.shutdown().await
    };
    let (sent, outcome) = tokio::join!(send, drain(&mut process));
    sent.context("sending the archive")?;
    outcome.context("the unpack script").map(drop)
}

/// Runs `script` with `path` as `$1`, to its end.
async fn run(pods: &Api<Pod>, name: &str, script: &str, path: &str) -> Result<()> {
    let command = ["sh", "-c", script, "sh", path];
    let mut process = pods.exec(name, command, &exec_params(false)).await?;
    drain(&mut process).await.map(drop)
}
