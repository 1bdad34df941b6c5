//! The contract's WIT types as protobuf messages, and the conversions
//! between them, for the two sides of `pando-host serve` (docs/go.md).
//!
//! One reading of the WIT (`model`) feeds every output: the proto file
//! (`proto`), the Rust conversions between the host's types and prost's
//! messages (`rust`, generated at build time by the serving crate), and the
//! Go module's `api` types and their conversions (`go`). The proto and Go
//! files are committed, for Go's toolchain and for readers; a test of this
//! crate fails when they are not what the WIT gives, so the messages stay the
//! contract's types one for one.

pub mod go;
pub mod model;
pub mod proto;
pub mod rust;

pub use model::Model;

/// The Go module's import path (`go/pandohost/go.mod`).
pub const GO_MODULE: &str = "pandohost";

/// Where the generated files live, relative to the repository's root, and
/// what each holds, for the contract's `types` interface in `wit/`.
pub fn outputs(model: &Model) -> Vec<(String, String)> {
    let pb = format!("{GO_MODULE}/internal/pb");
    let api = format!("{GO_MODULE}/api");
    let version = proto::package(&model.wire_package);
    let version = version.rsplit('.').next().unwrap_or("v0_1").to_string();
    vec![
        (
            format!("proto/pando/runtime/{version}/types.proto"),
            proto::file(model, &format!("{pb};pb")),
        ),
        ("go/pandohost/api/types_gen.go".into(), go::api(model)),
        (
            "go/pandohost/convert_gen.go".into(),
            go::conversions(model, &api, &pb),
        ),
    ]
}
