//! `pando-host schema` and the files in `schemas/`: each file is what the
//! verb prints, byte for byte; the repository's own grants and plan
//! validate against them; and on a corpus of right and wrong documents the
//! schemas answer as the loaders do (`Grants::from_text`, the CLI's
//! `normalize_plan` and decoding, `Limits` and its `check`).

use std::path::PathBuf;
use std::process::Output;

use jsonschema::Validator;
use pando_cli::input::decode_normalized;
use pando_cli::plan::{normalize_plan, normalize_trial};
use pando_host::Grants;
use pando_host::limits::Limits;
use pando_host::types::{BundlePlan, TrialRequest};
use serde_json::Value;

use crate::common::{assert_exit, repo_root, stderr, stdout};

const DOCUMENTS: [&str; 4] = ["grants", "plan", "trial", "limits"];

/// Runs `pando-host` in the repository's root, without the caller's
/// environment.
fn run(args: &[&str]) -> Output {
    crate::common::run_in_repo(args)
}

fn schema_file(name: &str) -> PathBuf {
    repo_root().join(format!("schemas/{name}.schema.json"))
}

/// The validator of the committed `schemas/NAME.schema.json`.
fn validator(name: &str) -> Validator {
    let path = schema_file(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: Value = serde_json::from_str(&text).expect("a JSON schema");
    jsonschema::validator_for(&schema)
        .unwrap_or_else(|e| panic!("{} does not compile: {e}", path.display()))
}

/// `text` (YAML or JSON) as the CLI reads it before decoding.
fn yaml(text: &str) -> Value {
    pando_host::yaml::from_str::<Value>(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn errors(v: &Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn each_committed_schema_is_what_the_verb_prints() {
    let mut stale = Vec::new();
    for name in DOCUMENTS {
        let o = run(&["schema", name]);
        assert_exit(&o, 0);
        assert!(
            stdout(&o).ends_with("}\n"),
            "{name}: pretty JSON and a newline"
        );
        let committed = std::fs::read(schema_file(name)).unwrap_or_default();
        if o.stdout != committed {
            stale.push(format!(
                "schemas/{name}.schema.json is not what `pando-host schema {name}` prints: run \
                 `pando-host schema {name} > schemas/{name}.schema.json` (from the repository's \
                 root; `cargo run -q -p pando-cli -- schema {name} > schemas/{name}.schema.json`)"
            ));
        }
    }
    assert!(stale.is_empty(), "{}", stale.join("\n"));
}

#[test]
fn each_schema_is_a_valid_draft_2020_12_schema() {
    for name in DOCUMENTS {
        let text = std::fs::read_to_string(schema_file(name)).expect("the schema file");
        let schema: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        if let Err(e) = jsonschema::meta::validate(&schema) {
            panic!("schemas/{name}.schema.json against its meta-schema: {e}");
        }
    }
}

#[test]
fn the_verb_loads_no_adapter_and_refuses_an_unknown_document() {
    // A missing adapter would fail the load: the verb never gets there.
    let o = run(&["--adapter", "/nonexistent/adapter.wasm", "schema", "limits"]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("\"title\": \"Pando adapter limits\""),
        "{}",
        stdout(&o)
    );
    let o = run(&["schema", "grant"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("grants"),
        "names the documents: {}",
        stderr(&o)
    );
}

#[test]
fn the_repository_documents_validate() {
    for (file, schema) in [
        ("deploy/grants/kubernetes.yaml", "grants"),
        ("examples/hello.yaml", "plan"),
    ] {
        let text = std::fs::read_to_string(repo_root().join(file)).expect(file);
        let errs = errors(&validator(schema), &yaml(&text));
        assert!(errs.is_empty(), "{file}:\n{}", errs.join("\n"));
    }
}

#[test]
fn wrong_documents_do_not_validate() {
    let grants = validator("grants");
    for (what, doc) in [
        (
            "an unknown resource",
            "kubernetes:\n  rules:\n  - {verbs: [get], resources: [pod], namespaces: [a]}\n",
        ),
        ("an unknown field", "kubernetes:\n  rulez: []\n"),
    ] {
        assert!(!grants.is_valid(&yaml(doc)), "{what} validates:\n{doc}");
        assert!(Grants::from_text("t", doc).is_err(), "{what} loads:\n{doc}");
    }
    let plan = validator("plan");
    let doc = "id: a\nrevision: '1'\nnetwork: {egress: open}\nworkloads:\n- name: w\n  image: i\n  \
               resources: {requests: {cpu_millis: 1, memory_bytes: 1}}\n  ports: [{port: 80, protocol: tc}]\n";
    assert!(!plan.is_valid(&yaml(doc)), "protocol `tc` validates");
    assert!(decode_plan(doc).is_err(), "protocol `tc` decodes");
}

/// A plan as `apply` decodes it (`pando_cli::input::read_normalized`).
fn decode_plan(text: &str) -> Result<BundlePlan, String> {
    decode_normalized("plan", yaml(text), normalize_plan).map_err(|e| format!("{e:?}"))
}

/// A trial request as `trial` decodes it.
fn decode_trial(text: &str) -> Result<TrialRequest, String> {
    decode_normalized("trial", yaml(text), normalize_trial).map_err(|e| format!("{e:?}"))
}

/// Asserts the schema and the loader give the same answer on each document.
#[track_caller]
fn agree<E: std::fmt::Display>(name: &str, load: impl Fn(&str) -> Result<(), E>, docs: &[&str]) {
    let v = validator(name);
    let mut disagree = Vec::new();
    for doc in docs {
        let loaded = load(doc);
        let errs = errors(&v, &yaml(doc));
        match (&loaded, errs.is_empty()) {
            (Ok(()), false) => disagree.push(format!(
                "loads but does not validate:\n{doc}\n{}",
                errs.join("\n")
            )),
            (Err(e), true) => disagree.push(format!("validates but does not load ({e}):\n{doc}")),
            _ => {}
        }
    }
    assert!(disagree.is_empty(), "{name}:\n{}", disagree.join("\n---\n"));
}

/// A grants document of one rule.
fn rule(rule: &str) -> String {
    format!("kubernetes:\n  rules:\n  - {rule}\n")
}

/// A grants document of these object rules.
fn objects(objects: &str) -> String {
    format!("kubernetes:\n  objects: {objects}\n")
}

#[test]
fn the_grants_schema_answers_as_the_loader_does() {
    let mut docs: Vec<String> = [
        "{}",
        "kubernetes: null",
        "kubernetes: {}",
        "kubernetes: {rate: {qps: 0.5, burst: 1}}",
        "kubernetes: {rate: {qps: 0, burst: 1}}",
        "kubernetes: {rate: {qps: 1, burst: 0}}",
        "kubernetes: {rate: {qps: 1}}",
        "kubernetes: {rate: {qps: 1, burst: 1, write_bytes_per_second: 0}}",
        "kubernetes: {max_body_bytes: -1}",
    ]
    .map(String::from)
    .to_vec();
    for resource in [
        "pods",
        "pod",
        "Pods",
        "pods/log",
        "pods/logs",
        "pods/attach",
        "pods/exec",
        "pods/*",
        "'*'",
        "core/pods",
        "bindings",
        "users",
        "nodes/proxy",
        "serviceaccounts/token",
        "apps/deployments/scale",
        "apps/deployment",
        "apps/deployments/proxy",
        "autoscaling/horizontalpodautoscalers",
        "extensions/ingresses",
        "rbac.authorization.k8s.io/rolebindings",
        "networking.k8s.io/widgets",
        "example.com/widgets",
        "example.com/widgets/status",
        "example.com/widgets/proxy",
        "example.com/attach",
        "example..com/widgets",
        "-example.com/widgets",
        "example.com/widgets/status/more",
        "authentication.k8s.io/tokenreviews",
        "authentication.k8s.io/tokenreviews/status",
        "certificates.k8s.io/certificatesigningrequests",
        "certificates.k8s.io/certificatesigningrequests/approval",
        "configmaps/configmaps",
        "foo/bar/baz",
    ] {
        docs.push(rule(&format!(
            "{{verbs: [get], resources: [{resource}], namespaces: [a]}}"
        )));
    }
    for r in [
        "{verbs: [get, deletecollection], resources: [pods], namespaces: ['pando-*']}",
        "{verbs: ['*'], resources: [pods], namespaces: [a]}",
        "{verbs: [lisst], resources: [pods], namespaces: [a]}",
        "{verbs: [], resources: [pods], namespaces: [a]}",
        "{verbs: [get], resources: [], namespaces: [a]}",
        "{verbs: [get], resources: [pods]}",
        "{verbs: [get], resources: [pods], namespaces: []}",
        "{verbs: [get], resources: [pods], namespaces: [Pando]}",
        "{verbs: [get], resources: [pods], namespaces: ['pando.x']}",
        "{verbs: [get], resources: [namespaces], cluster: true}",
        "{verbs: [get], resources: [namespaces], cluster: true, names: ['pando-*', a.b]}",
        "{verbs: [get], resources: [namespaces], cluster: true, namespaces: [a]}",
        "{verbs: [get], resources: [pods], namespaces: [a], names: [b]}",
        "{verbs: [get], resources: [pods], namespaces: ['*'], except: [pando-system]}",
        "{verbs: [get], resources: [pods], namespaces: [a], except: ['a b']}",
        "{verbs: [get], resources: [pods], namespaces: [a], cluster: false}",
        "{verbs: [get], resources: [pods], namespaces: [a], verb: [list]}",
    ] {
        docs.push(rule(r));
    }
    for o in [
        "{pods: [{namespaces: ['pando-*'], profile: restricted}]}",
        "{pods: [{namespaces: [a], profile: privileged}]}",
        "{pods: [{namespaces: []}]}",
        "{pods: [{namespaces: [a], runtime_classes: [gvisor], priority_classes: [x.y]}]}",
        "{pods: [{namespaces: [a], runtime_classes: ['No Such']}]}",
        "{pods: [{namespaces: [a], tolerations: [{key: k, operator: Equal, value: v, effect: NoSchedule}]}]}",
        "{pods: [{namespaces: [a], tolerations: [{operator: Exists}]}]}",
        "{pods: [{namespaces: [a], tolerations: [{key: k}]}]}",
        "{pods: [{namespaces: [a], tolerations: [{operator: Equal}]}]}",
        "{pods: [{namespaces: [a], tolerations: [{value: v}]}]}",
        "{pods: [{namespaces: [a], tolerations: [{key: k, operator: Exists, value: v}]}]}",
        "{pods: [{namespaces: [a], tolerations: [{key: k, operator: Sometimes}]}]}",
        "{pods: [{namespaces: [a], tolerations: [{key: k, effect: Never}]}]}",
        "{services: [{namespaces: [a], types: [NodePort, LoadBalancer]}]}",
        "{services: [{namespaces: [a], types: []}]}",
        "{services: [{namespaces: [a], types: [Bogus]}]}",
        "{namespaces: {labels: ['pando.dev/*', app.kubernetes.io/managed-by]}}",
        "{namespaces: {labels: ['a b']}}",
        "{role_bindings: {role: r, subjects: [{kind: User, name: u}]}}",
        "{role_bindings: [{role: r, subjects: [{kind: Group, name: g}]}]}",
        "{role_bindings: null}",
        "{role_bindings: [{role: r, subjects: []}]}",
        "{role_bindings: [{role: R, subjects: [{kind: User, name: u}]}]}",
        "{role_bindings: [{role: r, subjects: [{kind: ServiceAccount, name: s, namespace: n}]}]}",
        "{role_bindings: [{role: r, subjects: [{kind: ServiceAccount, name: s}]}]}",
        "{role_bindings: [{role: r, subjects: [{kind: User, name: u, namespace: n}]}]}",
        "{role_bindings: [{role: r, subjects: [{kind: Robot, name: u}]}]}",
        "{role_bindings: [{role: r, subjects: [{kind: Group, name: 'system:authenticated'}]}]}",
        "{role_bindings: [{role: r, subjects: [{kind: User, name: ''}]}]}",
        "{podz: []}",
    ] {
        docs.push(objects(o));
    }
    let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
    agree("grants", |d| Grants::from_text("t", d).map(drop), &docs);
}

#[test]
fn what_the_grants_schema_cannot_say_is_left_to_the_loader() {
    // Comparisons between fields and across list entries: JSON Schema has
    // no keyword for them, so these validate and the load refuses them.
    let v = validator("grants");
    for doc in [
        "kubernetes: {max_body_bytes: 65536, rate: {qps: 5, burst: 10, write_burst_bytes: 1000}}",
        &objects(
            "{role_bindings: [{role: r, subjects: [{kind: User, name: u}]}, \
             {role: r, subjects: [{kind: User, name: v}]}]}",
        ),
    ] {
        assert!(v.is_valid(&yaml(doc)), "{doc}");
        assert!(Grants::from_text("t", doc).is_err(), "{doc}");
    }
}

/// A plan of one workload with these extra lines (indented as its fields).
fn workload(extra: &str) -> String {
    format!(
        "id: a\nrevision: '1'\nnetwork: {{egress: open}}\nworkloads:\n- name: w\n  image: i\n  \
         resources: {{requests: {{cpu_millis: 1, memory_bytes: 1}}}}\n{extra}"
    )
}

#[test]
fn the_plan_schema_answers_as_apply_reads_plans() {
    let mut docs: Vec<String> = [
        "id: a\nrevision: '1'\nnetwork: {egress: open}",
        "id: a\nrevision: '1'\nnetwork: {egress: NONE}",
        "id: a\nrevision: '1'\nnetwork: {egress: Open}",
        "id: a\nrevision: '1'\nnetwork: {egress: opne}",
        "id: a\nrevision: '1'\nnetwork: {egress: restricted}",
        "id: a\nrevision: '1'\nnetwork: {egress: {restricted: [{destination: 198.18.0.0/16}]}}",
        "id: a\nrevision: '1'\nnetwork: {egress: {RESTRICTED: [{destination: x, ports: [443]}]}}",
        "id: a\nrevision: '1'\nnetwork: {egress: {Restricted: [{destination: x}], Open: null}}",
        "id: a\nrevision: '1'\nnetwork: {egress: {restricted: [{ports: [443]}]}}",
        "id: a\nrevision: '1'\nnetwork: {egress: {open: []}}",
        "id: a\nrevision: '1'",
        "id: a\nnetwork: {egress: open}",
        "id: a\nrevision: 1\nnetwork: {egress: open}",
        "id: a\nrevision: '1'\nnetwork: {egress: open}\nvolumes: [{name: data, size-bytes: 1024}]",
        "id: a\nrevision: '1'\nnetwork: {egress: open}\nvolumes: [{size_bytes: 1024}]",
        "id: a\nrevision: '1'\nnetwork: {egress: open}\npull-credentials: [{registry: r, username: u, password: p}]",
        "id: a\nrevision: '1'\nnetwork: {egress: open}\nworkloads: null",
        // Unknown fields: refused by the reading, and by the schema.
        "id: a\nrevision: '1'\nnetwork: {egress: open}\ncolour: blue",
        "id: a\nrevision: '1'\nnetwork: {egress: {restricted: [{destination: x, prots: [1]}]}}",
    ]
    .map(String::from)
    .to_vec();
    for extra in [
        "",
        "  ports: [{port: 80}, {port: 53, protocol: UDP}, {port: 1, protocol: tCp}]\n",
        "  ports: [{port: 80, protocol: tc}]\n",
        "  ports: [{port: 80, protocol: sctp}]\n",
        "  ports: [{port: 70000}]\n",
        "  ports: [{name: http}]\n",
        "  mounts: [{volume: data, path: /data}]\n",
        "  mounts: [{volume: data, path: /data, read-only: true}]\n",
        "  mounts: [{volume: data, path: /data, read_only: yes}]\n",
        "  mounts: [{volume: data}]\n",
        "  env: [{name: A, value: b}]\n",
        "  env: [{name: A}]\n",
        "  command: [sh, -c, 'true']\n  args: []\n  digest: null\n",
        "  command: sh\n",
    ] {
        docs.push(workload(extra));
    }
    docs.push(
        "id: a\nrevision: '1'\nnetwork: {egress: open}\nworkloads:\n- name: w\n  image: i\n  \
         resources: {requests: {cpu-millis: 1, memory-bytes: 1}, limits: {cpu_millis: 2, memory_bytes: 2}}\n"
            .to_string(),
    );
    let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
    agree("plan", |d| decode_plan(d).map(drop), &docs);
    // The workload's own required fields, each left out in turn.
    let no_resources =
        "id: a\nrevision: '1'\nnetwork: {egress: open}\nworkloads: [{name: w, image: i}]";
    let no_cpu = "id: a\nrevision: '1'\nnetwork: {egress: open}\nworkloads: \
                  [{name: w, image: i, resources: {requests: {memory-bytes: 1}}}]";
    agree(
        "plan",
        |d| decode_plan(d).map(drop),
        &[no_resources, no_cpu],
    );
}

#[test]
fn the_trial_schema_answers_as_trial_reads_requests() {
    let base = "bundle: shop\nworkload: {name: t, image: busybox:1.36, ports: [{port: 8080}], \
                resources: {requests: {cpu_millis: 10, memory_bytes: 1048576}}}\nnetwork: {egress: none}\n";
    let docs = [
        format!("{base}duration-ms: 5000"),
        format!("{base}duration_ms: 5000"),
        base.to_string(),
        format!("{base}duration_ms: -1"),
        format!("{base}duration_ms: 5000\npull_credentials: [{{registry: r}}]"),
        "bundle: shop\nnetwork: {egress: none}\nduration_ms: 1".to_string(),
    ];
    let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
    agree("trial", |d| decode_trial(d).map(drop), &docs);
}

#[test]
fn the_limits_schema_answers_as_the_loader_does() {
    let load = |d: &str| -> Result<(), String> {
        let limits: Limits = pando_host::yaml::from_str(d).map_err(|e| e.to_string())?;
        limits.check()
    };
    agree(
        "limits",
        load,
        &[
            "{}",
            "default_timeout: 5000\nmemory_bytes: 1073741824",
            "default_timeout: 5s",
            "default_timeout: -1",
            "quarantine_backoff: 250",
            "hostcall_bytes: 1048576",
            "hostcall_bytes: 1000",
            "max_handles: 64",
            "max_handles: 10",
            "max_instances: 4294967296",
            "memory_bytez: 1",
        ],
    );
}
