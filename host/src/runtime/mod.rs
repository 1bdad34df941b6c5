//! What runs an adapter's code: the engine and its epoch ticker, the compile
//! cache, the generated bindings, the store's state and limits, the pool of
//! instances, the guarded run of one guest call, and the quarantine. It
//! knows the capabilities only as [`crate::capability::Shared`] and
//! [`crate::capability::Instances`]: what they lend is theirs.

pub mod bindings;
pub(crate) mod breaker;
pub mod cache;
pub(crate) mod engine;
pub mod limits;
pub(crate) mod pool;
pub(crate) mod runner;
pub(crate) mod state;
pub(crate) mod stderr;
