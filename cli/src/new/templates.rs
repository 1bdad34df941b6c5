//! The template adapters `new` writes from, one per contract line, each
//! compiled into the binary: `examples/template-adapter` (0.1.0, on
//! `pando-adapter-sdk`) and `examples/template-adapter-v02` (0.2.0, on
//! `pando-adapter-sdk-v02` under the 0.1 line's name, so the two read alike).

use clap::ValueEnum;

/// The contract a new adapter is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Contract {
    /// `pando:runtime@0.1.0` (WASI 0.2), on `pando-adapter-sdk`.
    #[default]
    #[value(name = "0.1")]
    V0_1,
    /// `pando:runtime@0.2.0` (WASI 0.3): `async` calls, byte streams as
    /// `stream<u8>`, on `pando-adapter-sdk-v02`.
    #[value(name = "0.2")]
    V0_2,
}

/// One template's files and the SDK line it builds on.
#[derive(Debug)]
pub struct Template {
    /// `src/lib.rs`.
    pub lib: &'static str,
    /// `src/objects.rs`.
    pub objects: &'static str,
    /// `grants.yaml`, `config.yaml`, `plan.yaml`.
    pub grants: &'static str,
    /// The configuration.
    pub config: &'static str,
    /// An app to apply.
    pub plan: &'static str,
    /// `Cargo.lock`, its package named [`Template::package`].
    pub lock: &'static str,
    /// The template's own package name, in its lock file.
    pub package: &'static str,
    /// The template's directory, for the new crate's docs.
    pub path: &'static str,
    /// The SDK's directory in a checkout.
    pub sdk_dir: &'static str,
    /// The SDK's package name.
    pub sdk_package: &'static str,
    /// The contract version, for the new crate's docs.
    pub version: &'static str,
}

const V0_1: Template = Template {
    lib: include_str!("../../../examples/template-adapter/src/lib.rs"),
    objects: include_str!("../../../examples/template-adapter/src/objects.rs"),
    grants: include_str!("../../../examples/template-adapter/grants.yaml"),
    config: include_str!("../../../examples/template-adapter/config.yaml"),
    plan: include_str!("../../../examples/template-adapter/plan.yaml"),
    lock: include_str!("../../../examples/template-adapter/Cargo.lock"),
    package: "template-adapter",
    path: "examples/template-adapter",
    sdk_dir: "guest-sdk",
    sdk_package: "pando-adapter-sdk",
    version: "0.1.0",
};

const V0_2: Template = Template {
    lib: include_str!("../../../examples/template-adapter-v02/src/lib.rs"),
    objects: include_str!("../../../examples/template-adapter-v02/src/objects.rs"),
    grants: include_str!("../../../examples/template-adapter-v02/grants.yaml"),
    config: include_str!("../../../examples/template-adapter-v02/config.yaml"),
    plan: include_str!("../../../examples/template-adapter-v02/plan.yaml"),
    lock: include_str!("../../../examples/template-adapter-v02/Cargo.lock"),
    package: "template-adapter-v02",
    path: "examples/template-adapter-v02",
    sdk_dir: "guest-sdk-v02",
    sdk_package: "pando-adapter-sdk-v02",
    version: "0.2.0",
};

impl Contract {
    /// The template of this contract line.
    pub fn template(self) -> &'static Template {
        match self {
            Contract::V0_1 => &V0_1,
            Contract::V0_2 => &V0_2,
        }
    }
}

/// The template's source with the new name: its type, its kind, its
/// description. Each piece replaced must be in every template (a unit test
/// holds it), so a reworded template fails that test, not an author.
pub const RENAMES: &[(&str, &str)] = &[
    ("pub struct Template {", "pub struct {Type} {"),
    ("impl Adapter for Template {", "impl Adapter for {Type} {"),
    ("Ok(Template {", "Ok({Type} {"),
    ("export_adapter!(Template);", "export_adapter!({Type});"),
    ("kind: \"template\".into(),", "kind: \"{name}\".into(),"),
    (
        "description: \"A template adapter: one bare pod per workload on Kubernetes.\".into(),",
        "description: \"{name}: one bare pod per workload on Kubernetes.\".into(),",
    ),
];

/// Every template, for the tests that hold each to what `new` expects.
#[cfg(test)]
pub fn all() -> [&'static Template; 2] {
    [&V0_1, &V0_2]
}
