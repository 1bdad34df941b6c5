//! Helper pods: short-lived pods of `helper_image` (any image with a POSIX
//! shell and tar, such as busybox) that the adapter execs into, for volume
//! snapshots and restores. Each is deleted when its work ends, on every path
//! the guest survives ([`HelperPod`]'s `Drop`), and ends itself after
//! [`HELPER_LIFETIME`] should the adapter be stopped mid-call.
//!
//! A helper's shell scripts find their files under `${PANDO_HELPER_ROOT}`,
//! unset in a real pod. The test cluster's KWOK has no container runtime and
//! runs exec'd commands on the test machine; it sets the variable to a
//! directory that stands in for the helper container's filesystem
//! (docs/testing.md), so the scripts that run there are the ones that run in
//! a real pod.

use std::time::Duration;

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Pod;
use pando_adapter_sdk::kube::{Api, DeleteParams, ExecParams};
use pando_adapter_sdk::kubernetes as raw;
use pando_adapter_sdk::time;
use pando_adapter_sdk::types::Error;
use serde_json::{Value, json};

use crate::config::Config;
use crate::kit::{self, app_labels, pods, post, security};

/// Label on every helper pod, naming what it is for; apply leaves such pods
/// alone.
pub const HELPER_LABEL: &str = "pando.dev/helper";
/// The helper's container.
pub const CONTAINER: &str = "pando-helper";
/// How long a helper may live at most (`activeDeadlineSeconds`).
pub const HELPER_LIFETIME: Duration = Duration::from_secs(3600);
/// How long a helper may take to start (an image pull included).
pub const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A claim a helper mounts.
#[derive(Debug, Clone)]
pub struct Mount<'a> {
    /// The claim's name.
    pub claim: &'a str,
    /// Where it is mounted.
    pub path: String,
    /// Mounted read-only (a snapshot) or not (a restore).
    pub read_only: bool,
}

/// A helper pod that exists; deleted when dropped.
pub struct HelperPod {
    namespace: String,
    name: String,
}

impl HelperPod {
    /// Creates helper `name` in app `id`'s namespace `ns`, for `purpose`
    /// (the helper label's value), with `mount`, on `node` when given (a
    /// `ReadWriteOnce` claim in use can be mounted only on its node), and
    /// waits until it runs.
    pub fn start(
        config: &Config,
        ns: &str,
        id: &str,
        name: &str,
        purpose: &str,
        mount: Option<Mount<'_>>,
        node: Option<&str>,
    ) -> Result<HelperPod, Error> {
        let pod = helper_pod(config, id, name, purpose, mount.as_ref(), node)?;
        let api = Api::<Pod>::namespaced(ns);
        let ctx = |e| Error::from(e).context(&format!("helper pod `{ns}/{name}`"));
        // A helper left by a call the host stopped is in the way: it goes. A pod of that name
        // that is not this app's helper for this purpose (a workload named so) is never
        // deleted: `conflict`.
        if let Some(existing) = api.get_opt(name).map_err(ctx)? {
            if !is_helper(&existing, id, purpose) {
                return Err(Error::Conflict(format!(
                    "pod `{ns}/{name}` is in the way of the volume helper and is not one (no \
                     labels `{}: {}`, `{}: {id}`, `{HELPER_LABEL}: {purpose}`): it is left \
                     alone; rename the workload of that name",
                    kit::MANAGED_BY,
                    kit::MANAGER,
                    kit::APP_LABEL,
                )));
            }
            api.delete_opt(name, &DeleteParams::background().grace_period(0))
                .map_err(ctx)?;
            // Deleted with no grace: gone within the kill margin.
            pods::wait_gone_within(&api, name, pods::KILL_MARGIN)?;
        }
        api.create(&post(), &pod).map_err(ctx)?;
        let helper = HelperPod {
            namespace: ns.to_owned(),
            name: name.to_owned(),
        };
        helper.wait_running()?;
        Ok(helper)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn wait_running(&self) -> Result<(), Error> {
        let api = Api::<Pod>::namespaced(&self.namespace);
        let step = Duration::from_millis(200);
        let mut waited = Duration::ZERO;
        loop {
            let pod = api.get_opt(&self.name).map_err(Error::from)?;
            let status = pod.as_ref().and_then(|p| p.status.as_ref());
            match status.and_then(|s| s.phase.as_deref()) {
                Some("Running") => return Ok(()),
                Some(phase @ ("Succeeded" | "Failed")) => {
                    return Err(Error::Unavailable(format!(
                        "helper pod `{}/{}` ended ({phase}) before it was used",
                        self.namespace, self.name
                    )));
                }
                _ => {}
            }
            if waited >= START_TIMEOUT {
                return Err(Error::Unavailable(format!(
                    "helper pod `{}/{}` (image `{}`, configuration field `helper_image`) did not \
                     start within {} s{}",
                    self.namespace,
                    self.name,
                    config_image(pod.as_ref()),
                    START_TIMEOUT.as_secs(),
                    pod.as_ref()
                        .map(|p| crate::app::pods::waiting_reason(p, CONTAINER))
                        .unwrap_or_default()
                )));
            }
            time::sleep(step)?;
            waited += step;
        }
    }

    /// Runs `script` with `sh -c` in the helper, `args` as `$1`….
    pub fn exec(
        &self,
        script: &str,
        args: &[&str],
        stdin: bool,
    ) -> Result<raw::ExecSession, Error> {
        let mut command = vec![
            "sh".to_owned(),
            "-c".to_owned(),
            script.to_owned(),
            "sh".to_owned(),
        ];
        command.extend(args.iter().map(|a| (*a).to_owned()));
        let params = ExecParams {
            container: Some(CONTAINER.into()),
            command,
            stdin,
            tty: false,
        };
        Api::<Pod>::namespaced(&self.namespace)
            .exec(&self.name, &params)
            .map_err(|e| {
                Error::from(e).context(&format!(
                    "exec in helper pod `{}/{}`",
                    self.namespace, self.name
                ))
            })
    }
}

/// Helper `name` of app `id`, for `purpose`: its pod (see [`HelperPod::start`]).
fn helper_pod(
    config: &Config,
    id: &str,
    name: &str,
    purpose: &str,
    mount: Option<&Mount<'_>>,
    node: Option<&str>,
) -> Result<Pod, Error> {
    let mut labels = app_labels(id);
    labels[HELPER_LABEL] = json!(purpose);
    let mut container = container(config, mount.is_some());
    let pod_context = security::pod_context();
    let mut spec = json!({
        "restartPolicy": "Never",
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "securityContext": pod_context,
        "activeDeadlineSeconds": HELPER_LIFETIME.as_secs(),
        "terminationGracePeriodSeconds": 1,
    });
    if let Some(m) = mount {
        container["volumeMounts"] =
            json!([{ "name": "data", "mountPath": m.path, "readOnly": m.read_only }]);
        spec["volumes"] = json!([{
            "name": "data",
            "persistentVolumeClaim": { "claimName": m.claim, "readOnly": m.read_only },
        }]);
    }
    spec["containers"] = json!([container]);
    // The app's runtime class: a helper handles the app's data, and the class's scheduling
    // is what lets it onto the nodes the app's pods run on (a tainted pool's toleration).
    if let Some(class) = &config.runtime_class {
        spec["runtimeClassName"] = json!(class);
    }
    place(&mut spec, config, node);
    kit::typed(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "labels": labels },
        "spec": spec,
    }))
}

/// The helper's container; `mounts` a volume or not.
fn container(config: &Config, mounts: bool) -> Value {
    json!({
        "name": CONTAINER,
        "image": config.helper_image,
        // Sleeps until exec'd into and deleted; ends itself at the deadline.
        "command": ["sh", "-c", "exec sleep 3600"],
        // A limit of its own: the admission policy wants one on every pod, and the
        // canary's and edge's namespaces have no LimitRange to give it.
        "resources": { "requests": { "cpu": "10m", "memory": "16Mi" },
                       "limits": { "memory": "128Mi" } },
        "securityContext": if mounts {
            // A volume's files are of any owner (docs/kubernetes-adapter.md, "Pod
            // Security"): `baseline`, with the few capabilities that takes.
            security::volume_helper_context()
        } else {
            security::restricted_context(security::HELPER_UID)
        },
    })
}

/// Where the helper runs: on `node` when given, else where the configured
/// node selector says.
fn place(spec: &mut Value, config: &Config, node: Option<&str>) {
    if let Some(node) = node {
        // Through the scheduler, not `nodeName`: the host's object policy refuses a pod that
        // names its node (it would skip admission of its placement), and so may the cluster.
        // A cordoned node (one being drained) still takes it, as `nodeName` did: the
        // volume's user runs there, and its data must be reachable to be saved.
        spec["affinity"] = json!({ "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [{
                "matchFields": [{ "key": "metadata.name", "operator": "In", "values": [node] }],
            }] },
        } });
        spec["tolerations"] = json!([{
            "key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule",
        }]);
    } else if !config.node_selector.is_empty() {
        spec["nodeSelector"] = json!(config.node_selector.labels());
    }
}

impl Drop for HelperPod {
    fn drop(&mut self) {
        let api = Api::<Pod>::namespaced(&self.namespace);
        if let Err(e) = api.delete_opt(&self.name, &DeleteParams::background().grace_period(0)) {
            // It ends itself at its deadline; say so rather than fail the call.
            pando_adapter_sdk::warn!(
                pod = format!("{}/{}", self.namespace, self.name);
                "helper pod not deleted ({e}); it ends itself within {} s",
                HELPER_LIFETIME.as_secs()
            );
        }
    }
}

/// Whether `pod` is app `id`'s helper for `purpose`, by the labels
/// [`HelperPod::start`] gives it.
pub fn is_helper(pod: &Pod, id: &str, purpose: &str) -> bool {
    let labels = pod.metadata.labels.clone().unwrap_or_default();
    let is = |key: &str, value: &str| labels.get(key).map(String::as_str) == Some(value);
    is(kit::MANAGED_BY, kit::MANAGER) && is(kit::APP_LABEL, id) && is(HELPER_LABEL, purpose)
}

/// The image a helper pod runs, for an error message.
fn config_image(pod: Option<&Pod>) -> String {
    pod.and_then(|p| p.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default()
}

/// The node a running pod of namespace `ns` that mounts `claim` is on, so a
/// helper can share a `ReadWriteOnce` claim with it.
pub fn node_of_claim_user(pods: &[Pod], claim: &str) -> Option<String> {
    pods.iter()
        .filter(|p| !pods::has_exited(p))
        .filter(|p| mounts_claim(p, claim))
        .find_map(|p| p.spec.as_ref()?.node_name.clone())
}

/// Whether `pod` mounts `claim`.
pub fn mounts_claim(pod: &Pod, claim: &str) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .is_some_and(|vs| {
            vs.iter().any(|v| {
                v.persistent_volume_claim
                    .as_ref()
                    .is_some_and(|c| c.claim_name == claim)
            })
        })
}
