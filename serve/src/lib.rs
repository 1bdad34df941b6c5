//! `pando-host serve`: adapters loaded by the host, served to a Go program
//! on hashicorp/go-plugin's protocol (docs/go.md).
//!
//! - `goplugin`: the protocol: cookie, version, socket, handshake line, the
//!   services go-plugin's client calls, stopping.
//! - `service`: the contract's `Adapter` service over the host's API, with
//!   `call` (which adapter, deadline, cancellation), `streams` and `exec`;
//!   `channel`: a bulk stream's bytes on a socket of their own;
//!   `calls`: unary calls on sockets of their own.
//! - `convert` and `status`: messages to the host's types and back, and a
//!   failed call as a gRPC status carrying the contract's error.

pub mod call;
pub mod calls;
pub mod channel;
pub mod convert;
mod exec;
pub mod goplugin;
pub mod service;
pub mod status;
mod streams;

/// The messages and services, generated from `proto/` at build time.
#[allow(clippy::all, missing_docs)]
pub mod pb {
    tonic::include_proto!("pando.runtime.v0_1");

    /// Call channels (`proto/pando/serve/v1/calls.proto`).
    pub mod calls {
        tonic::include_proto!("pando.serve.v1");
    }

    /// go-plugin's own services (`serve/proto/goplugin.proto`).
    pub mod plugin {
        tonic::include_proto!("plugin");
    }
}

pub use call::Adapters;
pub use goplugin::{ServeError, preflight, serve};
