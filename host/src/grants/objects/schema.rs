//! The `kubernetes.objects` section of a grants document: what the objects
//! an adapter writes may contain. Every field defaults to the safe choice:
//! pods meet `baseline` and use no priority class, toleration, service
//! account, runtime class or token of their own; Services are ClusterIP
//! (or headless) only; namespaces carry no labels of the adapter's; no
//! role binding may be written.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::grants::json_schema::{
    self, DNS_LABEL, DNS_SUBDOMAIN, LABEL_KEY_PATTERN, NAMESPACE_PATTERN, NOT_SYSTEM,
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
}

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
