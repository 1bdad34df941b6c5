//! Compiled code shared by every adapter loaded from the same bytes in one
//! host.
//!
//! One Pando may drive many clusters with one component: a load per cluster,
//! each with its own configuration, grants, client and pool. Each load used
//! to deserialize the component again: a fresh mapping of its code (counted
//! again in the process's resident memory, 1.98 MiB a load for the
//! Kubernetes adapter), fresh type information and a fresh pre-instantiation,
//! about a millisecond. The code is immutable and the host has one engine and
//! one linker, so a load of bytes already loaded takes the live code instead.
//! Entries are weak: the code goes when the last adapter using it does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use wasmtime::component::{Component, Linker};

use crate::bindings::v0_1::KubernetesAdapterPre;
use crate::runtime::state::HostState;

/// One component's code, pre-linked against the host's linker.
pub(crate) struct Code {
    pub(crate) component: Component,
    pub(crate) pre: KubernetesAdapterPre<HostState>,
}

impl Code {
    /// Pre-links `component`: the type check of its imports against
    /// `linker`, done once per code rather than per load.
    pub(crate) fn link(component: Component, linker: &Linker<HostState>) -> wasmtime::Result<Code> {
        let pre = KubernetesAdapterPre::new(linker.instantiate_pre(&component)?)?;
        Ok(Code { component, pre })
    }
}

/// The code of every adapter alive in a host, by the SHA-256 of its bytes.
#[derive(Default)]
pub(crate) struct LoadedCode {
    live: Mutex<HashMap<String, Weak<Code>>>,
}

impl LoadedCode {
    /// The live code of the component with this digest, if an adapter still
    /// uses it.
    pub(crate) fn get(&self, digest: &str) -> Option<Arc<Code>> {
        let live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        live.get(digest).and_then(Weak::upgrade)
    }

    /// Keeps `code` under `digest` for later loads, and returns the code to
    /// use: `code`, or the one a concurrent load of the same bytes kept first.
    pub(crate) fn keep(&self, digest: &str, code: Code) -> Arc<Code> {
        let mut live = self.live.lock().unwrap_or_else(|p| p.into_inner());
        // Dead entries go here, so the map never holds more than the
        // adapters alive plus the loads since the last keep.
        live.retain(|_, w| w.strong_count() > 0);
        if let Some(kept) = live.get(digest).and_then(Weak::upgrade) {
            return kept;
        }
        let code = Arc::new(code);
        live.insert(digest.to_string(), Arc::downgrade(&code));
        code
    }
}
