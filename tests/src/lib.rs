//! Shared parts of the integration tests: the test cluster, the built
//! components, plans, and the kube-probe adapter.

/// The project's test Kubernetes control plane (`scripts/cluster`).
pub mod cluster;

/// The test network: the address plan and the cluster's network namespace.
pub mod net;

/// The real node beside KWOK: containers, a pod network, NetworkPolicy enforced.
pub mod real_node;

/// A directory's contents, for byte-for-byte comparisons.
pub mod files;

/// The wasm components the tests load.
pub mod components;

/// Plans and references the tests build.
pub mod plans;

/// The test adapter component in a host of its own, and what its calls report.
pub mod test_adapter;

/// The kube-probe adapter against the test cluster.
pub mod probe;

/// The test process's memory and descriptors, for bounds.
pub mod memory;

/// The Kubernetes adapter against the test cluster.
pub mod kubernetes_adapter;

/// The Python Kubernetes adapter (componentize-py) against the test cluster.
pub mod python_adapter;

/// An adapter's metrics, read as a dashboard reads them.
pub mod metrics;

/// The fault API server, the throttled identity and etcd compaction, for
/// the fault tests.
pub mod faults;
