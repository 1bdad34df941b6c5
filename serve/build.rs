//! Compiles the service's protos (the repository's `proto/`, and go-plugin's
//! two services in `proto/`) with protox, so that no `protoc` is needed to
//! build, and writes the conversions between the host's types and the
//! messages from the WIT (`pando-wit-proto`).

use std::path::PathBuf;

use anyhow::{Context as _, Result};

fn main() -> Result<()> {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let root = dir.join("..");
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    for watched in ["wit", "proto", "serve/proto"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

    let model = pando_wit_proto::Model::wire(&root)?;
    std::fs::write(
        out.join("convert.rs"),
        pando_wit_proto::rust::conversions(&model),
    )
    .context("writing the conversions")?;

    let fds = protox::compile(
        [
            "pando/runtime/v0_1/adapter.proto",
            "pando/serve/v1/calls.proto",
            "goplugin.proto",
        ],
        [root.join("proto"), dir.join("proto")],
    )
    .context("compiling the protos")?;
    tonic_prost_build::configure()
        // Byte streams' chunks as `Bytes`: a log's pieces are slices of the
        // host's buffers, and a call's output is copied once into them.
        .bytes(".pando.runtime.v0_1.Chunk.data")
        // A call channel's messages are handed on, not read: no copies.
        .bytes(".pando.serve.v1.CallRequest.message")
        .bytes(".pando.serve.v1.CallReply.message")
        .bytes(".pando.serve.v1.CallReply.details")
        .compile_fds(fds)
        .context("generating the gRPC code")?;
    Ok(())
}
