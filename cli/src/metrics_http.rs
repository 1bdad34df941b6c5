//! `--metrics-listen ADDR`: the host's metrics served over HTTP for as long
//! as the verb runs, so a scraper (Prometheus, `curl`) reads them from a
//! long-running `watch`, `logs --follow`, `exec` or `run` as core's own
//! endpoint would serve them. `GET /metrics` answers the OpenMetrics text of
//! [`pando_host::Adapter::metrics`], encoded at the moment of the scrape;
//! every other path is 404 and every other method 405. HTTP/1.1 only, no
//! TLS: bind it to loopback, or put it behind what guards your scrapes.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use pando_host::Adapter;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::failure::Failure;

/// The content type of OpenMetrics text, as a scraper asks for it.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A running metrics endpoint; it stops when dropped.
pub struct Endpoint {
    addr: SocketAddr,
    stop: CancellationToken,
}

impl Endpoint {
    /// Where it listens (the port the system chose, for port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Binds `addr` and serves `adapter`'s metrics on it until the endpoint is
/// dropped. A bind that fails (the port in use, an address not of this
/// machine) is the user's input: it names the address.
pub async fn serve(addr: SocketAddr, adapter: Adapter) -> Result<Endpoint, Failure> {
    let listener = TcpListener::bind(addr).await.map_err(|e| {
        Failure::input(format!(
            "--metrics-listen {addr}: cannot listen there: {e} (name a free port of an address \
             of this machine, or port 0 for any, e.g. 127.0.0.1:0)"
        ))
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::other("the metrics listener's address", e))?;
    let stop = CancellationToken::new();
    tokio::spawn(accept(listener, adapter, stop.clone()));
    Ok(Endpoint { addr, stop })
}

/// Accepts connections until `stop`, each served on a task of its own.
async fn accept(listener: TcpListener, adapter: Adapter, stop: CancellationToken) {
    loop {
        let (stream, peer) = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: the next accept may succeed.
                    tracing::warn!(error = %e, "the metrics endpoint could not accept a connection");
                    continue;
                }
            },
        };
        let adapter = adapter.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| answer(req, adapter.clone()));
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                r = conn => if let Err(e) = r {
                    tracing::debug!(%peer, error = %e, "a metrics connection ended in error");
                },
                () = stop.cancelled() => {}
            }
        });
    }
}

/// One request's answer.
async fn answer(
    req: Request<Incoming>,
    adapter: Adapter,
) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(respond(req.method(), req.uri().path(), || {
        adapter.metrics()
    }))
}

/// The answer to `method path`, the metrics read only when they are served.
fn respond(method: &Method, path: &str, metrics: impl FnOnce() -> String) -> Response<Full<Bytes>> {
    let plain = |status: StatusCode, text: &str| {
        let mut r = Response::new(Full::new(Bytes::from(format!("{text}\n"))));
        *r.status_mut() = status;
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        r
    };
    if path != "/metrics" {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: the metrics are at /metrics",
        );
    }
    if method != Method::GET && method != Method::HEAD {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
        r.headers_mut()
            .insert(header::ALLOW, header::HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    let mut r = Response::new(Full::new(Bytes::from(metrics())));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(CONTENT_TYPE),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn body(r: Response<Full<Bytes>>) -> String {
        let bytes = r.into_body().collect().await.map(|b| b.to_bytes());
        String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned()
    }

    #[tokio::test]
    async fn only_get_of_metrics_reads_them() {
        let r = respond(&Method::GET, "/metrics", || "# EOF\n".into());
        assert_eq!(r.status(), StatusCode::OK);
        assert_eq!(r.headers()[header::CONTENT_TYPE], CONTENT_TYPE);
        assert_eq!(body(r).await, "# EOF\n");

        let unread = || -> String { panic!("the metrics were read for a request refused") };
        let r = respond(&Method::GET, "/", unread);
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert!(body(r).await.contains("/metrics"));
        let r = respond(&Method::POST, "/metrics", unread);
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.headers()[header::ALLOW], "GET, HEAD");
    }
}
