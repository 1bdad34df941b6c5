//! Loading checks: every way a component can be wrong gets a clear error
//! that names the thing and the fix, and a good one loads.

use pando_host::{Grants, Host, LoadError, LoadOptions, World};
use pando_tests::components;

fn host(cache: &tempfile::TempDir) -> Host {
    Host::builder()
        .cache_dir(cache.path())
        .build()
        .expect("host builds")
}

async fn load_err(bytes: &[u8], what: &str, options: LoadOptions) -> LoadError {
    let cache = tempfile::tempdir().expect("tempdir");
    match host(&cache).load_bytes(what, bytes, options).await {
        Ok(a) => panic!("{what} loaded as {a:?}; expected an error"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn not_wasm_is_refused_naming_the_file() {
    let err = load_err(
        b"#!/bin/sh\necho hi\n",
        "adapter.sh",
        LoadOptions::default(),
    )
    .await;
    assert!(matches!(err, LoadError::NotWasm { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("adapter.sh") && msg.contains("wasm32-wasip2"),
        "{msg}"
    );
}

#[tokio::test]
async fn core_module_is_refused_with_the_fix() {
    // The smallest valid core module: magic and version 1.
    let err = load_err(b"\0asm\x01\0\0\0", "core.wasm", LoadOptions::default()).await;
    assert!(matches!(err, LoadError::CoreModule { .. }), "{err:?}");
    assert!(err.to_string().contains("core WebAssembly module"), "{err}");
}

#[tokio::test]
async fn truncated_component_is_malformed() {
    let bytes = std::fs::read(components::test_adapter()).expect("read test adapter");
    let err = load_err(
        &bytes[..bytes.len() / 2],
        "half.wasm",
        LoadOptions::default(),
    )
    .await;
    assert!(matches!(err, LoadError::Malformed { .. }), "{err:?}");
    assert!(err.to_string().contains("half.wasm"), "{err}");
}

#[tokio::test]
async fn wrong_contract_version_lists_the_served_ones() {
    let path = components::wrong_version();
    let bytes = std::fs::read(&path).expect("read");
    let err = load_err(&bytes, "wrong.wasm", LoadOptions::default()).await;
    match &err {
        LoadError::UnsupportedVersion { found, served, .. } => {
            assert_eq!(found, "0.9.0");
            assert!(served.contains("0.1.0"), "{served}");
        }
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
}

/// The test adapter with every `pando:runtime/…@0.1.0` name it imports
/// and exports rewritten to `@{version}` (of the same length, so the
/// binary stays valid): what the same adapter built against that contract
/// version would name.
fn test_adapter_at(version: &str) -> Vec<u8> {
    assert_eq!(version.len(), "0.1.0".len());
    let mut bytes = std::fs::read(components::test_adapter()).expect("read test adapter");
    let (needle, with) = (b"@0.1.0".as_slice(), format!("@{version}"));
    let mut patched = 0;
    let mut i = 0;
    while let Some(at) = bytes[i..].windows(needle.len()).position(|w| w == needle) {
        let at = i + at;
        let before = &bytes[at.saturating_sub(40)..at];
        if before.windows(14).any(|w| w == b"pando:runtime/") {
            bytes[at..at + needle.len()].copy_from_slice(with.as_bytes());
            patched += 1;
        }
        i = at + needle.len();
    }
    assert!(patched > 0, "no pando:runtime names found to rewrite");
    bytes
}

#[tokio::test]
async fn a_newer_compatible_contract_version_is_served() {
    let cache = tempfile::tempdir().expect("tempdir");
    let bytes = test_adapter_at("0.1.9");
    let adapter = host(&cache)
        .load_bytes("patch.wasm", &bytes, LoadOptions::default())
        .await
        .expect("an adapter built against 0.1.9 loads in a 0.1.0 host");
    assert_eq!(adapter.shape().version, "0.1.9");
    assert_eq!(pando_host::served_version("0.1.9"), Some("0.1.0"));
    let up = adapter
        .upstream(
            &pando_host::CallContext::default(),
            &pando_host::types::WorkloadRef {
                bundle: "shop".into(),
                workload: "web".into(),
            },
            8080,
        )
        .await
        .expect("and answers calls");
    assert_eq!(up.port, 8080);
}

#[tokio::test]
async fn an_incompatible_contract_version_is_refused_naming_what_is_served() {
    let err = load_err(
        &test_adapter_at("0.3.0"),
        "minor.wasm",
        LoadOptions::default(),
    )
    .await;
    match &err {
        LoadError::UnsupportedVersion { found, served, .. } => {
            assert_eq!(found, "0.3.0");
            assert_eq!(served, "0.2.0, 0.1.0");
            assert!(err.to_string().contains("semver-compatible"), "{err}");
        }
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
}

#[tokio::test]
async fn kubernetes_import_without_a_grant_is_refused_by_name() {
    let bytes = std::fs::read(components::kube_probe()).expect("read");
    let err = load_err(&bytes, "probe.wasm", LoadOptions::default()).await;
    match &err {
        LoadError::Import { import, reason, .. } => {
            assert!(
                import.starts_with("pando:runtime/kubernetes@0.1.0"),
                "{import}"
            );
            assert!(reason.contains("kubernetes"), "{reason}");
            assert!(reason.contains("grants"), "{reason}");
        }
        other => panic!("expected an import error, got {other:?}"),
    }
}

#[tokio::test]
async fn kubernetes_import_with_a_grant_loads_as_the_kubernetes_world() {
    let cache = tempfile::tempdir().expect("tempdir");
    let grants = Grants::from_text(
        "inline",
        "kubernetes:\n  rules:\n  - verbs: [get]\n    resources: [nodes]\n    cluster: true\n",
    )
    .expect("grants parse");
    let adapter = host(&cache)
        .load_file(
            &components::kube_probe(),
            LoadOptions {
                grants,
                ..LoadOptions::default()
            },
        )
        .await
        .expect("probe loads with a kubernetes grant");
    assert_eq!(adapter.shape().world, World::KubernetesAdapter);
    assert_eq!(adapter.kind_info().kind, "kube-probe");
}

#[tokio::test]
async fn test_adapter_loads_as_a_plain_runtime_adapter() {
    let cache = tempfile::tempdir().expect("tempdir");
    let adapter = host(&cache)
        .load_file(&components::test_adapter(), LoadOptions::default())
        .await
        .expect("test adapter loads");
    let shape = adapter.shape();
    assert_eq!(shape.world, World::RuntimeAdapter);
    assert_eq!(shape.version, "0.1.0");
    assert!(
        shape
            .exports
            .iter()
            .any(|e| e == "pando:runtime/adapter@0.1.0"),
        "{:?}",
        shape.exports
    );
    assert!(
        !shape.imports.iter().any(|i| i.contains("kubernetes")),
        "the test adapter must not import the Kubernetes API: {:?}",
        shape.imports
    );
    let info = adapter.kind_info();
    assert_eq!(info.kind, "test");
    let schema: serde_json::Value =
        serde_json::from_str(&info.config_schema).expect("schema is JSON");
    assert_eq!(schema["additionalProperties"], serde_json::json!(false));
}

#[tokio::test]
async fn configuration_is_checked_at_load() {
    let bytes = std::fs::read(components::test_adapter()).expect("read");
    let err = load_err(
        &bytes,
        "test.wasm",
        LoadOptions {
            config: r#"{"bogus": 1}"#.into(),
            ..LoadOptions::default()
        },
    )
    .await;
    match &err {
        LoadError::Config { error, .. } => {
            let adapter_err = error.adapter_error().expect("the adapter's own error");
            assert_eq!(adapter_err.kind(), "invalid");
            assert!(adapter_err.message().contains("bogus"), "{err}");
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[tokio::test]
async fn invalid_grants_name_the_field() {
    let err = Grants::from_text("grants.yaml", "kubernetes:\n  rate: {qps: 0, burst: 1}\n")
        .expect_err("qps 0 is refused");
    let msg = err.to_string();
    assert!(
        msg.contains("grants.yaml") && msg.contains("kubernetes.rate.qps"),
        "{msg}"
    );
}
