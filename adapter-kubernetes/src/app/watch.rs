//! `watch-bundles` (O-52): one cluster-wide watch of the pods that are
//! apps' workloads, reported as changes. It reports and never acts
//! an exited pod stays exited until the reconciler makes another
//!
//!
//! One watch rather than one per app namespace: Pando's role reads pods
//! cluster-wide already (for capacity), and thousands of watches would be
//! thousands of open streams. The pods are listed first and the watch
//! starts from that list's version, so only later changes are reported;
//! core looks at every app when `watching` arrives.
//!
//! How a watch ends decides what follows:
//!
//! - The API server closes it (its own timeout, or a graceful shutdown):
//!   reopened at once from the last version seen, without returning.
//! - It breaks, or cannot be reopened, in a way a restarting or overloaded
//!   API server causes ([`resumable`]: the connection refused or cut, 429,
//!   5xx, and 401/403 from a server whose authorizer has not synced yet):
//!   reopened from the last version seen after a pause that doubles, for
//!   up to [`RESUME_FOR`] of failures in a row; then the error is returned
//!   (`unavailable` …) and core lists again. Nothing is missed while it
//!   waits: the watch resumes after the last change it reported.
//! - The version can no longer be resumed (410 Gone: etcd compacted it
//!   while the watch was away): `expired`, and core lists and sweeps again.

use std::time::Duration;

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Pod;
use pando_adapter_sdk::kube::{
    Api, KubeError, ListParams, WatchEnd as KubeWatchEnd, WatchEvent, WatchParams, WatchStream,
};
use pando_adapter_sdk::time;
use pando_adapter_sdk::types::{BundleEvent, BundleSink, Error, WatchEnd, WorkloadChange};

use crate::app::{objects, observe};
use crate::kit::{self, names};

/// How long a broken watch is tried again, counted in the pauses between
/// failures in a row: longer than an API server takes to restart.
pub const RESUME_FOR: Duration = Duration::from_secs(60);
/// The first pause before reopening a broken watch; it doubles up to
/// [`RESUME_PAUSE_MAX`].
const RESUME_PAUSE: Duration = Duration::from_millis(250);
/// The longest pause between two attempts.
const RESUME_PAUSE_MAX: Duration = Duration::from_secs(4);

/// Only app pods: Pando's, with an app label.
pub fn selector() -> String {
    format!("{},{}", kit::managed_selector(), kit::APP_LABEL)
}

/// The change a watch event reports, when the pod is a workload of an app
/// in that app's own namespace (anything else carrying the labels is not
/// a workload core knows).
pub fn change(pod: &Pod, deleted: bool) -> Option<WorkloadChange> {
    let labels = pod.metadata.labels.as_ref()?;
    let bundle = labels.get(kit::APP_LABEL)?;
    let workload = labels.get(objects::WORKLOAD_LABEL)?;
    if names::app_namespace(bundle).ok().as_deref() != pod.metadata.namespace.as_deref() {
        return None;
    }
    Some(WorkloadChange {
        bundle: bundle.clone(),
        workload: observe::workload(workload, pod),
        deleted,
    })
}

/// How one watch stream ended, for the loop that reopens it.
enum Ended {
    /// The server closed it: reopen from this version.
    Closed(String),
    /// It broke, or could not be (re)opened, for a [`resumable`] reason:
    /// reopen from `last` after a pause.
    Broken {
        /// The last version seen.
        last: String,
        /// Why, returned once [`RESUME_FOR`] is spent.
        error: KubeError,
        /// Whether this stream delivered anything before it broke, which
        /// starts the count of failures in a row again.
        delivered: bool,
    },
    /// Return this to core.
    Return(Result<WatchEnd, Error>),
}

/// Whether a watch that failed with `e` may be reopened from its last
/// version: the API server could not be reached or the connection broke,
/// or it answered as a restarting or overloaded server does (401 and 403
/// before its authorizer has synced, 429, 5xx). The host's own refusals
/// (grants, a malformed request) and events that do not decode are not:
/// trying again changes nothing.
pub fn resumable(e: &KubeError) -> bool {
    match e {
        KubeError::Transport(_) => true,
        KubeError::Api { status, .. } => matches!(status, 401 | 403 | 429 | 500..=599),
        _ => false,
    }
}

/// The pauses between attempts to reopen a broken watch: doubling from
/// [`RESUME_PAUSE`] to [`RESUME_PAUSE_MAX`], until [`RESUME_FOR`] is spent.
#[derive(Debug)]
struct Resume {
    spent: Duration,
    next: Duration,
}

impl Resume {
    fn new() -> Self {
        Resume {
            spent: Duration::ZERO,
            next: RESUME_PAUSE,
        }
    }

    /// The watch worked again: the next failure starts a new count.
    fn reset(&mut self) {
        *self = Resume::new();
    }

    /// The pause before the next attempt; `None` once the time is spent.
    fn pause(&mut self) -> Option<Duration> {
        let left = RESUME_FOR
            .checked_sub(self.spent)
            .filter(|d| !d.is_zero())?;
        let pause = self.next.min(left);
        self.spent += pause;
        self.next = (self.next * 2).min(RESUME_PAUSE_MAX);
        Some(pause)
    }
}

/// The call's cancellation is a clean end; anything else an error.
fn cancelled_or(e: Error) -> Result<WatchEnd, Error> {
    match e {
        Error::Cancelled(_) => Ok(WatchEnd::Cancelled),
        e if time::is_cancelled() && !matches!(e, Error::Timeout(_)) => Ok(WatchEnd::Cancelled),
        e => Err(e),
    }
}

/// A watch that failed to open or broke: `expired` for 410 Gone (core
/// re-lists), a clean end when the call was cancelled, else the error.
fn failed(e: KubeError) -> Result<WatchEnd, Error> {
    if e.is_gone() {
        return Ok(WatchEnd::Expired);
    }
    cancelled_or(Error::from(e).context("watching the apps' pods"))
}

/// Lists the app pods, sends `watching`, then reports every change until
/// cancelled (`cancelled`), until the sink closes (`cancelled`: nobody
/// listens), or until the version can no longer be resumed (`expired`). A
/// watch the API server closes on its own timeout is reopened from the
/// last version seen, without returning; one that breaks is reopened from
/// there too, for up to [`RESUME_FOR`] (see the module doc).
pub fn watch_bundles(sink: &BundleSink) -> Result<WatchEnd, Error> {
    let api = Api::<Pod>::all();
    let selector = selector();
    let list = match api.list(&ListParams::default().labels(&selector)) {
        Ok(list) => list,
        Err(e) => return failed(e),
    };
    let mut version = list.metadata.resource_version.unwrap_or_default();
    if sink.send(&BundleEvent::Watching).is_err() {
        return Ok(WatchEnd::Cancelled);
    }
    let params = WatchParams::default().labels(&selector);
    let mut resume = Resume::new();
    loop {
        let stream = match api.watch(&params, &version) {
            Ok(stream) => stream,
            Err(e) => return failed(e),
        };
        match follow(stream, sink, &version) {
            Ended::Closed(last) => {
                version = last;
                resume.reset();
            }
            Ended::Broken {
                last,
                error,
                delivered,
            } => {
                version = last;
                if delivered {
                    resume.reset();
                }
                let Some(pause) = resume.pause() else {
                    return failed(error);
                };
                pando_adapter_sdk::warn!(
                    resource_version = version.clone();
                    "the watch of the apps' pods broke ({error}); reopening it from the last \
                     version seen in {} ms", pause.as_millis()
                );
                if let Err(e) = time::sleep(pause) {
                    return cancelled_or(e);
                }
            }
            Ended::Return(end) => return end,
        }
    }
}

/// Sends the stream's changes until it ends.
fn follow(mut stream: WatchStream<Pod>, sink: &BundleSink, from: &str) -> Ended {
    let mut delivered = false;
    loop {
        let ready = {
            let pollable = stream.subscribe();
            time::wait_any(&[&pollable])
        };
        if let Err(e) = ready {
            return Ended::Return(cancelled_or(e));
        }
        // Everything ready now, then wait again.
        loop {
            let (pod, deleted) = match stream.try_next() {
                Ok(None) => break,
                Ok(Some(WatchEvent::Added(pod) | WatchEvent::Modified(pod))) => (pod, false),
                Ok(Some(WatchEvent::Deleted(pod))) => (pod, true),
                Ok(Some(WatchEvent::Bookmark(_))) => {
                    delivered = true;
                    continue;
                }
                Err(KubeWatchEnd::Closed) => {
                    let last = stream.resource_version().unwrap_or(from).to_owned();
                    return Ended::Closed(last);
                }
                Err(KubeWatchEnd::Expired(_)) => return Ended::Return(Ok(WatchEnd::Expired)),
                Err(KubeWatchEnd::Failed(e)) if resumable(&e) => {
                    let last = stream.resource_version().unwrap_or(from).to_owned();
                    return Ended::Broken {
                        last,
                        error: e,
                        delivered,
                    };
                }
                Err(KubeWatchEnd::Failed(e)) => return Ended::Return(failed(e)),
            };
            delivered = true;
            if let Some(change) = change(&pod, deleted)
                && sink.send(&BundleEvent::Changed(change)).is_err()
            {
                // Core stopped listening: as good as cancelled.
                return Ended::Return(Ok(WatchEnd::Cancelled));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pando_adapter_sdk::types::WorkloadPhase;

    #[test]
    fn o52_a_gone_version_is_expired_for_core_to_list_again() {
        let gone = KubeError::from_response(410, &[], b"too old resource version");
        assert!(matches!(failed(gone), Ok(WatchEnd::Expired)));
    }

    #[test]
    fn r148_a_restarting_api_server_is_resumed_a_refusal_of_the_host_is_not() {
        let status = |code| KubeError::from_response(code, &[], b"");
        for e in [
            KubeError::Transport("connection refused".into()),
            KubeError::Transport("the watch broke: connection reset".into()),
            status(403),
            status(401),
            status(429),
            status(500),
            status(503),
        ] {
            assert!(resumable(&e), "{e}");
        }
        for e in [
            status(410),
            status(400),
            status(404),
            KubeError::Denied {
                message: "no grant".into(),
                missing_grant: "watch pods".into(),
            },
            KubeError::InvalidRequest("bad".into()),
            KubeError::Decode("not a pod".into()),
            KubeError::Cancelled,
            KubeError::Timeout,
        ] {
            assert!(!resumable(&e), "{e}");
        }
    }

    #[test]
    fn r148_a_broken_watch_is_tried_again_for_a_bounded_time() {
        let mut resume = Resume::new();
        let pauses: Vec<Duration> = std::iter::from_fn(|| resume.pause()).collect();
        assert_eq!(pauses[0], RESUME_PAUSE);
        assert_eq!(pauses[1], RESUME_PAUSE * 2);
        assert!(pauses.iter().all(|p| *p <= RESUME_PAUSE_MAX));
        assert_eq!(pauses.iter().sum::<Duration>(), RESUME_FOR);
        assert!(resume.pause().is_none(), "spent");
        resume.reset();
        assert_eq!(resume.pause(), Some(RESUME_PAUSE), "a new count");
    }

    #[test]
    fn o52_a_workload_pod_is_a_change_of_its_app() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "pando-shop", "labels": {
                "app.kubernetes.io/managed-by": "pando",
                "pando.dev/app": "shop",
                "pando.dev/workload": "web"}},
            "status": {"phase": "Failed"},
        }))
        .unwrap();
        let c = change(&pod, true).unwrap();
        assert_eq!(c.bundle, "shop");
        assert_eq!(c.workload.name, "web");
        assert_eq!(c.workload.phase, WorkloadPhase::Failed);
        assert!(c.deleted);
        let mut elsewhere = pod;
        elsewhere.metadata.namespace = Some("pando-blog".into());
        assert!(change(&elsewhere, false).is_none());
    }
}
