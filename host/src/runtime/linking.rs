//! The host's linker for contract 0.1, made on a thread of its own.
//!
//! Defining every import (WASI 0.2 and the host's own) took 0.4–0.5 ms, a
//! quarter of `Host::builder().build()` (docs/benchmarks.md). Nothing needs
//! the linker until a load links its first component, after it has mapped
//! the precompiled code (1.4–2.2 ms), so `build()` starts the linker on a
//! second thread and the first load takes it, waiting only for what is left.

use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;

use wasmtime::Engine;
use wasmtime::component::Linker;

use crate::error::LoadError;
use crate::runtime::state::HostState;

type Made = Result<Linker<HostState>, String>;

/// A linker being made, or made.
pub(crate) struct PendingLinker {
    made: OnceLock<Made>,
    thread: Mutex<Option<JoinHandle<Made>>>,
}

/// The linker for `engine`, or why it could not be made.
fn make(engine: &Engine) -> Made {
    crate::capability::linker_v0_1(engine).map_err(|e| format!("{e:#}"))
}

impl PendingLinker {
    /// Starts making the linker for `engine`; where no thread can be
    /// started, makes it here.
    pub(crate) fn start(engine: &Engine) -> Self {
        let engine2 = engine.clone();
        let spawned = std::thread::Builder::new()
            .name("pando-linker".into())
            .spawn(move || make(&engine2));
        let (made, thread) = match spawned {
            Ok(handle) => (OnceLock::new(), Some(handle)),
            Err(e) => {
                tracing::debug!(error = %e, "no thread for the linker; making it in place");
                (OnceLock::from(make(engine)), None)
            }
        };
        PendingLinker {
            made,
            thread: Mutex::new(thread),
        }
    }

    /// The linker, waiting for its thread the first time (it blocks the
    /// caller for at most what is left of the 0.5 ms it takes).
    pub(crate) fn get(&self) -> Result<&Linker<HostState>, LoadError> {
        let made = self.made.get_or_init(|| {
            let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
            match handle.map(JoinHandle::join) {
                Some(Ok(made)) => made,
                Some(Err(_)) => Err("the thread making it panicked".into()),
                // Only this initializer takes the handle, once.
                None => Err("it was never started".into()),
            }
        });
        made.as_ref()
            .map_err(|e| LoadError::Engine(format!("linking the host's imports: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_linker_made_on_its_thread_is_the_one_every_load_gets() {
        let engine = Engine::default();
        let pending = PendingLinker::start(&engine);
        let first: *const Linker<HostState> = pending.get().expect("a linker");
        let again: *const Linker<HostState> = pending.get().expect("a linker");
        assert_eq!(first, again, "made once, then shared");
    }

    #[test]
    fn loads_racing_for_the_linker_all_get_it() {
        let engine = Engine::default();
        let pending = PendingLinker::start(&engine);
        std::thread::scope(|s| {
            let got: Vec<_> = (0..4).map(|_| s.spawn(|| pending.get().is_ok())).collect();
            assert!(got.into_iter().all(|h| h.join().unwrap_or(false)));
        });
    }
}
