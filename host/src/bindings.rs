//! Generated bindings, one module per contract version the host serves.
//!
//! Only `v0_1` exists today. A later `pando:runtime@0.2.0` on WASI 0.3 gets a
//! sibling module, generated with wasmtime's `component-model-async` feature
//! behind a cargo feature of our own (it slows every 0.1 call when compiled
//! in), and converts into the 0.1 types, which are the host's public types.

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
