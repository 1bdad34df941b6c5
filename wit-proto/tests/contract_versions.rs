//! `pando:runtime@0.2.0` (wit/v0.2) against 0.1.0 (wit/): no call of 0.1.0
//! is lost, the calls that wait are `async` and those that only compute are
//! not, and the types differ only where docs/wit.md ("0.2.0") says why.
//! These fail naming the call or the type and the file to change.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use wit_parser::{FunctionKind, PackageId, Resolve, TypeDefKind, TypeOwner};

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn contract(dir: &str) -> (Resolve, PackageId) {
    let mut resolve = Resolve::default();
    let (pkg, _) = resolve
        .push_dir(root().join(dir))
        .unwrap_or_else(|e| panic!("{dir} does not read: {e:?}"));
    (resolve, pkg)
}

/// The adapter interface's functions, by name, with their kind.
fn adapter_calls(resolve: &Resolve, pkg: PackageId) -> BTreeMap<String, FunctionKind> {
    let iface = resolve.packages[pkg].interfaces["adapter"];
    resolve.interfaces[iface]
        .functions
        .values()
        .map(|f| (f.name.clone(), f.kind.clone()))
        .collect()
}

/// 0.2.0's calls that only compute, so stay plain functions (a plain call
/// costs less, and `upstream` runs on every proxied request).
const PLAIN: &[&str] = &["info", "configure", "capabilities", "upstream"];

/// 0.1.0's resource methods that 0.2.0 replaced by streams and a future
/// (`exec` returns them as a record; `resize` is a stream `exec` takes).
const EXEC_SESSION_METHODS: &[&str] = &["stdin", "stdout", "stderr", "resize", "wait"];

#[test]
fn the_0_2_contract_names_itself_0_2_0_and_uses_no_wasi_0_2_interface() {
    let (resolve, pkg) = contract("wit/v0.2");
    let name = &resolve.packages[pkg].name;
    assert_eq!(
        (name.namespace.as_str(), name.name.as_str()),
        ("pando", "runtime")
    );
    assert_eq!(
        name.version.as_ref().map(ToString::to_string).as_deref(),
        Some("0.2.0"),
        "wit/v0.2 must be package pando:runtime@0.2.0"
    );
    let wasi_0_2: Vec<String> = resolve
        .packages
        .iter()
        .map(|(_, p)| &p.name)
        .filter(|n| n.namespace == "wasi")
        .filter(|n| n.version.as_ref().is_some_and(|v| v.minor == 2))
        .map(ToString::to_string)
        .collect();
    assert!(
        wasi_0_2.is_empty(),
        "wit/v0.2 reaches {wasi_0_2:?}: 0.2.0 streams are `stream<u8>`, its clock wasi:clocks@0.3.0"
    );
}

#[test]
fn every_0_1_call_is_in_0_2_and_0_2_adds_none_unannounced() {
    let (r1, p1) = contract("wit");
    let (r2, p2) = contract("wit/v0.2");
    let v1: BTreeSet<String> = adapter_calls(&r1, p1)
        .into_iter()
        .filter(|(_, k)| matches!(k, FunctionKind::Freestanding))
        .map(|(n, _)| n)
        .collect();
    let v2: BTreeSet<String> = adapter_calls(&r2, p2).into_keys().collect();
    let lost: Vec<_> = v1.difference(&v2).collect();
    assert!(
        lost.is_empty(),
        "wit/v0.2/adapter.wit lost {lost:?} of 0.1.0"
    );
    let added: Vec<_> = v2.difference(&v1).collect();
    assert!(
        added.is_empty(),
        "wit/v0.2/adapter.wit adds {added:?}: say why in docs/wit.md and list it here"
    );
    let methods: BTreeSet<String> = adapter_calls(&r2, p2)
        .into_iter()
        .filter(|(_, k)| {
            !matches!(
                k,
                FunctionKind::Freestanding | FunctionKind::AsyncFreestanding
            )
        })
        .map(|(n, _)| n)
        .collect();
    assert!(
        methods.is_empty(),
        "0.2.0's adapter has no resources (its exec session is streams and a future): {methods:?}"
    );
    let old: BTreeSet<String> = adapter_calls(&r1, p1)
        .into_iter()
        .filter(|(_, k)| matches!(k, FunctionKind::Method(_)))
        .map(|(n, _)| n.rsplit('.').next().unwrap_or(&n).to_string())
        .collect();
    let expected: BTreeSet<String> = EXEC_SESSION_METHODS.iter().map(|m| m.to_string()).collect();
    assert_eq!(
        old, expected,
        "0.1.0's exec-session methods changed; 0.2.0 must still carry each (wit/v0.2 `exec`)"
    );
}

/// The parameters 0.2.0 changed, and why: an output stream a call wrote into
/// is now a `byte-stream` it returns; a sink is now a `stream` it returns; an
/// exec session's stdin and sizes are streams core hands it.
const CHANGED_PARAMS: &[(&str, &[&str])] = &[
    ("snapshot-volume", &["volume"]),
    ("run", &["workload", "request"]),
    ("watch-bundles", &[]),
    ("exec", &["workload", "request", "stdin", "resize"]),
];

/// Each call's parameter names.
fn params(resolve: &Resolve, pkg: PackageId) -> BTreeMap<String, Vec<String>> {
    let iface = resolve.packages[pkg].interfaces["adapter"];
    resolve.interfaces[iface]
        .functions
        .values()
        .filter(|f| {
            matches!(
                f.kind,
                FunctionKind::Freestanding | FunctionKind::AsyncFreestanding
            )
        })
        .map(|f| {
            (
                f.name.clone(),
                f.params.iter().map(|p| p.name.clone()).collect(),
            )
        })
        .collect()
}

#[test]
fn a_0_2_call_takes_what_its_0_1_call_took_but_where_streams_changed_it() {
    let (r1, p1) = contract("wit");
    let (r2, p2) = contract("wit/v0.2");
    let mut v1 = params(&r1, p1);
    for (name, now) in CHANGED_PARAMS {
        v1.insert(
            name.to_string(),
            now.iter().map(|p| p.to_string()).collect(),
        );
    }
    for (name, took) in params(&r2, p2) {
        assert_eq!(
            v1.get(&name),
            Some(&took),
            "`{name}` in wit/v0.2/adapter.wit takes other parameters than in 0.1.0: name the change in CHANGED_PARAMS and docs/wit.md"
        );
    }
}

#[test]
fn a_0_2_call_that_waits_is_async_and_one_that_only_computes_is_plain() {
    let (resolve, pkg) = contract("wit/v0.2");
    for (name, kind) in adapter_calls(&resolve, pkg) {
        let plain = PLAIN.contains(&name.as_str());
        match kind {
            FunctionKind::Freestanding => assert!(
                plain,
                "`{name}` waits on the runtime: make it `async func` in wit/v0.2/adapter.wit"
            ),
            FunctionKind::AsyncFreestanding => assert!(
                !plain,
                "`{name}` only computes: keep it a plain `func` (a plain call costs less)"
            ),
            other => panic!("`{name}` is a {other:?}; the adapter interface has functions only"),
        }
    }
}

/// A record's or variant's field names, by type name, for one interface.
fn shapes(resolve: &Resolve, pkg: PackageId, iface: &str) -> BTreeMap<String, Vec<String>> {
    let id = resolve.packages[pkg].interfaces[iface];
    resolve
        .types
        .iter()
        .filter(|(_, t)| t.owner == TypeOwner::Interface(id))
        .filter_map(|(_, t)| {
            let fields = match &t.kind {
                TypeDefKind::Record(r) => r.fields.iter().map(|f| f.name.clone()).collect(),
                TypeDefKind::Variant(v) => v.cases.iter().map(|c| c.name.clone()).collect(),
                TypeDefKind::Enum(e) => e.cases.iter().map(|c| c.name.clone()).collect(),
                _ => return None,
            };
            Some((t.name.clone()?, fields))
        })
        .collect()
}

#[test]
fn the_0_2_types_differ_from_0_1_only_where_docs_wit_md_says_why() {
    let (r1, p1) = contract("wit");
    let (r2, p2) = contract("wit/v0.2");
    let (t1, mut t2) = (shapes(&r1, p1, "types"), shapes(&r2, p2, "types"));
    // docs/wit.md, "0.2.0": who a workload runs as (restricted pods).
    let spec = t2
        .get_mut("workload-spec")
        .expect("0.2.0 has workload-spec");
    assert_eq!(spec.last().map(String::as_str), Some("security"));
    spec.pop();
    let security = t2
        .remove("security")
        .expect("0.2.0 has the security record");
    assert_eq!(
        security,
        ["run-as-user", "run-as-group", "fs-group", "restricted"]
    );
    // Streams: a produced byte stream and how it ended, an exec session's
    // outputs, a bundle watch's events and end.
    for new in ["byte-stream", "exec-session", "bundle-watch"] {
        assert!(t2.remove(new).is_some(), "0.2.0 has `{new}`");
    }
    assert_eq!(
        t1, t2,
        "wit/v0.2/types.wit drifted from wit/types.wit: a change must be named in this test and in docs/wit.md"
    );
}
