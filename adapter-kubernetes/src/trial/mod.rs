//! `trial` (R-097, R-187): a workload run once in a namespace of its own,
//! watched, and reported on.
//!
//! - The namespace, `pando-trial-<hex>`, denies every connection in,
//!   Pando's included: nothing needs to reach an app that is being watched.
//!   Out, it is held to the app's rules as the app is: cluster DNS, its own
//!   namespace, and the rest as the plan's egress says, host names through
//!   an egress gateway in that namespace ([`egress`], R-187). The one way
//!   in is the workload's to its gateway, on the gateway's port.
//! - The pod carries an observer container (`helper_image`) beside the
//!   workload. Containers of a pod share its network namespace, so the
//!   observer's `/proc/net/{tcp,tcp6,udp,udp6}` lists the workload's sockets
//!   whatever its image, one with no shell included. The adapter execs into
//!   the observer once a second and keeps every socket seen listening on a
//!   non-loopback address.
//! - Writes are not observed: nothing like a container diff exists in the
//!   API (`write-observation` is false, `writes` is none).
//! - The namespace is removed at the end on every path: on an error, on a
//!   cancellation (the host lets requests begun after it run within its
//!   grace), and before the call's deadline, which a trial longer than its
//!   call ends [`CLEANUP_RESERVE`] ahead of, so that the host never has to
//!   stop it mid-way. Its pods, the gateway's included, end themselves
//!   (`activeDeadlineSeconds`, [`lifetime`]), and
//!   a namespace that outlived its expiry all the same (a host that died) is
//!   removed by the next trial's sweep.
//!
//! The trial's pods carry no app label: the bundle watch and the app's
//! accounts never see them.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pando_adapter_sdk::error::{self, ErrorExt};
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{Namespace, Pod, Secret, Service};
use pando_adapter_sdk::kube::k8s_openapi::api::networking::v1::NetworkPolicy;
use pando_adapter_sdk::kube::{Api, DeleteParams, ListParams, LogParams};
use pando_adapter_sdk::types::{
    BundlePlan, Error, ListeningPort, Protocol, TrialRequest, TrialResult,
};
use pando_adapter_sdk::{io, time};
use serde_json::{Value, json};

use crate::app::objects;
use crate::config::Config;
use crate::isolation::egress;
use crate::kit::{self, names, post};

pub mod helper_pods;
mod observer;
pub mod snapshot;

/// Label on a trial's namespace and pods: the app it is for.
pub const TRIAL_LABEL: &str = "pando.dev/trial";
/// Annotation on a trial's namespace: when it may be swept.
pub const EXPIRES_ANNOTATION: &str = "pando.dev/expires-at-ms";
/// The longest trial.
pub const MAX_DURATION: Duration = Duration::from_secs(15 * 60);
/// How often the sockets are read.
const OBSERVE_EVERY: Duration = Duration::from_secs(1);
/// How long before the call's deadline a trial ends, to remove its
/// namespace while the host still lets it.
pub const CLEANUP_RESERVE: Duration = Duration::from_secs(3);
/// How much of the output is kept.
const OUTPUT_TAIL: usize = 64 * 1024;

/// Runs the trial (see the module doc).
pub fn trial(config: &Config, req: &TrialRequest) -> Result<TrialResult, Error> {
    names::app_namespace(&req.bundle)?;
    let duration = Duration::from_millis(req.duration_ms);
    if duration.is_zero() || duration > MAX_DURATION {
        return Err(error::invalid(format!(
            "trial duration {} ms is out of range: give 1 ms to {} s",
            req.duration_ms,
            MAX_DURATION.as_secs()
        )));
    }
    let mut workload = req.workload.clone();
    // A trial must not touch the app's data: its mounts become empty
    // directories at the same paths.
    let scratch: Vec<(String, bool)> = workload
        .mounts
        .drain(..)
        .map(|m| (m.path, m.read_only))
        .collect();
    let plan = BundlePlan {
        id: req.bundle.clone(),
        revision: String::new(),
        workloads: vec![workload.clone()],
        volumes: Vec::new(),
        network: req.network.clone(),
        pull_credentials: req.pull_credentials.clone(),
    };
    // Everything is built before anything is written: a plan refused (a
    // host name without a gateway image, R-186) leaves nothing behind.
    let egress = egress::egress(config, &req.bundle, &req.network)?;
    let now = now_ms();
    sweep(now);
    let ns = TrialNamespace::create(config, &req.bundle, now, duration)?;
    let pod = trial_pod(config, &plan, &ns.name, &scratch, duration)?;
    make_objects(config, &ns.name, &plan, &egress, &pod, lifetime(duration))?;
    let pod_name = pod.metadata.name.clone().unwrap_or_default();
    watch(&ns.name, &pod_name, duration)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The trial's namespace; deleted, with all in it, when dropped.
struct TrialNamespace {
    name: String,
}

impl TrialNamespace {
    /// Makes it, with the adapter's binding, the quota and the limit range
    /// of an app namespace: a trial runs the app's pod.
    fn create(
        config: &Config,
        bundle: &str,
        now: u64,
        duration: Duration,
    ) -> Result<TrialNamespace, Error> {
        let suffix = &kit::hash(&json!([bundle, now]))[..10];
        let name = format!("pando-trial-{suffix}");
        let expires = now + (duration + helper_pods::START_TIMEOUT).as_millis() as u64 + 60_000;
        let namespace: Namespace = kit::typed(json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": name,
                "labels": { kit::MANAGED_BY: kit::MANAGER, TRIAL_LABEL: bundle },
                "annotations": { EXPIRES_ANNOTATION: expires.to_string() },
            },
        }))?;
        Api::<Namespace>::all()
            .create(&post(), &namespace)
            .map_err(|e| Error::from(e).context(&format!("trial namespace `{name}`")))?;
        // Dropped on failure: the namespace goes again.
        let ns = TrialNamespace { name };
        crate::app::quota::set_up(config, &ns.name)?;
        Ok(ns)
    }
}

impl Drop for TrialNamespace {
    fn drop(&mut self) {
        if let Err(e) = Api::<Namespace>::all().delete_opt(&self.name, &DeleteParams::background())
        {
            pando_adapter_sdk::warn!(
                namespace = self.name;
                "trial namespace not deleted ({e}); the next trial sweeps it"
            );
        }
    }
}

/// Deletes trial namespaces past their expiry: left by calls the host
/// stopped before they could clean up. Best effort: a trial runs anyway.
fn sweep(now: u64) {
    let api = Api::<Namespace>::all();
    let Ok(list) = api.list(&ListParams::default().labels(TRIAL_LABEL)) else {
        return;
    };
    for ns in list.items {
        let expires = ns
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(EXPIRES_ANNOTATION))
            .and_then(|v| v.parse::<u64>().ok());
        let name = ns.metadata.name.unwrap_or_default();
        if expires.is_some_and(|e| e < now)
            && ns.metadata.deletion_timestamp.is_none()
            && name.starts_with("pando-trial-")
        {
            let _ = api.delete_opt(&name, &DeleteParams::background());
        }
    }
}

/// How long a trial's pods may live (`activeDeadlineSeconds`): its
/// duration, its start, and a minute's slack; they end themselves then
/// whatever became of the call.
pub fn lifetime(duration: Duration) -> Duration {
    duration + helper_pods::START_TIMEOUT + Duration::from_secs(60)
}

/// The workload's pod as the app would run it, with the observer beside
/// it, the trial's labels, scratch directories for its mounts, and a
/// deadline.
fn trial_pod(
    config: &Config,
    plan: &BundlePlan,
    ns: &str,
    scratch: &[(String, bool)],
    duration: Duration,
) -> Result<Pod, Error> {
    let w = &plan.workloads[0];
    let pod = objects::pod_in(config, plan, w, ns)?;
    let mut pod: Value = serde_json::to_value(pod)
        .map_err(|e| Error::Internal(format!("encoding the trial pod: {e}")))?;
    pod["metadata"]["labels"] = json!({ kit::MANAGED_BY: kit::MANAGER, TRIAL_LABEL: plan.id });
    let spec = &mut pod["spec"];
    let lifetime = lifetime(duration);
    spec["activeDeadlineSeconds"] = json!(lifetime.as_secs());
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    for (i, (path, read_only)) in scratch.iter().enumerate() {
        let name = format!("scratch{i}");
        volumes.push(json!({ "name": name, "emptyDir": {} }));
        mounts.push(json!({ "name": name, "mountPath": path, "readOnly": read_only }));
    }
    spec["volumes"] = Value::Array(volumes);
    spec["containers"][0]["volumeMounts"] = Value::Array(mounts);
    if let Some(containers) = spec["containers"].as_array_mut() {
        containers.push(observer::container(config, lifetime));
    }
    kit::typed(pod)
}

/// The trial namespace's policies, gateway (its pod ending by `lifetime`
/// as the trial's does), pull Secret and pod.
fn make_objects(
    config: &Config,
    ns: &str,
    plan: &BundlePlan,
    egress: &egress::Egress,
    pod: &Pod,
    lifetime: Duration,
) -> Result<(), Error> {
    let ctx = |e| Error::from(e).context(&format!("trial namespace `{ns}`"));
    let policies = Api::<NetworkPolicy>::namespaced(ns);
    for policy in trial_policies(config, plan, egress)? {
        policies.create(&post(), &policy).map_err(ctx)?;
    }
    if let Some(gw) = &egress.gateway {
        Api::<Service>::namespaced(ns)
            .create(&post(), &egress::gateway_service(&plan.id)?)
            .map_err(ctx)?;
        Api::<Pod>::namespaced(ns)
            .create(
                &post(),
                &egress::gateway_pod(config, &plan.id, gw, Some(lifetime))?,
            )
            .map_err(ctx)?;
    }
    if !plan.pull_credentials.is_empty() {
        let secret = objects::pull_secret(&plan.id, &plan.pull_credentials, now_ms())?;
        Api::<Secret>::namespaced(ns)
            .create(&post(), &secret)
            .map_err(ctx)?;
    }
    Api::<Pod>::namespaced(ns)
        .create(&post(), pod)
        .map_err(ctx)?;
    Ok(())
}

/// The trial namespace's policies: `pando-trial` over every pod, with no
/// `ingress` entry, so every connection in is denied (R-097); with a
/// gateway, its way out and the one way in to it, from the trial's
/// workload on the gateway's port (R-187).
pub fn trial_policies(
    config: &Config,
    plan: &BundlePlan,
    egress: &egress::Egress,
) -> Result<Vec<NetworkPolicy>, Error> {
    let mut out = vec![objects::policy(
        config,
        &plan.id,
        "pando-trial",
        Vec::new(),
        egress.rules.clone(),
    )?];
    if let Some(gw) = &egress.gateway {
        out.push(egress::gateway_policy(config, &plan.id, gw)?);
        out.push(egress::gateway_ingress_policy(
            &plan.id,
            json!({ TRIAL_LABEL: plan.id }),
        )?);
    }
    Ok(out)
}

/// Watches the pod for `duration` from when it runs: its sockets, and
/// whether the workload exits.
fn watch(ns: &str, pod: &str, duration: Duration) -> Result<TrialResult, Error> {
    let api = Api::<Pod>::namespaced(ns);
    let mut listening = BTreeSet::new();
    let mut exit_code = None;
    let mut started = false;
    let mut waited = Duration::ZERO;
    let mut watched = Duration::ZERO;
    loop {
        let current = api
            .get_opt(pod)
            .map_err(|e| Error::from(e).context(&format!("trial pod `{ns}/{pod}`")))?;
        let Some(current) = current else {
            return Err(error::unavailable(format!(
                "trial pod `{ns}/{pod}` disappeared during the trial"
            )));
        };
        if let Some(code) = workload_exit(&current) {
            exit_code = Some(code);
        }
        let running = current.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        if running {
            started = true;
            // A failed read (the pod ending meanwhile) costs one sample.
            if let Ok(text) = observer::read_sockets(ns, pod) {
                listening.extend(observer::parse_sockets(&text));
            }
        }
        if exit_code.is_some() || watched >= duration {
            break;
        }
        if let Some(left) = time::deadline()
            && left < OBSERVE_EVERY + CLEANUP_RESERVE
        {
            return Err(Error::Timeout(format!(
                "the call's deadline comes before the trial's {} s were up: the trial was \
                 ended after {} s of watching and its namespace `{ns}` removed; give the call \
                 a deadline longer than the trial's duration",
                duration.as_secs(),
                watched.as_secs()
            )));
        }
        if !started && exit_code.is_none() {
            if waited >= helper_pods::START_TIMEOUT {
                return Err(error::unavailable(format!(
                    "trial pod `{ns}/{pod}` did not start within {} s{}",
                    helper_pods::START_TIMEOUT.as_secs(),
                    crate::app::pods::waiting_reason(&current, objects::CONTAINER_NAME)
                )));
            }
            waited += OBSERVE_EVERY;
        } else {
            watched += OBSERVE_EVERY;
        }
        time::sleep(OBSERVE_EVERY)?;
    }
    Ok(TrialResult {
        listening: listening
            .into_iter()
            .map(|(port, udp)| ListeningPort {
                port,
                protocol: if udp { Protocol::Udp } else { Protocol::Tcp },
            })
            .collect(),
        exit_code,
        writes: None,
        output_tail: output_tail(ns, pod),
    })
}

/// The workload container's exit code, once it has one.
fn workload_exit(pod: &Pod) -> Option<i32> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .iter()
        .find(|c| c.name == objects::CONTAINER_NAME)?
        .state
        .as_ref()?
        .terminated
        .as_ref()
        .map(|t| t.exit_code)
}

/// The tail of the workload's output, to explain a failure; empty when it
/// cannot be read (the trial's result stands without it).
fn output_tail(ns: &str, pod: &str) -> String {
    let params = LogParams {
        container: Some(objects::CONTAINER_NAME.into()),
        limit_bytes: Some(OUTPUT_TAIL as u64),
        tail_lines: Some(200),
        ..LogParams::default()
    };
    Api::<Pod>::namespaced(ns)
        .logs(pod, &params)
        .map_err(Error::from)
        .and_then(|stream| io::read_to_end(&stream, OUTPUT_TAIL))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway_config() -> Config {
        Config::parse(
            r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12",
                "egress_gateway_image":"registry.example.com/pando:1"}"#,
        )
        .unwrap()
    }

    fn host_rule_plan() -> (BundlePlan, egress::Egress) {
        use pando_adapter_sdk::types::{EgressPolicy, EgressRule, NetworkRules};
        let network = NetworkRules {
            egress: EgressPolicy::Restricted(vec![EgressRule {
                destination: "api.example.com".into(),
                ports: vec![443],
            }]),
        };
        let egress = egress::egress(&gateway_config(), "shop", &network).unwrap();
        let plan = BundlePlan {
            id: "shop".into(),
            revision: String::new(),
            workloads: Vec::new(),
            volumes: Vec::new(),
            network,
            pull_credentials: Vec::new(),
        };
        (plan, egress)
    }

    #[test]
    fn r097_r187_the_one_way_into_a_trial_is_its_workload_to_its_gateway() {
        let (plan, egress) = host_rule_plan();
        let policies = trial_policies(&gateway_config(), &plan, &egress).unwrap();
        let json: Vec<Value> = policies
            .iter()
            .map(|p| serde_json::to_value(p).unwrap())
            .collect();
        let deny = &json[0]["spec"];
        assert_eq!(deny["podSelector"], json!({}));
        assert!(deny["ingress"].as_array().is_none_or(|i| i.is_empty()));
        let ins: Vec<&Value> = json
            .iter()
            .filter(|p| {
                p["spec"]["policyTypes"]
                    .as_array()
                    .is_some_and(|t| t.contains(&json!("Ingress")))
            })
            .collect();
        assert_eq!(ins.len(), 2, "the deny-all and the gateway's way in");
        let gw = &ins[1]["spec"];
        assert_eq!(
            gw["podSelector"],
            json!({ "matchLabels": { egress::COMPONENT_LABEL: egress::GATEWAY_COMPONENT } })
        );
        assert_eq!(
            gw["ingress"],
            json!([{
                "from": [{ "podSelector": { "matchLabels": { TRIAL_LABEL: "shop" } } }],
                "ports": [{ "protocol": "TCP", "port": egress::GATEWAY_PORT }],
            }]),
            "from the trial's workload, on the gateway's port, nothing else"
        );
    }

    #[test]
    fn r097_the_trials_gateway_ends_itself_with_the_trial() {
        let (_, egress) = host_rule_plan();
        let gw = egress.gateway.unwrap();
        let duration = Duration::from_secs(90);
        let pod =
            egress::gateway_pod(&gateway_config(), "shop", &gw, Some(lifetime(duration))).unwrap();
        let deadline = pod.spec.unwrap().active_deadline_seconds;
        assert_eq!(deadline, Some(lifetime(duration).as_secs() as i64));
        assert!(
            lifetime(duration) <= duration + helper_pods::START_TIMEOUT + Duration::from_secs(60)
        );
    }
}
