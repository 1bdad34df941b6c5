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

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Pod;
use pando_adapter_sdk::kube::{
    Api, KubeError, ListParams, WatchEnd as KubeWatchEnd, WatchEvent, WatchParams, WatchStream,
};
use pando_adapter_sdk::time;
use pando_adapter_sdk::types::{BundleEvent, BundleSink, Error, WatchEnd, WorkloadChange};

use crate::{names, objects, observe};

/// Only app pods: Pando's, with an app label.
pub fn selector() -> String {
    format!("{},{}", objects::managed_selector(), objects::APP_LABEL)
}

/// The change a watch event reports, when the pod is a workload of an app
/// in that app's own namespace (anything else carrying the labels is not
/// a workload core knows).
pub fn change(pod: &Pod, deleted: bool) -> Option<WorkloadChange> {
    let labels = pod.metadata.labels.as_ref()?;
    let bundle = labels.get(objects::APP_LABEL)?;
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
    /// Return this to core.
    Return(Result<WatchEnd, Error>),
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
/// last version seen, without returning.
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
    loop {
        let stream = match api.watch(&params, &version) {
            Ok(stream) => stream,
            Err(e) => return failed(e),
        };
        match follow(stream, sink, &version) {
            Ended::Closed(last) => version = last,
            Ended::Return(end) => return end,
        }
    }
}

/// Sends the stream's changes until it ends.
fn follow(mut stream: WatchStream<Pod>, sink: &BundleSink, from: &str) -> Ended {
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
                Ok(Some(WatchEvent::Bookmark(_))) => continue,
                Err(KubeWatchEnd::Closed) => {
                    let last = stream.resource_version().unwrap_or(from).to_owned();
                    return Ended::Closed(last);
                }
                Err(KubeWatchEnd::Expired(_)) => return Ended::Return(Ok(WatchEnd::Expired)),
                Err(KubeWatchEnd::Failed(e)) => return Ended::Return(failed(e)),
            };
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
