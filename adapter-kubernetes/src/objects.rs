//! The Kubernetes objects an app is made of, built from a plan and the
//! configuration. Pure functions: no host calls, so everything here is
//! tested natively.
//!
//! Every object carries `app.kubernetes.io/managed-by: pando` and
//! `pando.dev/app: <id>`, so the adapter finds (and deletes) only its own,
//! and a `pando.dev/spec-hash` annotation of what was asked for: Apply
//! compares that hash rather than the object the API server returns, whose
//! defaulted fields would never equal the plan's (O-41: a satisfied plan
//! writes nothing).

use std::collections::BTreeSet;

use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{
    Namespace, PersistentVolumeClaim, Pod, Secret, Service,
};
use pando_adapter_sdk::kube::k8s_openapi::api::networking::v1::NetworkPolicy;
use pando_adapter_sdk::types::{BundlePlan, Error, Protocol, RegistryCredential, WorkloadSpec};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::config::Config;
use crate::egress;

/// Label on everything the adapter makes.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Its value.
pub const MANAGER: &str = "pando";
/// Label naming the app an object belongs to.
pub const APP_LABEL: &str = "pando.dev/app";
/// Label naming the workload a pod or Service belongs to.
pub const WORKLOAD_LABEL: &str = "pando.dev/workload";
/// Label naming the volume a claim is.
pub const VOLUME_LABEL: &str = "pando.dev/volume";
/// Annotation with the image digest (or the image, without one) a pod runs.
pub const DIGEST_ANNOTATION: &str = "pando.dev/digest";
/// Annotation with the hash of the desired object (see the module doc).
pub const HASH_ANNOTATION: &str = "pando.dev/spec-hash";
/// Annotation the pull Secret carries so that each rewrite is a real write
/// (the API server drops an update that changes nothing, O-41).
pub const WRITTEN_ANNOTATION: &str = "pando.dev/written-at-ms";
/// The label Pando's server pods carry, admitted by every app's policy
/// (R-023).
pub const PANDO_SERVER_LABEL: (&str, &str) = ("app.kubernetes.io/name", "pando");
/// The app's default-deny NetworkPolicy.
pub const POLICY_NAME: &str = "pando-default-deny";
/// The image pull Secret.
pub const PULL_SECRET_NAME: &str = "pando-pull";
/// The one container of a workload's pod.
pub const CONTAINER_NAME: &str = "workload";
/// The field manager the adapter writes as.
pub const FIELD_MANAGER: &str = "pando";

/// The user and group the adapter's own busybox pods (the volume helper, the
/// canary, the trial's observer) run as: `nobody`, numeric so that the
/// kubelet can check `runAsNonRoot` whatever the image says.
pub const HELPER_UID: u64 = 65534;

/// A container `securityContext` that meets Pod Security `restricted` for
/// the adapter's own containers: not root (`uid`, numeric), no privilege
/// escalation, every capability dropped, the runtime's default seccomp
/// profile. No host namespace or path is ever set beside it.
pub fn restricted_context(uid: u64) -> Value {
    json!({
        "runAsNonRoot": true,
        "runAsUser": uid,
        "runAsGroup": uid,
        "allowPrivilegeEscalation": false,
        "capabilities": { "drop": ["ALL"] },
        "seccompProfile": { "type": "RuntimeDefault" },
    })
}

/// The volume helper's container `securityContext` (snapshots and restores): root, with
/// only what handling files of any owner takes — reading and writing them past their modes,
/// keeping their owners and modes as tar restores them — no privilege escalation, the
/// runtime's default seccomp profile. Pod Security `baseline`, not `restricted`: a volume
/// holds files of whatever user the app wrote them as, and a helper as `nobody` can neither
/// read one only its owner may read nor remove the old contents a restore replaces (it
/// failed half-way through the swap, on the real node).
pub fn volume_helper_context() -> Value {
    json!({
        "runAsUser": 0,
        "runAsGroup": 0,
        "allowPrivilegeEscalation": false,
        "capabilities": { "drop": ["ALL"], "add": ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID"] },
        "seccompProfile": { "type": "RuntimeDefault" },
    })
}

/// The pod `securityContext` of every pod the adapter makes: the runtime's
/// default seccomp profile (`restricted` asks it of each pod; `baseline`
/// would allow `Unconfined`, which app pods never get either).
pub fn pod_context() -> Value {
    json!({ "seccompProfile": { "type": "RuntimeDefault" } })
}

/// The labels every object of app `id` carries.
pub fn app_labels(id: &str) -> Value {
    json!({ MANAGED_BY: MANAGER, APP_LABEL: id })
}

/// The label selector that lists app objects (any app when the namespace
/// already says which).
pub fn managed_selector() -> String {
    format!("{MANAGED_BY}={MANAGER}")
}

/// FNV-1a, 64 bits, in hex: a stable hash with no dependency, enough to
/// tell whether a desired object changed (not a security boundary).
pub fn hash(value: &Value) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in value.to_string().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// Puts the hash of `object` (as it is now) into its annotations.
pub(crate) fn with_hash(mut object: Value) -> Value {
    let h = hash(&object);
    object["metadata"]["annotations"][HASH_ANNOTATION] = Value::String(h);
    object
}

/// Decodes a built object into its typed form.
pub(crate) fn typed<K: DeserializeOwned>(object: Value) -> Result<K, Error> {
    serde_json::from_value(object)
        .map_err(|e| Error::Internal(format!("building a Kubernetes object: {e}")))
}

/// The hash an existing object was written with.
pub fn stored_hash(
    meta: &pando_adapter_sdk::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<&str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(HASH_ANNOTATION))
        .map(String::as_str)
}

/// The app's namespace, labelled as Pando's.
pub fn namespace(namespace: &str, id: &str) -> Result<Namespace, Error> {
    typed(json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": { "name": namespace, "labels": app_labels(id) },
    }))
}

/// The default-deny policy (R-023, R-025): in, only Pando's server pods and
/// the app's own; out, cluster DNS, the app (its egress gateway included),
/// and what the plan's egress allows by address ([`egress`]), never into
/// the cluster's ranges ([`crate::exclusions`]).
pub fn network_policy(config: &Config, plan: &BundlePlan) -> Result<NetworkPolicy, Error> {
    let pando = json!({
        "namespaceSelector": { "matchLabels": {
            "kubernetes.io/metadata.name": config.pando_namespace } },
        "podSelector": { "matchLabels": { PANDO_SERVER_LABEL.0: PANDO_SERVER_LABEL.1 } },
    });
    let egress = egress::egress(config, &plan.id, &plan.network)?;
    policy(
        config,
        &plan.id,
        POLICY_NAME,
        vec![json!({ "from": [json!({ "podSelector": {} }), pando] })],
        egress.rules,
    )
}

/// A policy over every pod of a namespace: `ingress` as given (empty denies
/// every connection in), egress to cluster DNS (`dns_egress`), the
/// namespace itself, and `egress`.
pub fn policy(
    config: &Config,
    id: &str,
    name: &str,
    ingress: Vec<Value>,
    egress: Vec<Value>,
) -> Result<NetworkPolicy, Error> {
    let own = json!({ "to": [{ "podSelector": {} }] });
    let egress: Vec<Value> = [crate::exclusions::dns_rule(config), own]
        .into_iter()
        .chain(egress)
        .collect();
    typed(with_hash(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": { "name": name, "labels": app_labels(id) },
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": ingress,
            "egress": egress,
        },
    })))
}

/// The pull Secret (`kubernetes.io/dockerconfigjson`), stamped with the
/// time so that every Apply rewrites it (O-41).
pub fn pull_secret(
    id: &str,
    credentials: &[RegistryCredential],
    now_ms: u64,
) -> Result<Secret, Error> {
    let mut auths = serde_json::Map::new();
    for c in credentials {
        // The kubelet reads `username` and `password` as well as `auth`.
        auths.insert(
            c.registry.clone(),
            json!({ "username": c.username, "password": c.password }),
        );
    }
    let config = json!({ "auths": auths }).to_string();
    typed(json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": PULL_SECRET_NAME,
            "labels": app_labels(id),
            "annotations": { WRITTEN_ANNOTATION: now_ms.to_string() },
        },
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": { ".dockerconfigjson": config },
    }))
}

fn protocol(p: Protocol) -> &'static str {
    match p {
        Protocol::Tcp => "TCP",
        Protocol::Udp => "UDP",
    }
}

/// The labels of a workload's pod, which its Service selects.
pub fn workload_labels(id: &str, workload: &str) -> Value {
    json!({ MANAGED_BY: MANAGER, APP_LABEL: id, WORKLOAD_LABEL: workload })
}

/// A workload's headless Service (`clusterIP: None`): its name resolves to
/// the pod inside the cluster, and nothing outside reaches it (R-026).
pub fn service(id: &str, w: &WorkloadSpec) -> Result<Service, Error> {
    let name = crate::names::service_name(&w.name)?;
    let ports: Vec<Value> = w
        .ports
        .iter()
        .map(|p| {
            json!({
                "name": format!("{}-{}", protocol(p.protocol).to_lowercase(), p.port),
                "port": p.port, "targetPort": p.port, "protocol": protocol(p.protocol),
            })
        })
        .collect();
    typed(with_hash(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": { "name": name, "labels": workload_labels(id, &w.name) },
        "spec": {
            "clusterIP": "None",
            "selector": workload_labels(id, &w.name),
            "ports": ports,
        },
    })))
}

/// What the digest annotation records: the digest, or the image without one.
pub fn digest_of(w: &WorkloadSpec) -> &str {
    w.digest.as_deref().unwrap_or(&w.image)
}

/// The image a pod runs: pinned to the digest when the plan has one.
fn image_ref(w: &WorkloadSpec) -> String {
    match &w.digest {
        Some(d) if !w.image.contains('@') => format!("{}@{d}", w.image),
        _ => w.image.clone(),
    }
}

fn resources(cpu_millis: u64, memory_bytes: u64) -> Value {
    json!({ "cpu": format!("{cpu_millis}m"), "memory": memory_bytes.to_string() })
}

/// A workload's bare pod (R-151): `restartPolicy: Never`, no owner, no
/// service-account token, no host ports or host network (R-026).
pub fn pod(config: &Config, plan: &BundlePlan, w: &WorkloadSpec) -> Result<Pod, Error> {
    pod_in(config, plan, w, &crate::names::app_namespace(&plan.id)?)
}

/// [`pod`], for namespace `ns` (a trial's is not the app's): the egress
/// gateway the proxy variables name is that namespace's.
pub fn pod_in(
    config: &Config,
    plan: &BundlePlan,
    w: &WorkloadSpec,
    ns: &str,
) -> Result<Pod, Error> {
    let name = crate::names::service_name(&w.name)?;
    let volumes: BTreeSet<&str> = plan.volumes.iter().map(|v| v.name.as_str()).collect();
    let mut mounts = Vec::new();
    let mut pod_volumes = Vec::new();
    for (i, m) in w.mounts.iter().enumerate() {
        if !volumes.contains(m.volume.as_str()) {
            return Err(Error::Invalid(format!(
                "workload `{}` mounts volume `{}`, which plan `{}` does not have",
                w.name, m.volume, plan.id
            )));
        }
        let vname = format!("v{i}");
        mounts.push(json!({ "name": vname, "mountPath": m.path, "readOnly": m.read_only }));
        pod_volumes.push(json!({
            "name": vname,
            "persistentVolumeClaim": { "claimName": claim_name(&m.volume)?, "readOnly": m.read_only },
        }));
    }
    let r = &w.resources;
    let mut res = json!({ "requests": resources(r.requests.cpu_millis, r.requests.memory_bytes) });
    if let Some(l) = &r.limits {
        res["limits"] = resources(l.cpu_millis, l.memory_bytes);
    }
    // The gateway's variables first: a plan that sets its own wins, and
    // still reaches nothing its policy does not allow.
    let mut env = match egress::egress(config, &plan.id, &plan.network)?.gateway {
        Some(_) => egress::proxy_env(config, ns),
        None => Vec::new(),
    };
    env.extend(
        w.env
            .iter()
            .map(|e| json!({ "name": e.name, "value": e.value })),
    );
    let mut container = json!({
        "name": CONTAINER_NAME,
        "image": image_ref(w),
        "env": env,
        "ports": w.ports.iter().map(|p| json!({ "containerPort": p.port, "protocol": protocol(p.protocol) })).collect::<Vec<_>>(),
        "resources": res,
        "volumeMounts": mounts,
        // `baseline` and two of `restricted`'s rules that cost an app nothing it should
        // rely on: no setuid gains (no_new_privs) and seccomp below. Running as non-root is
        // the image's choice (docs/kubernetes-adapter.md, "Pod Security").
        "securityContext": { "allowPrivilegeEscalation": false },
    });
    if !w.command.is_empty() {
        container["command"] = json!(w.command);
    }
    if !w.args.is_empty() {
        container["args"] = json!(w.args);
    }
    let mut spec = json!({
        "restartPolicy": "Never",
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "securityContext": pod_context(),
        "containers": [container],
        "volumes": pod_volumes,
    });
    if !plan.pull_credentials.is_empty() {
        spec["imagePullSecrets"] = json!([{ "name": PULL_SECRET_NAME }]);
    }
    if let Some(class) = &config.runtime_class {
        spec["runtimeClassName"] = json!(class);
    }
    if !config.node_selector.is_empty() {
        spec["nodeSelector"] = json!(config.node_selector.labels());
    }
    typed(with_hash(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": workload_labels(&plan.id, &w.name),
            "annotations": { DIGEST_ANNOTATION: digest_of(w) },
        },
        "spec": spec,
    })))
}

/// A volume's claim name: the volume's own, a DNS label.
pub fn claim_name(volume: &str) -> Result<&str, Error> {
    crate::names::check_dns_label(volume)
        .map_err(|why| Error::Invalid(format!("volume name `{volume}` {why}")))?;
    Ok(volume)
}

/// A volume's claim: `ReadWriteOnce`, the configured class, the plan's size
/// or the configured default.
pub fn claim(
    config: &Config,
    id: &str,
    name: &str,
    size: Option<u64>,
) -> Result<PersistentVolumeClaim, Error> {
    let name = claim_name(name)?;
    let size = size.unwrap_or(config.volume_size_bytes);
    let mut labels = app_labels(id);
    labels[VOLUME_LABEL] = json!(name);
    let mut spec = json!({
        "accessModes": ["ReadWriteOnce"],
        "resources": { "requests": { "storage": size.to_string() } },
    });
    if let Some(class) = &config.storage_class {
        spec["storageClassName"] = json!(class);
    }
    typed(json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": { "name": name, "labels": labels },
        "spec": spec,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pando_adapter_sdk::types::{
        EgressPolicy, EgressRule, NetworkRules, Port, ResourceRequirements, Resources,
    };

    fn config() -> Config {
        Config::parse(r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12"}"#).unwrap()
    }

    fn plan(egress: EgressPolicy) -> BundlePlan {
        BundlePlan {
            id: "shop".into(),
            revision: "1".into(),
            workloads: vec![WorkloadSpec {
                name: "web".into(),
                image: "busybox:1.36".into(),
                digest: Some("sha256:abc".into()),
                command: vec![],
                args: vec![],
                env: vec![],
                ports: vec![Port {
                    name: None,
                    port: 8080,
                    protocol: Protocol::Tcp,
                }],
                resources: ResourceRequirements {
                    requests: Resources {
                        cpu_millis: 100,
                        memory_bytes: 1024,
                    },
                    limits: None,
                },
                mounts: vec![],
            }],
            volumes: vec![],
            network: NetworkRules { egress },
            pull_credentials: vec![],
        }
    }

    #[test]
    fn r151_the_pod_is_bare_and_never_restarts() {
        let p = plan(EgressPolicy::Open);
        let pod = pod(&config(), &p, &p.workloads[0]).unwrap();
        let spec = pod.spec.unwrap();
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(spec.automount_service_account_token, Some(false));
        assert!(pod.metadata.owner_references.is_none());
        let c = &spec.containers[0];
        assert_eq!(c.image.as_deref(), Some("busybox:1.36@sha256:abc"));
        assert!(
            c.ports
                .as_ref()
                .unwrap()
                .iter()
                .all(|p| p.host_port.is_none())
        );
    }

    #[test]
    fn r025_open_egress_excludes_the_cluster_ranges() {
        let np = network_policy(&config(), &plan(EgressPolicy::Open)).unwrap();
        let text = serde_json::to_string(&np).unwrap();
        assert!(
            text.contains("10.244.0.0/16") && text.contains("10.96.0.0/12"),
            "{text}"
        );
        assert!(
            !text.contains("::/0"),
            "no IPv6 range is configured: no IPv6 egress, never `::/0` unclipped: {text}"
        );
    }

    #[test]
    fn r186_a_dns_name_destination_is_unsupported_without_a_gateway() {
        let p = plan(EgressPolicy::Restricted(vec![EgressRule {
            destination: "api.example.com".into(),
            ports: vec![443],
        }]));
        assert!(
            matches!(network_policy(&config(), &p), Err(Error::Unsupported(m)) if m.contains("gateway"))
        );
    }

    #[test]
    fn r187_with_a_gateway_the_pods_are_sent_through_it() {
        let p = plan(EgressPolicy::Restricted(vec![EgressRule {
            destination: "api.example.com".into(),
            ports: vec![443],
        }]));
        let mut c = config();
        c.egress_gateway_image = Some("registry.example.com/pando:1".into());
        network_policy(&c, &p).unwrap();
        let pod = pod(&c, &p, &p.workloads[0]).unwrap();
        let env = pod.spec.unwrap().containers[0].env.clone().unwrap();
        assert!(env.iter().any(|e| e.name == "HTTPS_PROXY"));
    }

    #[test]
    fn the_hash_is_stable_and_changes_with_the_digest() {
        let mut p = plan(EgressPolicy::None);
        let a = pod(&config(), &p, &p.workloads[0]).unwrap();
        let b = pod(&config(), &p, &p.workloads[0]).unwrap();
        assert_eq!(stored_hash(&a.metadata), stored_hash(&b.metadata));
        p.workloads[0].digest = Some("sha256:def".into());
        let c = pod(&config(), &p, &p.workloads[0]).unwrap();
        assert_ne!(stored_hash(&a.metadata), stored_hash(&c.metadata));
    }
}
