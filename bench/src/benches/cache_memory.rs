//! The watch-fed cache's resident memory per pod held, at 30 000 and
//! 100 000 pods.
//!
//! One app is made on a KWOK node as the adapter's `apply` makes it
//! (`observe_setup`), and its pod, once Running, is read back as the API
//! server sends it: labels, the adapter's annotations, the admission
//! plugins' additions (the service-account volume, default tolerations),
//! and KWOK's status. A fresh child process then fills a store with that
//! pod `count` times, each with its own app id and uid (the same length, so
//! every copy is the size of the real one), through the code the cache's
//! watch runs (`kubecache::Filled`: strip, encode, key, count), and reads
//! its anonymous resident memory before and after. A second child holds the
//! same pods as typed `Arc<Pod>` values, stripped the same way: what a
//! `kube-runtime` reflector store holds, less its key map, for comparison.
//! Building the copies costs transient memory the allocator may keep: the
//! readings include it, so they are an upper bound of what is held.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use serde::{Deserialize, Serialize};

use super::observe_setup::{self, app_ids};
use super::what;
use crate::child;
use crate::env::{self, Identity};
use crate::mem::Resident;
use crate::report::{Bench, Row, Unit};

/// The counts measured.
const COUNTS: [u32; 2] = [30_000, 100_000];

/// What the `cache-memory` child reports.
#[derive(Debug, Serialize, Deserialize)]
pub struct CacheMemoryReport {
    /// Before the store was filled.
    pub before: Resident,
    /// After, with the store held.
    pub after: Resident,
    /// Pods held.
    pub held: u64,
    /// Bytes the cache's budget counted for them (the compact store only).
    pub counted: u64,
}

/// Runs it.
pub async fn run(_quick: bool) -> Result<Bench> {
    let admin = env::client(Identity::Admin).await?;
    observe_setup::ensure_node(&admin).await?;
    let run_id = format!("{:x}", std::process::id() % 0xfff);
    let ids = app_ids(&format!("cm{run_id}"), 0, 1);
    let id = &ids[0];
    observe_setup::create_apps(&admin, &ids).await?;
    let sample = running_pod(&admin, id).await;
    observe_setup::delete_apps(&admin).await?;
    let pod = sample?;
    let path = env::scratch_dir()?.join("cache-memory-sample.json");
    std::fs::write(&path, serde_json::to_vec(&pod)?).context("writing the sample pod")?;
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let sample_bytes = serde_json::to_vec(&pod)?.len();

    let mut rows = Vec::new();
    for count in COUNTS {
        let n = count.to_string();
        let p = path.to_string_lossy().to_string();
        let (compact, _): (CacheMemoryReport, _) =
            child::spawn(&["cache-memory", &p, id, &uid, &n, "compact"]).await?;
        let (typed, _): (CacheMemoryReport, _) =
            child::spawn(&["cache-memory", &p, id, &uid, &n, "typed"]).await?;
        let per =
            |r: &CacheMemoryReport| r.after.since(&r.before).anon as f64 / r.held.max(1) as f64;
        if compact.held != u64::from(count) || typed.held != u64::from(count) {
            bail!(
                "the children held {} and {} pods, not {count}",
                compact.held,
                typed.held
            );
        }
        let (c, t) = (per(&compact), per(&typed));
        rows.push(
            Row::new(
                &format!("resident per pod held, {count} pods"),
                Unit::Bytes,
                &[c],
                &[t],
            )
            .target("≤ 1 KiB per pod held", c <= 1024.0)
            .extra(
                "counted by the cache's budget, per pod",
                format!("{:.0} B", compact.counted as f64 / f64::from(count)),
            )
            .extra(
                "typed Arc<Pod> (the 'native' column), per pod",
                format!("{t:.0} B"),
            ),
        );
    }
    let mut bench = Bench::new("cache-memory", what("cache-memory"));
    bench.rows = rows;
    bench.note(format!(
        "the sample is a Running KWOK pod made as the adapter makes it, {sample_bytes} bytes of \
         JSON as the API server sends it; readings are the growth of anonymous resident memory \
         of a fresh child process, divided by the pods held"
    ));
    Ok(bench)
}

/// The app's pod once KWOK reports it Running, as the API server sends it.
async fn running_pod(admin: &kube::Client, id: &str) -> Result<Pod> {
    let ns = pando_adapter_kubernetes::kit::names::app_namespace(id)
        .map_err(|e| anyhow::anyhow!("the app's namespace: {e:?}"))?;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), &ns);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let list = pods.list(&ListParams::default()).await?;
        if let Some(pod) = list
            .items
            .into_iter()
            .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        {
            return Ok(pod);
        }
        if Instant::now() > deadline {
            bail!("the sample app's pod in {ns} was not Running within a minute");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The child: holds `count` copies of the pod in `sample` (app id `id`,
/// uid `uid` made unique in each), in the cache's compact store or as
/// typed values.
pub fn child(
    sample: &Path,
    id: &str,
    uid: &str,
    count: u32,
    typed: bool,
) -> Result<CacheMemoryReport> {
    let text = std::fs::read_to_string(sample).context("reading the sample pod")?;
    let make = |i: u32| -> Result<Pod> {
        let unique_id = same_length(id, i);
        let unique_uid = same_length(uid, i);
        let copy = text.replace(id, &unique_id).replace(uid, &unique_uid);
        Ok(serde_json::from_str(&copy)?)
    };
    // Parse one first, so the serde and allocator warm-up is not counted.
    std::hint::black_box(make(u32::MAX)?);
    let before = Resident::now();
    let (held, counted, keep): (u64, u64, Box<dyn std::any::Any>) = if typed {
        let mut pods = Vec::with_capacity(count as usize);
        for i in 0..count {
            let mut pod = make(i)?;
            pod.metadata.managed_fields = None;
            pods.push(Arc::new(pod));
        }
        (pods.len() as u64, 0, Box::new(pods))
    } else {
        // Made one at a time, as a watch delivers them: each typed copy is
        // dropped once encoded.
        let filled = pando_host::kubecache::Filled::from_list(
            (0..count).map_while(|i| make(i).ok()),
            u64::MAX,
        );
        (filled.len() as u64, filled.bytes(), Box::new(filled))
    };
    // As `child::settle`: freed memory goes back, threads start.
    std::thread::sleep(Duration::from_millis(200));
    let after = Resident::now();
    std::hint::black_box(&keep);
    Ok(CacheMemoryReport {
        before,
        after,
        held,
        counted,
    })
}

/// `s` with its last characters replaced by `i` in hex, keeping its length.
fn same_length(s: &str, i: u32) -> String {
    let tag = format!("{i:x}");
    let keep = s.len().saturating_sub(tag.len());
    match s.get(..keep) {
        Some(head) => format!("{head}{tag}"),
        None => tag,
    }
}
