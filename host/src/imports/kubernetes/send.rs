//! `send`: one request, one answer.

use http_body_util::BodyExt;

use super::audit::Audit;
use super::{KubeContext, MAX_RESPONSE_BYTES};
use crate::bindings::v0_1::pando::runtime::kubernetes::{
    ApiError, ContentType, Method, Request, Response,
};
use crate::grants::path::{self, ApiRequest, Verb};

/// Headers a client acts on; the rest stay in the host.
const KEPT_HEADERS: &[&str] = &["content-type", "retry-after", "warning", "audit-id"];

fn content_type(ct: Option<ContentType>) -> &'static str {
    match ct.unwrap_or(ContentType::Json) {
        ContentType::Json => "application/json",
        ContentType::MergePatch => "application/merge-patch+json",
        ContentType::StrategicMergePatch => "application/strategic-merge-patch+json",
        ContentType::ApplyPatch => "application/apply-patch+yaml",
        ContentType::JsonPatch => "application/json-patch+json",
    }
}

pub(crate) fn method(m: Method) -> (path::Method, http::Method) {
    match m {
        Method::Get => (path::Method::Get, http::Method::GET),
        Method::Post => (path::Method::Post, http::Method::POST),
        Method::Put => (path::Method::Put, http::Method::PUT),
        Method::Patch => (path::Method::Patch, http::Method::PATCH),
        Method::Delete => (path::Method::Delete, http::Method::DELETE),
    }
}

/// `path?query`, the query encoded by the host.
pub(crate) fn uri(path: &str, query: &[(String, String)]) -> String {
    if query.is_empty() {
        return path.to_string();
    }
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in query {
        q.append_pair(k, v);
    }
    format!("{path}?{}", q.finish())
}

/// The name an object body gives itself, for grants on creates.
fn body_name(body: Option<&[u8]>) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(body?).ok()?;
    v.get("metadata")?.get("name")?.as_str().map(str::to_string)
}

impl KubeContext {
    /// Checks, throttles, sends and audits one request.
    pub(crate) async fn send(&self, adapter: &str, req: Request) -> Result<Response, ApiError> {
        let audit = Audit::start(adapter, "send", &req.path);
        let (pm, hm) = method(req.method);
        let name = body_name(req.body.as_deref());
        let parsed = self
            .admit(&audit, pm, &req.path, &req.query, name.as_deref())
            .await?;
        let refuse = |msg: String| {
            audit.denied(Some(&parsed), &msg);
            Err(ApiError::InvalidRequest(msg))
        };
        if let ApiRequest::Resource { verb, target } = &parsed {
            if *verb == Verb::Watch {
                return refuse("a watch goes through the `watch` function, not `send`".into());
            }
            if matches!(
                target.subresource.as_deref(),
                Some("exec" | "attach" | "portforward" | "proxy")
            ) {
                return refuse(format!(
                    "`{}` is a streaming subresource: use the `exec` function",
                    target.grant_spelling()
                ));
            }
        }
        if let Some(body) = &req.body
            && body.len() as u64 > self.max_body
        {
            let msg = format!(
                "the request body is {} bytes, over this adapter's cap of {} bytes \
                 (grants: kubernetes.max_body_bytes)",
                body.len(),
                self.max_body
            );
            audit.denied(Some(&parsed), &msg);
            return Err(ApiError::TooLarge(msg));
        }
        let throttled = self.limiter.acquire().await;

        let mut builder = http::Request::builder()
            .method(hm)
            .uri(uri(&req.path, &req.query))
            .header(http::header::ACCEPT, "application/json");
        if req.body.is_some() {
            builder = builder.header(http::header::CONTENT_TYPE, content_type(req.content_type));
        }
        let http_req = builder
            .body(kube::client::Body::from(req.body.unwrap_or_default()))
            .map_err(|e| ApiError::InvalidRequest(format!("building the request: {e}")))?;
        let result = self.client.send(http_req).await;
        let resp = match result {
            Ok(r) => r,
            Err(e) => {
                let msg = format!("the API server could not be reached: {e}");
                audit.failed(&parsed, &msg, throttled);
                return Err(ApiError::Transport(msg));
            }
        };
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .filter(|(k, _)| KEPT_HEADERS.contains(&k.as_str()))
            .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        let body = http_body_util::Limited::new(resp.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await;
        let body = match body {
            Ok(b) => b.to_bytes().to_vec(),
            Err(e) => {
                let msg = if e.is::<http_body_util::LengthLimitError>() {
                    format!(
                        "the response is larger than {MAX_RESPONSE_BYTES} bytes; page the list with `limit` and `continue`"
                    )
                } else {
                    format!("the response broke off: {e}")
                };
                audit.failed(&parsed, &msg, throttled);
                return Err(ApiError::Transport(msg));
            }
        };
        audit.answered(&parsed, status, throttled);
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}
