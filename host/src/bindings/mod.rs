//! Generated bindings, one module per contract version the host serves.
//!
//! The two versions share their Rust types wherever their WIT types are
//! equal: 0.2.0's `types` interface is mapped onto [`v0_2_types`], which
//! re-exports 0.1.0's types and defines only what 0.2.0 changed. A value of
//! an unchanged type (a bundle reference, an observation, an error) crosses
//! either version with no conversion, and core keeps one vocabulary. wasmtime
//! checks each Rust type against the component's WIT type when it links a
//! component, by field and case names, so a drift between the two is an
//! instantiation error naming the type, never a wrong value.

pub mod v0_2_types;

/// A line of the contract the host serves: the bindings, engine and linker
/// a component of it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Line {
    /// `pando:runtime@0.1.0` on WASI 0.2.
    V0_1,
    /// `pando:runtime@0.2.0` on WASI 0.3.
    V0_2,
}

impl Line {
    /// The line of a served version (`crate::check::SERVED_VERSIONS`).
    pub(crate) fn of(served: &str) -> Option<Line> {
        match served {
            "0.1.0" => Some(Line::V0_1),
            "0.2.0" => Some(Line::V0_2),
            _ => None,
        }
    }
}

/// Bindings for `pando:runtime@0.1.0` (WASI 0.2).
pub mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "pando:runtime/kubernetes-adapter",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
            "pando:runtime/events.bundle-sink": crate::capability::events::BundleSink,
            "pando:runtime/kubernetes.watch-stream": crate::capability::kubernetes::WatchStream,
            "pando:runtime/kubernetes.exec-session": crate::capability::kubernetes::ExecSession,
        },
        // `JsonSchema`: the plan and trial schemas (`pando-host schema plan`)
        // are derived from these types, so they cannot drift from the decoder.
        additional_derives: [
            serde::Serialize,
            serde::Deserialize,
            schemars::JsonSchema,
            PartialEq,
        ],
    });
}

/// Bindings for `pando:runtime@0.2.0` (WASI 0.3).
///
/// Exports are called with `call_async`, as 0.1.0's are: on the 0.2 engine
/// (concurrency on) wasmtime runs each as a task of the store, an `async
/// func` included. Imports are plain, but for the ones that wait
/// (`call.cancelled`, the Kubernetes API), which take the store's accessor
/// so they do not hold the store while they wait.
pub mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../wit/v0.2",
        world: "pando:runtime/kubernetes-adapter@0.2.0",
        imports: {
            default: trappable,
            "pando:runtime/call.cancelled": async | store | trappable,
            "pando:runtime/kubernetes": async | store | trappable,
        },
        exports: { default: async },
        with: {
            "wasi:clocks": wasmtime_wasi::p3::bindings::clocks,
            "pando:runtime/types": crate::bindings::v0_2_types,
        },
    });
}
