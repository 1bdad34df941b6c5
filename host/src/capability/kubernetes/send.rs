//! `send`: one request, one answer, once `admission.rs` has admitted it.
//!
//! Within the call's time: a request that has no answer shortly before the
//! call's deadline ([`answer_by`]) is given up as `timeout`, so the guest
//! can still return a typed error instead of being stopped at the deadline
//! (which discards its instance). An API server over its limits answers
//! 429 with `Retry-After`: the host waits as asked and sends the request
//! again (it was not processed), taking from the rate budget as any
//! request, for as long as the wait ends before [`answer_by`] and at most
//! [`MAX_RETRIES`] times; then the 429 goes to the guest (`unavailable`,
//! naming it). A 503 with `Retry-After` is treated alike.
//!
//! kube-rs's `Client` retries 429, 503 and 504 itself (up to 15 times,
//! backing off to minutes) unless it was built with
//! `Config::default_retry = false`: with such a client the host sees no
//! 429 until kube-rs gives up, and it is the deadline bound that keeps a
//! throttled call from running into its deadline.
//!
//! A request with a body also draws its length from the write budget
//! (`kubernetes.rate.write_bytes_per_second`): it waits its turn, or is
//! refused at once (`denied`, naming the budget) when the turn would come
//! after [`answer_by`]; and from the hourly budget
//! (`kubernetes.rate.write_bytes_per_hour`), which is never waited for: a
//! write it cannot cover is refused at once, naming it.
//!
//! A read the watch-fed cache answers takes a token of its own budget
//! (`kubernetes.rate.cache_reads_per_second`: it never reaches the API
//! server, whose `qps` would pace the cache down to the server's rate), is
//! built within the same byte cap (`limits.max_response_bytes`,
//! [`super::MAX_RESPONSE_BYTES`] by default) and is
//! audited in aggregate (`audit::CacheHits`). Every answer to a read of a
//! masked resource outside the adapter's own namespaces, live or cached,
//! goes through its read mask (`redact`). A namespace the adapter makes is
//! given its ceiling before the create returns (`ceiling`).

use std::time::{Duration, Instant};

use http_body_util::BodyExt;

use super::audit::Audit;
use super::managed_fields;
use super::writes::Policed;
use super::{KubeContext, denial_message};
use crate::bindings::v0_1::pando::runtime::kubernetes::{
    ApiError, ContentType, Denial, Method, Request, Response,
};
use crate::grants::request::ApiRequest;

/// Headers a client acts on; the rest stay in the host.
const KEPT_HEADERS: &[&str] = &["content-type", "retry-after", "warning", "audit-id"];

/// What is left of a call's time for the guest once a request is given up:
/// enough to return an error.
pub(crate) const ANSWER_MARGIN: Duration = Duration::from_millis(500);

/// How many times a write conditioned on its checked version is checked
/// and sent again when the object moved on in between, at most: five
/// attempts in all, as client-go's `retry.DefaultRetry` makes.
pub(crate) const MAX_CONFLICT_RETRIES: u32 = 4;

/// The wait before a write that met a newer version is checked again
/// (client-go's `DefaultRetry` step). A controller writes an object's status
/// in bursts (a Deployment's, once per pod that changes): retried at once,
/// every attempt can land in the same burst.
const CONFLICT_BACKOFF: Duration = Duration::from_millis(10);

/// How many times a throttled request is sent again, at most.
pub(crate) const MAX_RETRIES: u32 = 10;

/// What a write that waited for the write budget is left at least for its
/// exchange: one whose turn leaves less is refused rather than sent to time
/// out.
const WRITE_EXCHANGE_TIME: Duration = Duration::from_millis(250);

/// The field a write over the write budget names.
const WRITE_BUDGET: &str = "kubernetes.rate.write_bytes_per_second";

/// The field a write over the hourly write budget names.
const WRITE_HOUR_BUDGET: &str = "kubernetes.rate.write_bytes_per_hour";

/// The longest `Retry-After` honoured (API Priority and Fairness asks for
/// at most 32 s).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(32);

/// When a request must have been answered, for a call whose deadline is
/// `deadline`: [`ANSWER_MARGIN`] before it, or half-way there when less
/// than twice the margin is left. `None` without a deadline.
pub(crate) fn answer_by(deadline: Option<Instant>, now: Instant) -> Option<Instant> {
    let left = deadline?.saturating_duration_since(now);
    Some(now + left - ANSWER_MARGIN.min(left / 2))
}

/// How long to wait before sending again a request answered `status` with
/// `headers`: for 429 (throttled; the request was not processed), its
/// `Retry-After` or 1 s; for 503 only when it says `Retry-After`. `None`:
/// the answer goes to the guest.
pub(crate) fn retry_after(status: u16, headers: &http::HeaderMap) -> Option<Duration> {
    // Every answer is asked; only these two look further.
    if !matches!(status, 429 | 503) {
        return None;
    }
    let asked = headers
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| Duration::from_secs(s).clamp(Duration::from_secs(1), MAX_RETRY_AFTER));
    match status {
        429 => Some(asked.unwrap_or(Duration::from_secs(1))),
        _ => asked,
    }
}

/// The [`KEPT_HEADERS`] of an answer, in that list's order, a repeated
/// header's values in the order they came; a value that is not text is
/// left out. Looked up by name: an answer carries
/// a dozen headers, the guest is given two or three.
fn kept_headers(headers: &http::HeaderMap) -> Vec<(String, String)> {
    KEPT_HEADERS
        .iter()
        .flat_map(|name| {
            headers
                .get_all(*name)
                .iter()
                .filter_map(|v| Some(((*name).to_string(), v.to_str().ok()?.to_string())))
        })
        .collect()
}

fn content_type(ct: Option<ContentType>) -> &'static str {
    match ct.unwrap_or(ContentType::Json) {
        ContentType::Json => "application/json",
        ContentType::MergePatch => "application/merge-patch+json",
        ContentType::StrategicMergePatch => "application/strategic-merge-patch+json",
        ContentType::ApplyPatch => "application/apply-patch+yaml",
        ContentType::JsonPatch => "application/json-patch+json",
    }
}

/// The HTTP method of a request.
fn http_method(m: Method) -> http::Method {
    match m {
        Method::Get => http::Method::GET,
        Method::Post => http::Method::POST,
        Method::Put => http::Method::PUT,
        Method::Patch => http::Method::PATCH,
        Method::Delete => http::Method::DELETE,
    }
}

/// The HTTP request of `req`, as every exchange sends it.
fn http_request(req: &Request) -> Result<http::Request<kube::client::Body>, String> {
    let mut builder = http::Request::builder()
        .method(http_method(req.method))
        .uri(uri(&req.path, &req.query))
        .header(http::header::ACCEPT, "application/json");
    if req.body.is_some() {
        builder = builder.header(http::header::CONTENT_TYPE, content_type(req.content_type));
    }
    builder
        .body(kube::client::Body::from(
            req.body.clone().unwrap_or_default(),
        ))
        .map_err(|e| format!("building the request: {e}"))
}

/// `req` sent on `client` and its answer read, and nothing else: no grant,
/// budget, audit, cache, retry, size cap or managed-fields scan. The
/// least an import of `send`'s shape can do, for the floor the 3-GET bench
/// holds the host's own `send` to (`adapter/floor.rs`); never lent to an
/// adapter that core loads.
pub(crate) async fn plain(client: &kube::Client, req: &Request) -> Result<Response, ApiError> {
    let http_req = http_request(req).map_err(ApiError::InvalidRequest)?;
    let resp = client
        .send(http_req)
        .await
        .map_err(|e| ApiError::Transport(e.to_string()))?;
    let status = resp.status().as_u16();
    let headers = kept_headers(resp.headers());
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| ApiError::Transport(e.to_string()))?;
    Ok(Response {
        status,
        headers,
        body: Vec::from(body.to_bytes()),
    })
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

impl KubeContext {
    /// Sends one request admitted by [`KubeContext::admit_send`]: the
    /// cache's answer if it has one, else within the rate and write budgets
    /// and the object rules, answered before the call's `deadline` (see the
    /// module doc), and audited.
    pub(crate) async fn send(
        &self,
        audit: &Audit<'_>,
        parsed: ApiRequest,
        mut req: Request,
        deadline: Option<Instant>,
    ) -> Result<Response, ApiError> {
        let show_managed_fields = managed_fields::take_show(&mut req.query);
        // A read the cache answers spends the cache's budget, not the API
        // server's: it never reaches the server. The answer is built within
        // the byte cap first; the token paces the next one. The cache keeps
        // no `managedFields`: a read that asks for them goes to the server.
        if !show_managed_fields && let Some(hit) = self.cached(audit, &parsed, &req) {
            self.cache_limiter.acquire().await;
            return hit;
        }
        // One token whoever else answers: the API server or the host's
        // refusal.
        let throttled = self.limiter.acquire().await;
        if let Err(e) = self.check_ceiling_rules(&parsed, &req) {
            audit.denied(Some(&parsed), &denial_message(&e));
            return Err(e);
        }
        let answer_by = answer_by(deadline, Instant::now());
        if let Some(body) = req.body.as_deref() {
            let bytes = body.len() as u64;
            let taken = self.take_write_hour(bytes).and(Ok(()));
            let taken = match taken {
                Ok(()) => self.take_write(bytes, answer_by).await.inspect_err(|_| {
                    self.write_hour.refund(bytes);
                }),
                Err(e) => Err(e),
            };
            if let Err(e) = taken {
                audit.denied(Some(&parsed), &denial_message(&e));
                return Err(e);
            }
        }
        let namespace_create = matches!(&parsed, ApiRequest::Resource { verb, target }
            if super::ceiling::is_namespace_create(*verb, target))
            && !self.ceilings.is_empty();
        let ceiling_req = namespace_create.then(|| req.query.clone());
        let mut response = self
            .send_policed(audit, &parsed, req, answer_by, throttled)
            .await?;
        if let Some(query) = ceiling_req
            && super::ceiling::made(response.status, &query)
            && let Some(ns) = super::ceiling::created_name(&response.body)
            && let Err(e) = self.write_ceiling(&ns, answer_by).await
        {
            audit.denied(Some(&parsed), &denial_message(&e));
            return Err(e);
        }
        if (200..300).contains(&response.status)
            && let ApiRequest::Resource { target, .. } = &parsed
            && let Some(mask) = self.redaction.for_target(target)
        {
            response.body = mask.body(&response.body).map_err(ApiError::Transport)?;
        }
        if !show_managed_fields && let Some(body) = managed_fields::strip(&response.body) {
            response.body = body;
        }
        Ok(response)
    }

    /// The watch-fed cache's answer to a read, if it has one: within the
    /// byte cap, masked (its rate token is taken by the caller).
    fn cached(
        &self,
        audit: &Audit<'_>,
        parsed: &ApiRequest,
        req: &Request,
    ) -> Option<Result<Response, ApiError>> {
        let (Some(cache), ApiRequest::Resource { verb, target }) = (&self.cache, parsed) else {
            return None;
        };
        let mask = self.redaction.for_target(target);
        let item = |json: Vec<u8>| match mask {
            Some(m) => m.cached(json),
            None => json,
        };
        let shape = crate::kubecache::Shape {
            max_bytes: self.max_response,
            item: mask
                .is_some()
                .then_some(&item as &dyn Fn(Vec<u8>) -> Vec<u8>),
        };
        let hit = match cache.answer(*verb, target, &req.query, &shape)? {
            Ok(hit) => hit,
            Err(too_large) => {
                let msg = too_large.to_string();
                audit.failed(parsed, &msg, Duration::ZERO);
                return Some(Err(ApiError::Transport(msg)));
            }
        };
        self.cache_hits
            .note(audit.adapter(), parsed, hit.body.len());
        Some(Ok(Response {
            status: 200,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("pando-cache".into(), "hit".into()),
                ("pando-cache-age-ms".into(), hit.age.as_millis().to_string()),
            ],
            body: hit.body,
        }))
    }

    /// Takes `bytes` from the hourly write budget, or refuses the write at
    /// once: an hour's budget spent is not waited for.
    fn take_write_hour(&self, bytes: u64) -> Result<(), ApiError> {
        match self
            .write_hour
            .reserve(Instant::now(), bytes, Duration::ZERO)
        {
            Ok(_) => Ok(()),
            Err(wait) => {
                self.usage.record_limit(WRITE_HOUR_BUDGET);
                let budget = self.write_hour.capacity();
                Err(ApiError::Denied(Denial {
                    message: format!(
                        "a write of {bytes} bytes refused: the adapter's hourly write budget \
                         (`{WRITE_HOUR_BUDGET}`: {budget} bytes an hour) is spent; it would \
                         cover this write in {:.0} s. Nothing was sent (write less, or raise \
                         `{WRITE_HOUR_BUDGET}` in the adapter's grants, docs/grants.md)",
                        wait.as_secs_f64()
                    ),
                    missing_grant: format!(
                        "(none: the write budget `{WRITE_HOUR_BUDGET}`, not a grant)"
                    ),
                }))
            }
        }
    }

    /// What the write would produce, checked against the object rules,
    /// then sent; a write conditioned on the checked version that meets a
    /// newer one is checked and sent again, as a patch would be applied
    /// again.
    async fn send_policed(
        &self,
        audit: &Audit<'_>,
        parsed: &ApiRequest,
        mut req: Request,
        answer_by: Option<Instant>,
        throttled: Duration,
    ) -> Result<Response, ApiError> {
        let mut conflicts = 0;
        let (status, headers, body) = loop {
            let (rewritten, conditioned) = match self.police(audit, parsed, &req, answer_by).await?
            {
                Policed::AsIs => (None, false),
                Policed::Body { body, conditioned } => (Some(body), conditioned),
                Policed::Answer(response) => {
                    audit.answered(parsed, response.status, throttled);
                    return Ok(response);
                }
            };
            let original = rewritten.map(|body| req.body.replace(body));
            let exchange = self.exchange(&req, answer_by);
            let outcome = match answer_by {
                Some(by) => tokio::time::timeout_at(by.into(), exchange)
                    .await
                    .unwrap_or(Err(Failure::Unanswered)),
                None => exchange.await,
            };
            if let Some(original) = original {
                req.body = original;
            }
            match outcome {
                Ok((409, _, _))
                    if conditioned
                        && conflicts < MAX_CONFLICT_RETRIES
                        && answer_by.is_none_or(|by| Instant::now() + CONFLICT_BACKOFF < by) =>
                {
                    conflicts += 1;
                    tracing::debug!(path = %req.path, conflicts, "the object moved on since its dry run; checking the write again");
                    tokio::time::sleep(CONFLICT_BACKOFF).await;
                    self.limiter.acquire().await;
                }
                Ok(answer) => break answer,
                Err(Failure::Unanswered) => {
                    let msg = "no answer before the call's deadline";
                    audit.failed(parsed, msg, throttled);
                    return Err(ApiError::Timeout);
                }
                Err(Failure::Transport(msg)) => {
                    audit.failed(parsed, &msg, throttled);
                    return Err(ApiError::Transport(msg));
                }
                Err(Failure::Invalid(msg)) => {
                    audit.failed(parsed, &msg, throttled);
                    return Err(ApiError::InvalidRequest(msg));
                }
            }
        };
        audit.answered(parsed, status, throttled);
        Ok(Response {
            status,
            headers,
            body,
        })
    }

    /// Takes `bytes` from the write budget, waiting for them while the wait
    /// leaves the request [`WRITE_EXCHANGE_TIME`] before `answer_by`;
    /// refused at once if it would not.
    async fn take_write(&self, bytes: u64, answer_by: Option<Instant>) -> Result<(), ApiError> {
        let now = Instant::now();
        let max_wait = answer_by.map_or(Duration::MAX, |by| {
            by.saturating_duration_since(now)
                .saturating_sub(WRITE_EXCHANGE_TIME)
        });
        match self.write_budget.reserve(now, bytes, max_wait) {
            Ok(wait) if wait.is_zero() => Ok(()),
            Ok(wait) => {
                tracing::debug!(
                    bytes,
                    wait_ms = wait.as_millis() as u64,
                    "a write waits for the write budget"
                );
                tokio::time::sleep(wait).await;
                Ok(())
            }
            Err(wait) => {
                self.usage.record_limit(WRITE_BUDGET);
                Err(ApiError::Denied(Denial {
                    message: format!(
                        "a write of {bytes} bytes refused: the adapter's write budget \
                         (`{WRITE_BUDGET}`) would let it through in {:.1} s, after the call's \
                         deadline; nothing was sent (write less, give the call more time, or \
                         raise the budget in the adapter's grants)",
                        wait.as_secs_f64()
                    ),
                    missing_grant: format!(
                        "(none: the write budget `{WRITE_BUDGET}`, not a grant)"
                    ),
                }))
            }
        }
    }

    /// Sends `req` and reads the answer, sending it again while it is
    /// throttled and the wait ends before `answer_by`.
    pub(super) async fn exchange(
        &self,
        req: &Request,
        answer_by: Option<Instant>,
    ) -> Result<(u16, Vec<(String, String)>, Vec<u8>), Failure> {
        let mut retries = 0;
        loop {
            let http_req = http_request(req).map_err(Failure::Invalid)?;
            let resp = self.client.send(http_req).await.map_err(|e| {
                Failure::Transport(format!("the API server could not be reached: {e}"))
            })?;
            let status = resp.status().as_u16();
            if let Some(wait) = retry_after(status, resp.headers())
                && retries < MAX_RETRIES
                && answer_by.is_none_or(|by| Instant::now() + wait < by)
            {
                retries += 1;
                tracing::debug!(
                    path = %req.path, status, wait_ms = wait.as_millis() as u64, retries,
                    "the API server asked to retry later; sending the request again"
                );
                drop(resp);
                tokio::time::sleep(wait).await;
                self.limiter.acquire().await;
                continue;
            }
            let headers = kept_headers(resp.headers());
            let max = self.max_response;
            let body = http_body_util::Limited::new(resp.into_body(), max)
                .collect()
                .await
                .map_err(|e| {
                    Failure::Transport(if e.is::<http_body_util::LengthLimitError>() {
                        format!(
                            "the response is larger than {max} bytes; page the list with `limit` and `continue`"
                        )
                    } else {
                        format!("the response broke off: {e}")
                    })
                })?;
            // One copy, not two, when the body came in more than one chunk
            // (`to_bytes` joins them into a buffer the `Vec` then takes).
            return Ok((status, headers, Vec::from(body.to_bytes())));
        }
    }
}

/// Why an exchange got no answer.
pub(super) enum Failure {
    /// Not before the call's deadline.
    Unanswered,
    /// The connection failed; the message says how.
    Transport(String),
    /// The request could not be built; nothing was sent.
    Invalid(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_answered_before_the_deadline_with_time_to_return() {
        let now = Instant::now();
        assert_eq!(answer_by(None, now), None);
        let by = answer_by(Some(now + Duration::from_secs(10)), now).unwrap();
        assert_eq!(by, now + Duration::from_secs(10) - ANSWER_MARGIN);
        // Little time left: half of it.
        let by = answer_by(Some(now + Duration::from_millis(600)), now).unwrap();
        assert_eq!(by, now + Duration::from_millis(300));
        // None left: at once.
        assert_eq!(answer_by(Some(now), now), Some(now));
    }

    #[test]
    fn only_the_kept_headers_go_to_the_guest_repeated_ones_whole() {
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::CONTENT_TYPE,
            "application/json".parse().unwrap(),
        );
        h.insert(http::header::CACHE_CONTROL, "no-cache".parse().unwrap());
        h.insert("audit-id", "1f2e".parse().unwrap());
        h.append(http::header::WARNING, "299 - \"one\"".parse().unwrap());
        h.append(http::header::WARNING, "299 - \"two\"".parse().unwrap());
        h.insert("x-kubernetes-pf-flowschema-uid", "abc".parse().unwrap());
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(
            kept_headers(&h),
            [
                pair("content-type", "application/json"),
                pair("warning", "299 - \"one\""),
                pair("warning", "299 - \"two\""),
                pair("audit-id", "1f2e"),
            ]
        );
        let mut not_text = http::HeaderMap::new();
        not_text.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_bytes(b"\xff").unwrap(),
        );
        assert!(kept_headers(&not_text).is_empty());
    }

    #[test]
    fn throttled_answers_are_retried_after_what_the_server_asks() {
        let with = |v: &str| {
            let mut h = http::HeaderMap::new();
            h.insert(http::header::RETRY_AFTER, v.parse().unwrap());
            h
        };
        let none = http::HeaderMap::new();
        assert_eq!(retry_after(429, &with("3")), Some(Duration::from_secs(3)));
        assert_eq!(retry_after(429, &none), Some(Duration::from_secs(1)));
        assert_eq!(retry_after(429, &with("0")), Some(Duration::from_secs(1)));
        assert_eq!(retry_after(429, &with("600")), Some(MAX_RETRY_AFTER));
        assert_eq!(retry_after(503, &with("2")), Some(Duration::from_secs(2)));
        assert_eq!(retry_after(503, &none), None, "a 503 that does not ask");
        for status in [200, 404, 409, 410, 500, 504] {
            assert_eq!(retry_after(status, &with("1")), None, "{status}");
        }
    }
}
