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
use serde_json::{Value, json};

use crate::config::Config;
use crate::isolation::egress;
use crate::kit::security::pod_context;
use crate::kit::{
    APP_LABEL, MANAGED_BY, MANAGER, PANDO_SERVER_LABEL, app_labels, typed, with_hash,
};

/// Label naming the workload a pod or Service belongs to.
pub const WORKLOAD_LABEL: &str = "pando.dev/workload";
/// Label naming the volume a claim is.
pub const VOLUME_LABEL: &str = "pando.dev/volume";
/// Annotation with the image digest (or the image, without one) a pod runs.
pub const DIGEST_ANNOTATION: &str = "pando.dev/digest";
/// Annotation the pull Secret carries so that each rewrite is a real write
/// (the API server drops an update that changes nothing, O-41).
pub const WRITTEN_ANNOTATION: &str = "pando.dev/written-at-ms";
/// The label Pando's server pods carry, admitted by every app's policy
/// The app's default-deny NetworkPolicy.
pub const POLICY_NAME: &str = "pando-default-deny";
/// The image pull Secret.
pub const PULL_SECRET_NAME: &str = "pando-pull";
/// The one container of a workload's pod.
pub const CONTAINER_NAME: &str = "workload";

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
/// the cluster's ranges ([`crate::isolation::exclusions`]).
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
    let egress: Vec<Value> = [crate::isolation::exclusions::dns_rule(config), own]
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
    let name = crate::kit::names::service_name(&w.name)?;
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
    pod_in(
        config,
        plan,
        w,
        &crate::kit::names::app_namespace(&plan.id)?,
    )
}

/// [`pod`], for namespace `ns` (a trial's is not the app's): the egress
/// gateway the proxy variables name is that namespace's.
pub fn pod_in(
    config: &Config,
    plan: &BundlePlan,
    w: &WorkloadSpec,
    ns: &str,
) -> Result<Pod, Error> {
    let name = crate::kit::names::service_name(&w.name)?;
    let (mounts, pod_volumes) = volume_mounts(plan, w)?;
    let container = container(config, plan, w, ns, mounts)?;
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
    config.place_as_apps(&mut spec);
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

/// The workload's claims, as its container's mounts and its pod's volumes;
/// a volume the plan does not have is `invalid`.
fn volume_mounts(plan: &BundlePlan, w: &WorkloadSpec) -> Result<(Vec<Value>, Vec<Value>), Error> {
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
    Ok((mounts, pod_volumes))
}

/// The workload's one container, in namespace `ns`.
fn container(
    config: &Config,
    plan: &BundlePlan,
    w: &WorkloadSpec,
    ns: &str,
    mounts: Vec<Value>,
) -> Result<Value, Error> {
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
        // rely on: no setuid gains (no_new_privs) and seccomp (the pod's, in `pod_in`). Running as non-root is
        // the image's choice (docs/kubernetes-adapter.md, "Pod Security").
        "securityContext": { "allowPrivilegeEscalation": false },
    });
    if !w.command.is_empty() {
        container["command"] = json!(w.command);
    }
    if !w.args.is_empty() {
        container["args"] = json!(w.args);
    }
    Ok(container)
}

/// A volume's claim name: the volume's own, a DNS label.
pub fn claim_name(volume: &str) -> Result<&str, Error> {
    crate::kit::names::check_dns_label(volume)
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
    use crate::kit::stored_hash;
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
