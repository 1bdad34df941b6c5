//! `watch`: one watch, its events delivered one at a time.
//!
//! A task drives kube-rs's watch decoding into a small bounded channel, so a
//! guest that reads slowly slows the stream instead of growing memory: at
//! most [`DEPTH`] events and [`BUFFER_BYTES`] of them (one event larger than
//! that passes alone), a reservation taken from the adapter's
//! `limits.stream_buffer_bytes` when the watch opens. The end is told apart: the server closing (resume from the last version),
//! 410 Gone (list again), or a failure.

use std::sync::Arc;

use futures::StreamExt;
use kube::core::WatchEvent as KubeEvent;
use tokio::sync::{Semaphore, mpsc};
use tokio_util::sync::CancellationToken;

use super::KubeContext;
use super::audit::Audit;
use super::send::uri;
use crate::bindings::v0_1::pando::runtime::kubernetes::{
    ApiError, ApiStatus, EventType, WatchEnd, WatchEvent, WatchRequest,
};
use crate::grants::request::{self, ApiRequest, ApiTarget};

/// Events buffered between the API server and the guest.
const DEPTH: usize = 64;

/// Bytes of events buffered between the API server and the guest, at most:
/// what a watch reserves of the adapter's `limits.stream_buffer_bytes`.
pub(crate) const BUFFER_BYTES: u64 = 1 << 20;

/// One item of a watch: an event (with the buffer bytes it holds) or its
/// end.
enum Item {
    Event(WatchEvent, u32),
    End(WatchEnd),
}

/// An open watch, as lent to the guest.
pub struct WatchStream {
    rx: mpsc::Receiver<Item>,
    /// The buffer's free bytes, as permits: the task takes an event's size
    /// before it sends it, the guest's read gives them back.
    buffer: Arc<Semaphore>,
    peeked: Option<Item>,
    ended: Option<WatchEnd>,
    task: tokio::task::JoinHandle<()>,
    /// Its place in the adapter's `limits.max_streams`, while it lives.
    pub(crate) held: Option<crate::capability::held::Held>,
}

impl Drop for WatchStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WatchStream {
    /// The next item, waiting for it; the end repeats once reached.
    pub(crate) async fn next(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<WatchEvent, WatchEnd> {
        if let Some(end) = &self.ended {
            return Err(end.clone());
        }
        let item = match self.peeked.take() {
            Some(i) => i,
            None => tokio::select! {
                i = self.rx.recv() => i.unwrap_or(Item::End(WatchEnd::Closed)),
                () = cancel.cancelled() => return Err(WatchEnd::Failed(ApiError::Cancelled)),
            },
        };
        self.settle(item)
    }

    /// The next item, polled: what 0.2.0's `stream<watch-event>` reads.
    pub(crate) fn poll_next(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<WatchEvent, WatchEnd>> {
        if let Some(end) = &self.ended {
            return std::task::Poll::Ready(Err(end.clone()));
        }
        let item = match self.peeked.take() {
            Some(i) => i,
            None => match self.rx.poll_recv(cx) {
                std::task::Poll::Ready(i) => i.unwrap_or(Item::End(WatchEnd::Closed)),
                std::task::Poll::Pending => return std::task::Poll::Pending,
            },
        };
        std::task::Poll::Ready(self.settle(item))
    }

    /// The next item if one is ready.
    pub(crate) fn try_next(&mut self) -> Result<Option<WatchEvent>, WatchEnd> {
        if let Some(end) = &self.ended {
            return Err(end.clone());
        }
        let item = match self.peeked.take() {
            Some(i) => i,
            None => match self.rx.try_recv() {
                Ok(i) => i,
                Err(mpsc::error::TryRecvError::Empty) => return Ok(None),
                Err(mpsc::error::TryRecvError::Disconnected) => Item::End(WatchEnd::Closed),
            },
        };
        self.settle(item).map(Some)
    }

    fn settle(&mut self, item: Item) -> Result<WatchEvent, WatchEnd> {
        match item {
            Item::Event(e, bytes) => {
                self.buffer.add_permits(bytes as usize);
                Ok(e)
            }
            Item::End(end) => {
                self.ended = Some(end.clone());
                Err(end)
            }
        }
    }
}

#[async_trait::async_trait]
impl wasmtime_wasi::p2::Pollable for WatchStream {
    async fn ready(&mut self) {
        if self.peeked.is_some() || self.ended.is_some() {
            return;
        }
        self.peeked = Some(self.rx.recv().await.unwrap_or(Item::End(WatchEnd::Closed)));
    }
}

fn json(v: &impl serde::Serialize) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

impl KubeContext {
    /// Checks and opens a watch. The request is made by the stream's task,
    /// so an answer that is not a stream arrives as the watch's end.
    pub(crate) async fn watch(
        &self,
        adapter: &str,
        req: WatchRequest,
    ) -> Result<WatchStream, ApiError> {
        let mut query: Vec<(String, String)> = vec![("watch".into(), "true".into())];
        if let Some(s) = &req.label_selector {
            query.push(("labelSelector".into(), s.clone()));
        }
        if let Some(s) = &req.field_selector {
            query.push(("fieldSelector".into(), s.clone()));
        }
        if let Some(rv) = &req.resource_version {
            query.push(("resourceVersion".into(), rv.clone()));
        }
        if req.allow_bookmarks {
            query.push(("allowWatchBookmarks".into(), "true".into()));
        }
        if let Some(t) = req.timeout_seconds {
            query.push(("timeoutSeconds".into(), t.to_string()));
        }
        let audit = Audit::start(&self.denial_runs, adapter, "watch", &req.path);
        let parsed = self
            .admit(&audit, request::Method::Get, &req.path, &query, None)
            .await?;
        if !matches!(parsed, ApiRequest::Resource { .. }) {
            let msg = format!("`{}` is not a collection to watch", req.path);
            audit.denied(Some(&parsed), &msg);
            return Err(ApiError::InvalidRequest(msg));
        }
        // The read mask, applied to each event's object (`redact`).
        let mask = match &parsed {
            ApiRequest::Resource { target, .. } if self.redaction.for_target(target).is_some() => {
                Some((Arc::clone(&self.redaction), target.clone()))
            }
            _ => None,
        };
        let throttled = self.limiter.acquire().await;
        let request = http::Request::get(uri(&req.path, &query))
            .body(Vec::new())
            .map_err(|e| ApiError::InvalidRequest(format!("building the watch: {e}")))?;
        audit.opened(&parsed, throttled);

        let (tx, rx) = mpsc::channel(DEPTH);
        let buffer = Arc::new(Semaphore::new(BUFFER_BYTES as usize));
        let client = self.client.clone();
        let room = Arc::clone(&buffer);
        let task = tokio::spawn(async move {
            let end = drive(client, request, &tx, &room, mask).await;
            let _ = tx.send(Item::End(end)).await;
        });
        Ok(WatchStream {
            rx,
            buffer,
            peeked: None,
            ended: None,
            task,
            held: None,
        })
    }
}

/// Forwards events until the watch ends; how it ended.
async fn drive(
    client: kube::Client,
    request: http::Request<Vec<u8>>,
    tx: &mpsc::Sender<Item>,
    room: &Semaphore,
    mask: Option<(Arc<super::redact::Redaction>, ApiTarget)>,
) -> WatchEnd {
    let mask = mask
        .as_ref()
        .and_then(|(redaction, target)| redaction.for_target(target));
    let shown = |mut o: serde_json::Value| {
        // A watch has no query to ask for them with (`managed_fields`).
        super::managed_fields::strip_value(&mut o);
        if let Some(m) = mask {
            m.object(&mut o);
        }
        json(&o)
    };
    let stream = match client.request_events::<serde_json::Value>(request).await {
        Ok(s) => s,
        Err(kube::Error::Api(s)) if s.code == 410 => return WatchEnd::Expired(s.message.clone()),
        Err(kube::Error::Api(s)) => {
            return WatchEnd::Failed(ApiError::Rejected(ApiStatus {
                code: s.code,
                reason: s.reason.clone(),
                message: s.message.clone(),
            }));
        }
        Err(e) => {
            return WatchEnd::Failed(ApiError::Transport(format!(
                "the watch could not be opened: {e}"
            )));
        }
    };
    let mut stream = std::pin::pin!(stream);
    while let Some(item) = stream.next().await {
        let event = match item {
            Ok(KubeEvent::Added(o)) => (EventType::Added, shown(o)),
            Ok(KubeEvent::Modified(o)) => (EventType::Modified, shown(o)),
            Ok(KubeEvent::Deleted(o)) => (EventType::Deleted, shown(o)),
            Ok(KubeEvent::Bookmark(b)) => (EventType::Bookmark, json(&b)),
            Ok(KubeEvent::Error(e)) if e.code == 410 => {
                return WatchEnd::Expired(e.message.clone());
            }
            Ok(KubeEvent::Error(e)) => {
                return WatchEnd::Failed(ApiError::Transport(format!(
                    "the watch ended with an error from the API server ({}): {}",
                    e.code, e.message
                )));
            }
            Err(kube::Error::Api(s)) if s.code == 410 => {
                return WatchEnd::Expired(s.message.clone());
            }
            Err(e) => {
                return WatchEnd::Failed(ApiError::Transport(format!("the watch broke: {e}")));
            }
        };
        let (event_type, object) = event;
        // An event larger than the whole buffer waits for it to be empty.
        let bytes = object.len().min(BUFFER_BYTES as usize) as u32;
        match room.acquire_many(bytes).await {
            Ok(permits) => permits.forget(),
            Err(_) => return WatchEnd::Closed,
        }
        if tx
            .send(Item::Event(WatchEvent { event_type, object }, bytes))
            .await
            .is_err()
        {
            return WatchEnd::Closed;
        }
    }
    // The server closed it (its timeout, or a restart): resume from the last
    // version seen.
    WatchEnd::Closed
}
