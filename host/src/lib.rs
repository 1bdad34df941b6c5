//! Pando's adapter host: loads runtime adapters (WebAssembly components that
//! implement `pando:runtime`), checks them, compiles them once, runs them
//! under limits, and lends them capability-scoped imports. Core calls a
//! loaded [`Adapter`] through typed async methods and never sees wasm.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use pando_host::{CallContext, Host, LoadOptions};
//! let host = Host::builder().build()?;
//! let adapter = host.load_file("adapter.wasm".as_ref(), LoadOptions::default()).await?;
//! let web = pando_host::types::WorkloadRef {
//!     bundle: "shop".into(),
//!     workload: "web".into(),
//! };
//! let up = adapter.upstream(&CallContext::default(), &web, 8080).await?;
//! println!("{}:{}", up.host, up.port);
//! # Ok(()) }
//! ```

pub mod adapter;
pub mod bindings;
pub mod call;
pub mod capability;
pub mod check;
mod clock;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod grants;
pub mod kubecache;
pub mod limits;
mod load;
mod pipes;
pub mod runtime;
pub mod streams;
pub mod types;
pub mod yaml;

pub use adapter::{Adapter, ExecSession};
pub use call::CallContext;
pub use capability::held::HeldUsage;
pub use capability::ratelimit;
pub use check::{ComponentShape, SERVED_VERSIONS, World, served_version};
pub use error::{CallError, LoadError};
pub use grants::Grants;
pub use limits::Limits;
pub use load::{Host, HostBuilder, LoadOptions, LoadProgress, ProgressHook};
pub use runtime::breaker::Quarantine;
pub use runtime::cache;
pub use runtime::cache::{CacheOutcome, CompileCache};
pub use runtime::engine::{EPOCH_TICK, EngineSettings};
pub use runtime::lanes::SharedUsage;
pub use runtime::state::{CANCEL_GRACE, HostState};
pub use tokio_util::sync::CancellationToken;

/// Calibrates the call path's clock now, blocking (or waits for the epoch
/// thread's calibration under way), rather than leaving it to that thread.
/// For a profile that must read the same clock on every call of every run:
/// under valgrind the epoch thread may not have calibrated before a loop
/// starts, and its calls then read `Instant` instead, about 100
/// instructions more (`pando-bench child upstream-loop`).
#[doc(hidden)]
pub fn calibrate_call_clock() {
    clock::calibrate();
}
