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
    let model = Model::wire(root()).expect("the contract's WIT reads");
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
    let model = Model::wire(root()).expect("the contract's WIT reads");
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

/// The wire follows the newest contract in the first contract's proto
/// package (`pando.runtime.v0_1`): every message, oneof and enum of the
/// first keeps its fields and cases in order, so with their numbers, and a
/// later contract only appends; what it appends to a record is read as its
/// default when an older peer leaves it out.
#[test]
fn the_wire_extends_the_first_contracts_messages_without_renumbering() {
    use pando_wit_proto::model::Shape;
    let first = Model::load(&root().join("wit"), "types").expect("the first contract reads");
    let wire = Model::wire(root()).expect("the newest contract reads");
    assert_eq!(proto::package(&wire.wire_package), "pando.runtime.v0_1");
    for def in &first.defs {
        let now = wire
            .def(&def.name)
            .unwrap_or_else(|| panic!("`{}` left the wire", def.name));
        match (&def.shape, &now.shape) {
            (Shape::Record(old), Shape::Record(new)) => {
                assert!(new.len() >= old.len(), "`{}` lost fields", def.name);
                for (o, n) in old.iter().zip(new) {
                    assert_eq!((&o.name, &o.ty), (&n.name, &n.ty), "`{}`", def.name);
                    assert!(!n.added, "`{}.{}`", def.name, n.name);
                }
                for n in &new[old.len()..] {
                    assert!(n.added, "`{}.{}` is appended", def.name, n.name);
                }
            }
            (Shape::Variant(old), Shape::Variant(new)) => {
                assert!(new.len() >= old.len(), "`{}` lost cases", def.name);
                for (o, n) in old.iter().zip(new) {
                    assert_eq!(
                        (&o.name, &o.payload),
                        (&n.name, &n.payload),
                        "`{}`",
                        def.name
                    );
                }
            }
            (Shape::Enum(old), Shape::Enum(new)) => {
                assert_eq!(&new[..old.len()], &old[..], "`{}`", def.name);
            }
            _ => panic!("`{}` changed its kind", def.name),
        }
    }
    // What 0.2.0 added is on the wire; its stream shapes are not messages.
    let spec = wire.def("workload-spec").expect("workload-spec");
    let Shape::Record(fields) = &spec.shape else {
        panic!("a record")
    };
    assert!(fields.iter().any(|f| f.name == "security" && f.added));
    assert!(wire.def("security").is_some());
    for transport in ["byte-stream", "exec-session", "bundle-watch"] {
        assert!(wire.def(transport).is_none(), "`{transport}` is no message");
    }
}
