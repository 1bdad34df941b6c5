//! Every integration test that can share a process, as modules of one
//! binary: one link of wasmtime, kube and tokio instead of one per file.
//! The tests that must own their process (resident-memory and descriptor
//! measurements, a global log subscriber of their own, the NetworkPolicy
//! enforcer stopped under every other test) are in `tests/tests/process/`.
//! Run one file's tests with a filter: `cargo test -p pando-tests --test all
//! kube_cache::`.

mod adapter_kubernetes;
mod adapter_kubernetes_budget;
mod adapter_kubernetes_edge;
mod adapter_kubernetes_isolation;
mod adapter_kubernetes_ownership;
mod adapter_kubernetes_streams;
mod adapter_kubernetes_volumes;
mod adapter_python;
mod cluster_faults;
mod cluster_policy;
mod cluster_rbac;
mod conformance;
mod conformance_liars;
mod control_plane;
mod host_cache;
mod host_calls;
mod host_limits;
mod host_load;
mod host_metrics;
mod host_network;
mod host_pool;
mod host_v02;
mod host_v02_shared;
mod host_v02_streams;
mod kube_audit;
mod kube_budgets;
mod kube_cache;
mod kube_grants;
mod kube_managed_fields;
mod kube_objects;
mod kube_sdk;
mod kube_streams;
mod kube_v02;
mod pod_security;
mod real_node;
mod real_node_edge;
mod real_node_egress;
mod real_node_registry;
mod real_node_runtime;
mod real_node_trial;
mod real_node_volumes;
