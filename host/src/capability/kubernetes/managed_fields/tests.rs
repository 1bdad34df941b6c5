use serde_json::{Value, json};

use super::{SHOW, strip, strip_value, take_show};

fn pod(name: &str, managers: &[&str]) -> Value {
    json!({
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"app.kubernetes.io/name": "web", "managedFields": "a label of that name"},
            "managedFields": managers.iter().map(|m| json!({
                "manager": m, "operation": "Apply", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {"f:containers": {}}}
            })).collect::<Vec<_>>(),
            "resourceVersion": "7"
        },
        "spec": {"containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running"}
    })
}

fn without_managed_fields(mut v: Value) -> Value {
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(|i| {
            strip_value(i);
        });
    } else {
        strip_value(&mut v);
    }
    v
}

fn stripped(v: &Value) -> Option<Value> {
    let out = strip(&serde_json::to_vec(v).expect("encodes"))?;
    Some(serde_json::from_slice(&out).expect("what strip writes is JSON"))
}

#[test]
fn an_objects_managed_fields_are_left_out_and_nothing_else() {
    let p = pod("a", &["kubectl", "kube-scheduler", "kubelet"]);
    let out = stripped(&p).expect("it had some");
    assert_eq!(out, without_managed_fields(p.clone()));
    assert!(out["metadata"].get("managedFields").is_none());
    // A label that happens to carry the name stays.
    assert_eq!(
        out["metadata"]["labels"]["managedFields"],
        "a label of that name"
    );
    assert_eq!(out["spec"], p["spec"]);
}

#[test]
fn each_item_of_a_list_loses_its_managed_fields() {
    let list = json!({
        "kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"},
        "items": [pod("a", &["x"]), pod("b", &[]), pod("c", &["y", "z"])]
    });
    let out = stripped(&list).expect("items had some");
    assert_eq!(out, without_managed_fields(list));
    for item in out["items"].as_array().expect("items") {
        assert!(item["metadata"].get("managedFields").is_none(), "{item}");
    }
}

#[test]
fn an_items_member_of_an_object_not_a_list_is_left_alone() {
    let cr = json!({
        "kind": "Widget", "apiVersion": "x.example/v1",
        "metadata": {"name": "w", "managedFields": [{"manager": "m"}]},
        "items": [{"metadata": {"managedFields": "the resource's own data"}}]
    });
    let out = stripped(&cr).expect("its metadata had some");
    assert!(out["metadata"].get("managedFields").is_none());
    assert_eq!(out["items"], cr["items"]);
}

#[test]
fn a_body_without_them_or_not_an_object_is_handed_on_as_it_came() {
    let status = json!({"kind": "Status", "status": "Failure", "message": "no managedFields here"});
    assert_eq!(strip(&serde_json::to_vec(&status).expect("encodes")), None);
    assert_eq!(strip(b"not json \"managedFields\""), None);
    assert_eq!(strip(b"[\"managedFields\"]"), None);
    let plain = serde_json::to_vec(&pod("a", &[])).expect("encodes");
    // An empty list is still a member that goes.
    let out = strip(&plain).expect("an empty managedFields is left out too");
    assert!(!String::from_utf8_lossy(&out).contains("\"managedFields\":[]"));
}

#[test]
fn member_names_with_escapes_are_written_back_escaped() {
    let body = br#"{"kind":"Pod","metadata":{"name":"a","managedFields":[],"x\"y":"\u00e9"},"sp\u0065c":{}}"#;
    let out: Value = serde_json::from_slice(&strip(body).expect("stripped")).expect("JSON");
    assert_eq!(
        out,
        json!({"kind": "Pod", "metadata": {"name": "a", "x\"y": "é"}, "spec": {}})
    );
}

#[test]
fn the_show_parameter_is_taken_off_the_query() {
    let mut q = vec![
        ("labelSelector".to_string(), "a=b".to_string()),
        (SHOW.to_string(), "true".to_string()),
    ];
    assert!(take_show(&mut q));
    assert_eq!(q, vec![("labelSelector".to_string(), "a=b".to_string())]);
    let mut q = vec![(SHOW.to_string(), "false".to_string())];
    assert!(!take_show(&mut q));
    assert!(q.is_empty(), "taken off whatever it says");
    assert!(!take_show(&mut Vec::new()));
}
