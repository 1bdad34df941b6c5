//! The imports the host lends an adapter, one module per interface, and the
//! linker that holds them.

pub mod call;
pub mod events;
pub mod kubernetes;
pub mod log;
pub mod streams;

use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_1::pando::runtime as v0_1;
use crate::state::HostState;

/// A linker with every import of `pando:runtime@0.1.0` and WASI 0.2. What an
/// adapter may actually use was checked at load (`loader`): the linker
/// offers, the grants decide.
pub(crate) fn linker_v0_1(engine: &Engine) -> wasmtime::Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    v0_1::log::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
    v0_1::call::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
    v0_1::events::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
    v0_1::streams::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
    v0_1::kubernetes::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
    Ok(linker)
}
