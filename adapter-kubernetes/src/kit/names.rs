//! The names this adapter gives things in the cluster, and Kubernetes' rules
//! for names and labels.
//!
//! - An app's namespace is `pando-<app id>` ([`app_namespace`]).
//! - A workload's headless Service is named as the workload
//!   ([`service_name`]), so the name resolves inside the namespace as it does
//!   on a Docker network.
//! - The proxy reaches a workload at
//!   `<workload>.pando-<app>.svc.<cluster domain>` ([`upstream`], R-023).
//!
//! Everything here is computed from its arguments: no host calls.
//!
//! The `check_*` functions answer `Err(why)` with words that follow the
//! value in a message ("`Pando` is not a DNS label: …").

use pando_adapter_sdk::types::{Error, UpstreamAddress, WorkloadRef};

/// What every app namespace's name starts with.
pub const APP_NAMESPACE_PREFIX: &str = "pando-";

/// The longest DNS label, and so the longest namespace or Service name.
pub const MAX_LABEL: usize = 63;

/// The longest DNS subdomain.
pub const MAX_SUBDOMAIN: usize = 253;

/// The longest app id: `pando-<id>` must still be a DNS label.
pub const MAX_APP_ID: usize = MAX_LABEL - APP_NAMESPACE_PREFIX.len();

/// An app's namespace, `pando-<app id>`. The id must be a DNS label short
/// enough that the namespace is one too (at most 57 characters).
pub fn app_namespace(app_id: &str) -> Result<String, Error> {
    check_app_id(app_id)?;
    let mut namespace = String::with_capacity(APP_NAMESPACE_PREFIX.len() + app_id.len());
    namespace.push_str(APP_NAMESPACE_PREFIX);
    namespace.push_str(app_id);
    Ok(namespace)
}

/// The name of a workload's Service: the workload's own name, which must be
/// a DNS-1035 label (as every Service name is: it starts with a letter).
pub fn service_name(workload: &str) -> Result<&str, Error> {
    check_dns1035_label(workload)
        .map_err(|why| Error::Invalid(format!("workload name `{workload}` {why}")))?;
    Ok(workload)
}

/// Where Pando's proxy reaches a workload's port: its Service's name
/// in the cluster's DNS, `<workload>.pando-<app>.svc.<cluster_domain>`.
///
/// Computed, never looked up: it runs on every proxied request. A name
/// rather than an address, so it survives the pod being recreated. The
/// cluster domain is the configuration's, already checked.
pub fn upstream(
    cluster_domain: &str,
    workload: &WorkloadRef,
    port: u16,
) -> Result<UpstreamAddress, Error> {
    check_app_id(&workload.bundle)?;
    let service = service_name(&workload.workload)?;
    if port == 0 {
        return Err(Error::Invalid(format!(
            "port 0 of workload `{}` of app `{}` is not a port",
            workload.workload, workload.bundle
        )));
    }
    let mut host = String::with_capacity(
        service.len()
            + 1
            + APP_NAMESPACE_PREFIX.len()
            + workload.bundle.len()
            + ".svc.".len()
            + cluster_domain.len(),
    );
    host.push_str(service);
    host.push('.');
    host.push_str(APP_NAMESPACE_PREFIX);
    host.push_str(&workload.bundle);
    host.push_str(".svc.");
    host.push_str(cluster_domain);
    Ok(UpstreamAddress { host, port })
}

/// App ids whose namespace would be one of Pando's own: the edge's
/// (`pando-edge`, the default `edge_namespace`), the NetworkPolicy
/// canary's (`pando-canary`) and Pando's server's (`pando-system`, the
/// default `pando_namespace`). Ids starting with [`RESERVED_APP_ID_PREFIX`]
/// are reserved too. A configured namespace of another name is kept apart
/// by the ownership check instead (`volumes::owned_namespace`).
pub const RESERVED_APP_IDS: [&str; 4] = ["edge", "canary", "system", "trial"];
/// Trials' namespaces are `pando-trial-<hex>`: no app id starts so.
pub const RESERVED_APP_ID_PREFIX: &str = "trial-";

/// An app id: a DNS label of at most [`MAX_APP_ID`] characters, not one of
/// [`RESERVED_APP_IDS`].
fn check_app_id(app_id: &str) -> Result<(), Error> {
    check_dns_label(app_id).map_err(|why| Error::Invalid(format!("app id `{app_id}` {why}")))?;
    if RESERVED_APP_IDS.contains(&app_id) || app_id.starts_with(RESERVED_APP_ID_PREFIX) {
        return Err(Error::Invalid(format!(
            "app id `{app_id}` is reserved: its namespace `{APP_NAMESPACE_PREFIX}{app_id}` is              one Pando makes for itself (the edge, the NetworkPolicy canary, Pando's server,              trials); rename the app"
        )));
    }
    if app_id.len() > MAX_APP_ID {
        return Err(Error::Invalid(format!(
            "app id `{app_id}` is too long: its namespace `{APP_NAMESPACE_PREFIX}{app_id}` \
             would be longer than {MAX_LABEL} characters (an app id has at most {MAX_APP_ID})"
        )));
    }
    Ok(())
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// An RFC 1123 DNS label: 1–63 lowercase letters, digits and `-`, starting
/// and ending with a letter or digit. Namespaces are named so.
pub fn check_dns_label(name: &str) -> Result<(), String> {
    const WHAT: &str = "is not a DNS label";
    let bytes = name.as_bytes();
    match bytes {
        [] => Err(format!("{WHAT}: it is empty")),
        _ if bytes.len() > MAX_LABEL => {
            Err(format!("{WHAT}: it is longer than {MAX_LABEL} characters"))
        }
        [first, .., last] | [first @ last] if !is_lower_alnum(*first) || !is_lower_alnum(*last) => {
            Err(format!(
                "{WHAT}: it must start and end with a lowercase letter or a digit"
            ))
        }
        _ if !bytes.iter().all(|&b| is_lower_alnum(b) || b == b'-') => Err(format!(
            "{WHAT}: only lowercase letters, digits and `-` are allowed"
        )),
        _ => Ok(()),
    }
}

/// An RFC 1035 DNS label: a DNS label that starts with a letter. Services
/// are named so.
pub fn check_dns1035_label(name: &str) -> Result<(), String> {
    check_dns_label(name)?;
    if !name.as_bytes()[0].is_ascii_lowercase() {
        return Err("is not a DNS-1035 label: it must start with a lowercase letter".into());
    }
    Ok(())
}

/// An RFC 1123 DNS subdomain: at most 253 characters, DNS labels joined by
/// `.`. Most objects (ServiceAccounts, StorageClasses, RuntimeClasses) are
/// named so.
pub fn check_dns_subdomain(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("is not a DNS subdomain: it is empty".into());
    }
    if name.len() > MAX_SUBDOMAIN {
        return Err(format!(
            "is not a DNS subdomain: it is longer than {MAX_SUBDOMAIN} characters"
        ));
    }
    for label in name.split('.') {
        check_dns_label(label).map_err(|why| format!("is not a DNS subdomain: `{label}` {why}"))?;
    }
    Ok(())
}

/// A name that is one segment of an API path (a ClusterRole's, say): not
/// empty, not `.` or `..`, no `/` or `%`.
pub fn check_path_segment_name(name: &str) -> Result<(), String> {
    match name {
        "" => Err("is not a valid name: it is empty".into()),
        "." | ".." => Err("is not a valid name: it cannot be `.` or `..`".into()),
        _ if name.contains(['/', '%']) => {
            Err("is not a valid name: it cannot contain `/` or `%`".into())
        }
        _ if name.len() > MAX_SUBDOMAIN => Err(format!(
            "is not a valid name: it is longer than {MAX_SUBDOMAIN} characters"
        )),
        _ => Ok(()),
    }
}

/// A host name an egress rule may give: DNS labels, the first one `*` for
/// every subdomain.
pub fn check_egress_host(host: &str) -> Result<(), String> {
    if host.is_empty() || host.len() > MAX_SUBDOMAIN {
        return Err("is neither a CIDR nor a host name".into());
    }
    for (i, label) in host.split('.').enumerate() {
        if i == 0 && label == "*" {
            continue;
        }
        check_dns_label(&label.to_ascii_lowercase())
            .map_err(|why| format!("is neither a CIDR nor a host name: label `{label}` {why}"))?;
    }
    Ok(())
}

/// The name part of a label key, and a non-empty label value: at most 63
/// letters, digits, `-`, `_` and `.`, starting and ending with a letter or
/// digit.
fn check_qualified_name_part(part: &str) -> Result<(), String> {
    let bytes = part.as_bytes();
    let ok = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    match bytes {
        [] => Err("is empty".into()),
        _ if bytes.len() > MAX_LABEL => Err(format!("is longer than {MAX_LABEL} characters")),
        [first, .., last] | [first @ last]
            if !first.is_ascii_alphanumeric() || !last.is_ascii_alphanumeric() =>
        {
            Err("must start and end with a letter or a digit".into())
        }
        _ if !bytes.iter().all(|&b| ok(b)) => {
            Err("may hold only letters, digits, `-`, `_` and `.`".into())
        }
        _ => Ok(()),
    }
}

/// A label key: `[prefix/]name`, the prefix a DNS subdomain, the name at
/// most 63 letters, digits, `-`, `_` and `.`, starting and ending with a
/// letter or digit.
pub fn check_label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        check_dns_subdomain(prefix).map_err(|why| format!("has a prefix that {why}"))?;
    }
    check_qualified_name_part(name).map_err(|why| format!("is not a label key: its name {why}"))
}

/// A label value: empty, or at most 63 letters, digits, `-`, `_` and `.`,
/// starting and ending with a letter or digit.
pub fn check_label_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Ok(());
    }
    check_qualified_name_part(value).map_err(|why| format!("is not a label value: it {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pando_adapter_sdk::error::ErrorExt;

    fn wref(bundle: &str, workload: &str) -> WorkloadRef {
        WorkloadRef {
            bundle: bundle.into(),
            workload: workload.into(),
        }
    }

    #[test]
    fn app_namespace_is_pando_dash_id() {
        assert_eq!(app_namespace("shop").unwrap(), "pando-shop");
        assert_eq!(app_namespace("a").unwrap(), "pando-a");
        assert_eq!(app_namespace("0-shop-2").unwrap(), "pando-0-shop-2");
    }

    #[test]
    fn app_namespace_is_at_most_63_characters() {
        let longest = "a".repeat(57);
        assert_eq!(app_namespace(&longest).unwrap().len(), 63);
        let err = app_namespace(&"a".repeat(58)).unwrap_err();
        assert_eq!(err.kind(), "invalid");
        assert!(err.message().contains("app id"), "{}", err.message());
        assert!(err.message().contains("63"), "{}", err.message());
    }

    #[test]
    fn app_ids_that_map_onto_pandos_own_namespaces_are_reserved() {
        for reserved in ["edge", "canary", "system", "trial", "trial-0123456789"] {
            let err = app_namespace(reserved).expect_err(reserved);
            assert_eq!(err.kind(), "invalid");
            assert!(
                err.message().contains("reserved")
                    && err.message().contains(&format!("pando-{reserved}")),
                "{}",
                err.message()
            );
        }
        for fine in ["edges", "my-edge", "trials", "canary2"] {
            assert!(app_namespace(fine).is_ok(), "{fine}");
        }
    }

    #[test]
    fn app_namespace_refuses_ids_that_are_not_dns_labels() {
        for bad in [
            "",
            "Shop",
            "shop_1",
            "-shop",
            "shop-",
            "shop.example",
            "shop/x",
            "ü",
        ] {
            let err = app_namespace(bad).expect_err(bad);
            assert_eq!(err.kind(), "invalid");
            assert!(err.message().starts_with("app id"), "{}", err.message());
        }
    }

    #[test]
    fn service_name_is_the_workload_name() {
        assert_eq!(service_name("web").unwrap(), "web");
        assert_eq!(service_name("api-v2").unwrap(), "api-v2");
        for bad in ["", "1web", "Web", "web_1", "web.", &"w".repeat(64)] {
            let err = service_name(bad).expect_err(bad);
            assert_eq!(err.kind(), "invalid");
            assert!(
                err.message().starts_with("workload name"),
                "{}",
                err.message()
            );
        }
    }

    #[test]
    fn r023_upstream_is_the_service_dns_name() {
        let up = upstream("cluster.local", &wref("shop", "web"), 8080).unwrap();
        assert_eq!(up.host, "web.pando-shop.svc.cluster.local");
        assert_eq!(up.port, 8080);
        let up = upstream("k8s.example.com", &wref("a", "db"), 5432).unwrap();
        assert_eq!(up.host, "db.pando-a.svc.k8s.example.com");
        assert_eq!(up.port, 5432);
    }

    #[test]
    fn r023_upstream_refuses_invalid_ids_naming_which() {
        let err = upstream("cluster.local", &wref("Shop", "web"), 80).unwrap_err();
        assert_eq!(err.kind(), "invalid");
        assert!(
            err.message().starts_with("app id `Shop`"),
            "{}",
            err.message()
        );
        let err = upstream("cluster.local", &wref("shop", "web.x"), 80).unwrap_err();
        assert_eq!(err.kind(), "invalid");
        assert!(
            err.message().starts_with("workload name `web.x`"),
            "{}",
            err.message()
        );
        let err = upstream("cluster.local", &wref(&"a".repeat(58), "web"), 80).unwrap_err();
        assert!(err.message().starts_with("app id"), "{}", err.message());
        let err = upstream("cluster.local", &wref("shop", "web"), 0).unwrap_err();
        assert_eq!(err.kind(), "invalid");
        assert!(err.message().contains("port 0"), "{}", err.message());
    }

    #[test]
    fn dns_labels() {
        assert!(check_dns_label("a").is_ok());
        assert!(check_dns_label("0").is_ok());
        assert!(check_dns_label(&"a".repeat(63)).is_ok());
        assert!(check_dns_label(&"a".repeat(64)).is_err());
        assert!(check_dns_label("-").is_err());
        assert!(check_dns_label("a--b").is_ok());
        assert!(check_dns1035_label("a1").is_ok());
        assert!(check_dns1035_label("1a").is_err());
    }

    #[test]
    fn dns_subdomains() {
        assert!(check_dns_subdomain("a.b.c").is_ok());
        assert!(check_dns_subdomain("a..b").is_err());
        assert!(check_dns_subdomain(".a").is_err());
        assert!(check_dns_subdomain(&format!("{}.a", "a".repeat(63))).is_ok());
        let long = vec!["a".repeat(63); 4].join(".");
        assert_eq!(long.len(), 255);
        assert!(check_dns_subdomain(&long).is_err());
    }

    #[test]
    fn label_keys_and_values() {
        assert!(check_label_key("pool").is_ok());
        assert!(check_label_key("Pool_1.x").is_ok());
        assert!(check_label_key("node.kubernetes.io/instance-type").is_ok());
        assert!(check_label_key("").is_err());
        assert!(check_label_key("example.com/").is_err());
        assert!(check_label_key("_pool").is_err());
        assert!(check_label_value("").is_ok());
        assert!(check_label_value("m5.large").is_ok());
        assert!(check_label_value("a b").is_err());
        assert!(check_label_value("a/b").is_err());
        assert!(check_label_value("x-").is_err());
    }
}
