//! Child modes: the bench spawns its own binary to measure something in a
//! fresh process (a cold load, resident memory without the parent's
//! history), and reads one JSON object from the child's stdout.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use clap::Subcommand;
use pando_adapter_sdk::Adapter as _;
use pando_host::{Host, LoadOptions};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::env;
use crate::mem::Resident;

/// What a child process does.
#[derive(Subcommand, Debug, Clone)]
pub enum Mode {
    /// Builds a host with `cache_dir` as its compile cache and loads the
    /// Kubernetes adapter from `component` once.
    LoadCached {
        /// The component.
        component: PathBuf,
        /// The compile cache directory (empty: a first compile).
        cache_dir: PathBuf,
    },
    /// Configures the native Kubernetes adapter once.
    NativeLoad,
    /// Loads the Kubernetes adapter `count` times, under names
    /// `kubernetes-0`…, from the bench's compile cache.
    Adapters {
        /// How many.
        count: u32,
    },
    /// Loads the Kubernetes adapter `count` times as for `count` clusters
    /// (benchmark `fleet`), each keeping at most `max_idle` idle instances.
    Fleet {
        /// How many loads.
        count: u32,
        /// Each load's `Limits::max_idle`.
        #[arg(long, default_value_t = 8)]
        max_idle: u32,
        /// Also time `upstream` with one adapter loaded and with all.
        #[arg(long)]
        upstream: bool,
    },
    /// Configures `count` native Kubernetes adapters and keeps them.
    NativeAdapters {
        /// How many.
        count: u32,
    },
    /// Calls `Adapter::upstream` `calls` times and prints the mean: a loop
    /// with nothing else in it, to run under a profiler
    /// (`perf record -- pando-bench child upstream-loop 5000000`), or
    /// under valgrind's callgrind to count its instructions
    /// (docs/history/benchmarks.md, "The call path, counted in instructions").
    UpstreamLoop {
        /// How many calls.
        calls: u64,
        /// The engine's slots (`EngineSettings::total_instances`) instead
        /// of the default 256, whose memory pool reserves more address
        /// space than valgrind can give a process: 2 run the loop there.
        #[arg(long)]
        slots: Option<u32>,
        /// The bench's raw baseline instead: the same export called
        /// straight on a configured store, none of the host's bookkeeping.
        #[arg(long)]
        raw: bool,
    },
    /// Makes `count` configured instances of the Kubernetes adapter one
    /// after another, each dropped at once, and prints the mean: the fresh
    /// instance's path (instantiate, then configure) alone, to run under a
    /// profiler (`perf record -- pando-bench child fresh-loop 20000`).
    FreshLoop {
        /// How many instances.
        count: u64,
    },
    /// Makes `calls` of kube-3rtt's host call (kube-probe's `flood:3`,
    /// three GETs through the host's import) or, with `--floor`, the same
    /// call on the raw wasmtime floor, or with `--native` its kube-rs twin,
    /// and prints the mean and the CPU time per call: one side
    /// alone, to run under a profiler inside the test cluster's namespace
    /// (`perf record -- pando-bench child kube-loop 3000`), or under
    /// valgrind's callgrind with `--slots 2`.
    KubeLoop {
        /// How many calls.
        calls: u64,
        /// The kube-rs twin instead of the host.
        #[arg(long, conflicts_with = "floor")]
        native: bool,
        /// The raw wasmtime floor instead of the host.
        #[arg(long)]
        floor: bool,
        /// The engine's slots instead of the default 256 (as for
        /// `upstream-loop`: valgrind cannot map the default pool).
        #[arg(long)]
        slots: Option<u32>,
    },
    /// Grows the Kubernetes adapter's pool of idle configured instances to
    /// `small`, then to `large` (see `benches::memory`).
    Instances {
        /// The first pool size.
        small: u32,
        /// The second pool size.
        large: u32,
    },
    /// Holds `count` copies of the pod in `sample` in the watch-fed
    /// cache's store (`compact`) or as typed values (`typed`), and reports
    /// the resident memory it took (see `benches::cache_memory`).
    CacheMemory {
        /// The sample pod, as JSON.
        sample: PathBuf,
        /// Its app id, made unique in each copy.
        id: String,
        /// Its uid, made unique in each copy.
        uid: String,
        /// How many copies.
        count: u32,
        /// `compact` or `typed`.
        store: String,
    },
}

/// What `load-cached` reports.
#[derive(Debug, Serialize, serde::Deserialize)]
pub struct LoadReport {
    /// `HostBuilder::build` (engine, cache directory, linker).
    pub build_us: f64,
    /// `Host::load_file`.
    pub load_us: f64,
    /// `Hit`, `Compiled` or `Uncached`.
    pub cache: String,
}

/// What `native-load` reports.
#[derive(Debug, Serialize, serde::Deserialize)]
pub struct NativeLoadReport {
    /// `KubernetesAdapter::configure`.
    pub configure_us: f64,
}

/// What the memory modes report: resident memory at each step.
#[derive(Debug, Serialize, serde::Deserialize)]
pub struct MemoryReport {
    /// Labelled readings, in order.
    pub steps: Vec<(String, Resident)>,
    /// Idle instances or adapters at each step (same order).
    pub counts: Vec<u32>,
}

/// Runs a child mode, printing its report as one JSON line on stdout.
pub async fn run(mode: Mode) -> Result<()> {
    let json = match mode {
        Mode::LoadCached {
            component,
            cache_dir,
        } => serde_json::to_string(&load_cached(&component, &cache_dir).await?)?,
        Mode::NativeLoad => {
            let t = Instant::now();
            let a = pando_adapter_kubernetes::KubernetesAdapter::configure(env::KUBERNETES_CONFIG);
            let configure_us = t.elapsed().as_secs_f64() * 1e6;
            std::hint::black_box(a).map_err(|e| anyhow::anyhow!("{e:?}"))?;
            serde_json::to_string(&NativeLoadReport { configure_us })?
        }
        Mode::Adapters { count } => serde_json::to_string(&adapters(count).await?)?,
        Mode::NativeAdapters { count } => serde_json::to_string(&native_adapters(count)?)?,
        Mode::Fleet {
            count,
            max_idle,
            upstream,
        } => {
            serde_json::to_string(&crate::benches::fleet::child(count, max_idle, upstream).await?)?
        }
        Mode::UpstreamLoop { calls, slots, raw } => {
            let ns = crate::benches::upstream::profile_loop(calls, slots, raw).await?;
            serde_json::to_string(&serde_json::json!({ "ns_per_call": ns }))?
        }
        Mode::FreshLoop { count } => {
            let us = crate::benches::pool::profile_loop(count).await?;
            serde_json::to_string(&serde_json::json!({ "us_per_instance": us }))?
        }
        Mode::KubeLoop {
            calls,
            native,
            floor,
            slots,
        } => {
            use crate::benches::kube_rtt::{Side, profile_loop};
            let side = match (native, floor) {
                (true, _) => Side::Native,
                (_, true) => Side::Floor,
                _ => Side::Host,
            };
            serde_json::to_string(&profile_loop(calls, side, slots).await?)?
        }
        Mode::Instances { small, large } => {
            serde_json::to_string(&crate::benches::memory::instances(small, large).await?)?
        }
        Mode::CacheMemory {
            sample,
            id,
            uid,
            count,
            store,
        } => serde_json::to_string(&crate::benches::cache_memory::child(
            &sample,
            &id,
            &uid,
            count,
            store == "typed",
        )?)?,
    };
    println!("{json}");
    Ok(())
}

async fn load_cached(component: &Path, cache_dir: &Path) -> Result<LoadReport> {
    let t = Instant::now();
    let host = Host::builder().cache_dir(cache_dir).build()?;
    let build_us = t.elapsed().as_secs_f64() * 1e6;
    let options = LoadOptions {
        grants: env::kubernetes_grants()?,
        config: env::KUBERNETES_CONFIG.into(),
        ..LoadOptions::default()
    };
    let t = Instant::now();
    let adapter = host.load_file(component, options).await?;
    let load_us = t.elapsed().as_secs_f64() * 1e6;
    Ok(LoadReport {
        build_us,
        load_us,
        cache: format!("{:?}", adapter.cache_outcome()),
    })
}

/// A host with `count` adapters loaded (the same component under
/// different names: each load is a separate `Adapter` with its own
/// compiled code mapping, pool and first instance).
async fn adapters(count: u32) -> Result<MemoryReport> {
    let mut steps = vec![("process started".to_string(), Resident::now())];
    let host = env::host()?;
    steps.push(("host built".into(), Resident::now()));
    let component = env::kubernetes_adapter()?;
    let mut loaded = Vec::new();
    for i in 0..count {
        let options = LoadOptions {
            grants: env::kubernetes_grants()?,
            config: env::KUBERNETES_CONFIG.into(),
            name: Some(format!("kubernetes-{i}")),
            ..LoadOptions::default()
        };
        loaded.push(env::load(&host, &component, options).await?);
    }
    settle().await;
    steps.push((format!("{count} adapters loaded"), Resident::now()));
    std::hint::black_box(&loaded);
    Ok(MemoryReport {
        steps,
        counts: vec![0, 0, count],
    })
}

/// `count` native adapters, configured and kept.
fn native_adapters(count: u32) -> Result<MemoryReport> {
    let mut steps = vec![("process started".to_string(), Resident::now())];
    let mut kept = Vec::new();
    for _ in 0..count {
        kept.push(env::native_kubernetes()?);
    }
    steps.push((format!("{count} native adapters"), Resident::now()));
    std::hint::black_box(&kept);
    Ok(MemoryReport {
        steps,
        counts: vec![0, count],
    })
}

/// Lets freed memory go back and background threads start, so a reading
/// is of the steady state.
pub async fn settle() {
    tokio::time::sleep(Duration::from_millis(200)).await;
}

/// Runs this binary as `child ARGS…` and parses its JSON report.
pub async fn spawn<T: DeserializeOwned>(args: &[&str]) -> Result<(T, Duration)> {
    let exe = std::env::current_exe().context("finding the bench's own binary")?;
    let started = Instant::now();
    let out = tokio::process::Command::new(exe)
        .arg("child")
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .await
        .context("spawning a child bench process")?;
    let wall = started.elapsed();
    if !out.status.success() {
        bail!("child `{}` failed: {}", args.join(" "), out.status);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or("");
    let report = serde_json::from_str(line)
        .with_context(|| format!("reading the report of child `{}`: {line:?}", args.join(" ")))?;
    Ok((report, wall))
}
