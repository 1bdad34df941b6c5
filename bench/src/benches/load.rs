//! Loading: a cached component in a fresh process, and a first compile.
//!
//! Each sample is a child process (`pando-bench child load-cached
//! COMPONENT CACHE_DIR`) that builds a host and times `Host::load_file` of
//! the Kubernetes adapter once: read the file, hash it (the cache key),
//! deserialize the precompiled code (or compile it), check its shape,
//! pre-link, instantiate, `info`, `configure`. With the bench's warm cache
//! that is a cache hit; with an empty directory per sample, a first
//! compile (which also writes the cache entry).
//!
//! Native twin: a child process that configures the natively compiled
//! adapter (`KubernetesAdapter::configure`), which is all "loading" is for
//! an adapter linked into core. The wall time from spawn to exit of both
//! kinds of child is a second, whole-process comparison.

use anyhow::{Result, ensure};

use super::{ms, what};
use crate::child::{self, LoadReport, NativeLoadReport};
use crate::env;
use crate::report::{Bench, Row, Unit};

/// Runs it.
pub async fn run(quick: bool) -> Result<Bench> {
    let (cached_n, compile_n) = if quick { (5, 1) } else { (30, 5) };
    let component = env::kubernetes_adapter()?;
    let component_s = component.display().to_string();
    let cache = env::cache_dir()?;
    let cache_s = cache.display().to_string();

    // Make sure the cache holds this component (a compile the first time).
    let (warm, _): (LoadReport, _) = child::spawn(&["load-cached", &component_s, &cache_s]).await?;
    tracing::info!(cache = %warm.cache, "compile cache ready");

    let (mut load, mut build, mut wall) = (Vec::new(), Vec::new(), Vec::new());
    let (mut native, mut native_wall) = (Vec::new(), Vec::new());
    for _ in 0..cached_n {
        let (r, w): (LoadReport, _) =
            child::spawn(&["load-cached", &component_s, &cache_s]).await?;
        ensure!(r.cache == "Hit", "a cached load was a {}", r.cache);
        load.push(r.load_us / 1e3);
        build.push(r.build_us / 1e3);
        wall.push(ms(w));
        let (n, w): (NativeLoadReport, _) = child::spawn(&["native-load"]).await?;
        native.push(n.configure_us / 1e3);
        native_wall.push(ms(w));
    }
    let cached = Row::new("cached load_file, fresh process", Unit::Ms, &load, &native);
    // DESIGN.md §4, tightened from 5 ms by issue 18.
    let met = cached.host.is_some_and(|s| s.median <= 2.0);
    let build_p50 = crate::stats::Summary::of(&build)
        .map(|s| s.median)
        .unwrap_or(0.0);
    let cached = cached.target("host p50 ≤ 2 ms", met).extra(
        "Host::builder().build() before it, p50",
        format!("{build_p50:.2} ms"),
    );
    let process = Row::new(
        "fresh process, spawn to exit",
        Unit::Ms,
        &wall,
        &native_wall,
    );

    let scratch = env::scratch_dir()?;
    let mut compile = Vec::new();
    let mut cache_bytes = 0u64;
    for _ in 0..compile_n {
        let empty = tempfile::Builder::new()
            .prefix("first-compile-")
            .tempdir_in(&scratch)?;
        let dir_s = empty.path().display().to_string();
        let (r, _): (LoadReport, _) = child::spawn(&["load-cached", &component_s, &dir_s]).await?;
        ensure!(r.cache == "Compiled", "a first compile was a {}", r.cache);
        compile.push(r.load_us / 1e3);
        cache_bytes = dir_size(empty.path());
    }
    let first = Row::new("first compile (empty cache)", Unit::Ms, &compile, &native).extra(
        "precompiled size",
        format!("{:.1} MiB", crate::mem::mib(cache_bytes)),
    );

    let size = std::fs::metadata(&component).map(|m| m.len()).unwrap_or(0);
    let mut bench = Bench::new("load", what("load"));
    bench.rows = vec![cached, process, first];
    bench.note(format!(
        "component: {} ({:.1} MiB); native twin: `KubernetesAdapter::configure` in a fresh process",
        component
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?"),
        crate::mem::mib(size)
    ));
    Ok(bench)
}

/// Bytes of the files in `dir` (not recursive: the cache is flat).
fn dir_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok()?.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
