//! `logs`: a workload's newest pod's log, a finished pod included, so the
//! crash that sent an app to failed can still be read (its pod is kept by
//! `stop`, R-150).

use pando_adapter_sdk::error::{self, ErrorExt};
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Pod;
use pando_adapter_sdk::kube::{Api, LogParams};
use pando_adapter_sdk::types::{Error, InputStream, LogOptions, WorkloadRef};

use crate::app::{objects, pods};

/// The log of the workload's newest pod (2 requests: the pod list, then
/// the log). The host's stream is returned as it is: its bytes never enter
/// the adapter. No pod at all is `not-found` naming the workload.
pub fn logs(workload: &WorkloadRef, options: &LogOptions) -> Result<InputStream, Error> {
    let (ns, all) = pods::list(workload)?;
    let name = pods::newest(&all)
        .and_then(|p| p.metadata.name.clone())
        .ok_or_else(|| {
            error::not_found(format!(
                "{} has no pod, so no log: it was never started, or was removed",
                pods::describe(workload)
            ))
        })?;
    let params = LogParams {
        container: Some(objects::CONTAINER_NAME.into()),
        ..LogParams::from(options)
    };
    Api::<Pod>::namespaced(&ns)
        .logs(&name, &params)
        .map_err(|e| Error::from(e).context(&format!("the log of pod `{ns}/{name}`")))
}
