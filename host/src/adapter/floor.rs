//! The floor the 3-GET bench holds the host's Kubernetes import to
//! (issue 43): the same component, instantiated in a store of the same
//! limits and configured as the host does, with `pando:runtime/kubernetes`'s
//! `send` replaced by the least an import of that shape can do: build the
//! HTTP request, send it on the same `kube::Client`, hand back the status,
//! the kept headers and the body (`capability/kubernetes/send.rs`'s
//! `plain`). No grant, rate or write budget, audit, metrics, cache or
//! managed-fields scan: what the host's own `send` costs beyond this floor
//! is its bookkeeping. For measuring only; the linker it is made with is
//! its own, never the one core's loads get.

use tokio_util::sync::CancellationToken;

use super::Adapter;
use super::raw::RawInstance;
use crate::bindings::Line;
use crate::bindings::v0_1::pando::runtime::kubernetes::{ApiError, Request, Response};
use crate::error::CallError;
use crate::runtime::code::Code;
use crate::runtime::instance::Instance;

/// The interface whose `send` the floor replaces.
const KUBERNETES: &str = "pando:runtime/kubernetes@0.1.0";

impl Adapter {
    /// A configured instance of this 0.1.0 adapter whose Kubernetes
    /// `send` goes straight to `client`: the 3-GET bench's floor.
    #[doc(hidden)]
    pub async fn floor_instance(&self, client: kube::Client) -> Result<RawInstance, CallError> {
        let factory = &self.inner.pool.factory;
        let name = &factory.identity.name;
        let host_error = |message: String| CallError::Host {
            adapter: name.clone(),
            method: "instantiate",
            message,
        };
        if factory.code.line() != Line::V0_1 {
            return Err(host_error(
                "the Kubernetes floor is made of 0.1.0 components only".into(),
            ));
        }
        let engine = &factory.engine.engine;
        let mut linker = crate::capability::linker(engine, Line::V0_1)
            .map_err(|e| host_error(format!("linking the host's imports: {e:#}")))?;
        // Shadowing replaces the host's `send` with the floor's, the rest
        // of the imports (WASI, logging, the call's deadline) as core's.
        linker.allow_shadowing(true);
        linker
            .instance(KUBERNETES)
            .and_then(|mut kubernetes| {
                kubernetes.func_wrap_async("send", move |_store, (request,): (Request,)| {
                    // A `kube::Client` is a handle: its clone shares the
                    // connection pool.
                    let client = client.clone();
                    Box::new(async move {
                        let answer: Result<Response, ApiError> =
                            crate::capability::kubernetes::send::plain(&client, &request).await;
                        Ok((answer,))
                    })
                })
            })
            .map_err(|e| host_error(format!("replacing `send`: {e:#}")))?;
        let code = Code::link(factory.code.component.clone(), Line::V0_1, &linker)
            .map_err(|e| host_error(format!("linking the component: {e:#}")))?;
        let mut store = factory.store();
        let bindings = code
            .pre
            .instantiate(&mut store)
            .await
            .map_err(|e| host_error(format!("{e:#}")))?;
        let mut instance = Instance::new(store, bindings);
        super::invoke::configure(factory, &mut instance, None, &CancellationToken::new()).await?;
        Ok(RawInstance::of(instance))
    }
}
