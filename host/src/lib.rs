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
mod breaker;
pub mod cache;
pub mod call;
pub mod capability;
pub mod check;
mod engine;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod grants;
mod held;
pub mod kubecache;
pub mod limits;
mod load;
mod metrics;
mod pool;
pub mod ratelimit;
mod runner;
mod state;
mod stderr;
pub mod streams;
pub mod types;

pub use adapter::{Adapter, ExecSession};
pub use breaker::Quarantine;
pub use cache::{CacheOutcome, CompileCache};
pub use call::CallContext;
pub use check::{ComponentShape, SERVED_VERSIONS, World};
pub use engine::{EPOCH_TICK, EngineSettings};
pub use error::{CallError, LoadError};
pub use grants::Grants;
pub use held::HeldUsage;
pub use limits::Limits;
pub use load::{Host, HostBuilder, LoadOptions};
pub use state::{CANCEL_GRACE, HostState};
pub use tokio_util::sync::CancellationToken;
