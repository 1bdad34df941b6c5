//! The committed proto and Go files are what the WIT gives: the messages
//! stay the contract's types one for one, and a change to wit/ that was not
//! carried into them fails here, naming the file and the command.

use std::path::Path;

use pando_wit_proto::{Model, outputs, proto};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The Go files are compared after gofmt, by `scripts/gen-go --check`
/// (the lint stage of scripts/test).
#[test]
fn the_committed_proto_file_is_what_the_wit_gives() {
    let model = Model::load(&root().join("wit"), "types").expect("the contract's WIT reads");
    for (path, text) in outputs(&model)
        .into_iter()
        .filter(|(p, _)| p.ends_with(".proto"))
    {
        let committed = std::fs::read_to_string(root().join(&path))
            .unwrap_or_else(|e| panic!("reading {path}: {e}; run `cargo run -p pando-wit-proto`"));
        assert!(
            committed == text,
            "{path} is not what wit/ gives: run `cargo run -p pando-wit-proto` (scripts/gen-go)"
        );
    }
}

#[test]
fn every_wit_type_has_its_message_with_its_fields_in_order() {
    let model = Model::load(&root().join("wit"), "types").expect("the contract's WIT reads");
    let text = proto::file(&model, "x;x");
    for def in &model.defs {
        let name = heck_camel(&def.name);
        let kind = match def.shape {
            pando_wit_proto::model::Shape::Enum(_) => "enum",
            _ => "message",
        };
        assert!(
            text.contains(&format!("\n{kind} {name} {{")),
            "no {kind} {name}"
        );
    }
    // One record read field by field: the numbering is the WIT's order.
    let plan = text
        .split("\nmessage BundlePlan {")
        .nth(1)
        .and_then(|s| s.split("\n}").next())
        .expect("BundlePlan");
    let fields: Vec<&str> = plan
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//") && !l.is_empty())
        .collect();
    assert_eq!(
        fields,
        [
            "string id = 1;",
            "string revision = 2;",
            "repeated WorkloadSpec workloads = 3;",
            "repeated VolumeSpec volumes = 4;",
            "NetworkRules network = 5;",
            "repeated RegistryCredential pull_credentials = 6;",
        ]
    );
}

#[test]
fn the_proto_package_names_the_contract_version() {
    assert_eq!(proto::package("pando:runtime@0.1.0"), "pando.runtime.v0_1");
    assert_eq!(proto::package("pando:runtime@0.2.3"), "pando.runtime.v0_2");
}

fn heck_camel(s: &str) -> String {
    s.split('-')
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}
