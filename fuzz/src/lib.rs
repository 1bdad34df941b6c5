//! Shared pieces of the fuzz targets: input generators that speak the
//! Kubernetes path grammar (so the fuzzer reaches the checker instead of
//! dying on the first `/`), independent reference checks the properties
//! compare the host against, and the CLI's input and output modules compiled
//! in from `host/src/cli/` (they live in the binary crate, not the library).
//!
//! The reference checks are written from the documentation
//! (`docs/grants.md`, the doc comments of `host/src/grants/`), not copied
//! from the code they check.

use arbitrary::{Arbitrary, Result, Unstructured};
use pando_host::grants::request::{ALLOWED_QUERY_KEYS, Method};

pub mod cli;

/// Path segments worth trying: the grammar's keywords, names that grants in
/// the tests and `deploy/grants/kubernetes.yaml` mention, and the spellings
/// the canonicalizer must refuse.
pub const SEGMENTS: &[&str] = &[
    "api",
    "apis",
    "v1",
    "v1beta1",
    "namespaces",
    "pando-x",
    "pando-shop",
    "pando-system",
    "pando-edge",
    "kube-system",
    "default",
    "pods",
    "log",
    "exec",
    "attach",
    "status",
    "finalize",
    "scale",
    "eviction",
    "apps",
    "deployments",
    "networking.k8s.io",
    "networkpolicies",
    "node.k8s.io",
    "runtimeclasses",
    "rbac.authorization.k8s.io",
    "rolebindings",
    "policy",
    "poddisruptionbudgets",
    "nodes",
    "n1",
    "persistentvolumes",
    "persistentvolumeclaims",
    "pv-1",
    "secrets",
    "configmaps",
    "services",
    "kube-root-ca.crt",
    "web",
    "watch",
    "proxy",
    "core",
    "version",
    "healthz",
    "..",
    ".",
    "",
    "%2e%2e",
    "Pods",
    "-web",
    "web-",
    "a.b",
    "*",
    "pando-*",
];

/// Prefixes worth trying, the grammar's and near misses.
const PREFIXES: &[&str] = &[
    "/api/v1", "/api/v1", "/api/v1", "/apis", "/apis", "/api", "/api/v2", "", "/", "//api/v1",
    "/version", "/healthz", "/readyz", "/livez", "/metrics", "api/v1",
];

/// A segment: mostly from [`SEGMENTS`], sometimes raw.
pub fn segment(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(if u.ratio(7, 8)? {
        (*u.choose(SEGMENTS)?).to_string()
    } else {
        String::arbitrary(u)?
    })
}

/// A request path: raw text, or a prefix and segments joined by `/`.
pub fn path(u: &mut Unstructured<'_>) -> Result<String> {
    if u.ratio(1, 8)? {
        return String::arbitrary(u);
    }
    let mut p = (*u.choose(PREFIXES)?).to_string();
    let n = u.int_in_range(0..=7)?;
    for _ in 0..n {
        p.push('/');
        p.push_str(&segment(u)?);
    }
    if u.ratio(1, 16)? {
        p.push('/');
    }
    Ok(p)
}

/// One of the five methods the WIT `method` enum has.
pub fn method(u: &mut Unstructured<'_>) -> Result<Method> {
    Ok(*u.choose(&[
        Method::Get,
        Method::Post,
        Method::Put,
        Method::Patch,
        Method::Delete,
    ])?)
}

/// Query parameters: mostly allowed keys, `watch` with its spellings,
/// sometimes a key twice or a key outside the list.
pub fn query(u: &mut Unstructured<'_>) -> Result<Vec<(String, String)>> {
    let n = u.int_in_range(0..=4)?;
    let mut q = Vec::with_capacity(n);
    for _ in 0..n {
        let key = if u.ratio(7, 8)? {
            (*u.choose(ALLOWED_QUERY_KEYS)?).to_string()
        } else {
            (*u.choose(&["namespace", "name", "Watch", "labelselector", ""])?).to_string()
        };
        let value = if key == "watch" && u.ratio(3, 4)? {
            (*u.choose(&["true", "1", "false", "0", "yes", ""])?).to_string()
        } else {
            String::arbitrary(u)?
        };
        q.push((key, value));
    }
    Ok(q)
}

/// One request as the guest passes it to the host.
#[derive(Debug, Clone)]
pub struct Req {
    /// The method.
    pub method: Method,
    /// The path.
    pub path: String,
    /// The query parameters.
    pub query: Vec<(String, String)>,
}

impl<'a> Arbitrary<'a> for Req {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Req {
            method: method(u)?,
            path: path(u)?,
            query: query(u)?,
        })
    }
}

/// A request written as a line, for seeds a person can read and write:
/// `METHOD PATH[?k=v&k=v] [BODY-NAME]`, the query split at `&` and the
/// first `=`, nothing decoded. The method is `GET`, `POST`, `PUT`, `PATCH`
/// or `DELETE`.
pub fn req_from_line(line: &str) -> Option<(Req, Option<String>)> {
    let mut words = line.splitn(3, ' ');
    let method = match words.next()? {
        "GET" => Method::Get,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "PATCH" => Method::Patch,
        "DELETE" => Method::Delete,
        _ => return None,
    };
    let target = words.next()?;
    let body_name = words.next().map(str::to_string);
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (
            p,
            q.split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, v)) => (k.to_string(), v.to_string()),
                    None => (kv.to_string(), String::new()),
                })
                .collect(),
        ),
        None => (target, Vec::new()),
    };
    Some((
        Req {
            method,
            path: path.to_string(),
            query,
        },
        body_name,
    ))
}

/// RFC 1123 DNS label: 1–63 of `[a-z0-9-]`, alphanumeric at both ends.
pub fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// RFC 1123 DNS subdomain: at most 253 characters of dot-separated labels.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// A glob where `*` matches any run of characters, anchored at both ends:
/// the simplest correct matcher (recursive), to compare the host's linear
/// one against.
pub fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|i| glob(rest, &text[i..])),
        Some((c, rest)) => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

/// Whether `s` contains a control character: text from a request that ends
/// up in a log line or an error message must not.
pub fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}
