//! The integration tests that must own their process, as modules of a
//! second binary: those that measure its resident memory and descriptors
//! (each holds `memory::MEASURING`, so they run one at a time), the one that
//! installs a global log subscriber of its own (`host_hostile`), and the one
//! that stops the node's NetworkPolicy enforcer, which no test of the other
//! binary may run beside.

mod host_bounds;
mod host_hostile;
mod kube_big_log;
mod kube_bounds;
mod real_node_enforcer;
