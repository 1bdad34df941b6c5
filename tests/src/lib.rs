//! placeholder

/// The project's test Kubernetes control plane (`scripts/cluster`).
pub mod cluster;

/// The wasm components the tests load.
pub mod components;

/// Plans and references the tests build.
pub mod plans;
