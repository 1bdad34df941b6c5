//! `pando:runtime/kubernetes`: the Kubernetes API, as far as the grants
//! reach.
//!
//! This build links the interface so components that import it load and
//! instantiate (their grants were checked at load), but does not yet send
//! requests: every call answers `transport` saying so. The grant-checked
//! implementation on `kube::Client` replaces this module.

use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable};

use crate::bindings::v0_1::pando::runtime::kubernetes::{
    ApiError, ExecRequest, Host, HostExecSession, HostWatchStream, LogRequest, Request, Response,
    WatchEnd, WatchEvent, WatchRequest,
};
use crate::state::HostState;

/// What an instance needs to reach the cluster.
#[derive(Debug, Clone, Default)]
pub struct KubeContext {}

/// An open watch.
pub struct WatchStream {}

/// An exec session.
pub struct ExecSession {}

const NOT_BUILT: &str = "the Kubernetes import is not implemented in this build of the host yet";

fn not_built() -> ApiError {
    ApiError::Transport(NOT_BUILT.into())
}

impl Host for HostState {
    async fn send(&mut self, _request: Request) -> wasmtime::Result<Result<Response, ApiError>> {
        if self.kubernetes.is_none() {
            return Ok(Err(ApiError::Transport(
                "no cluster is configured for this adapter (LoadOptions::kubernetes)".into(),
            )));
        }
        Ok(Err(not_built()))
    }

    async fn watch(
        &mut self,
        _request: WatchRequest,
    ) -> wasmtime::Result<Result<Resource<WatchStream>, ApiError>> {
        Ok(Err(not_built()))
    }

    async fn logs(
        &mut self,
        _request: LogRequest,
    ) -> wasmtime::Result<Result<Resource<DynInputStream>, ApiError>> {
        Ok(Err(not_built()))
    }

    async fn exec(
        &mut self,
        _request: ExecRequest,
    ) -> wasmtime::Result<Result<Resource<ExecSession>, ApiError>> {
        Ok(Err(not_built()))
    }
}

impl HostWatchStream for HostState {
    async fn subscribe(
        &mut self,
        _w: Resource<WatchStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        wasmtime::bail!("{NOT_BUILT}")
    }

    async fn next(
        &mut self,
        _w: Resource<WatchStream>,
    ) -> wasmtime::Result<Result<WatchEvent, WatchEnd>> {
        Ok(Err(WatchEnd::Failed(not_built())))
    }

    async fn try_next(
        &mut self,
        _w: Resource<WatchStream>,
    ) -> wasmtime::Result<Result<Option<WatchEvent>, WatchEnd>> {
        Ok(Err(WatchEnd::Failed(not_built())))
    }

    async fn drop(&mut self, w: Resource<WatchStream>) -> wasmtime::Result<()> {
        self.table().delete(w)?;
        Ok(())
    }
}

impl HostExecSession for HostState {
    async fn stdin(
        &mut self,
        _s: Resource<ExecSession>,
    ) -> wasmtime::Result<Option<Resource<DynOutputStream>>> {
        Ok(None)
    }

    async fn stdout(
        &mut self,
        _s: Resource<ExecSession>,
    ) -> wasmtime::Result<Option<Resource<DynInputStream>>> {
        Ok(None)
    }

    async fn stderr(
        &mut self,
        _s: Resource<ExecSession>,
    ) -> wasmtime::Result<Option<Resource<DynInputStream>>> {
        Ok(None)
    }

    async fn resize(
        &mut self,
        _s: Resource<ExecSession>,
        _cols: u16,
        _rows: u16,
    ) -> wasmtime::Result<Result<(), ApiError>> {
        Ok(Err(not_built()))
    }

    async fn subscribe(
        &mut self,
        _s: Resource<ExecSession>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        wasmtime::bail!("{NOT_BUILT}")
    }

    async fn wait(&mut self, _s: Resource<ExecSession>) -> wasmtime::Result<Result<i32, ApiError>> {
        Ok(Err(not_built()))
    }

    async fn drop(&mut self, s: Resource<ExecSession>) -> wasmtime::Result<()> {
        self.table().delete(s)?;
        Ok(())
    }
}
