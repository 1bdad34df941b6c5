//! The raw `pando:runtime/kubernetes@0.1.0` import.
//!
//! Only a Kubernetes adapter calls it: a component that uses anything here
//! imports the interface, and the host then loads it only with a Kubernetes
//! grant. A typed client (objects, request builders) is to come; until then
//! build [`Request`]s and parse the JSON bodies yourself.

pub use crate::bindings::pando::runtime::kubernetes::*;
