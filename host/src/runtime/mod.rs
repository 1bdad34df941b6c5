//! What runs an adapter's code: the engine and its epoch ticker, the compile
//! cache, the store's state (with its memory limiter and the guest's
//! stderr), the pool of instances, the guarded run of one guest call, and
//! the quarantine. It knows the capabilities only as
//! [`crate::capability::Shared`] and [`crate::capability::Instances`]: what
//! they lend is theirs. Nothing in `capability/` imports this module.

pub(crate) mod breaker;
pub mod cache;
pub(crate) mod engine;
pub(crate) mod pool;
pub(crate) mod runner;
pub(crate) mod state;
pub(crate) mod stderr;
