//! Tests of `requests.rs`, beside it.

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::{ApiResource, DynamicObject, GroupVersionKind, ObjectList, PartialObjectMeta};

use super::super::api::Listed;
use super::super::request::tests::pairs;
use super::super::request::{check_status, decode};
use super::*;

/// The written GET is kube-core's, field for field, for every name
/// it takes, cluster-wide and in a namespace, at any version.
#[test]
fn a_get_written_at_once_is_the_one_kube_core_builds() {
    let names = [
        "cfg",
        "a.b-c_d",
        "system:controller:x",
        "A1",
        &"n".repeat(253),
    ];
    let versions = [None, Some("0"), Some("12345"), Some("a b&c=d")];
    let cms = Api::<ConfigMap>::namespaced("pando-probe");
    let pvs = Api::<k8s_openapi::api::core::v1::PersistentVolume>::all();
    for name in names {
        assert!(plain_name(name), "{name}");
        for version in versions {
            let gp = GetParams {
                resource_version: version.map(str::to_owned),
            };
            for (written, built) in [
                (
                    cms.get_request(name, &gp),
                    cms.get_request_by_kube_core(name, &gp),
                ),
                (
                    pvs.get_request(name, &gp),
                    pvs.get_request_by_kube_core(name, &gp),
                ),
            ] {
                let (w, b) = (written.unwrap(), built.unwrap());
                assert_eq!(
                    (w.method, &w.path, &w.query, &w.body, w.content_type),
                    (b.method, &b.path, &b.query, &b.body, b.content_type),
                    "{name} at {version:?}"
                );
            }
        }
    }
    // Names of other characters go kube-core's way, and what it or the
    // SDK refuses stays refused.
    for name in [
        "",
        ".",
        "..",
        "a/b",
        "a?b",
        "a b",
        "caf\u{e9}",
        "a\"b",
        &"n".repeat(254),
    ] {
        assert!(!plain_name(name), "{name}");
    }
    for refused in ["", ".", "a/b", "a?b", "a b"] {
        assert!(
            cms.get_request(refused, &GetParams::default()).is_err(),
            "{refused}"
        );
    }
    let long = "n".repeat(254);
    assert_eq!(
        cms.get_request(&long, &GetParams::default()).unwrap().path,
        format!("/api/v1/namespaces/pando-probe/configmaps/{long}")
    );
}

#[test]
fn requests() {
    let cms = Api::<ConfigMap>::namespaced("pando-probe");
    let r = cms.get_request("cfg", &GetParams::default()).unwrap();
    assert_eq!(r.method, raw::Method::Get);
    assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps/cfg");
    assert!(r.query.is_empty() && r.body.is_none() && r.content_type.is_none());
    let r = cms.get_request("cfg", &GetParams::any()).unwrap();
    assert_eq!(r.query, pairs(&[("resourceVersion", "0")]));
    assert!(cms.get_request("a/b", &GetParams::default()).is_err());

    let r = cms
        .list_request(&ListParams::default().labels("a=b"))
        .unwrap();
    assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps");
    assert_eq!(r.query, pairs(&[("labelSelector", "a=b")]));

    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("cfg".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    let pp = PostParams {
        dry_run: true,
        field_manager: None,
    };
    let r = cms.create_request(&pp, to_json(&cm).unwrap()).unwrap();
    assert_eq!(r.method, raw::Method::Post);
    assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps");
    assert_eq!(r.query, pairs(&[("dryRun", "All")]));
    let body: serde_json::Value = serde_json::from_slice(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(body["kind"], "ConfigMap");
    assert_eq!(body["apiVersion"], "v1");
    assert_eq!(body["metadata"]["name"], "cfg");

    let r = cms
        .patch_request(
            "cfg",
            None,
            &PatchParams::apply("pando").force(),
            &Patch::Apply(&cm),
        )
        .unwrap();
    assert_eq!(r.method, raw::Method::Patch);
    assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps/cfg");
    assert_eq!(r.content_type, Some(raw::ContentType::ApplyPatch));
    assert_eq!(
        r.query,
        pairs(&[("force", "true"), ("fieldManager", "pando")])
    );
    let ops = serde_json::json!([{"op": "remove", "path": "/data/a"}]);
    let r = cms
        .patch_request(
            "cfg",
            Some("status"),
            &PatchParams::default(),
            &Patch::Json(&ops),
        )
        .unwrap();
    assert_eq!(
        r.path,
        "/api/v1/namespaces/pando-probe/configmaps/cfg/status"
    );
    assert_eq!(r.content_type, Some(raw::ContentType::JsonPatch));
    assert_eq!(
        r.body.as_deref(),
        Some(&br#"[{"op":"remove","path":"/data/a"}]"#[..])
    );
    let merge = Patch::Merge(serde_json::json!({}));
    assert!(
        cms.patch_request("cfg", None, &PatchParams::default().force(), &merge)
            .is_err(),
        "force is for server-side apply only"
    );

    let r = cms
        .delete_request("cfg", &DeleteParams::foreground())
        .unwrap();
    assert_eq!(r.method, raw::Method::Delete);
    assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps/cfg");
    assert_eq!(
        r.body.as_deref(),
        Some(&br#"{"propagationPolicy":"Foreground"}"#[..])
    );

    let r = cms
        .delete_collection_request(
            &DeleteParams::default(),
            &ListParams::default().labels("x=y"),
        )
        .unwrap();
    assert_eq!(r.path, "/api/v1/namespaces/pando-probe/configmaps");
    assert_eq!(r.query, pairs(&[("labelSelector", "x=y")]));
}

#[test]
fn a_namespaced_kind_across_namespaces_does_not_write() {
    let all = Api::<Pod>::all();
    assert!(all.list_request(&ListParams::default()).is_ok());
    assert!(
        all.create_request(&PostParams::default(), b"{}".to_vec())
            .is_err()
    );
    assert!(
        all.delete_collection_request(&DeleteParams::default(), &ListParams::default())
            .is_err()
    );
}

fn response(status: u16, body: &str) -> raw::Response {
    raw::Response {
        status,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.as_bytes().to_vec(),
    }
}

const LIST: &str = r#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"42","continue":"tok"},"items":[{"metadata":{"name":"a","uid":"1"},"data":{"k":"v"}},{"metadata":{"name":"b"}}]}"#;

#[test]
fn decodes_answers() {
    let pod: Pod = decode(&response(
        200,
        r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"pando-x"}}"#,
    ))
    .unwrap();
    assert_eq!(pod.metadata.name.as_deref(), Some("web"));

    type Typed = <() as Listed<ConfigMap>>::List;
    let list: Typed = decode(&response(200, LIST)).unwrap();
    assert_eq!(list.items.len(), 2);
    assert_eq!(list.metadata.resource_version.as_deref(), Some("42"));
    assert_eq!(list.metadata.continue_.as_deref(), Some("tok"));

    let e = decode::<Pod>(&response(
            404,
            r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"web\" not found","reason":"NotFound","code":404}"#,
        ))
        .unwrap_err();
    assert!(e.is_not_found());
    assert!(matches!(
        decode::<Pod>(&response(200, "not json")),
        Err(KubeError::Decode(_))
    ));
    assert!(matches!(
        decode::<Pod>(&response(200, r#"{"kind":"Service"}"#)),
        Err(KubeError::Decode(_))
    ));
    assert!(check_status(&response(202, "{}")).is_ok());
    assert!(
        check_status(&response(409, "{}"))
            .unwrap_err()
            .is_conflict()
    );
}

#[test]
fn dynamic_and_metadata_lists_decode() {
    type Dynamic = <ApiResource as Listed<DynamicObject>>::List;
    let list: Dynamic = decode(&response(200, LIST)).unwrap();
    assert_eq!(list.metadata.resource_version.as_deref(), Some("42"));
    assert_eq!(list.items[0].data["data"]["k"], "v");
    let meta: ObjectList<PartialObjectMeta<ConfigMap>> = decode(&response(200, LIST)).unwrap();
    let names: Vec<_> = meta.iter().map(|m| m.metadata.name.clone()).collect();
    assert_eq!(names, [Some("a".to_string()), Some("b".to_string())]);
    assert_eq!(meta.items[0].metadata.uid.as_deref(), Some("1"));

    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let widgets = Api::<DynamicObject>::namespaced_with("pando-x", &ar);
    let r = widgets
        .create_request(&PostParams::default(), b"{}".to_vec())
        .unwrap();
    assert_eq!(r.path, "/apis/example.com/v1/namespaces/pando-x/widgets");
}
