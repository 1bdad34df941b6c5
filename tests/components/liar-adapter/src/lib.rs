//! The Kubernetes adapter with one lie (being written).
