//! Apply: converge an app's namespace toward its plan.
//!
//! Idempotent. Each object is compared with what exists by the hash of
//! what was asked for ([`kit::HASH_ANNOTATION`]), so a satisfied plan
//! writes nothing but the pull Secret, which is rewritten on every call
//! because a registry password can expire (O-41). A pod is recreated only
//! when its spec (its digest included) differs or it has exited (R-151:
//! nothing but Apply starts a workload again).
//!
//! Requests for a satisfied plan of N workloads and V volumes: the
//! namespace (1 GET), Pando's RoleBinding (1 GET), the policies (1 LIST),
//! the claims (1 LIST, plus 1 GET of the PV per bound claim), the Services
//! (1 LIST), the pods (1 LIST), and, with credentials, the pull Secret
//! (1 PUT): 6 + V reads, 0 or 1 write, whatever N. An egress gateway
//! adds nothing: its pod, Service and policy are in those lists.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{Pod, Secret, Service};
use pando_adapter_sdk::kube::k8s_openapi::api::networking::v1::NetworkPolicy;
use pando_adapter_sdk::kube::{Api, DeleteParams, KubeError, ListParams};
use pando_adapter_sdk::types::{BundleHandle, BundlePlan, Error};

use crate::app::{objects, rbac};
use crate::config::Config;
use crate::isolation::egress;
use crate::kit::converge::{Recreate, Replace, Way, converge_set, name_of};
use crate::kit::names;
use crate::kit::pods::{KILL_MARGIN, gone_limit, has_exited, runs_as_asked, wait_gone_within};
use crate::kit::{self, post};
use crate::trial::helper_pods;
use crate::volumes;

/// Converges the app's namespace toward `plan` (see the module doc).
pub fn apply(config: &Config, plan: &BundlePlan) -> Result<BundleHandle, Error> {
    let ns = names::app_namespace(&plan.id)?;
    // Build everything before writing anything: a plan refused (an unknown
    // volume, a DNS-name egress rule, R-186) leaves the cluster as it was.
    let mut policies = BTreeMap::new();
    policies.insert(
        objects::POLICY_NAME.to_owned(),
        objects::network_policy(config, plan)?,
    );
    let mut services = BTreeMap::new();
    let mut pods = BTreeMap::new();
    for w in &plan.workloads {
        egress::check_workload_name(&w.name)?;
        services.insert(w.name.clone(), objects::service(&plan.id, w)?);
        pods.insert(w.name.clone(), objects::pod(config, plan, w)?);
    }
    if services.len() != plan.workloads.len() {
        return Err(Error::Invalid(format!(
            "plan `{}` names a workload twice",
            plan.id
        )));
    }
    // names in the egress rules are enforced by a gateway of the
    // app's own, which only it may leave the cluster through.
    if let Some(gw) = egress::egress(config, &plan.id, &plan.network)?.gateway {
        let name = egress::GATEWAY_NAME.to_owned();
        policies.insert(name.clone(), egress::gateway_policy(config, &plan.id, &gw)?);
        services.insert(name.clone(), egress::gateway_service(&plan.id)?);
        pods.insert(name, egress::gateway_pod(config, &plan.id, &gw, None)?);
    }

    volumes::ensure_namespace(config, &ns, &plan.id)?;
    rbac::ensure_role_binding(config, &ns, &plan.id)?;
    ensure_policies(&ns, policies)?;
    ensure_pull_secret(&ns, plan)?;
    volumes::ensure_claims(config, &ns, plan)?;
    ensure_services(&ns, services)?;
    ensure_pods(&ns, pods)?;
    Ok(BundleHandle {
        id: plan.id.clone(),
        location: format!("namespace/{ns}"),
    })
}

/// Creates or replaces each policy whose hash differs, and deletes the
/// adapter's policies the plan no longer needs (a gateway's, once its
/// names are gone): 1 LIST when all are as wanted.
fn ensure_policies(ns: &str, desired: BTreeMap<String, NetworkPolicy>) -> Result<(), Error> {
    let api = Api::<NetworkPolicy>::namespaced(ns);
    let ctx = |e| Error::from(e).context(&format!("the NetworkPolicies of namespace `{ns}`"));
    let existing = api
        .list(&ListParams::default().labels(&kit::managed_selector()))
        .map_err(ctx)?;
    converge_set(&api, existing.items, desired, &Replace(ctx))
}

/// Writes the pull Secret on every call (O-41), or deletes it when the plan
/// has no credentials any more.
fn ensure_pull_secret(ns: &str, plan: &BundlePlan) -> Result<(), Error> {
    let api = Api::<Secret>::namespaced(ns);
    let ctx = |e| Error::from(e).context(&format!("the pull Secret of namespace `{ns}`"));
    if plan.pull_credentials.is_empty() {
        // Nothing to write: a satisfied plan without credentials writes
        // nothing at all (O-41). A Secret an earlier plan made stays, unused
        // by the pods, until the app is destroyed.
        return Ok(());
    }
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let secret = objects::pull_secret(&plan.id, &plan.pull_credentials, now_ms)?;
    // PUT first: the Secret usually exists. A PUT without resourceVersion
    // is an unconditional overwrite, which is what a rewrite is.
    match api.replace(objects::PULL_SECRET_NAME, &post(), &secret) {
        Ok(_) => Ok(()),
        Err(e) if e.is_not_found() => api.create(&post(), &secret).map(|_| ()).map_err(ctx),
        Err(e) => Err(ctx(e)),
    }
}

/// Creates or replaces each workload's Service, and deletes those of
/// workloads the plan no longer has (a plan is the whole app).
fn ensure_services(ns: &str, desired: BTreeMap<String, Service>) -> Result<(), Error> {
    let api = Api::<Service>::namespaced(ns);
    let ctx = |e| Error::from(e).context(&format!("the Services of namespace `{ns}`"));
    let existing = api
        .list(&ListParams::default().labels(&kit::managed_selector()))
        .map_err(ctx)?;
    // A Service's clusterIP cannot change in place; delete and create
    // rather than replace.
    let way = Recreate {
        fail: ctx,
        delete: DeleteParams::background(),
    };
    converge_set(&api, existing.items, desired, &way)
}

/// Keeps each workload's pod when it matches and still runs; replaces it
/// when its spec or digest differs or it exited; deletes pods of workloads
/// the plan no longer has.
fn ensure_pods(ns: &str, desired: BTreeMap<String, Pod>) -> Result<(), Error> {
    let api = Api::<Pod>::namespaced(ns);
    let way = WorkloadPods {
        ns,
        replaced: RefCell::default(),
    };
    // Helper pods (snapshots, restores) are the adapter's but no part of
    // the plan: an apply running beside a snapshot leaves them be.
    let selector = format!("{},!{}", kit::managed_selector(), helper_pods::HELPER_LABEL);
    let existing = api
        .list(&ListParams::default().labels(&selector))
        .map_err(|e| way.fail(e))?;
    converge_set(&api, existing.items, desired, &way)
}

/// How a workload's pods converge: a pod is never changed in place, and
/// one replaced must be gone before its successor takes the name.
struct WorkloadPods<'a> {
    ns: &'a str,
    /// The pods deleted to be replaced, and how long each may take to go.
    replaced: RefCell<BTreeMap<String, Duration>>,
}

impl WorkloadPods<'_> {
    /// Deletes `pod`, and says how long it may take to be gone. An exited
    /// pod runs nothing: it goes at once. A running one gets its grace
    /// period, and its successor waits for all of it.
    fn delete(&self, api: &Api<Pod>, pod: &Pod) -> Result<Duration, Error> {
        let (params, limit) = if has_exited(pod) {
            (DeleteParams::background().grace_period(0), KILL_MARGIN)
        } else {
            (DeleteParams::background(), gone_limit(pod))
        };
        api.delete_opt(name_of(pod), &params)
            .map_err(|e| self.fail(e))?;
        Ok(limit)
    }
}

impl Way<Pod> for WorkloadPods<'_> {
    fn fail(&self, e: KubeError) -> Error {
        Error::from(e).context(&format!("the pods of namespace `{}`", self.ns))
    }

    /// Kept when it matches and still runs (R-151: an exited pod is
    /// replaced, as nothing else starts it again).
    fn same(&self, have: &Pod, want: &Pod) -> bool {
        runs_as_asked(have, want)
    }

    fn change(&self, api: &Api<Pod>, have: &Pod, want: Pod) -> Result<Option<Pod>, Error> {
        let limit = self.delete(api, have)?;
        self.replaced
            .borrow_mut()
            .insert(name_of(have).to_owned(), limit);
        Ok(Some(want))
    }

    fn remove(&self, api: &Api<Pod>, have: &Pod) -> Result<(), Error> {
        self.delete(api, have).map(|_| ())
    }

    fn settle(&self, api: &Api<Pod>) -> Result<(), Error> {
        for (name, limit) in self.replaced.borrow().iter() {
            wait_gone_within(api, name, *limit)?;
        }
        Ok(())
    }
}
