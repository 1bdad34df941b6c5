//! The Kubernetes path canonicalizer, `grants::request::parse`, on arbitrary
//! method, path and query.
//!
//! Properties (from the module's docs and docs/grants.md, "anything the API
//! server might read differently from the host is refused, not
//! normalized"):
//! - it never panics;
//! - an accepted path is its own canonical form: the target rendered back
//!   into a path gives the very bytes the guest sent (the host sends those
//!   bytes), and parsing that again gives the same request (idempotence);
//! - an accepted path is plain lowercase ASCII `[a-z0-9.-/]`: no `%`, `?`,
//!   `#`, `\`, whitespace, control or non-ASCII; no empty, `.` or `..`
//!   segment, no trailing `/`, no segment over 253 bytes;
//! - group, version, resource, subresource are lowercase DNS subdomain /
//!   labels; the namespace a DNS label; the name a DNS subdomain;
//!   `watch`/`proxy` are never a resource;
//! - the verb follows the method table, `watch` only on a GET of a
//!   collection; every query key is allowed and given once;
//! - a refusal's message has no control character and a bounded length,
//!   whatever the input (it goes into logs and to the guest).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use pando_fuzz::{Req, has_control, is_dns_label, is_dns_subdomain};
use pando_host::grants::request::{
    ALLOWED_QUERY_KEYS, ApiRequest, ApiTarget, Method, NON_RESOURCE_PATHS, Verb, parse,
};

/// The path that names `t`, by the grammar in docs/grants.md.
fn render(t: &ApiTarget) -> String {
    let mut s = if t.group.is_empty() {
        assert_eq!(t.version, "v1", "the core group is only /api/v1: {t:?}");
        "/api/v1".to_string()
    } else {
        format!("/apis/{}/{}", t.group, t.version)
    };
    if let Some(ns) = &t.namespace {
        s.push_str("/namespaces/");
        s.push_str(ns);
    }
    s.push('/');
    s.push_str(&t.resource);
    match (&t.name, &t.subresource) {
        (Some(n), sub) => {
            s.push('/');
            s.push_str(n);
            if let Some(sub) = sub {
                s.push('/');
                s.push_str(sub);
            }
        }
        (None, None) => {}
        (None, Some(_)) => panic!("a subresource without a name: {t:?}"),
    }
    s
}

fn watch_flag(query: &[(String, String)]) -> Option<bool> {
    query
        .iter()
        .find(|(k, _)| k == "watch")
        .map(|(_, v)| v == "true" || v == "1")
}

fn check_query_accepted(query: &[(String, String)]) {
    for (i, (k, v)) in query.iter().enumerate() {
        assert!(ALLOWED_QUERY_KEYS.contains(&k.as_str()), "key {k:?}");
        assert!(
            !query[..i].iter().any(|(k2, _)| k2 == k),
            "duplicate key {k:?}"
        );
        if k == "watch" {
            assert!(matches!(v.as_str(), "true" | "1" | "false" | "0"), "{v:?}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // `T` then a request line (`req_from_line`): the readable seeds; anything
    // else is structured input.
    let req = match data.strip_prefix(b"T") {
        Some(line) => match pando_fuzz::req_from_line(&String::from_utf8_lossy(line)) {
            Some((req, _)) => req,
            None => return,
        },
        None => match Req::arbitrary_take_rest(arbitrary::Unstructured::new(data)) {
            Ok(req) => req,
            Err(_) => return,
        },
    };
    let Req {
        method,
        path,
        query,
    } = req;
    let parsed = parse(method, &path, &query);
    match &parsed {
        Err(e) => {
            let msg = e.to_string();
            assert!(!has_control(&msg), "control character in {msg:?}");
            assert!(msg.len() <= 8192, "unbounded message ({} bytes)", msg.len());
        }
        Ok(ApiRequest::NonResource { path: p }) => {
            assert_eq!(method, Method::Get);
            assert_eq!(p, &path);
            assert!(NON_RESOURCE_PATHS.contains(&p.as_str()));
            check_query_accepted(&query);
            assert!(watch_flag(&query).is_none());
        }
        Ok(ApiRequest::Resource { verb, target }) => {
            // Plain ASCII, one spelling.
            assert!(
                path.bytes().all(|b| b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || matches!(b, b'-' | b'.' | b'/')),
                "{path:?}"
            );
            let segs: Vec<&str> = path.split('/').skip(1).collect();
            assert!(path.starts_with("/api/v1/") || path.starts_with("/apis/"));
            for s in &segs {
                assert!(
                    !s.is_empty() && *s != "." && *s != ".." && s.len() <= 253,
                    "{path:?}"
                );
            }
            // Canonical and idempotent.
            let rendered = render(target);
            assert_eq!(
                rendered, path,
                "the accepted path is not the target's only spelling"
            );
            assert_eq!(
                parse(method, &rendered, &query).as_ref(),
                Ok(&parsed.clone().unwrap())
            );
            // The parts.
            if !target.group.is_empty() {
                assert!(is_dns_subdomain(&target.group), "{target:?}");
            }
            assert!(is_dns_label(&target.version), "{target:?}");
            assert!(is_dns_label(&target.resource), "{target:?}");
            assert!(target.resource != "watch" && target.resource != "proxy");
            if let Some(sub) = &target.subresource {
                assert!(is_dns_label(sub), "{target:?}");
            }
            if let Some(ns) = &target.namespace {
                assert!(is_dns_label(ns), "{target:?}");
            }
            if let Some(n) = &target.name {
                assert!(is_dns_subdomain(n), "{target:?}");
            }
            let spelling = target.grant_spelling();
            assert!(!spelling.contains('*'));
            assert!((1..=3).contains(&spelling.split('/').count()));
            // The Namespace object: only its own subresources.
            if target.group.is_empty()
                && target.resource == "namespaces"
                && target.namespace.is_none()
                && target.name.is_some()
            {
                assert!(matches!(
                    target.subresource.as_deref(),
                    None | Some("status" | "finalize")
                ));
            }
            // The verb table.
            check_query_accepted(&query);
            let named = target.name.is_some();
            let watch = watch_flag(&query);
            assert!(watch.is_none() || (method == Method::Get && !named));
            let expected = match (method, named) {
                (Method::Get, true) => Verb::Get,
                (Method::Get, false) if watch == Some(true) => Verb::Watch,
                (Method::Get, false) => Verb::List,
                (Method::Post, _) => Verb::Create,
                (Method::Put, true) => Verb::Update,
                (Method::Patch, true) => Verb::Patch,
                (Method::Delete, true) => Verb::Delete,
                (Method::Delete, false) => Verb::DeleteCollection,
                (Method::Put | Method::Patch, false) => {
                    panic!("{method} of a collection accepted: {path}")
                }
            };
            assert_eq!(*verb, expected, "{method} {path}");
        }
    }
});
