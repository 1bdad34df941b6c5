//! What the adapter makes and reads, as pure functions where it can: names
//! and labels, the plan's checks, the pod a workload becomes, what a pod
//! reports, and the quantities of capacity. `lib.rs` calls these; the unit
//! tests at the end run natively (no component needed).

use super::*;

pub(crate) fn namespace(app: &str) -> String {
    format!("pando-{app}")
}

/// Only our objects.
pub(crate) fn ours() -> ListParams {
    ListParams::default().labels(LABEL)
}

/// The app an object of ours belongs to: its `LABEL`.
pub(crate) fn app_of(object: &impl ResourceExt) -> String {
    object.labels().get(LABEL).cloned().unwrap_or_default()
}

/// Create an object described as JSON (the SDK fills in nothing: give
/// `metadata.name`).
pub(crate) async fn create<K>(api: &Api<K>, object: Value) -> Result<(), Error>
where
    K: pando_adapter_sdk::kube::k8s_openapi::Resource + serde::Serialize + DeserializeOwned,
    K::Scope: pando_adapter_sdk::kube::Scope,
{
    api.create_json(&PostParams::default(), &object).await?;
    Ok(())
}

pub(crate) fn from_json<K: DeserializeOwned>(object: Value) -> Result<K, Error> {
    serde_json::from_value(object).map_err(|e| Error::Internal(format!("building an object: {e}")))
}

/// A DNS label: most Kubernetes names.
pub(crate) fn is_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// A DNS subdomain (a RuntimeClass's name): DNS labels joined by dots.
pub(crate) fn is_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_label)
}

/// The configuration's `runtime_class`: unset, or a RuntimeClass's name.
pub(crate) fn runtime_class(value: Option<Value>) -> Result<Option<String>, Error> {
    match value {
        None => Ok(None),
        Some(Value::String(s)) if is_subdomain(&s) => Ok(Some(s)),
        Some(other) => Err(error::invalid(format!(
            "configuration field `runtime_class` must name a RuntimeClass (a DNS subdomain: \
             `pando-real-node`), not {other}"
        ))),
    }
}

/// `invalid`, naming `what`, unless `name` is a DNS label.
pub(crate) fn check_name(what: &str, name: &str) -> Result<(), Error> {
    if is_label(name) {
        Ok(())
    } else {
        Err(error::invalid(format!(
            "{what} `{name}` is not a DNS label"
        )))
    }
}

/// Everything that can be wrong with a plan, before anything is written.
pub(crate) fn check_plan(plan: &BundlePlan) -> Result<(), Error> {
    // `pando-` + id must itself be a DNS label.
    check_name("plan.id", &plan.id)?;
    if plan.id.len() > 57 {
        return Err(error::invalid("plan.id: at most 57 characters"));
    }
    if let EgressPolicy::Restricted(_) = plan.network.egress {
        return Err(error::unsupported(
            "restricted egress (this adapter writes no NetworkPolicy)",
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    for w in &plan.workloads {
        check_name("plan.workloads[].name", &w.name)?;
        if !names.insert(&w.name) {
            return Err(error::invalid(format!(
                "plan.workloads: `{}` appears twice",
                w.name
            )));
        }
        if w.security.restricted && w.security.run_as_user == Some(0) {
            return Err(error::invalid(format!(
                "plan.workloads[{}].security: `restricted` cannot run as user 0 (root)",
                w.name
            )));
        }
        for m in &w.mounts {
            if !plan.volumes.iter().any(|v| v.name == m.volume) {
                return Err(error::invalid(format!(
                    "plan.workloads[{}].mounts: no volume `{}` in the plan",
                    w.name, m.volume
                )));
            }
        }
    }
    for v in &plan.volumes {
        check_name("plan.volumes[].name", &v.name)?;
    }
    Ok(())
}

/// The pod spec for one workload, under `runtime_class` when given. Bare
/// pods, never restarted: a finished workload stays finished, with its log
/// (the reconciler decides what next).
pub(crate) fn pod_spec(w: &WorkloadSpec, plan: &BundlePlan, runtime_class: Option<&str>) -> Value {
    let image = match &w.digest {
        Some(digest) => format!("{}@{digest}", w.image.split('@').next().unwrap_or_default()),
        None => w.image.clone(),
    };
    let r = &w.resources;
    let mut resources = json!({"requests": {"cpu": format!("{}m", r.requests.cpu_millis), "memory": r.requests.memory_bytes.to_string()}});
    match &r.limits {
        Some(l) => {
            resources["limits"] =
                json!({"cpu": format!("{}m", l.cpu_millis), "memory": l.memory_bytes.to_string()});
        }
        // Pando's cluster admission policy wants a memory limit on every
        // container; without a LimitRange in the namespace, the request is it.
        None => resources["limits"] = json!({"memory": r.requests.memory_bytes.to_string()}),
    }
    let mut spec = json!({
        "restartPolicy": "Never",
        "hostname": w.name,
        // Pod Security `baseline`, and two rules of `restricted` that cost an
        // app nothing it should rely on: the default seccomp profile, no
        // setuid gains. Running as non-root is the image's choice.
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        // An app has no business with the Kubernetes API: no token mounted
        // (the host's pod rules refuse a pod that would mount one).
        "automountServiceAccountToken": false,
        "containers": [{
            "name": w.name,
            "image": image,
            "command": w.command,
            "args": w.args,
            "env": w.env.iter().map(|e| json!({"name": e.name, "value": e.value})).collect::<Vec<_>>(),
            "ports": w.ports.iter().map(|p| json!({"containerPort": p.port, "protocol": match p.protocol { Protocol::Tcp => "TCP", Protocol::Udp => "UDP" }})).collect::<Vec<_>>(),
            "resources": resources,
            "volumeMounts": w.mounts.iter().map(|m| json!({"name": m.volume, "mountPath": m.path, "readOnly": m.read_only})).collect::<Vec<_>>(),
            "securityContext": {"allowPrivilegeEscalation": false},
        }],
        "volumes": w.mounts.iter().map(|m| json!({"name": m.volume, "persistentVolumeClaim": {"claimName": m.volume}})).collect::<Vec<_>>(),
    });
    apply_security(&mut spec, &w.security);
    if !plan.pull_credentials.is_empty() {
        spec["imagePullSecrets"] = json!([{"name": PULL_SECRET}]);
    }
    // Where the pod runs: the RuntimeClass's admission adds its node
    // selector and tolerations, so the adapter writes neither.
    if let Some(class) = runtime_class {
        spec["runtimeClassName"] = json!(class);
    }
    spec
}

/// A workload's `security` (contract 0.2.0) on its pod: the user and
/// group its processes run as, the group that owns its volumes and, when
/// `restricted`, what Pod Security `restricted` asks beyond `baseline`: not
/// root, every capability dropped. A user of 0 with `restricted` is refused
/// by `check_plan` before anything is written.
pub(crate) fn apply_security(spec: &mut Value, security: &Security) {
    let container = &mut spec["containers"][0]["securityContext"];
    if let Some(user) = security.run_as_user {
        container["runAsUser"] = json!(user);
    }
    if let Some(group) = security.run_as_group {
        container["runAsGroup"] = json!(group);
    }
    if security.restricted {
        container["runAsNonRoot"] = json!(true);
        container["capabilities"] = json!({"drop": ["ALL"]});
    }
    if let Some(group) = security.fs_group {
        spec["securityContext"]["fsGroup"] = json!(group);
    }
}

pub(crate) fn pull_secret(credentials: &[RegistryCredential], labels: &Value) -> Value {
    let auths: serde_json::Map<String, Value> = credentials
        .iter()
        .map(|c| {
            (
                c.registry.clone(),
                json!({"username": c.username, "password": c.password}),
            )
        })
        .collect();
    json!({
        "metadata": {"name": PULL_SECRET, "labels": labels},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": json!({"auths": auths}).to_string()}
    })
}

/// FNV-1a: a stable hash (std's `DefaultHasher` may change between releases).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}

/// A pod as core sees a workload.
pub(crate) fn observed(pod: &Pod) -> ObservedWorkload {
    let status = pod.status.clone().unwrap_or_default();
    let ms = |t: &pando_adapter_sdk::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time| {
        t.0.as_millisecond() as u64
    };
    let container = status.container_statuses.as_ref().and_then(|c| c.first());
    let terminated = container
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref());
    ObservedWorkload {
        name: pod.name_any(),
        phase: match status.phase.as_deref() {
            None | Some("Pending") => WorkloadPhase::Pending,
            Some("Running") => WorkloadPhase::Running,
            Some("Succeeded") => WorkloadPhase::Succeeded,
            Some("Failed") => WorkloadPhase::Failed,
            Some(_) => WorkloadPhase::Unknown,
        },
        digest: container
            .and_then(|c| c.image_id.split_once('@'))
            .map(|(_, d)| d.to_string()),
        exit_code: terminated.map(|t| t.exit_code),
        reason: status
            .reason
            .or(terminated.and_then(|t| t.reason.clone()))
            .unwrap_or_default(),
        started_at_ms: status.start_time.as_ref().map(ms),
        finished_at_ms: terminated.and_then(|t| t.finished_at.as_ref()).map(ms),
    }
}

/// Running or waiting to run: what holds resources.
pub(crate) fn active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed")) && pod.metadata.deletion_timestamp.is_none()
}

pub(crate) fn requests(pod: &Pod) -> Resources {
    let mut sum = Resources {
        cpu_millis: 0,
        memory_bytes: 0,
    };
    for c in pod.spec.iter().flat_map(|s| &s.containers) {
        let req = c
            .resources
            .as_ref()
            .and_then(|r| r.requests.clone())
            .unwrap_or_default();
        sum.cpu_millis += req.get("cpu").and_then(|q| millis(&q.0)).unwrap_or(0);
        sum.memory_bytes += req.get("memory").and_then(|q| quantity(&q.0)).unwrap_or(0);
    }
    sum
}

pub(crate) fn add(to: &mut Resources, r: &Resources) {
    to.cpu_millis += r.cpu_millis;
    to.memory_bytes += r.memory_bytes;
}

/// Per node: its name, allocatable resources, and what is left once
/// Pando's active pods (other than `except`'s) are counted.
pub(crate) async fn free_by_node(
    except: Option<&str>,
) -> Result<Vec<(String, Resources, Resources)>, Error> {
    let pods = Api::<Pod>::all().list(&ours()).await?.items;
    let mut out = vec![];
    for node in Api::<Node>::all().list(&ListParams::default()).await?.items {
        let name = node.name_any();
        let alloc = node.status.and_then(|s| s.allocatable).unwrap_or_default();
        let all = Resources {
            cpu_millis: alloc.get("cpu").and_then(|q| millis(&q.0)).unwrap_or(0),
            memory_bytes: alloc
                .get("memory")
                .and_then(|q| quantity(&q.0))
                .unwrap_or(0),
        };
        let mut free = all;
        for pod in pods
            .iter()
            .filter(|p| active(p) && except.is_none_or(|app| app_of(*p) != app))
        {
            if pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(&name) {
                let r = requests(pod);
                free.cpu_millis = free.cpu_millis.saturating_sub(r.cpu_millis);
                free.memory_bytes = free.memory_bytes.saturating_sub(r.memory_bytes);
            }
        }
        out.push((name, all, free));
    }
    Ok(out)
}

/// A Kubernetes quantity in base units ("64Mi", "1G", "1073741824", "2").
pub(crate) fn quantity(q: &str) -> Option<u64> {
    let split = q.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(q.len());
    let (number, suffix) = q.split_at(split);
    let factor: f64 = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1048576.0,
        "Gi" => 1073741824.0,
        "Ti" => 1099511627776.0,
        _ => return None,
    };
    number
        .parse::<f64>()
        .ok()
        .map(|n| (n * factor).round() as u64)
}

/// A CPU quantity in millicores ("500m", "4", "1.5").
pub(crate) fn millis(q: &str) -> Option<u64> {
    match q.strip_suffix('m') {
        Some(m) => m.parse().ok(),
        None => q.parse::<f64>().ok().map(|n| (n * 1000.0).round() as u64),
    }
}

// Pure functions test natively: `cargo test` (no `--target`). Anything that
// reaches a host import (Kubernetes, logging) only works inside a component.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(quantity("64Mi"), Some(64 << 20));
        assert_eq!(quantity("1G"), Some(1_000_000_000));
        assert_eq!(millis("500m"), Some(500));
        assert_eq!(millis("4"), Some(4000));
    }

    #[test]
    fn names() {
        assert!(check_name("x", "web-1").is_ok());
        assert!(matches!(
            check_name("x", "Not_A_Name!"),
            Err(Error::Invalid(_))
        ));
        assert!(is_subdomain("pando-real-node") && is_subdomain("gvisor.example.com"));
        assert!(!is_subdomain("") && !is_subdomain("a..b") && !is_subdomain("Kata"));
    }

    fn one_workload_plan() -> BundlePlan {
        let small = Resources {
            cpu_millis: 10,
            memory_bytes: 1 << 20,
        };
        BundlePlan {
            id: "shop".into(),
            revision: "1".into(),
            workloads: vec![WorkloadSpec {
                name: "web".into(),
                image: "busybox:1.36".into(),
                digest: None,
                command: vec![],
                args: vec![],
                env: vec![],
                ports: vec![],
                resources: ResourceRequirements {
                    requests: small,
                    limits: None,
                },
                mounts: vec![],
                security: Security {
                    run_as_user: None,
                    run_as_group: None,
                    fs_group: None,
                    restricted: false,
                },
            }],
            volumes: vec![],
            network: NetworkRules {
                egress: EgressPolicy::Open,
            },
            pull_credentials: vec![],
        }
    }

    /// A workload's `security` on its pod: user, group and fsGroup as given,
    /// and `restricted`'s non-root and dropped capabilities; none of it
    /// without `security`.
    #[test]
    fn security_reaches_the_pod_and_restricted_root_is_refused() {
        let mut plan = one_workload_plan();
        let plain = pod_spec(&plan.workloads[0], &plan, None);
        assert_eq!(
            plain["containers"][0]["securityContext"],
            json!({"allowPrivilegeEscalation": false})
        );
        assert!(plain["securityContext"].get("fsGroup").is_none());
        plan.workloads[0].security = Security {
            run_as_user: Some(1000),
            run_as_group: Some(3000),
            fs_group: Some(2000),
            restricted: true,
        };
        let spec = pod_spec(&plan.workloads[0], &plan, None);
        assert_eq!(
            spec["containers"][0]["securityContext"],
            json!({
                "allowPrivilegeEscalation": false,
                "runAsUser": 1000,
                "runAsGroup": 3000,
                "runAsNonRoot": true,
                "capabilities": {"drop": ["ALL"]},
            })
        );
        assert_eq!(spec["securityContext"]["fsGroup"], json!(2000));
        plan.workloads[0].security.run_as_user = Some(0);
        let e = check_plan(&plan).expect_err("root under restricted");
        assert!(format!("{e:?}").contains("user 0"), "{e:?}");
    }

    /// The configured `runtime_class` reaches the pod, and only when
    /// configured; no pod mounts a token either way.
    #[test]
    fn the_configured_runtime_class_is_the_pods() {
        let plan = one_workload_plan();
        let class = runtime_class(Some(json!("pando-real-node")))
            .unwrap_or_else(|e| panic!("refused: {e:?}"));
        let spec = pod_spec(&plan.workloads[0], &plan, class.as_deref());
        assert_eq!(spec["runtimeClassName"], "pando-real-node");
        assert_eq!(spec["automountServiceAccountToken"], false);

        let unset = runtime_class(None).unwrap_or_else(|e| panic!("refused: {e:?}"));
        let spec = pod_spec(&plan.workloads[0], &plan, unset.as_deref());
        assert!(spec.get("runtimeClassName").is_none(), "{spec}");
        assert_eq!(spec["automountServiceAccountToken"], false);
    }

    #[test]
    fn a_bad_runtime_class_is_refused_naming_the_field() {
        for bad in [json!(""), json!("Real_Node"), json!(3)] {
            match runtime_class(Some(bad.clone())) {
                Err(Error::Invalid(m)) => assert!(m.contains("`runtime_class`"), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }
}
