//! Which built-in resources have no namespace.

/// Cluster-scoped resources the host knows, as `(group, resource)`. A
/// collection without a namespace for any other resource is read as an
/// all-namespaces collection of a namespaced resource, which needs
/// `namespaces: ["*"]`: the stricter reading when in doubt.
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "namespaces"),
    ("", "nodes"),
    ("", "persistentvolumes"),
    ("", "componentstatuses"),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
    ),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings",
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("apiregistration.k8s.io", "apiservices"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("certificates.k8s.io", "certificatesigningrequests"),
    ("certificates.k8s.io", "clustertrustbundles"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
    ),
    ("networking.k8s.io", "ingressclasses"),
    ("networking.k8s.io", "ipaddresses"),
    ("networking.k8s.io", "servicecidrs"),
    ("node.k8s.io", "runtimeclasses"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("resource.k8s.io", "deviceclasses"),
    ("scheduling.k8s.io", "priorityclasses"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "volumeattachments"),
    ("storage.k8s.io", "volumeattributesclasses"),
];

/// Whether `group/resource` is cluster-scoped, by the built-in table.
pub fn is_cluster_scoped(group: &str, resource: &str) -> bool {
    CLUSTER_SCOPED
        .iter()
        .any(|&(g, r)| g == group && r == resource)
}
