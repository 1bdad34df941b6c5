//! Plans and trial requests as people write them: the serde shape of the
//! host's types (`pando_host::types::BundlePlan`) wants every list spelled
//! out and enum cases as Rust names (`protocol: Tcp`); this fills in what a
//! kubectl user leaves out and reads the spellings they use, before the
//! document is decoded (with the same located errors as before).
//!
//! - a list left out is empty (`command`, `args`, `env`, `ports`, `mounts`,
//!   `volumes`, `pull_credentials`, an egress rule's `ports`); an option
//!   left out is none (serde already reads that);
//! - a port's `protocol` left out is TCP; `TCP`, `tcp` and `Tcp` are one;
//! - `egress: open`, `none`, or `{restricted: [...]}`, in any case;
//! - `read_only` left out is false;
//! - keys as the WIT spells them (`cpu-millis`, `read-only`) are read as
//!   the Rust field names (`cpu_millis`).
//!
//! What has no safe default stays required: `id`, `revision`, `network`
//! (an app's egress is said, never assumed), each workload's `name`,
//! `image` and `resources`.

use serde_json::{Map, Value};

/// Fills in the defaults of a `BundlePlan` document.
pub fn normalize_plan(doc: &mut Value) {
    keys_to_snake_case(doc);
    let Some(plan) = doc.as_object_mut() else {
        return;
    };
    for list in ["workloads", "volumes", "pull_credentials"] {
        empty_list(plan, list);
    }
    if let Some(Value::Array(workloads)) = plan.get_mut("workloads") {
        workloads.iter_mut().for_each(normalize_workload);
    }
    if let Some(network) = plan.get_mut("network") {
        normalize_network(network);
    }
}

/// Fills in the defaults of a `TrialRequest` document.
pub fn normalize_trial(doc: &mut Value) {
    keys_to_snake_case(doc);
    let Some(request) = doc.as_object_mut() else {
        return;
    };
    empty_list(request, "pull_credentials");
    if let Some(workload) = request.get_mut("workload") {
        normalize_workload(workload);
    }
    if let Some(network) = request.get_mut("network") {
        normalize_network(network);
    }
}

fn empty_list(object: &mut Map<String, Value>, key: &str) {
    object
        .entry(key)
        .or_insert_with(|| Value::Array(Vec::new()));
}

fn normalize_workload(workload: &mut Value) {
    let Some(w) = workload.as_object_mut() else {
        return;
    };
    for list in ["command", "args", "env", "ports", "mounts"] {
        empty_list(w, list);
    }
    if let Some(Value::Array(ports)) = w.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            let protocol = port
                .entry("protocol")
                .or_insert_with(|| Value::String("Tcp".into()));
            canonical_case(protocol, &["Tcp", "Udp"]);
        }
    }
    if let Some(Value::Array(mounts)) = w.get_mut("mounts") {
        for mount in mounts.iter_mut().filter_map(Value::as_object_mut) {
            mount.entry("read_only").or_insert(Value::Bool(false));
        }
    }
}

fn normalize_network(network: &mut Value) {
    let Some(egress) = network.get_mut("egress") else {
        return;
    };
    canonical_case(egress, &["Open", "None", "Restricted"]);
    // `{restricted: [...]}`: the one case with data, keyed by its name.
    if let Value::Object(cases) = egress
        && cases.len() == 1
        && let Some(case) = cases
            .keys()
            .find(|k| k.eq_ignore_ascii_case("restricted"))
            .cloned()
        && let Some(mut rules) = cases.remove(&case)
    {
        if let Value::Array(list) = &mut rules {
            for rule in list.iter_mut().filter_map(Value::as_object_mut) {
                empty_list(rule, "ports");
            }
        }
        cases.insert("Restricted".to_string(), rules);
    }
}

/// A string that names one of `cases` in another case becomes that case;
/// anything else is left for the decoder to refuse, naming the cases.
fn canonical_case(value: &mut Value, cases: &[&str]) {
    if let Value::String(s) = value
        && let Some(case) = cases.iter().find(|c| c.eq_ignore_ascii_case(s))
    {
        *s = (*case).to_string();
    }
}

/// `cpu-millis` → `cpu_millis`, in every object's keys. Plans hold no
/// map of free-form keys (environment variables are a list of records),
/// so every key is a field name.
fn keys_to_snake_case(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (key, mut v) in old {
                keys_to_snake_case(&mut v);
                map.insert(key.replace('-', "_"), v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(keys_to_snake_case),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use pando_host::types::{BundlePlan, EgressPolicy, Protocol, TrialRequest};
    use serde_json::json;

    use super::*;

    fn plan(mut doc: Value) -> BundlePlan {
        normalize_plan(&mut doc);
        serde_json::from_value(doc).expect("a plan")
    }

    #[test]
    fn a_short_plan_gets_its_empty_lists_and_tcp() {
        let p = plan(json!({
            "id": "hello", "revision": "1",
            "workloads": [{
                "name": "web", "image": "nginx:1.27",
                "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}],
                "resources": {"requests": {"cpu-millis": 100, "memory-bytes": 67108864}},
                "mounts": [{"volume": "data", "path": "/data"}],
            }],
            "volumes": [{"name": "data"}],
            "network": {"egress": "open"},
        }));
        let web = &p.workloads[0];
        assert!(web.command.is_empty() && web.args.is_empty() && web.env.is_empty());
        assert_eq!(web.ports[0].protocol, Protocol::Tcp);
        assert_eq!(web.ports[1].protocol, Protocol::Udp);
        assert_eq!(web.resources.requests.cpu_millis, 100);
        assert!(!web.mounts[0].read_only);
        assert_eq!(p.volumes[0].size_bytes, None);
        assert!(p.pull_credentials.is_empty());
        assert_eq!(p.network.egress, EgressPolicy::Open);
    }

    #[test]
    fn a_workload_without_security_runs_as_its_image_and_one_with_it_keeps_it() {
        let p = plan(json!({
            "id": "a", "revision": "1", "network": {"egress": "open"},
            "workloads": [
                {"name": "web", "image": "nginx:1.27",
                 "resources": {"requests": {"cpu-millis": 100, "memory-bytes": 67108864}}},
                {"name": "db", "image": "postgres:17",
                 "resources": {"requests": {"cpu-millis": 100, "memory-bytes": 67108864}},
                 "security": {"run-as-user": 999, "fs-group": 999, "restricted": true}},
            ],
        }));
        assert!(p.workloads[0].security.is_image_default());
        let db = &p.workloads[1].security;
        assert_eq!(
            (db.run_as_user, db.run_as_group, db.fs_group),
            (Some(999), None, Some(999))
        );
        assert!(db.restricted);
    }

    #[test]
    fn egress_is_read_in_any_case_and_restricted_rules_get_their_ports() {
        let restricted = plan(json!({
            "id": "a", "revision": "1",
            "network": {"egress": {"restricted": [{"destination": "198.18.0.0/16"}]}},
        }));
        match restricted.network.egress {
            EgressPolicy::Restricted(rules) => {
                assert_eq!(rules[0].destination, "198.18.0.0/16");
                assert!(rules[0].ports.is_empty());
            }
            other => panic!("{other:?}"),
        }
        let none = plan(json!({"id": "a", "revision": "1", "network": {"egress": "NONE"}}));
        assert_eq!(none.network.egress, EgressPolicy::None);
    }

    #[test]
    fn what_has_no_safe_default_stays_required_and_bad_cases_stay_refused() {
        let mut doc = json!({"id": "a", "revision": "1"});
        normalize_plan(&mut doc);
        let err = serde_json::from_value::<BundlePlan>(doc).expect_err("no network");
        assert!(err.to_string().contains("network"), "{err}");

        let mut doc = json!({"id": "a", "revision": "1", "network": {"egress": "open"},
            "workloads": [{"name": "w", "image": "i", "ports": [{"port": 1, "protocol": "sctp"}],
                           "resources": {"requests": {"cpu_millis": 1, "memory_bytes": 1}}}]});
        normalize_plan(&mut doc);
        let err = serde_json::from_value::<BundlePlan>(doc).expect_err("sctp");
        assert!(err.to_string().contains("sctp"), "{err}");
    }

    #[test]
    fn a_trial_request_is_read_the_same_way() {
        let mut doc = json!({
            "bundle": "shop", "duration-ms": 5000,
            "workload": {"name": "t", "image": "busybox:1.36", "ports": [{"port": 8080}],
                         "resources": {"requests": {"cpu_millis": 10, "memory_bytes": 1048576}}},
            "network": {"egress": "none"},
        });
        normalize_trial(&mut doc);
        let t: TrialRequest = serde_json::from_value(doc).expect("a trial request");
        assert_eq!(t.duration_ms, 5000);
        assert_eq!(t.workload.ports[0].protocol, Protocol::Tcp);
        assert!(t.pull_credentials.is_empty());
    }
}
