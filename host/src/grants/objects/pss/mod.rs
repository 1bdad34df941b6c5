//! The Pod Security Standards (kubernetes.io/docs/concepts/security/pod-security-standards),
//! `baseline` and `restricted`, over a pod's spec and metadata: every
//! field the standard lists, in containers, init containers and ephemeral
//! containers alike. Windows pods get no exemption (stricter than
//! upstream's `restricted`).

use serde_json::Value;

use super::Violation;
use super::fields::list;
use super::schema::Profile;

mod baseline;
mod restricted;
#[cfg(test)]
mod tests;

/// A pod's spec and metadata, wherever they sit in the object.
pub(crate) struct PodView<'a> {
    /// The pod's (or template's) metadata; `Null` when absent.
    pub meta: &'a Value,
    /// The pod's (or template's) spec.
    pub spec: &'a Value,
    /// Where the metadata is, for messages (`metadata`,
    /// `spec.template.metadata`).
    pub meta_at: &'a str,
    /// Where the spec is (`spec`, `spec.template.spec`).
    pub spec_at: &'a str,
}

/// The container lists the standard covers.
pub(crate) const CONTAINER_LISTS: [&str; 3] =
    ["containers", "initContainers", "ephemeralContainers"];

/// Capabilities `baseline` allows to add.
const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Sysctls `baseline` allows (the "safe" set).
const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

/// SELinux types `baseline` allows.
const SELINUX_TYPES: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// Volume types `restricted` allows.
const RESTRICTED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

struct Rule {
    profile: Profile,
}

impl Rule {
    fn fail(&self, field: String, problem: impl Into<String>) -> Violation {
        Violation {
            rule: match self.profile {
                Profile::Baseline => "pods.baseline",
                Profile::Restricted => "pods.restricted",
            },
            statement: format!("pods must meet {}", self.profile.as_str()),
            field,
            problem: problem.into(),
            grant: None,
        }
    }
}

/// One container, with where it is.
struct Container<'a> {
    c: &'a Value,
    at: String,
}

/// Checks `pod` against `profile`: `restricted` includes `baseline`.
pub(crate) fn check(profile: Profile, pod: &PodView<'_>) -> Result<(), Violation> {
    let r = Rule { profile };
    let mut containers = Vec::new();
    for key in CONTAINER_LISTS {
        let items = list(pod.spec, key).map_err(|p| r.fail(format!("{}.{key}", pod.spec_at), p))?;
        for (i, c) in items.iter().enumerate() {
            containers.push(Container {
                c,
                at: format!("{}.{key}[{i}]", pod.spec_at),
            });
        }
    }
    baseline::check(&r, pod, &containers)?;
    if profile == Profile::Restricted {
        restricted::check(&r, pod, &containers)?;
    }
    Ok(())
}
