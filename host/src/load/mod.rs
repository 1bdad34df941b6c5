//! The host: one engine and one linker per contract line and one compile
//! cache, shared by every adapter it loads. The 0.2 line's engine is made
//! when the first 0.2.0 component is loaded: a host that serves 0.1.0
//! adapters only never pays for it.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use wasmtime::component::Component;

use crate::adapter::invoke;
use crate::adapter::{Adapter, AdapterInner, Inspection};
use crate::bindings::Line;
use crate::capability;
use crate::check::{self, ComponentShape};
use crate::error::{CallError, LoadError};
use crate::grants::Grants;
use crate::runtime::cache::{self, CacheOutcome, CompileCache};
use crate::runtime::code::{Code, LoadedCode};
use crate::runtime::engine::EngineSettings;
use crate::runtime::instance::{Factory, Instance, either};
use crate::runtime::pool::Pool;
use crate::runtime::state::Identity;
use crate::types::KindInfo;

mod builder;
mod options;

pub use builder::HostBuilder;
use builder::LineEngine;
pub use options::{LoadOptions, LoadProgress, ProgressHook};

/// How long loading may spend instantiating and configuring the first
/// instance.
const LOAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Loads adapters. Cheap to clone; every clone shares the engine and cache.
#[derive(Clone)]
pub struct Host {
    inner: Arc<HostInner>,
}

struct HostInner {
    /// The 0.1 line's engine and linker.
    v0_1: LineEngine,
    /// The 0.2 line's, made by the first load of a 0.2.0 component (or why
    /// it could not be).
    v0_2: OnceLock<Result<LineEngine, String>>,
    settings: EngineSettings,
    cache: Option<CompileCache>,
    /// The code of the adapters alive, shared by loads of the same bytes.
    code: Arc<LoadedCode>,
    metrics: Arc<crate::adapter::metrics::Metrics>,
}

/// A component found in the live code or the compile cache, or compiled, not
/// yet checked.
struct Found {
    digest: String,
    /// The contract line it exports, whose engine compiled it.
    line: Line,
    component: Component,
    /// The live code of an adapter loaded from the same bytes, when one is.
    shared: Option<Arc<Code>>,
    cache: CacheOutcome,
}

/// A checked, compiled component and its first instance.
struct Prepared {
    what: String,
    digest: String,
    /// The contract line it exports, whose engine compiled it.
    line: Line,
    component: Component,
    /// The live code of an adapter loaded from the same bytes, when one is.
    shared: Option<Arc<Code>>,
    cache: CacheOutcome,
    shape: ComponentShape,
    compile_time: Duration,
}

impl Host {
    /// The engine and linker of `line`, the 0.2 line's made on first use.
    fn line(&self, line: Line) -> Result<&LineEngine, LoadError> {
        match line {
            Line::V0_1 => Ok(&self.inner.v0_1),
            Line::V0_2 => self
                .inner
                .v0_2
                .get_or_init(|| {
                    LineEngine::new(self.inner.settings.clone(), Line::V0_2)
                        .map_err(|e| e.to_string())
                })
                .as_ref()
                .map_err(|e| LoadError::Engine(format!("the pando:runtime@0.2.0 engine: {e}"))),
        }
    }

    /// The engines a component may have been compiled by, for a lookup by
    /// file: the 0.2 line's only once it exists.
    fn engines(&self) -> Vec<(Line, wasmtime::Engine)> {
        let mut engines = vec![(Line::V0_1, self.inner.v0_1.engine.engine.clone())];
        if let Some(Ok(v0_2)) = self.inner.v0_2.get() {
            engines.push((Line::V0_2, v0_2.engine.engine.clone()));
        }
        engines
    }

    /// Every adapter this host has loaded, and the watch-fed caches they
    /// read through, as metrics in the OpenMetrics text format: calls by
    /// method and outcome with their latency, instances, quarantine, held
    /// bytes and streams against their limits, Kubernetes denials, limit
    /// refusals and throttling, the cache's objects, bytes and age
    /// (docs/operations.md). Adapters dropped since are left out.
    pub fn metrics(&self) -> String {
        self.inner.metrics.encode()
    }

    /// A builder with the defaults.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// The compile cache in use, if any.
    pub fn cache(&self) -> Option<&CompileCache> {
        self.inner.cache.as_ref()
    }

    /// Loads an adapter from a file. A file the compile cache has seen
    /// unchanged (`CompileCache::known_file`) is neither read nor hashed,
    /// unless the caller pins a digest.
    pub async fn load_file(&self, path: &Path, options: LoadOptions) -> Result<Adapter, LoadError> {
        let what = path.display().to_string();
        check_limits(&what, &options, &self.inner.settings)?;
        if options.expected_digest.is_none()
            && let Some(prepared) = self.prepare_known(&what, path, &options.grants).await?
        {
            return self.load_prepared(prepared, options).await;
        }
        let bytes = read(path).await?;
        let adapter = self.load_bytes(&what, &bytes, options).await?;
        if let Some(cache) = self.inner.cache.clone() {
            let (file, digest) = (path.to_path_buf(), adapter.digest().to_string());
            // Off the async workers: it stats and writes a file.
            let _ = tokio::task::spawn_blocking(move || cache.remember_file(&file, &digest)).await;
        }
        Ok(adapter)
    }

    /// A component the compile cache knows by its file, if it does.
    async fn prepare_known(
        &self,
        what: &str,
        path: &Path,
        grants: &Grants,
    ) -> Result<Option<Prepared>, LoadError> {
        let Some(cache) = self.inner.cache.clone() else {
            return Ok(None);
        };
        let started = Instant::now();
        let engines = self.engines();
        let live = self.inner.code.clone();
        let file = path.to_path_buf();
        let known = tokio::task::spawn_blocking(move || {
            let digest = cache.known_file(&file)?;
            if let Some(code) = live.get(&digest) {
                return Some((digest, code.line(), code.component.clone(), Some(code)));
            }
            // An artifact is named by its engine's compatibility, so at most
            // one engine finds it.
            engines.iter().find_map(|(line, engine)| {
                let component = cache.load_known(engine, &digest)?;
                Some((digest.clone(), *line, component, None))
            })
        })
        .await
        .map_err(|e| LoadError::Engine(format!("cache task failed: {e}")))?;
        let Some((digest, line, component, shared)) = known else {
            return Ok(None);
        };
        let found = Found {
            digest,
            line,
            component,
            cache: if shared.is_some() {
                CacheOutcome::Shared
            } else {
                CacheOutcome::Hit
            },
            shared,
        };
        self.checked(what, found, Some(grants), started).map(Some)
    }

    /// A component found or compiled, checked against what this host lends
    /// and `grants` (`check::check_shape`, on its line's engine).
    fn checked(
        &self,
        what: &str,
        found: Found,
        grants: Option<&Grants>,
        started: Instant,
    ) -> Result<Prepared, LoadError> {
        let compile_time = started.elapsed();
        let engine = &self.line(found.line)?.engine.engine;
        let shape = check::check_shape(what, engine, &found.component, grants)?;
        Ok(Prepared {
            what: what.into(),
            digest: found.digest,
            line: found.line,
            component: found.component,
            shared: found.shared,
            cache: found.cache,
            shape,
            compile_time,
        })
    }

    /// Loads an adapter from bytes; `what` names it in errors.
    pub async fn load_bytes(
        &self,
        what: &str,
        bytes: &[u8],
        options: LoadOptions,
    ) -> Result<Adapter, LoadError> {
        check_limits(what, &options, &self.inner.settings)?;
        let prepared = self
            .prepare(
                what,
                bytes,
                Some(&options.grants),
                options.expected_digest.as_deref(),
                options.progress.clone(),
            )
            .await?;
        self.load_prepared(prepared, options).await
    }

    /// Loading once the component is compiled and checked: the first
    /// instance, its configuration, the pool.
    async fn load_prepared(
        &self,
        prepared: Prepared,
        options: LoadOptions,
    ) -> Result<Adapter, LoadError> {
        let started = Instant::now();
        let what = prepared.what.as_str();
        let (mut first, info, identity, factory) = self.first_instance(&prepared, &options).await?;

        let cancel = CancellationToken::new();
        let deadline = Instant::now().checked_add(LOAD_TIMEOUT);
        let config = options.config.clone();
        invoke::run(
            &mut first,
            &identity.name,
            "configure",
            deadline,
            &cancel,
            async move |g, s| either!(g, g => g.call_configure(s, &config).await),
        )
        .await
        .map_err(|e| LoadError::Config {
            what: what.into(),
            error: Box::new(e),
        })?;

        // `max_idle` 0 keeps no idle instance, the first included.
        let first = (options.limits.max_idle > 0).then_some(first);
        let pool = Pool::new(factory, first);
        tracing::info!(
            adapter = %identity.name,
            kind = %info.kind,
            world = prepared.shape.world.name(),
            version = %prepared.shape.version,
            cache = ?prepared.cache,
            compile_ms = prepared.compile_time.as_secs_f64() * 1e3,
            load_ms = started.elapsed().as_secs_f64() * 1e3,
            "adapter loaded"
        );
        let breaker = crate::runtime::breaker::Breaker::new(
            options.limits.quarantine_after,
            options.limits.quarantine_backoff,
        );
        let metrics_label: Arc<str> = Arc::from(identity.name.as_str());
        let lanes = (prepared.line == crate::bindings::Line::V0_2
            && options.limits.calls_per_instance > 1)
            .then(|| {
                let l = &options.limits;
                crate::runtime::lanes::Lanes::new(
                    l.calls_per_instance,
                    l.max_instances,
                    l.max_idle,
                    l.max_calls_per_instance,
                    Arc::clone(&metrics_label),
                    crate::adapter::shared::classify_lane,
                )
            });
        Ok(Adapter::new(AdapterInner {
            breaker,
            line: prepared.line,
            identity,
            info,
            shape: prepared.shape,
            digest: prepared.digest,
            cache: prepared.cache,
            limits: options.limits,
            grants: options.grants,
            pool,
            lanes,
            metrics_label,
            call_handles: Default::default(),
            metrics: Arc::clone(&self.inner.metrics),
        }))
    }

    /// Checks a component and reads who it is, without configuring it.
    /// With `grants`, its imports are checked against them as a load would;
    /// without, only against what this host lends.
    pub async fn inspect_bytes(
        &self,
        what: &str,
        bytes: &[u8],
        grants: Option<&Grants>,
    ) -> Result<Inspection, LoadError> {
        let prepared = self.prepare(what, bytes, grants, None, None).await?;
        let options = LoadOptions {
            grants: grants.cloned().unwrap_or_default(),
            ..LoadOptions::default()
        };
        let (_first, info, _identity, _factory) = self.first_instance(&prepared, &options).await?;
        Ok(Inspection {
            info,
            shape: prepared.shape,
            digest: prepared.digest,
            cache: prepared.cache,
        })
    }

    /// Like [`Host::inspect_bytes`], from a file.
    pub async fn inspect_file(
        &self,
        path: &Path,
        grants: Option<&Grants>,
    ) -> Result<Inspection, LoadError> {
        let bytes = read(path).await?;
        self.inspect_bytes(&path.display().to_string(), &bytes, grants)
            .await
    }

    async fn prepare(
        &self,
        what: &str,
        bytes: &[u8],
        grants: Option<&Grants>,
        expected_digest: Option<&str>,
        progress: Option<ProgressHook>,
    ) -> Result<Prepared, LoadError> {
        check::check_header(what, bytes)?;
        let digest = cache::digest(bytes);
        if let Some(expected) = expected_digest {
            let want = expected.strip_prefix("sha256:").unwrap_or(expected);
            if !want.eq_ignore_ascii_case(&digest) {
                return Err(LoadError::DigestMismatch {
                    what: what.into(),
                    expected: expected.into(),
                    found: digest,
                });
            }
        }
        let started = Instant::now();
        if let Some(code) = self.inner.code.get(&digest) {
            let found = Found {
                digest,
                line: code.line(),
                component: code.component.clone(),
                shared: Some(code),
                cache: CacheOutcome::Shared,
            };
            return self.checked(what, found, grants, started);
        }
        // The version exported picks the engine that compiles it.
        let line = check::line_of(check::exported_version(bytes).as_deref());
        let engine = self.line(line)?.engine.engine.clone();
        // Compiling takes hundreds of milliseconds of CPU: keep it off the
        // async workers.
        let cache = self.inner.cache.clone();
        let owned = bytes.to_vec();
        let dig = digest.clone();
        let name = what.to_string();
        let compiled = tokio::task::spawn_blocking(move || {
            let tell = |event: LoadProgress| {
                if let Some(hook) = &progress {
                    hook(&event);
                }
            };
            let compiling = Instant::now();
            let before_compile = || {
                tell(LoadProgress::Compiling {
                    what: name.clone(),
                    bytes: owned.len(),
                })
            };
            let loaded = match &cache {
                Some(c) => c.load(&engine, &dig, &owned, before_compile),
                None => {
                    before_compile();
                    Component::new(&engine, &owned).map(|c| (c, CacheOutcome::Uncached))
                }
            };
            if let Ok((_, outcome @ (CacheOutcome::Compiled | CacheOutcome::Uncached))) = &loaded {
                tell(LoadProgress::Compiled {
                    what: name.clone(),
                    elapsed: compiling.elapsed(),
                    cached: *outcome == CacheOutcome::Compiled,
                });
            }
            loaded
        })
        .await
        .map_err(|e| LoadError::Engine(format!("compile task failed: {e}")))?;
        let (component, cache) = compiled.map_err(|e| LoadError::Malformed {
            what: what.into(),
            reason: format!("{e:#}"),
        })?;
        let found = Found {
            digest,
            line,
            component,
            shared: None,
            cache,
        };
        self.checked(what, found, grants, started)
    }

    async fn first_instance(
        &self,
        prepared: &Prepared,
        options: &LoadOptions,
    ) -> Result<(Instance, KindInfo, Arc<Identity>, Factory), LoadError> {
        let what = prepared.what.as_str();
        let provisional = Arc::new(Identity {
            name: options.name.clone().unwrap_or_else(|| what.to_string()),
        });
        let line = self.line(prepared.line)?;
        let code =
            match &prepared.shared {
                Some(code) => code.clone(),
                None => {
                    let linker = line.linker.get(&line.engine.engine)?;
                    let code = Code::link(prepared.component.clone(), prepared.line, linker)
                        .map_err(|e| LoadError::Instantiate {
                            what: what.into(),
                            reason: format!("{e:#}"),
                        })?;
                    self.inner.code.keep(&prepared.digest, code)
                }
            };
        let factory = Factory::new(
            &line.engine,
            code,
            options.config.clone(),
            options.limits.clone(),
            provisional.clone(),
            capability::Shared::new(&capability::Setup {
                limits: &options.limits,
                grants: &options.grants,
                kubernetes: options.kubernetes.as_ref(),
                kubernetes_cache: options.kubernetes_cache.as_ref(),
            }),
        );

        let cancel = CancellationToken::new();
        let deadline = Instant::now().checked_add(LOAD_TIMEOUT);
        let instantiate_err = |e: CallError| LoadError::Instantiate {
            what: what.into(),
            reason: e.to_string(),
        };
        let mut inst = invoke::instantiate(&factory, deadline, &cancel)
            .await
            .map_err(instantiate_err)?;
        let info = invoke::run(
            &mut inst,
            &provisional.name,
            "info",
            deadline,
            &cancel,
            async |g, s| either!(g, g => g.call_info(s).await.map(Ok)),
        )
        .await
        .map_err(instantiate_err)?;
        if info.kind.is_empty() {
            return Err(LoadError::Instantiate {
                what: what.into(),
                reason: "its `info` returns an empty kind; an adapter names its kind".into(),
            });
        }
        // Known by its kind from here on, unless the caller named it.
        let identity = match &options.name {
            Some(_) => provisional,
            None => Arc::new(Identity {
                name: info.kind.clone(),
            }),
        };
        let factory = factory.with_identity(identity.clone());
        inst.store.data_mut().set_identity(identity.clone());
        Ok((inst, info, identity, factory))
    }
}

/// The limits a load is refused for before anything is read.
fn check_limits(
    what: &str,
    options: &LoadOptions,
    engine: &EngineSettings,
) -> Result<(), LoadError> {
    let (limits, max) = (&options.limits, engine.max_memory_bytes);
    // Not refused: the adapter may never have that many alive at once.
    let alive = u64::from(limits.max_idle)
        + u64::from(limits.max_instances)
        + u64::from(limits.max_long_running);
    if alive > u64::from(engine.total_instances) {
        tracing::warn!(
            adapter = what,
            alive,
            slots = engine.total_instances,
            "the adapter's limits allow more instances alive at once than the engine has slots \
             for every adapter together; past them a call fails with the host's shortage \
             (raise `EngineSettings::total_instances` or lower `max_idle`, `max_instances`, \
             `max_long_running`)"
        );
    }
    if options.limits.memory_bytes > max {
        return Err(LoadError::Instantiate {
            what: what.into(),
            reason: format!(
                "its memory limit of {} bytes is above the host's largest memory, {max} bytes; \
                 lower `limits.memory_bytes` or raise `EngineSettings::max_memory_bytes`",
                options.limits.memory_bytes
            ),
        });
    }
    options
        .limits
        .check()
        .map_err(|reason| LoadError::Instantiate {
            what: what.into(),
            reason,
        })
}

async fn read(path: &Path) -> Result<Vec<u8>, LoadError> {
    tokio::fs::read(path)
        .await
        .map_err(|source| LoadError::Read {
            path: path.to_path_buf(),
            source,
        })
}
