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

use wasmtime::Store;
use wasmtime::component::{Component, Linker};

use crate::bindings::{Line, v0_1, v0_2};
use crate::runtime::instance::Bindings;
use crate::runtime::state::HostState;

/// One component's code, pre-linked against its line's linker.
pub(crate) struct Code {
    pub(crate) component: Component,
    pub(crate) pre: Pre,
}

/// A component pre-linked with the bindings of its contract line.
pub(crate) enum Pre {
    V0_1(v0_1::KubernetesAdapterPre<HostState>),
    V0_2(v0_2::KubernetesAdapterPre<HostState>),
}

impl Code {
    /// Pre-links `component` of `line`: the type check of its imports
    /// against `linker`, done once per code rather than per load.
    pub(crate) fn link(
        component: Component,
        line: Line,
        linker: &Linker<HostState>,
    ) -> wasmtime::Result<Code> {
        let linked = linker.instantiate_pre(&component)?;
        let pre = match line {
            Line::V0_1 => Pre::V0_1(v0_1::KubernetesAdapterPre::new(linked)?),
            Line::V0_2 => Pre::V0_2(v0_2::KubernetesAdapterPre::new(linked)?),
        };
        Ok(Code { component, pre })
    }

    /// The contract line it was linked for.
    pub(crate) fn line(&self) -> Line {
        match self.pre {
            Pre::V0_1(_) => Line::V0_1,
            Pre::V0_2(_) => Line::V0_2,
        }
    }
}

impl Pre {
    /// A new instance in `store`.
    pub(crate) async fn instantiate(
        &self,
        store: &mut Store<HostState>,
    ) -> wasmtime::Result<Bindings> {
        Ok(match self {
            Pre::V0_1(pre) => Bindings::V0_1(pre.instantiate_async(store).await?),
            Pre::V0_2(pre) => Bindings::V0_2(pre.instantiate_async(store).await?),
        })
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
