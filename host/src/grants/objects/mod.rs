//! Object rules: what the objects an adapter writes may contain, checked
//! by the host on the object a write would produce.
//!
//! The grants ([`super::check`]) say *where* an adapter may write; these
//! rules say *what*: pods and pod templates meet a Pod Security Standards
//! profile and the host's placement and identity rules ([`pods`],
//! [`pss`]); Services are ClusterIP unless granted ([`services`]);
//! namespaces carry only allowed labels and the host's Pod Security labels
//! ([`namespaces`]); role bindings bind only the configured role to the
//! configured subjects ([`bindings`]); claims and claim templates name no
//! volume, a granted storage class and a size under the ceiling, and a
//! volume's write changes only its reclaim policy ([`claims`]); Secrets are
//! no service-account tokens ([`secrets`]); workloads' replicas and
//! resources stay under the grants' ceilings ([`workloads`]).
//!
//! The functions here are pure: the caller gives the object a create would
//! write, or, for updates and patches, the object the API server computed
//! in a dry run (and the object before, for the rules that compare). How
//! the request is then sent so that nothing changes between check and
//! write is `capability::kubernetes::writes`.

mod bindings;
mod claims;
pub(crate) mod fields;
pub mod namespaces;
mod pods;
mod pss;
mod quantity;
pub mod schema;
mod secrets;
mod services;
mod workloads;

use serde_json::Value;

use super::check::pattern_matches;
use super::request::ApiTarget;
use pss::PodView;
pub use schema::{ObjectRules, PodRule, Profile};

/// Why an object is refused: the rule, the field and what is wrong.
/// Displayed as `pods must meet baseline: spec.containers[0].securityContext.privileged is true`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{statement}: {field} {problem}")]
pub struct Violation {
    /// The rule's id (`pods.baseline`, `services.types`), as the usage
    /// report counts it.
    pub rule: &'static str,
    /// What the rule says (`pods must meet baseline`).
    pub statement: String,
    /// The offending field (`spec.containers[0].securityContext.privileged`).
    pub field: String,
    /// What is wrong with it (`is true`).
    pub problem: String,
    /// Where in the grants this could be allowed, when it can be.
    pub grant: Option<String>,
}

/// Where a workload kind keeps its pod template.
const TEMPLATES: &[(&str, &str, &[&str])] = &[
    ("apps", "deployments", &["spec", "template"]),
    ("apps", "replicasets", &["spec", "template"]),
    ("apps", "statefulsets", &["spec", "template"]),
    ("apps", "daemonsets", &["spec", "template"]),
    ("batch", "jobs", &["spec", "template"]),
    (
        "batch",
        "cronjobs",
        &["spec", "jobTemplate", "spec", "template"],
    ),
    ("", "replicationcontrollers", &["spec", "template"]),
    ("", "podtemplates", &["template"]),
];

/// The kinds of object the rules police.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A Pod.
    Pod,
    /// A workload with a pod template at this path of keys.
    Workload(&'static [&'static str]),
    /// A Service.
    Service,
    /// A Namespace.
    Namespace,
    /// A RoleBinding or ClusterRoleBinding.
    Binding,
    /// A PersistentVolumeClaim.
    Claim,
    /// A PersistentVolume.
    Volume,
    /// A Secret.
    Secret,
}

impl Kind {
    /// The kind a write to `target` writes, if the rules police it: the
    /// object itself, or its `status` or `finalize` subresource (whose
    /// body is the whole object). Other subresources (`scale`, `eviction`,
    /// `resize`) write no field the rules look at.
    pub fn of(target: &ApiTarget) -> Option<Kind> {
        if !matches!(
            target.subresource.as_deref(),
            None | Some("status" | "finalize")
        ) {
            return None;
        }
        let (g, r) = (target.group.as_str(), target.resource.as_str());
        if let Some((_, _, path)) = TEMPLATES.iter().find(|(tg, tr, _)| *tg == g && *tr == r) {
            return Some(Kind::Workload(path));
        }
        Some(match (g, r) {
            ("", "pods") => Kind::Pod,
            ("", "services") => Kind::Service,
            ("", "namespaces") => Kind::Namespace,
            ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => Kind::Binding,
            ("", "persistentvolumeclaims") => Kind::Claim,
            ("", "persistentvolumes") => Kind::Volume,
            ("", "secrets") => Kind::Secret,
            _ => return None,
        })
    }

    /// Whether an update or patch is checked against the object before it
    /// as well as after: a pod's `nodeName` (the scheduler sets it), the
    /// Pod Security labels, a claim's binding, a volume's fields.
    pub fn compares(self) -> bool {
        matches!(
            self,
            Kind::Pod | Kind::Namespace | Kind::Claim | Kind::Volume
        )
    }
}

/// The rule for pods in a namespace no pod rule names.
const DEFAULT_POD_RULE_AT: &str = "the default pod rule (kubernetes.objects.pods)";

/// An adapter's object rules, ready to check objects.
#[derive(Debug, Clone, Default)]
pub struct ObjectPolicy {
    rules: ObjectRules,
    default_pod: PodRule,
}

impl ObjectPolicy {
    /// The policy of these (validated) rules.
    pub fn new(rules: &ObjectRules) -> Self {
        ObjectPolicy {
            rules: rules.clone(),
            default_pod: PodRule::default(),
        }
    }

    /// The pod rule for namespace `ns`, and where it is in the grants.
    pub fn pod_rule(&self, ns: &str) -> (&PodRule, String) {
        self.rules
            .pods
            .iter()
            .enumerate()
            .find(|(_, r)| r.namespaces.iter().any(|p| pattern_matches(p, ns)))
            .map(|(i, r)| (r, format!("kubernetes.objects.pods[{i}]")))
            .unwrap_or((&self.default_pod, DEFAULT_POD_RULE_AT.into()))
    }

    /// The workload rule for namespace `ns`, and where it is in the grants.
    fn workload_rule(&self, ns: &str) -> Option<(&schema::WorkloadRule, String)> {
        self.rules
            .workloads
            .iter()
            .enumerate()
            .find(|(_, r)| r.namespaces.iter().any(|p| pattern_matches(p, ns)))
            .map(|(i, r)| (r, format!("kubernetes.objects.workloads[{i}]")))
    }

    /// Checks the object a create would write, or an update or patch would
    /// produce, in namespace `ns` (none for cluster-scoped kinds).
    pub fn check(&self, kind: Kind, ns: Option<&str>, obj: &Value) -> Result<(), Violation> {
        let ns_name = ns.unwrap_or("");
        let result = match kind {
            Kind::Pod => {
                let (rule, at) = self.pod_rule(ns_name);
                pods::check(
                    rule,
                    &at,
                    &self.rules.claims,
                    &PodView {
                        meta: obj.get("metadata").unwrap_or(&Value::Null),
                        spec: obj.get("spec").unwrap_or(&Value::Null),
                        meta_at: "metadata",
                        spec_at: "spec",
                    },
                )
            }
            Kind::Workload(path) => {
                let template = fields::dig(obj, path).unwrap_or(&Value::Null);
                let base = path.join(".");
                let (meta_at, spec_at) = (format!("{base}.metadata"), format!("{base}.spec"));
                let (rule, at) = self.pod_rule(ns_name);
                pods::check(
                    rule,
                    &at,
                    &self.rules.claims,
                    &PodView {
                        meta: template.get("metadata").unwrap_or(&Value::Null),
                        spec: template.get("spec").unwrap_or(&Value::Null),
                        meta_at: &meta_at,
                        spec_at: &spec_at,
                    },
                )
                .and_then(|()| claims::check_set_templates(&self.rules.claims, obj))
                .and_then(|()| match self.workload_rule(ns_name) {
                    Some((rule, at)) => workloads::check(rule, &at, obj, path),
                    None => Ok(()),
                })
            }
            Kind::Service => services::check(&self.rules.services, ns_name, obj),
            Kind::Namespace => namespaces::check_create(&self.rules.namespaces, obj),
            Kind::Binding => bindings::check(&self.rules.role_bindings, obj),
            Kind::Claim => claims::check_claim(&self.rules.claims, obj),
            Kind::Secret => secrets::check(obj),
            // A PV is never created through the grants; its writes compare.
            Kind::Volume => Ok(()),
        };
        if let Err(v) = &result {
            tracing::debug!(rule = v.rule, field = %v.field, "object rule refused a write");
        }
        result
    }

    /// Checks an update or patch of a kind that [compares](Kind::compares),
    /// from `old` to `new`; other kinds as [`ObjectPolicy::check`] on `new`.
    pub fn check_change(
        &self,
        kind: Kind,
        ns: Option<&str>,
        old: &Value,
        new: &Value,
    ) -> Result<(), Violation> {
        let result = match kind {
            Kind::Pod => {
                // The scheduler's choice of node stays; the adapter's may
                // not be made or changed.
                let node = |v: &Value| fields::dig(v, &["spec", "nodeName"]).cloned();
                let node_name = node(new);
                if node_name.is_some() && node_name == node(old) {
                    let mut unplaced = new.clone();
                    if let Some(spec) = unplaced.get_mut("spec").and_then(Value::as_object_mut) {
                        spec.remove("nodeName");
                    }
                    return self.check(kind, ns, &unplaced);
                }
                return self.check(kind, ns, new);
            }
            Kind::Namespace => namespaces::check_change(&self.rules.namespaces, old, new),
            Kind::Claim => claims::check_claim_change(&self.rules.claims, old, new),
            Kind::Volume => claims::check_volume_change(old, new),
            other => return self.check(other, ns, new),
        };
        if let Err(v) = &result {
            tracing::debug!(rule = v.rule, field = %v.field, "object rule refused a change");
        }
        result
    }

    /// Makes the body of a create what the host wants written: a namespace
    /// gets the Pod Security `enforce` label of its pod rule's profile.
    /// Call after [`ObjectPolicy::check`] passed.
    pub fn prepare_create(&self, kind: Kind, obj: &mut Value) {
        if kind == Kind::Namespace {
            let name = obj
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let (rule, _) = self.pod_rule(&name);
            namespaces::set_enforce(obj, rule.profile);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grants::request::{ApiRequest, Method, parse};
    use serde_json::json;

    fn target(path: &str) -> ApiTarget {
        match parse(Method::Post, path, &[]) {
            Ok(ApiRequest::Resource { target, .. }) => target,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn kinds() {
        assert_eq!(
            Kind::of(&target("/api/v1/namespaces/x/pods")),
            Some(Kind::Pod)
        );
        assert_eq!(
            Kind::of(&target("/api/v1/namespaces/x/pods/p/status")),
            Some(Kind::Pod)
        );
        assert_eq!(
            Kind::of(&target("/api/v1/namespaces/x/pods/p/eviction")),
            None
        );
        assert_eq!(
            Kind::of(&target("/apis/batch/v1/namespaces/x/cronjobs")),
            Some(Kind::Workload(&["spec", "jobTemplate", "spec", "template"]))
        );
        assert_eq!(
            Kind::of(&target("/apis/apps/v1/namespaces/x/deployments/d/scale")),
            None
        );
        assert_eq!(
            Kind::of(&target("/api/v1/namespaces")),
            Some(Kind::Namespace)
        );
        assert_eq!(
            Kind::of(&target("/api/v1/namespaces/x/finalize")),
            Some(Kind::Namespace)
        );
        assert_eq!(Kind::of(&target("/api/v1/namespaces/x/configmaps")), None);
        assert_eq!(
            Kind::of(&target("/api/v1/namespaces/x/secrets")),
            Some(Kind::Secret)
        );
        assert_eq!(
            Kind::of(&target(
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"
            )),
            Some(Kind::Binding)
        );
    }

    fn policy(yaml: &str) -> ObjectPolicy {
        let rules: ObjectRules = crate::yaml::from_str(yaml).expect("rules");
        rules.validate().expect("valid");
        ObjectPolicy::new(&rules)
    }

    #[test]
    fn the_first_pod_rule_for_the_namespace_applies() {
        let p = policy(
            "pods:\n- {namespaces: [pando-edge], profile: restricted}\n- {namespaces: ['pando-*'], runtime_classes: [gvisor]}\n",
        );
        let pod = json!({"spec": {"automountServiceAccountToken": false, "runtimeClassName": "gvisor",
                                  "containers": [{"name": "c"}]}});
        p.check(Kind::Pod, Some("pando-shop"), &pod)
            .expect("pando-* rule");
        let v = p.check(Kind::Pod, Some("pando-edge"), &pod).unwrap_err();
        assert_eq!(v.rule, "pods.restricted");
        let v = p.check(Kind::Pod, Some("default"), &pod).unwrap_err();
        assert_eq!(v.rule, "pods.runtime-classes");
        assert!(
            v.grant.is_none_or(|g| g.contains("default pod rule")),
            "the default rule is named"
        );
    }

    #[test]
    fn templates_are_pods() {
        let p = ObjectPolicy::default();
        let deploy = json!({"spec": {"template": {"metadata": {}, "spec": {
            "automountServiceAccountToken": false, "hostNetwork": true, "containers": [{"name": "c"}]}}}});
        let v = p
            .check(Kind::Workload(&["spec", "template"]), Some("x"), &deploy)
            .unwrap_err();
        assert_eq!(
            v.to_string(),
            "pods must meet baseline: spec.template.spec.hostNetwork is true"
        );
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "automountServiceAccountToken": false, "containers": [{"name": "c", "securityContext": {"privileged": true}}]}}}}}});
        let v = p
            .check(
                Kind::Workload(&["spec", "jobTemplate", "spec", "template"]),
                Some("x"),
                &cron,
            )
            .unwrap_err();
        assert_eq!(
            v.field,
            "spec.jobTemplate.spec.template.spec.containers[0].securityContext.privileged"
        );
    }

    #[test]
    fn a_pod_keeps_the_node_the_scheduler_chose_and_no_other() {
        let p = ObjectPolicy::default();
        let pod = |node: Option<&str>| {
            let mut v = json!({"spec": {"automountServiceAccountToken": false, "containers": [{"name": "c"}]}});
            if let Some(n) = node {
                v["spec"]["nodeName"] = json!(n);
            }
            v
        };
        p.check_change(Kind::Pod, Some("x"), &pod(Some("n1")), &pod(Some("n1")))
            .expect("scheduled");
        for (old, new) in [
            (pod(None), pod(Some("n1"))),
            (pod(Some("n1")), pod(Some("n2"))),
        ] {
            let v = p
                .check_change(Kind::Pod, Some("x"), &old, &new)
                .unwrap_err();
            assert_eq!(v.rule, "pods.node-name");
        }
        assert_eq!(
            p.check(Kind::Pod, Some("x"), &pod(Some("n1")))
                .unwrap_err()
                .rule,
            "pods.node-name"
        );
    }

    #[test]
    fn a_created_namespace_gets_its_profile() {
        let p = policy("pods:\n- {namespaces: [pando-edge], profile: restricted}\n");
        for (name, profile) in [("pando-edge", "restricted"), ("pando-x", "baseline")] {
            let mut ns = json!({"metadata": {"name": name}});
            p.check(Kind::Namespace, None, &ns).expect("no labels");
            p.prepare_create(Kind::Namespace, &mut ns);
            assert_eq!(ns["metadata"]["labels"][namespaces::ENFORCE_LABEL], profile);
        }
    }

    #[test]
    fn validation_names_the_field() {
        for (yaml, field) in [
            ("pods: [{namespaces: []}]", "pods[0].namespaces"),
            ("pods: [{namespaces: ['A']}]", "pods[0].namespaces[0]"),
            (
                "pods: [{namespaces: [x], runtime_classes: ['No Such']}]",
                "pods[0].runtime_classes[0]",
            ),
            (
                "pods: [{namespaces: [x], tolerations: [{operator: Equal}]}]",
                "pods[0].tolerations[0]",
            ),
            (
                "pods: [{namespaces: [x], tolerations: [{key: k, operator: Exists, value: v}]}]",
                "pods[0].tolerations[0]",
            ),
            (
                "services: [{namespaces: [x], types: []}]",
                "services[0].types",
            ),
            ("namespaces: {labels: ['a b']}", "namespaces.labels[0]"),
            (
                "pods: [{namespaces: [x], volumes: [hostPath]}]",
                "pods[0].volumes[0]",
            ),
            (
                "pods: [{namespaces: [x], volumes: ['nfs!']}]",
                "pods[0].volumes[0]",
            ),
            ("claims: {max_storage: lots}", "claims.max_storage"),
            ("claims: {max_storage: 1e3}", "claims.max_storage"),
            (
                "claims: {storage_classes: ['A B']}",
                "claims.storage_classes[0]",
            ),
            (
                "workloads: [{namespaces: [], max_replicas: 2}]",
                "workloads[0].namespaces",
            ),
            (
                "workloads: [{namespaces: [x], max_memory: 8GB}]",
                "workloads[0].max_memory",
            ),
            (
                "services: [{namespaces: [x], types: [NodePort], exposed_ports: ['HTTP!']}]",
                "services[0].exposed_ports[0]",
            ),
            (
                "services: [{namespaces: [x], types: [NodePort], exposed_selector: {'a b': c}}]",
                "services[0].exposed_selector[a b]",
            ),
            (
                "role_bindings: [{role: r, subjects: [{kind: User, name: u}]}, \
                 {role: q, subjects: [{kind: User, name: u}]}, {role: r, subjects: [{kind: User, name: v}]}]",
                "role_bindings[2].role",
            ),
            (
                "role_bindings: [{role: r, subjects: [{kind: User, name: u}]}, {role: q, subjects: []}]",
                "role_bindings[1].subjects",
            ),
            (
                "role_bindings: {role: r, subjects: []}",
                "role_bindings[0].subjects",
            ),
            (
                "role_bindings: {role: r, subjects: [{kind: Group, name: 'system:authenticated'}]}",
                "role_bindings[0].subjects[0].name",
            ),
            (
                "role_bindings: {role: r, subjects: [{kind: ServiceAccount, name: s}]}",
                "role_bindings[0].subjects[0]",
            ),
            (
                "role_bindings: {role: r, subjects: [{kind: Robot, name: s}]}",
                "role_bindings[0].subjects[0].kind",
            ),
        ] {
            let rules: ObjectRules = crate::yaml::from_str(yaml).expect(yaml);
            let (f, _) = rules.validate().expect_err(yaml);
            assert_eq!(f, field, "{yaml}");
        }
        assert!(
            crate::yaml::from_str::<ObjectRules>("pods: [{namespaces: [x], profile: privileged}]")
                .is_err()
        );
        assert!(
            crate::yaml::from_str::<ObjectRules>("services: [{namespaces: [x], types: [Bogus]}]")
                .is_err()
        );
        assert!(crate::yaml::from_str::<ObjectRules>("podz: []").is_err());
    }
}
