//! The host's linker for one contract line, made off the builder's thread.
//!
//! Defining every import (WASI 0.2 and the host's own) took 0.4–0.5 ms, a
//! quarter of `Host::builder().build()` (docs/benchmarks.md). Nothing needs
//! the linker until a load links its first component, after it has mapped
//! the precompiled code (1.4–2.2 ms), so `build()` hands the making of it
//! to the engine's epoch thread ([`SharedEngine::new`]'s first job, before
//! it starts ticking: no guest can run before there is a linker) and the
//! first load takes it, waiting only for what is left. One thread, not a
//! second one: a thread's start was 30–80 µs of the builder.
//!
//! [`SharedEngine::new`]: crate::runtime::engine::SharedEngine::new

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Mutex, OnceLock};

use wasmtime::Engine;
use wasmtime::component::Linker;

use crate::bindings::Line;
use crate::error::LoadError;
use crate::runtime::state::HostState;

type Made = Result<Linker<HostState>, String>;

/// A linker being made, or made.
pub(crate) struct PendingLinker {
    line: Line,
    made: OnceLock<Made>,
    delivery: Mutex<Option<Receiver<Made>>>,
}

/// The job that makes the linker, to run on another thread.
pub(crate) struct MakeLinker {
    line: Line,
    deliver: SyncSender<Made>,
}

/// The linker of `line` for `engine`, or why it could not be made.
fn make(engine: &Engine, line: Line) -> Made {
    crate::capability::linker(engine, line).map_err(|e| format!("{e:#}"))
}

impl MakeLinker {
    /// Makes the linker and hands it to its [`PendingLinker`].
    pub(crate) fn run(self, engine: &Engine) {
        // Caught: the thread goes on to tick the epoch, which every
        // deadline inside pure wasm rests on.
        let line = self.line;
        let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| make(engine, line)))
            .unwrap_or_else(|_| Err("making it panicked".into()));
        // The host may have been dropped meanwhile; then nobody wants it.
        let _ = self.deliver.send(made);
    }
}

impl PendingLinker {
    /// A linker of `line` that `job` makes, wherever the caller runs it.
    pub(crate) fn new(line: Line) -> (Self, MakeLinker) {
        let (tx, rx) = sync_channel(1);
        let pending = PendingLinker {
            line,
            made: OnceLock::new(),
            delivery: Mutex::new(Some(rx)),
        };
        (pending, MakeLinker { line, deliver: tx })
    }

    /// The linker, waiting for its job the first time (it blocks the
    /// caller for at most what is left of the 0.5 ms it takes). A job that
    /// never ran (its thread could not start) or died is redone here.
    pub(crate) fn get(&self, engine: &Engine) -> Result<&Linker<HostState>, LoadError> {
        let made = self.made.get_or_init(|| {
            let delivery = self
                .delivery
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            match delivery.map(|rx| rx.recv()) {
                Some(Ok(made)) => made,
                Some(Err(_)) => {
                    tracing::debug!("the linker's job did not deliver; making it in place");
                    make(engine, self.line)
                }
                // Only this initializer takes the receiver, once.
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
    fn the_linker_made_on_another_thread_is_the_one_every_load_gets() {
        let engine = Engine::default();
        let (pending, job) = PendingLinker::new(Line::V0_1);
        let e2 = engine.clone();
        std::thread::spawn(move || job.run(&e2));
        let first: *const Linker<HostState> = pending.get(&engine).expect("a linker");
        let again: *const Linker<HostState> = pending.get(&engine).expect("a linker");
        assert_eq!(first, again, "made once, then shared");
    }

    #[test]
    fn a_job_that_never_ran_is_made_in_place() {
        let engine = Engine::default();
        let (pending, job) = PendingLinker::new(Line::V0_1);
        drop(job);
        assert!(pending.get(&engine).is_ok());
    }

    #[test]
    fn loads_racing_for_the_linker_all_get_it() {
        let engine = Engine::default();
        let (pending, job) = PendingLinker::new(Line::V0_1);
        std::thread::scope(|s| {
            let got: Vec<_> = (0..4)
                .map(|_| s.spawn(|| pending.get(&engine).is_ok()))
                .collect();
            job.run(&engine);
            assert!(got.into_iter().all(|h| h.join().unwrap_or(false)));
        });
    }
}
