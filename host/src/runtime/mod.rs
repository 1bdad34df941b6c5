//! What an adapter's code runs on: the engine and its epoch ticker, the
//! compile cache, the store's state (with its memory limiter and the guest's
//! stderr), the pool of instances, and the quarantine. It runs no guest code
//! itself: every guest call, a new instance's included, is made by the call
//! pipeline above it (`adapter/invoke.rs`). It knows the capabilities only as
//! [`crate::capability::Shared`] and [`crate::capability::Instances`]: what
//! they lend is theirs. Nothing in `capability/` imports this module.

pub(crate) mod breaker;
pub mod cache;
pub(crate) mod code;
pub(crate) mod engine;
mod hot;
mod idle;
pub(crate) mod instance;
pub(crate) mod lanes;
pub(crate) mod linking;
#[cfg(test)]
mod patched;
pub(crate) mod pool;
pub(crate) mod state;
pub(crate) mod stderr;
