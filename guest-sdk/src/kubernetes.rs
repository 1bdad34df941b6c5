//! The raw `pando:runtime/kubernetes@0.1.0` import.
//!
//! Only a Kubernetes adapter calls it: a component that uses anything here
//! (or in [`crate::kube`]) imports the interface, and the host then loads it
//! only with a Kubernetes grant. Prefer the typed client in [`crate::kube`];
//! reach here for requests it does not make, building [`Request`]s and
//! parsing the JSON bodies yourself.

pub use crate::bindings::pando::runtime::kubernetes::*;
