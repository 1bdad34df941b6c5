//! The seam between `kube-core` and the host: the `http::Request` that
//! [`kube_core::Request`] builds, as the host import's request (method,
//! path, query pairs, body, content type) or watch request, and the
//! answer decoded. Sending is `send.rs`'s, the one place a typed call
//! reaches the import. The same file in both SDK lines.

use http::header::CONTENT_TYPE;
use serde::de::DeserializeOwned;

use super::KubeError;
use crate::kubernetes as raw;

impl From<kube_core::request::Error> for KubeError {
    /// kube-core refused to build the request (an empty name, a field
    /// manager over 128 bytes, `force` on a patch that is not an apply):
    /// nothing was sent.
    fn from(e: kube_core::request::Error) -> KubeError {
        KubeError::InvalidRequest(e.to_string())
    }
}

/// kube-core's request as the host import's: its method, its path, its
/// query as decoded pairs (the host encodes them again), its body (none
/// when empty, or when a `DELETE`'s options say nothing: `{}`) and the
/// content type of a body.
///
/// The import carries no other header: an `accept` asking the API server
/// for metadata only is dropped, and the SDK keeps the metadata of the
/// whole object instead ([`Api::get_metadata`](super::Api::get_metadata)).
pub(crate) fn to_raw(request: http::Request<Vec<u8>>) -> Result<raw::Request, KubeError> {
    let (parts, body) = request.into_parts();
    let method = match parts.method {
        http::Method::GET => raw::Method::Get,
        http::Method::POST => raw::Method::Post,
        http::Method::PUT => raw::Method::Put,
        http::Method::PATCH => raw::Method::Patch,
        http::Method::DELETE => raw::Method::Delete,
        other => {
            return Err(KubeError::InvalidRequest(format!(
                "the host sends no {other} requests"
            )));
        }
    };
    let query = parts
        .uri
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let says_nothing = method == raw::Method::Delete && body.as_slice() == b"{}";
    let body = (!body.is_empty() && !says_nothing).then_some(body);
    let content_type = match (&body, parts.headers.get(CONTENT_TYPE)) {
        (Some(_), Some(value)) => Some(content_type(value)?),
        _ => None,
    };
    Ok(raw::Request {
        method,
        path: parts.uri.path().to_owned(),
        query,
        body,
        content_type,
    })
}

/// A `content-type` header as the import's content type.
fn content_type(value: &http::HeaderValue) -> Result<raw::ContentType, KubeError> {
    Ok(match value.as_bytes() {
        b"application/json" => raw::ContentType::Json,
        b"application/merge-patch+json" => raw::ContentType::MergePatch,
        b"application/strategic-merge-patch+json" => raw::ContentType::StrategicMergePatch,
        b"application/apply-patch+yaml" => raw::ContentType::ApplyPatch,
        b"application/json-patch+json" => raw::ContentType::JsonPatch,
        other => {
            return Err(KubeError::InvalidRequest(format!(
                "the host sends no body of type {:?}",
                String::from_utf8_lossy(other)
            )));
        }
    })
}

/// kube-core's watch (`GET {collection}?watch=true&…`) as the import's
/// watch request, whose fields are the query keys a watch takes; a key the
/// import has no field for is an error, not dropped.
pub(crate) fn to_raw_watch(
    request: http::Request<Vec<u8>>,
) -> Result<raw::WatchRequest, KubeError> {
    let raw = to_raw(request)?;
    if raw.method != raw::Method::Get || raw.body.is_some() {
        return Err(KubeError::InvalidRequest(
            "a watch is a GET without a body".into(),
        ));
    }
    let mut watch = raw::WatchRequest {
        path: raw.path,
        label_selector: None,
        field_selector: None,
        resource_version: None,
        allow_bookmarks: false,
        timeout_seconds: None,
    };
    for (key, value) in raw.query {
        match key.as_str() {
            "watch" if value == "true" => {}
            "labelSelector" => watch.label_selector = Some(value),
            "fieldSelector" => watch.field_selector = Some(value),
            "resourceVersion" => watch.resource_version = (!value.is_empty()).then_some(value),
            "allowWatchBookmarks" => watch.allow_bookmarks = value == "true",
            "timeoutSeconds" => {
                let seconds = value.parse().map_err(|_| {
                    KubeError::InvalidRequest(format!("timeoutSeconds {value:?} is not a number"))
                })?;
                watch.timeout_seconds = Some(seconds);
            }
            _ => {
                return Err(KubeError::InvalidRequest(format!(
                    "the host's watch carries no `{key}={value}`"
                )));
            }
        }
    }
    Ok(watch)
}

/// Whether an answer costs the adapter's budget ([`super::budget`]): it
/// does once the request reached the API server. A refusal of the host's
/// (grants, body cap) never reached it, and a read the host answered from
/// its watch-fed cache (`pando-cache: hit`) cost it nothing; the host's own
/// rate still counts the refusals.
pub(crate) fn charges_budget(response: &Result<raw::Response, raw::ApiError>) -> bool {
    match response {
        Ok(r) => !r
            .headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("pando-cache") && v == "hit"),
        Err(e) => !matches!(
            e,
            raw::ApiError::Denied(_)
                | raw::ApiError::InvalidRequest(_)
                | raw::ApiError::TooLarge(_)
                | raw::ApiError::Cancelled
        ),
    }
}

/// A 2xx answer's body as `T`; otherwise the answer's error.
pub(crate) fn decode<T: DeserializeOwned>(response: &raw::Response) -> Result<T, KubeError> {
    check_status(response)?;
    from_json(&response.body).map_err(KubeError::Decode)
}

/// A JSON document as `T`, its UTF-8 checked once over the whole of it,
/// then parsed as text, as kube-rs reads an answer. serde_json's reader of
/// bytes checks every string it meets on its own, and in wasm, whose
/// words are 32 bits and whose strings here are short, those checks were
/// a tenth of a typed GET's instructions (docs/history/benchmarks.md, "The 3-GET
/// call's guest, counted"). The error is the reason, for the caller to
/// wrap.
pub(crate) fn from_json<T: DeserializeOwned>(json: &[u8]) -> Result<T, String> {
    let text = std::str::from_utf8(json).map_err(|e| format!("the JSON is not UTF-8: {e}"))?;
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// `Ok` for a 2xx answer; otherwise its error.
pub(crate) fn check_status(response: &raw::Response) -> Result<(), KubeError> {
    if (200..300).contains(&response.status) {
        Ok(())
    } else {
        Err(KubeError::from_response(
            response.status,
            &response.headers,
            &response.body,
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use kube_core::params::{
        DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchParams,
    };

    use super::*;

    const PODS: &str = "/api/v1/namespaces/pando-x/pods";

    /// A query as the import takes it, from string slices.
    pub(crate) fn pairs(query: &[(&str, &str)]) -> Vec<(String, String)> {
        query
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn a_get_is_method_path_and_no_body() {
        let r = to_raw(
            kube_core::Request::new(PODS)
                .get("web", &Default::default())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(r.method, raw::Method::Get);
        assert_eq!(r.path, format!("{PODS}/web"));
        assert!(r.query.is_empty() && r.body.is_none() && r.content_type.is_none());
    }

    #[test]
    fn the_query_comes_back_as_decoded_pairs() {
        let lp = ListParams::default()
            .labels("app in (a, b),tier!=cache")
            .fields("status.phase=Running")
            .limit(5);
        let r = to_raw(kube_core::Request::new(PODS).list(&lp).unwrap()).unwrap();
        assert_eq!(r.path, PODS);
        assert_eq!(
            r.query,
            pairs(&[
                ("fieldSelector", "status.phase=Running"),
                ("labelSelector", "app in (a, b),tier!=cache"),
                ("limit", "5"),
            ])
        );
    }

    #[test]
    fn bodies_carry_their_content_type() {
        let pp = PostParams {
            dry_run: true,
            field_manager: Some("pando".into()),
        };
        let r = to_raw(
            kube_core::Request::new(PODS)
                .create(&pp, b"{\"a\":1}".to_vec())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(r.method, raw::Method::Post);
        assert_eq!(r.body.as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(r.content_type, Some(raw::ContentType::Json));
        assert_eq!(
            r.query,
            pairs(&[("dryRun", "All"), ("fieldManager", "pando")])
        );

        let patch = serde_json::json!({"metadata": {"labels": {"a": "b"}}});
        for (p, ct) in [
            (Patch::Apply(&patch), raw::ContentType::ApplyPatch),
            (Patch::Merge(&patch), raw::ContentType::MergePatch),
            (
                Patch::Strategic(&patch),
                raw::ContentType::StrategicMergePatch,
            ),
        ] {
            let pp = PatchParams::apply("pando");
            let r = to_raw(kube_core::Request::new(PODS).patch("web", &pp, &p).unwrap()).unwrap();
            assert_eq!(r.method, raw::Method::Patch);
            assert_eq!(r.content_type, Some(ct));
            assert_eq!(r.query, pairs(&[("fieldManager", "pando")]));
        }
        let r = to_raw(
            kube_core::Request::new(PODS)
                .replace("web", &PostParams::default(), b"{}".to_vec())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(r.method, raw::Method::Put);
        assert_eq!(r.body.as_deref(), Some(&b"{}"[..]));
    }

    #[test]
    fn json_is_decoded_from_checked_text() {
        let ok: serde_json::Value =
            from_json(b"{\"name\":\"caf\\u00e9\",\"n\":\"\xc3\xa9\"}").unwrap();
        assert_eq!(ok, serde_json::json!({"name": "café", "n": "é"}));
        // Bytes that are not UTF-8, inside a string or out of one, are
        // refused before parsing, saying so.
        for bad in [&b"{\"a\":\"\xff\"}"[..], &b"{\"a\":1}\xff"[..]] {
            let e = from_json::<serde_json::Value>(bad).unwrap_err();
            assert!(e.starts_with("the JSON is not UTF-8"), "{e}");
        }
        let e = from_json::<serde_json::Value>(b"{\"a\":").unwrap_err();
        assert!(e.contains("EOF"), "{e}");
    }

    #[test]
    fn a_delete_sends_its_options_as_the_body_or_nothing() {
        let plain = kube_core::Request::new(PODS)
            .delete("web", &DeleteParams::default())
            .unwrap();
        let r = to_raw(plain).unwrap();
        assert_eq!(r.method, raw::Method::Delete);
        assert!(r.body.is_none() && r.content_type.is_none(), "{r:?}");

        let r = to_raw(
            kube_core::Request::new(PODS)
                .delete("web", &DeleteParams::background().grace_period(0))
                .unwrap(),
        )
        .unwrap();
        let body: serde_json::Value = serde_json::from_slice(r.body.as_deref().unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"propagationPolicy": "Background", "gracePeriodSeconds": 0})
        );
        assert_eq!(r.content_type, Some(raw::ContentType::Json));

        let r = to_raw(
            kube_core::Request::new(PODS)
                .delete_collection(
                    &DeleteParams::default(),
                    &ListParams::default().labels("x=y"),
                )
                .unwrap(),
        )
        .unwrap();
        assert_eq!(r.path, PODS);
        assert_eq!(r.query, pairs(&[("labelSelector", "x=y")]));
        assert!(r.body.is_none() && r.content_type.is_none());
    }

    #[test]
    fn a_metadata_read_loses_only_its_accept_header() {
        let r = to_raw(
            kube_core::Request::new(PODS)
                .list_metadata(&ListParams::default())
                .unwrap(),
        )
        .unwrap();
        assert_eq!((r.method, r.path.as_str()), (raw::Method::Get, PODS));
        assert!(r.body.is_none() && r.content_type.is_none());
    }

    #[test]
    fn methods_and_types_the_host_has_no_word_for_are_errors() {
        let options = http::Request::options(PODS).body(Vec::new()).unwrap();
        assert!(matches!(to_raw(options), Err(KubeError::InvalidRequest(_))));
        let xml = http::Request::post(PODS)
            .header(CONTENT_TYPE, "application/xml")
            .body(b"<a/>".to_vec())
            .unwrap();
        assert!(matches!(to_raw(xml), Err(KubeError::InvalidRequest(_))));
    }

    #[test]
    fn a_watch_becomes_the_imports_watch_request() {
        let wp = WatchParams::default().labels("app=web").timeout(30);
        let w = to_raw_watch(kube_core::Request::new(PODS).watch(&wp, "42").unwrap()).unwrap();
        assert_eq!(w.path, PODS);
        assert_eq!(w.label_selector.as_deref(), Some("app=web"));
        assert_eq!(w.field_selector, None);
        assert_eq!(w.resource_version.as_deref(), Some("42"));
        assert!(w.allow_bookmarks);
        assert_eq!(w.timeout_seconds, Some(30));

        let wp = WatchParams::default().disable_bookmarks().fields("a=b");
        let w = to_raw_watch(kube_core::Request::new(PODS).watch(&wp, "").unwrap()).unwrap();
        assert_eq!(w.resource_version, None, "empty: from now");
        assert!(!w.allow_bookmarks);
        assert_eq!(w.field_selector.as_deref(), Some("a=b"));

        let initial = WatchParams::default().initial_events();
        let e = to_raw_watch(kube_core::Request::new(PODS).watch(&initial, "").unwrap());
        assert!(matches!(e, Err(KubeError::InvalidRequest(m)) if m.contains("sendInitialEvents")));
    }

    #[test]
    fn kube_cores_refusals_are_invalid_requests() {
        let e: KubeError = kube_core::Request::new(PODS)
            .patch(
                "web",
                &PatchParams::default().force(),
                &Patch::Merge(serde_json::json!({})),
            )
            .unwrap_err()
            .into();
        assert!(matches!(e, KubeError::InvalidRequest(_)), "{e:?}");
    }
}
