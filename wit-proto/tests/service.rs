//! A contract method added to the WIT reaches Go core only if the gRPC
//! service and the Go module carry it too. These fail naming the method and
//! the file it is missing from (docs/contributing.md, "A contract method").

use std::collections::BTreeSet;
use std::path::Path;

use heck::ToUpperCamelCase as _;
use wit_parser::{FunctionKind, Resolve};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// What a Go core cannot call through the service, and why.
const NOT_SERVED: &[(&str, &str)] = &[(
    "configure",
    "a Wasm adapter is configured at load; Go's Configure returns unsupported (docs/go.md)",
)];

/// The adapter interface's functions (not a resource's methods), as gRPC
/// names them.
fn wit_methods() -> BTreeSet<String> {
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve
        .push_dir(root().join("wit"))
        .expect("the contract's WIT reads");
    let iface = resolve.packages[pkg].interfaces["adapter"];
    resolve.interfaces[iface]
        .functions
        .values()
        .filter(|f| matches!(f.kind, FunctionKind::Freestanding))
        .filter(|f| !NOT_SERVED.iter().any(|(n, _)| *n == f.name))
        .map(|f| f.name.to_upper_camel_case())
        .collect()
}

#[test]
fn every_contract_method_is_an_rpc_of_the_service_and_no_rpc_is_extra() {
    let path = "proto/pando/runtime/v0_1/adapter.proto";
    let proto = std::fs::read_to_string(root().join(path)).expect("the service's proto reads");
    let rpcs: BTreeSet<String> = proto
        .lines()
        .filter_map(|l| l.trim().strip_prefix("rpc "))
        .filter_map(|l| l.split('(').next())
        .map(|n| n.trim().to_string())
        .collect();
    let wit = wit_methods();
    let missing: Vec<_> = wit.difference(&rpcs).collect();
    assert!(
        missing.is_empty(),
        "{path} has no rpc for {missing:?}: add it, and its handler in serve/src/service.rs"
    );
    let extra: Vec<_> = rpcs.difference(&wit).collect();
    assert!(
        extra.is_empty(),
        "{path} serves {extra:?}, which wit/adapter.wit does not have"
    );
}

#[test]
fn every_contract_method_has_its_go_method() {
    let dir = root().join("go/pandohost");
    let mut methods = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).expect("go/pandohost reads") {
        let path = entry.expect("an entry").path();
        let name = path.to_string_lossy();
        if !name.ends_with(".go") || name.ends_with("_test.go") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a Go file reads");
        methods.extend(
            text.lines()
                .filter_map(|l| l.strip_prefix("func (a *Adapter) "))
                .filter_map(|l| l.split('(').next())
                .map(str::to_string),
        );
    }
    let missing: Vec<_> = wit_methods()
        .into_iter()
        .filter(|m| !methods.contains(m))
        .collect();
    assert!(
        missing.is_empty(),
        "go/pandohost's Adapter has no method for {missing:?}: add it beside the others in \
         adapter.go, with the reference adapter's Go signature"
    );
}
