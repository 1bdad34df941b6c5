//! A workload's pods, found by their labels: what `logs`, `exec` and `run`
//! act on. Pods are found by `pando.dev/app` + `pando.dev/workload` rather
//! than by name, so a pod recreated under another name is still found.

use pando_adapter_sdk::error::{self, ErrorExt};
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Pod;
use pando_adapter_sdk::kube::{Api, ListParams};
use pando_adapter_sdk::types::{Error, WorkloadRef};

use crate::app::objects;
use crate::kit::{self, names};

/// The label selector of one workload's pods.
pub fn selector(workload: &WorkloadRef) -> Result<String, Error> {
    // Checked here so a malformed name is `invalid` naming the field, not
    // a 400 about a selector the caller never wrote.
    names::check_label_value(&workload.workload)
        .map_err(|why| error::invalid(format!("workload name `{}` {why}", workload.workload)))?;
    names::check_label_value(&workload.bundle)
        .map_err(|why| error::invalid(format!("app id `{}` {why}", workload.bundle)))?;
    Ok(format!(
        "{}={},{}={}",
        kit::APP_LABEL,
        workload.bundle,
        objects::WORKLOAD_LABEL,
        workload.workload
    ))
}

/// The workload's namespace and its pods, finished ones included (1 LIST).
pub fn list(workload: &WorkloadRef) -> Result<(String, Vec<Pod>), Error> {
    let ns = names::app_namespace(&workload.bundle)?;
    let pods = Api::<Pod>::namespaced(&ns)
        .list(&ListParams::default().labels(&selector(workload)?))
        .map_err(|e| {
            Error::from(e).context(&format!("listing the pods of {}", describe(workload)))
        })?;
    Ok((ns, pods.items))
}

/// `workload `web` of app `shop``, for messages.
pub fn describe(workload: &WorkloadRef) -> String {
    format!(
        "workload `{}` of app `{}`",
        workload.workload, workload.bundle
    )
}

/// A pod's creation time in milliseconds; pods without one sort first.
fn created_ms(pod: &Pod) -> i64 {
    pod.metadata
        .creation_timestamp
        .as_ref()
        .map_or(i64::MIN, |t| t.0.as_millisecond())
}

/// The newest pod by creation time (the name breaks ties, so the choice is
/// stable), whatever its phase.
pub fn newest<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Option<&'a Pod> {
    pods.into_iter().max_by(|a, b| {
        created_ms(a)
            .cmp(&created_ms(b))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    })
}

/// Whether the pod's phase is `Running`.
pub fn is_running(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

/// The namespace and name of the workload's newest running pod;
/// `not-found` naming the workload when it has no pod at all (never
/// started, or removed, as `logs` answers), `unavailable` when it has pods
/// but none runs (there is nothing to exec into until the reconciler
/// starts it again).
pub fn running(workload: &WorkloadRef) -> Result<(String, String), Error> {
    let (ns, pods) = list(workload)?;
    if pods.is_empty() {
        return Err(error::not_found(format!(
            "{} has no pod: it was never started, or was removed",
            describe(workload)
        )));
    }
    newest(pods.iter().filter(|p| is_running(p)))
        .and_then(|p| p.metadata.name.clone())
        .map(|name| (ns, name))
        .ok_or_else(|| {
            error::unavailable(format!(
                "{} has no running pod: start the app, then try again",
                describe(workload)
            ))
        })
}

/// Why container `container` of `pod` waits (`: ErrImagePull …`), for an
/// error message; empty when it does not.
pub fn waiting_reason(pod: &Pod, container: &str) -> String {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.name == container))
        .and_then(|c| c.state.as_ref()?.waiting.as_ref())
        .map(|w| {
            format!(
                ": {} {}",
                w.reason.as_deref().unwrap_or("waiting"),
                w.message.as_deref().unwrap_or("")
            )
            .trim_end()
            .to_owned()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::PodStatus;

    fn pod(name: &str, created: &str, phase: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some(name.into());
        p.metadata.creation_timestamp =
            Some(serde_json::from_value(serde_json::json!(created)).unwrap());
        p.status = Some(PodStatus {
            phase: Some(phase.into()),
            ..PodStatus::default()
        });
        p
    }

    #[test]
    fn the_newest_pod_is_chosen_a_finished_one_included() {
        let pods = [
            pod("old", "2026-01-01T00:00:00Z", "Running"),
            pod("new", "2026-01-02T00:00:00Z", "Failed"),
        ];
        assert_eq!(
            newest(&pods).and_then(|p| p.metadata.name.as_deref()),
            Some("new")
        );
        let running = newest(pods.iter().filter(|p| is_running(p)));
        assert_eq!(
            running.and_then(|p| p.metadata.name.as_deref()),
            Some("old")
        );
        assert!(newest(&[]).is_none());
    }

    #[test]
    fn the_selector_names_app_and_workload() {
        let w = WorkloadRef {
            bundle: "shop".into(),
            workload: "web".into(),
        };
        assert_eq!(
            selector(&w).unwrap(),
            "pando.dev/app=shop,pando.dev/workload=web"
        );
        let bad = WorkloadRef {
            bundle: "shop".into(),
            workload: "a,b=c".into(),
        };
        assert!(matches!(selector(&bad), Err(Error::Invalid(_))));
    }
}
