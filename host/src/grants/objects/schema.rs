//! The `kubernetes.objects` section of a grants document: what the objects
//! an adapter writes may contain. Every field defaults to the safe choice:
//! pods meet `baseline` and use no priority class, toleration, service
//! account, runtime class or token of their own; Services are ClusterIP
//! (or headless) only; namespaces carry no labels of the adapter's; no
//! role binding may be written.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grants::json_schema::{
    self, DNS_LABEL, DNS_SUBDOMAIN, LABEL_KEY_PATTERN, NAME_PATTERN, NAMESPACE_PATTERN, NOT_SYSTEM,
};

/// What written objects may contain.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ObjectRules {
    /// Pod rules, by namespace: the first whose `namespaces` match applies
    /// to pods and pod templates there; where none matches, the default
    /// rule (baseline, nothing else allowed).
    #[serde(default)]
    pub pods: Vec<PodRule>,
    /// Service rules, by namespace: the Service types beyond ClusterIP
    /// allowed there. ClusterIP and headless Services are allowed
    /// everywhere.
    #[serde(default)]
    pub services: Vec<ServiceRule>,
    /// What namespaces the adapter writes may carry.
    #[serde(default)]
    pub namespaces: NamespaceRule,
    /// The (role, subjects) pairs the adapter's (Cluster)RoleBindings may
    /// be: each binding names one of these roles, and only that entry's
    /// subjects. One entry may be written as a map, not a list. Absent or
    /// empty: no binding may be written.
    #[serde(default, deserialize_with = "one_or_many")]
    #[schemars(schema_with = "one_or_many_schema")]
    pub role_bindings: Vec<BindingRule>,
    /// What claims, claim templates (`ephemeral.volumeClaimTemplate`,
    /// `volumeClaimTemplates`) and their volumes may be. Absent: a claim
    /// names no storage class and so may not be written.
    #[serde(default)]
    pub claims: ClaimRule,
    /// Bounds on workloads (Deployments and the other kinds with a pod
    /// template), by namespace: the first whose `namespaces` match
    /// applies. Where none matches, replicas and resources are bounded by
    /// the namespace's quota alone.
    #[serde(default)]
    pub workloads: Vec<WorkloadRule>,
}

/// A ceiling, as a Kubernetes quantity: digits, an optional fraction, and
/// an optional suffix (`m`, `k`, `M`, `G`, `T`, `P`, `E`, `Ki` … `Ei`).
pub(crate) const CEILING_PATTERN: &str = "^[0-9]+(\\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$";

/// What a claim may ask for.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ClaimRule {
    /// Storage class name patterns a claim may name (`standard`,
    /// `fast-*`). Never a class whose volumes are made by hand (a
    /// `kubernetes.io/no-provisioner` class binds existing, static
    /// volumes); `storageClassName: ""` (no class: any static volume) is
    /// refused whatever this says.
    #[serde(default)]
    #[schemars(inner(regex(pattern = NAME_PATTERN)))]
    pub storage_classes: Vec<String>,
    /// A claim may leave `storageClassName` unset, for the cluster's
    /// default class. Only where the cluster has a default StorageClass:
    /// without one an unset claim binds a static volume of no class as
    /// `""` does. Default `false`.
    #[serde(default)]
    pub default_class: bool,
    /// The most storage one claim may request (`spec.resources.requests`
    /// and `limits`, `storage`), e.g. `100Gi`. Absent: no ceiling beyond
    /// the namespace's quota.
    #[serde(default)]
    #[schemars(regex(pattern = CEILING_PATTERN))]
    pub max_storage: Option<String>,
}

/// Bounds on the workloads in some namespaces.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WorkloadRule {
    /// Namespace patterns the rule applies to.
    #[schemars(length(min = 1), inner(regex(pattern = NAMESPACE_PATTERN)))]
    pub namespaces: Vec<String>,
    /// The most replicas a workload (`spec.replicas`) may ask for.
    #[serde(default)]
    pub max_replicas: Option<u32>,
    /// The most CPU one container of the template may request or be
    /// limited to, e.g. `4`.
    #[serde(default)]
    #[schemars(regex(pattern = CEILING_PATTERN))]
    pub max_cpu: Option<String>,
    /// The most memory one container of the template may request or be
    /// limited to, e.g. `8Gi`.
    #[serde(default)]
    #[schemars(regex(pattern = CEILING_PATTERN))]
    pub max_memory: Option<String>,
}

/// A Pod Security Standards profile.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Prevents the known privilege escalations.
    #[default]
    Baseline,
    /// Baseline, and the pod hardening best practices.
    Restricted,
}

impl Profile {
    /// `baseline` or `restricted`, as the standard and the Pod Security
    /// labels spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Baseline => "baseline",
            Profile::Restricted => "restricted",
        }
    }
}

/// What pods (and pod templates) in some namespaces may contain.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PodRule {
    /// Namespace patterns the rule applies to.
    #[schemars(length(min = 1), inner(regex(pattern = NAMESPACE_PATTERN)))]
    pub namespaces: Vec<String>,
    /// The Pod Security Standards profile pods must meet.
    #[serde(default)]
    pub profile: Profile,
    /// `priorityClassName` values allowed; empty: none may be set.
    #[serde(default)]
    #[schemars(inner(regex(pattern = DNS_SUBDOMAIN)))]
    pub priority_classes: Vec<String>,
    /// Tolerations allowed, each matched exactly (key, operator, value,
    /// effect); empty: none but the two the API server adds itself.
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
    /// `serviceAccountName` values allowed besides `default` (what an
    /// unset name is).
    #[serde(default)]
    #[schemars(inner(regex(pattern = DNS_SUBDOMAIN)))]
    pub service_accounts: Vec<String>,
    /// `runtimeClassName` values allowed; empty: none may be set.
    #[serde(default)]
    #[schemars(inner(regex(pattern = DNS_SUBDOMAIN)))]
    pub runtime_classes: Vec<String>,
    /// Pods may mount a service-account token (`automountServiceAccountToken`
    /// other than `false`, projected token volumes). Default `false`.
    #[serde(default)]
    pub service_account_token: bool,
    /// Volume types allowed besides `restricted`'s own (configMap, secret,
    /// downwardAPI, emptyDir, persistentVolumeClaim, projected, ephemeral),
    /// by their field name in a pod's `volumes` (`csi`, `nfs`, `image`).
    /// `hostPath` is never allowed (`baseline`).
    #[serde(default)]
    #[schemars(inner(regex(pattern = VOLUME_TYPE_PATTERN)))]
    pub volumes: Vec<String>,
}

/// A volume type's field name: a lower camel case word.
pub(crate) const VOLUME_TYPE_PATTERN: &str = "^[a-z][A-Za-z0-9]{0,62}$";

/// One toleration a pod may carry.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[schemars(transform = json_schema::toleration_operator)]
pub struct Toleration {
    /// The taint key; absent only with `operator: Exists` (every taint).
    #[serde(default)]
    pub key: Option<String>,
    /// `Equal` (the default) or `Exists`.
    #[serde(default)]
    #[schemars(extend("enum" = ["Equal", "Exists", null]))]
    pub operator: Option<String>,
    /// The taint value, for `Equal`.
    #[serde(default)]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule`, `NoExecute`; absent: every effect.
    #[serde(default)]
    #[schemars(extend("enum" = ["NoSchedule", "PreferNoSchedule", "NoExecute", null]))]
    pub effect: Option<String>,
}

/// Service types allowed in some namespaces.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServiceRule {
    /// Namespace patterns the rule applies to.
    #[schemars(length(min = 1), inner(regex(pattern = NAMESPACE_PATTERN)))]
    pub namespaces: Vec<String>,
    /// Types allowed there besides ClusterIP.
    #[schemars(length(min = 1))]
    pub types: Vec<ServiceType>,
    /// What an exposed (NodePort or LoadBalancer) Service here must
    /// select: each label key with a value pattern (`pando.dev/edge: "*"`
    /// is any value, but set). Its selector must name every one of them,
    /// so that it selects only pods that carry them. Empty: any selector.
    #[serde(default)]
    #[schemars(extend(
        "propertyNames" = {"pattern": "^[A-Za-z0-9._/-]{1,317}$"},
        "additionalProperties" = {"type": "string", "pattern": "^(\\*|[A-Za-z0-9._-]{0,63})$"}
    ))]
    pub exposed_selector: std::collections::BTreeMap<String, String>,
    /// The target ports an exposed Service here may forward to: container
    /// port names (`http`) or numbers (`8080`). A port without
    /// `targetPort` forwards to its `port`. Empty: any port.
    #[serde(default)]
    #[schemars(inner(regex(pattern = "^([a-z0-9-]{1,15}|[0-9]{1,5})$")))]
    pub exposed_ports: Vec<String>,
}

/// A Service's `spec.type`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
pub enum ServiceType {
    /// A cluster-internal address (or none: headless). Always allowed.
    ClusterIP,
    /// A port on every node.
    NodePort,
    /// A load balancer outside the cluster.
    LoadBalancer,
    /// A DNS alias to any name.
    ExternalName,
}

impl ServiceType {
    /// The type as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceType::ClusterIP => "ClusterIP",
            ServiceType::NodePort => "NodePort",
            ServiceType::LoadBalancer => "LoadBalancer",
            ServiceType::ExternalName => "ExternalName",
        }
    }

    /// The type with this spelling, exactly.
    pub fn parse(s: &str) -> Option<ServiceType> {
        [
            ServiceType::ClusterIP,
            ServiceType::NodePort,
            ServiceType::LoadBalancer,
            ServiceType::ExternalName,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }
}

/// What namespaces may carry.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NamespaceRule {
    /// Label-key patterns (`app.kubernetes.io/managed-by`, `pando.dev/*`)
    /// the adapter may set. `kubernetes.io/metadata.name` (set by the API
    /// server) is always allowed; the Pod Security labels never are.
    #[serde(default)]
    #[schemars(inner(regex(pattern = LABEL_KEY_PATTERN)))]
    pub labels: Vec<String>,
}

/// A list, or one entry on its own (the form before there could be more).
fn one_or_many<'de, D>(d: D) -> Result<Vec<BindingRule>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        Many(Vec<BindingRule>),
        One(BindingRule),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::Many(v)) => v,
        Some(OneOrMany::One(b)) => vec![b],
    })
}

/// What [`one_or_many`] reads: a list, one entry, or null (none).
fn one_or_many_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let entry = generator.subschema_for::<BindingRule>();
    schemars::json_schema!({
        "anyOf": [
            { "type": "array", "items": entry },
            entry,
            { "type": "null" },
        ],
    })
}

/// One role an adapter's bindings may name, and to whom.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BindingRule {
    /// The ClusterRole a binding names.
    #[schemars(regex(pattern = DNS_SUBDOMAIN))]
    pub role: String,
    /// The subjects a binding may name (each must be one of these).
    #[schemars(length(min = 1))]
    pub subjects: Vec<Subject>,
}

/// A binding's subject.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
#[schemars(transform = json_schema::subject_namespace)]
pub struct Subject {
    /// `ServiceAccount`, `User` or `Group`.
    #[schemars(extend("enum" = ["ServiceAccount", "User", "Group"]))]
    pub kind: String,
    /// Its name.
    #[schemars(length(min = 1), regex(pattern = NOT_SYSTEM))]
    pub name: String,
    /// For a ServiceAccount, its namespace.
    #[serde(default)]
    #[schemars(regex(pattern = DNS_LABEL))]
    pub namespace: Option<String>,
}

impl ObjectRules {
    /// Checks the section; on error, the field (`pods[0].namespaces[1]`)
    /// and what is wrong.
    pub(crate) fn validate(&self) -> Result<(), (String, String)> {
        for (i, rule) in self.pods.iter().enumerate() {
            let at = |f: String| format!("pods[{i}].{f}");
            validate_namespaces(&rule.namespaces).map_err(|(f, w)| (at(f), w))?;
            for (list, field) in [
                (&rule.priority_classes, "priority_classes"),
                (&rule.service_accounts, "service_accounts"),
                (&rule.runtime_classes, "runtime_classes"),
            ] {
                for (j, name) in list.iter().enumerate() {
                    crate::grants::request::check_dns_subdomain(name)
                        .map_err(|why| (at(format!("{field}[{j}]")), format!("`{name}`: {why}")))?;
                }
            }
            for (j, t) in rule.tolerations.iter().enumerate() {
                validate_toleration(t).map_err(|why| (at(format!("tolerations[{j}]")), why))?;
            }
            for (j, v) in rule.volumes.iter().enumerate() {
                validate_volume_type(v).map_err(|why| (at(format!("volumes[{j}]")), why))?;
            }
        }
        for (j, p) in self.claims.storage_classes.iter().enumerate() {
            super::super::validate_pattern(p, 253, true)
                .map_err(|why| (format!("claims.storage_classes[{j}]"), why))?;
        }
        if let Some(max) = &self.claims.max_storage {
            validate_ceiling(max).map_err(|why| ("claims.max_storage".to_string(), why))?;
        }
        for (i, w) in self.workloads.iter().enumerate() {
            let at = |f: &str| format!("workloads[{i}].{f}");
            validate_namespaces(&w.namespaces).map_err(|(f, why)| (at(&f), why))?;
            for (field, max) in [("max_cpu", &w.max_cpu), ("max_memory", &w.max_memory)] {
                if let Some(max) = max {
                    validate_ceiling(max).map_err(|why| (at(field), why))?;
                }
            }
        }
        for (i, rule) in self.services.iter().enumerate() {
            validate_namespaces(&rule.namespaces)
                .map_err(|(f, w)| (format!("services[{i}].{f}"), w))?;
            if rule.types.is_empty() {
                return Err((
                    format!("services[{i}].types"),
                    "name at least one type (ClusterIP is always allowed)".into(),
                ));
            }
            for (key, value) in &rule.exposed_selector {
                validate_selector_entry(key, value).map_err(|why| {
                    (
                        format!("services[{i}].exposed_selector[{}]", key.escape_debug()),
                        why,
                    )
                })?;
            }
            for (j, port) in rule.exposed_ports.iter().enumerate() {
                validate_port(port)
                    .map_err(|why| (format!("services[{i}].exposed_ports[{j}]"), why))?;
            }
        }
        for (j, key) in self.namespaces.labels.iter().enumerate() {
            validate_label_pattern(key).map_err(|why| (format!("namespaces.labels[{j}]"), why))?;
        }
        for (i, b) in self.role_bindings.iter().enumerate() {
            let base = format!("role_bindings[{i}]");
            if self.role_bindings[..i].iter().any(|o| o.role == b.role) {
                return Err((
                    format!("{base}.role"),
                    format!(
                        "`{}` is named twice: list its subjects in one entry",
                        b.role
                    ),
                ));
            }
            crate::grants::request::check_dns_subdomain(&b.role)
                .map_err(|why| (format!("{base}.role"), format!("`{}`: {why}", b.role)))?;
            if b.subjects.is_empty() {
                return Err((
                    format!("{base}.subjects"),
                    "name at least one subject".into(),
                ));
            }
            for (j, s) in b.subjects.iter().enumerate() {
                let at = format!("{base}.subjects[{j}]");
                match (s.kind.as_str(), &s.namespace) {
                    ("ServiceAccount", Some(ns)) => crate::grants::request::check_dns_label(ns)
                        .map_err(|why| (format!("{at}.namespace"), why))?,
                    ("ServiceAccount", None) => {
                        return Err((at, "a ServiceAccount subject needs its namespace".into()));
                    }
                    ("User" | "Group", None) => {}
                    ("User" | "Group", Some(_)) => {
                        return Err((at, "only a ServiceAccount subject has a namespace".into()));
                    }
                    (other, _) => {
                        return Err((
                            format!("{at}.kind"),
                            format!("`{other}`: use ServiceAccount, User or Group"),
                        ));
                    }
                }
                if s.name.is_empty() || s.name.starts_with("system:") {
                    return Err((
                        format!("{at}.name"),
                        format!(
                            "`{}`: a subject is named, and never one of the `system:` users or \
                             groups",
                            s.name
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn validate_namespaces(patterns: &[String]) -> Result<(), (String, String)> {
    if patterns.is_empty() {
        return Err((
            "namespaces".into(),
            "name the namespaces the rule applies to (`*` for all)".into(),
        ));
    }
    for (j, p) in patterns.iter().enumerate() {
        super::super::validate_pattern(p, 63, false)
            .map_err(|why| (format!("namespaces[{j}]"), why))?;
    }
    Ok(())
}

fn validate_toleration(t: &Toleration) -> Result<(), String> {
    match (t.operator.as_deref(), &t.key, &t.value) {
        (None | Some("Equal"), None, _) => {
            return Err("an `Equal` toleration needs a key".into());
        }
        (Some("Exists"), _, Some(_)) => return Err("an `Exists` toleration has no value".into()),
        (None | Some("Equal" | "Exists"), _, _) => {}
        (Some(other), _, _) => return Err(format!("operator `{other}`: use Equal or Exists")),
    }
    match t.effect.as_deref() {
        None | Some("NoSchedule" | "PreferNoSchedule" | "NoExecute") => Ok(()),
        Some(other) => Err(format!(
            "effect `{other}`: use NoSchedule, PreferNoSchedule or NoExecute"
        )),
    }
}

/// A volume type: a field name of a pod's volume, never `hostPath`.
fn validate_volume_type(v: &str) -> Result<(), String> {
    let ok = !v.is_empty()
        && v.len() <= 63
        && v.starts_with(|c: char| c.is_ascii_lowercase())
        && v.bytes().all(|b| b.is_ascii_alphanumeric());
    if !ok {
        return Err(format!(
            "`{}` is not a volume type (its field name in a pod's volumes: `csi`, `nfs`)",
            v.escape_debug()
        ));
    }
    if v == "hostPath" {
        return Err("`hostPath` is never allowed (Pod Security baseline)".into());
    }
    Ok(())
}

/// A ceiling: digits, a fraction, a suffix ([`CEILING_PATTERN`]).
fn validate_ceiling(s: &str) -> Result<(), String> {
    let digits = |t: &str| t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let int_end = digits(s);
    let mut rest = &s[int_end..];
    if let Some(r) = rest.strip_prefix('.') {
        let end = digits(r);
        if end == 0 {
            return Err(ceiling_error(s));
        }
        rest = &r[end..];
    }
    let suffixes = [
        "", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ];
    if int_end == 0 || !suffixes.contains(&rest) {
        return Err(ceiling_error(s));
    }
    Ok(())
}

fn ceiling_error(s: &str) -> String {
    format!(
        "`{}` is not a quantity: digits, an optional fraction and suffix (`500m`, `4`, `64Gi`)",
        s.escape_debug()
    )
}

/// One entry of an exposed selector: a label key, and `*` or a label value.
fn validate_selector_entry(key: &str, value: &str) -> Result<(), String> {
    let key_ok = !key.is_empty()
        && key.len() <= 317
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'));
    if !key_ok {
        return Err("a label key has only letters, digits, `-`, `_`, `.` and `/`".into());
    }
    let value_ok = value == "*"
        || (value.len() <= 63
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')));
    if !value_ok {
        return Err(format!(
            "`{}`: a label value, or `*` for any value",
            value.escape_debug()
        ));
    }
    Ok(())
}

/// An exposed port: a container port's name or number.
fn validate_port(p: &str) -> Result<(), String> {
    let number = !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit());
    let name = !p.is_empty()
        && p.len() <= 15
        && p.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if number || name {
        Ok(())
    } else {
        Err(format!(
            "`{}`: a container port's name (`http`) or number (`8080`)",
            p.escape_debug()
        ))
    }
}

/// A label-key pattern: a label key's characters and `*`.
fn validate_label_pattern(p: &str) -> Result<(), String> {
    let ok = !p.is_empty()
        && p.len() <= 317
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/' | b'*'));
    if !ok {
        return Err(format!(
            "pattern `{}` may contain only letters, digits, `-`, `_`, `.`, `/` and `*`",
            p.escape_debug()
        ));
    }
    Ok(())
}
