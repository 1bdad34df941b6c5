//! Building a [`Host`]: its engine settings and compile cache, and the
//! engine and linker of each contract line.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use super::{Host, HostInner};
use crate::bindings::Line;
use crate::error::LoadError;
use crate::runtime::cache::CompileCache;
use crate::runtime::engine::{EngineSettings, SharedEngine};
use crate::runtime::linking::PendingLinker;

/// One contract line's engine and linker.
pub(super) struct LineEngine {
    pub(super) engine: Arc<SharedEngine>,
    /// Made on the engine's epoch thread while `build()` returns
    /// (`runtime/linking.rs`); the first load takes it.
    pub(super) linker: PendingLinker,
}

impl LineEngine {
    pub(super) fn new(settings: EngineSettings, line: Line) -> Result<Self, LoadError> {
        let (linker, make_linker) = PendingLinker::new(line);
        let engine = Arc::new(SharedEngine::new(settings, line, make_linker)?);
        Ok(LineEngine { engine, linker })
    }
}

/// Builds a [`Host`].
#[derive(Debug, Clone)]
pub struct HostBuilder {
    settings: EngineSettings,
    cache_dir: Option<PathBuf>,
    cache: bool,
}

impl Default for HostBuilder {
    fn default() -> Self {
        HostBuilder {
            settings: EngineSettings::default(),
            cache_dir: None,
            cache: true,
        }
    }
}

impl HostBuilder {
    /// Engine settings (pool sizes, the largest memory).
    pub fn engine(mut self, settings: EngineSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Where precompiled components are kept (default:
    /// [`CompileCache::default_dir`]).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Compile every component afresh, keeping nothing on disk.
    pub fn no_cache(mut self) -> Self {
        self.cache = false;
        self
    }

    /// The host.
    pub fn build(self) -> Result<Host, LoadError> {
        let v0_1 = LineEngine::new(self.settings.clone(), Line::V0_1)?;
        let cache = if self.cache {
            match self.cache_dir.or_else(CompileCache::default_dir) {
                Some(dir) => match CompileCache::new(&dir) {
                    Ok(c) => Some(c),
                    Err(e) => {
                        tracing::warn!(dir = %dir.display(), error = %e,
                            "compile cache unusable; compiling every load");
                        None
                    }
                },
                None => None,
            }
        } else {
            None
        };
        Ok(Host {
            inner: Arc::new(HostInner {
                v0_1,
                v0_2: OnceLock::new(),
                settings: self.settings,
                cache,
                code: Arc::default(),
                metrics: crate::adapter::metrics::Metrics::new(),
            }),
        })
    }
}
