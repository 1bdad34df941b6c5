//! The NetworkPolicy canary of `health-check` (O-43): every isolation
//! guarantee of this adapter rests on the network plugin enforcing
//! NetworkPolicy, and a cluster whose plugin ignores policies accepts them
//! without a word. So the adapter tries.
//!
//! In namespace [`NAMESPACE`], three pods of `helper_image` (a shell,
//! `timeout`, `wget` and `httpd`, such as busybox): a server, whose policy admits only
//! pods labelled `allowed`, and two clients, one labelled `allowed` and one
//! `denied`. Each client fetches from the server by its pod address:
//!
//! | allowed | denied | verdict |
//! |---|---|---|
//! | reached | refused | enforced: healthy |
//! | reached | reached | **not enforced**: unhealthy, nothing is isolated |
//! | refused | any | cannot tell: the pod network itself does not work (or the image lacks `wget`/`httpd`): unhealthy |
//!
//! The pods stay between checks (a check is then a GET of the policy, 1
//! LIST and 2 execs); a pod that ended or differs is replaced, and so is
//! the policy, on every check. Remove the namespace to remove them.

use std::time::Duration;

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{Namespace, Pod};
use pando_adapter_sdk::kube::k8s_openapi::api::networking::v1::NetworkPolicy;
use pando_adapter_sdk::kube::{Api, DeleteParams, ExecParams, KubeError, ListParams};
use pando_adapter_sdk::types::Error;
use pando_adapter_sdk::{ExecSession, time};
use serde_json::json;

use crate::app::{binding, quota};
use crate::config::Config;
use crate::kit::converge::{Way, converge_one, name_of, replace};
use crate::kit::pods;
use crate::kit::security;
use crate::kit::{self, post};
use crate::sessions::exec;

/// The canary's namespace.
pub const NAMESPACE: &str = "pando-canary";
/// The label that says which part of the canary a pod is.
pub const ROLE_LABEL: &str = "pando.dev/canary";
/// The canary's NetworkPolicy.
pub const POLICY: &str = "pando-canary";
/// The port the canary's server listens on.
pub const PORT: u16 = 8080;
/// How long a client waits for the server.
const FETCH_TIMEOUT_S: u32 = 3;
/// How long the pods may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// What a canary run found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The allowed client reached the server and the denied one did not.
    Enforced,
    /// Both reached it: policies are accepted and ignored.
    NotEnforced,
    /// Not even the allowed client reached it.
    NoNetwork,
}

/// What one client's fetch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetch {
    /// `wget` got the server's page.
    Reached,
    /// `wget` ran and got no page; how it ended (its exit status and what
    /// it printed).
    Refused(String),
    /// The fetch did not run: `timeout` or `wget` missing from the image,
    /// or the exec session failing. Says nothing about the network.
    Broken(String),
}

impl Fetch {
    /// Whether the fetch got the page.
    pub fn reached(&self) -> bool {
        *self == Fetch::Reached
    }
}

/// How a fetch ended, from the command's exit status (`timeout` exits 124
/// when it stopped `wget`; a shell 126 or 127 when the command could not
/// run) and the tail of its stderr.
pub fn classify(code: i32, stderr: &[u8]) -> Fetch {
    let said = String::from_utf8_lossy(stderr).trim().to_string();
    let said = if said.is_empty() {
        String::new()
    } else {
        format!(": {said}")
    };
    match code {
        0 => Fetch::Reached,
        124 => Fetch::Refused(format!("no answer within {FETCH_TIMEOUT_S} s{said}")),
        126 | 127 => Fetch::Broken(format!("exit status {code}{said}")),
        _ => Fetch::Refused(format!("wget exited {code}{said}")),
    }
}

/// The verdict of the two fetches (see the module doc).
pub fn verdict(allowed_reached: bool, denied_reached: bool) -> Verdict {
    match (allowed_reached, denied_reached) {
        (true, false) => Verdict::Enforced,
        (true, true) => Verdict::NotEnforced,
        (false, _) => Verdict::NoNetwork,
    }
}

/// Runs the canary: `Ok` when NetworkPolicy is enforced, `unavailable`
/// saying what is wrong otherwise: a client that could not run its fetch
/// says so, apart from one that ran and reached nothing, since only the
/// second is a finding about the network.
pub fn check(config: &Config) -> Result<(), Error> {
    let ip = ensure(config)?;
    let allowed = fetch("allowed", &ip)?;
    let denied = fetch("denied", &ip)?;
    for (role, f) in [("allowed", &allowed), ("denied", &denied)] {
        if let Fetch::Broken(why) = f {
            return Err(Error::Unavailable(format!(
                "NetworkPolicy enforcement could not be checked (O-43): the canary's {role} \
                 client in namespace `{NAMESPACE}` could not run `timeout {FETCH_TIMEOUT_S} wget` \
                 ({why}); the helper image `{}` (configuration field `helper_image`) needs \
                 `timeout`, `wget` and `httpd`, as busybox has",
                config.helper_image
            )));
        }
    }
    match verdict(allowed.reached(), denied.reached()) {
        Verdict::Enforced => Ok(()),
        Verdict::NotEnforced => Err(Error::Unavailable(format!(
            "the cluster's network plugin does not enforce NetworkPolicy (O-43): a pod the \
             canary's policy denies reached its server in namespace `{NAMESPACE}`, so no app \
             would be isolated from another; install a network plugin that enforces \
             NetworkPolicy (Calico, Cilium, …)"
        ))),
        Verdict::NoNetwork => {
            let why = match &allowed {
                Fetch::Refused(why) => why.as_str(),
                _ => "",
            };
            Err(Error::Unavailable(format!(
                "NetworkPolicy enforcement could not be checked (O-43): the canary's allowed \
                 client could not reach its server at {ip}:{PORT} in namespace `{NAMESPACE}` \
                 ({why}); the pod network does not work"
            )))
        }
    }
}

/// Makes what is missing of the canary and waits for its pods; the
/// server's pod address.
/// How long a terminating canary namespace is waited for.
const NAMESPACE_GONE_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

fn wait_namespace_gone(
    namespaces: &Api<Namespace>,
) -> Result<(), pando_adapter_sdk::kube::KubeError> {
    let step = std::time::Duration::from_millis(500);
    let mut waited = std::time::Duration::ZERO;
    while namespaces.get_opt(NAMESPACE)?.is_some() {
        if waited >= NAMESPACE_GONE_WAIT {
            break;
        }
        if pando_adapter_sdk::time::sleep(step).is_err() {
            break;
        }
        waited += step;
    }
    Ok(())
}

fn ensure(config: &Config) -> Result<String, Error> {
    let ctx = |e| Error::from(e).context(&format!("the NetworkPolicy canary in `{NAMESPACE}`"));
    let namespaces = Api::<Namespace>::all();
    let mut current = namespaces.get_opt(NAMESPACE).map_err(ctx)?;
    // Being deleted (by an operator, or a test), it refuses new pods: wait for it to go and
    // make it again, rather than report the cluster unhealthy for it.
    if current
        .as_ref()
        .is_some_and(|ns| ns.metadata.deletion_timestamp.is_some())
    {
        wait_namespace_gone(&namespaces).map_err(ctx)?;
        current = None;
    }
    if current.is_none() {
        let ns: Namespace = kit::typed(json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": { "name": NAMESPACE, "labels": { kit::MANAGED_BY: kit::MANAGER } },
        }))?;
        namespaces.create(&post(), &ns).map_err(ctx)?;
        // Inside it the adapter acts through its own binding, made here.
        binding::bind_self(config, NAMESPACE).inspect_err(|_| quota::abandon(NAMESPACE))?;
    }
    // Every check, not only when the namespace is made: a policy deleted or
    // edited since would make every later check say "not enforced" of a
    // cluster that enforces it (O-43).
    ensure_policy()
        .map_err(|e| e.context(&format!("the NetworkPolicy canary in `{NAMESPACE}`")))?;
    let api = Api::<Pod>::namespaced(NAMESPACE);
    let existing = api
        .list(&ListParams::default().labels(ROLE_LABEL))
        .map_err(ctx)?;
    for role in ["server", "allowed", "denied"] {
        let have = existing
            .items
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(role));
        converge_one(&api, have.cloned(), pod(config, role)?, &CanaryPods(ctx))?;
    }
    for role in ["allowed", "denied"] {
        wait(&api, role, |p| p.is_some_and(running))?;
    }
    let server = wait(&api, "server", |p| {
        p.is_some_and(|p| running(p) && pod_ip(p).is_some())
    })?;
    pod_ip(&server).ok_or_else(|| Error::Internal("the canary server has no address".into()))
}

/// The canary's policy (`server` admits only `allowed`), made when missing
/// and replaced when its spec differs from what the adapter asks: one read
/// when it is as it should be. The spec itself is compared, not a hash of
/// it: an edit by hand keeps the hash annotation it came with.
fn ensure_policy() -> Result<(), Error> {
    let want: NetworkPolicy = kit::typed(json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": { "name": POLICY },
        "spec": {
            "podSelector": { "matchLabels": { ROLE_LABEL: "server" } },
            "policyTypes": ["Ingress"],
            "ingress": [{ "from": [{ "podSelector": { "matchLabels": { ROLE_LABEL: "allowed" } } }] }],
        },
    }))?;
    let api = Api::<NetworkPolicy>::namespaced(NAMESPACE);
    let have = api.get_opt(POLICY).map_err(Error::from)?;
    converge_one(&api, have, want, &BySpec)
}

/// The canary's policy is the same when its spec is: see [`ensure_policy`].
struct BySpec;

impl Way<NetworkPolicy> for BySpec {
    fn fail(&self, e: KubeError) -> Error {
        Error::from(e)
    }

    fn same(&self, have: &NetworkPolicy, want: &NetworkPolicy) -> bool {
        have.spec == want.spec
    }

    fn change(
        &self,
        api: &Api<NetworkPolicy>,
        have: &NetworkPolicy,
        want: NetworkPolicy,
    ) -> Result<Option<NetworkPolicy>, Error> {
        replace(api, have, want).map_err(Error::from)?;
        Ok(None)
    }
}

/// The canary's pods: kept while as asked and running; else deleted at
/// once (they hold nothing), waited for, and made again.
struct CanaryPods<F>(F);

impl<F: Fn(KubeError) -> Error> Way<Pod> for CanaryPods<F> {
    fn fail(&self, e: KubeError) -> Error {
        (self.0)(e)
    }

    fn same(&self, have: &Pod, want: &Pod) -> bool {
        pods::runs_as_asked(have, want)
    }

    fn change(&self, api: &Api<Pod>, have: &Pod, want: Pod) -> Result<Option<Pod>, Error> {
        let name = name_of(have);
        api.delete_opt(name, &DeleteParams::background().grace_period(0))
            .map_err(&self.0)?;
        wait(api, name, |p| p.is_none())?;
        Ok(Some(want))
    }
}

fn running(pod: &Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

fn pod_ip(pod: &Pod) -> Option<String> {
    pod.status
        .as_ref()?
        .pod_ip
        .clone()
        .filter(|ip| !ip.is_empty())
}

/// Polls pod `name` until `ready` holds of it; the pod as last read.
fn wait(api: &Api<Pod>, name: &str, ready: impl Fn(Option<&Pod>) -> bool) -> Result<Pod, Error> {
    let step = Duration::from_millis(250);
    let mut waited = Duration::ZERO;
    loop {
        let pod = api.get_opt(name).map_err(Error::from)?;
        if ready(pod.as_ref()) {
            return Ok(pod.unwrap_or_default());
        }
        if waited >= START_TIMEOUT {
            return Err(Error::Unavailable(format!(
                "the NetworkPolicy canary's pod `{NAMESPACE}/{name}` did not become ready within \
                 {} s (O-43); check that the helper image can be pulled",
                START_TIMEOUT.as_secs()
            )));
        }
        time::sleep(step)?;
        waited += step;
    }
}

/// A canary pod: the server runs `httpd`, a client sleeps until exec'd.
fn pod(config: &Config, role: &str) -> Result<Pod, Error> {
    let command = match role {
        "server" => json!([
            "sh",
            "-c",
            format!(
                "mkdir -p /tmp/www && echo pando-canary > /tmp/www/index.html && \
             exec httpd -f -p {PORT} -h /tmp/www"
            )
        ]),
        _ => json!(["sh", "-c", "exec sleep 2147483647"]),
    };
    let mut spec = json!({
        "restartPolicy": "Never",
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "terminationGracePeriodSeconds": 1,
        "securityContext": security::pod_context(),
        "containers": [{
            "name": "canary",
            "image": config.helper_image,
            "command": command,
            "resources": { "requests": { "cpu": "5m", "memory": "8Mi" },
                           "limits": { "memory": "32Mi" } },
            // Pod Security `restricted`, as `nobody`: httpd serves from /tmp, an emptyDir
            // (the image's own /tmp may not be writable by it) on an unprivileged port.
            "securityContext": security::restricted_context(security::HELPER_UID),
            "volumeMounts": [{ "name": "tmp", "mountPath": "/tmp" }],
        }],
        "volumes": [{ "name": "tmp", "emptyDir": { "sizeLimit": "1Mi" } }],
    });
    // The canary checks the network the app pods get (O-43): it runs where they run, under
    // their RuntimeClass (which may carry the scheduling to their nodes) as the gateway does.
    config.place_as_apps(&mut spec);
    kit::typed(kit::with_hash(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": role,
            "labels": { kit::MANAGED_BY: kit::MANAGER, ROLE_LABEL: role },
        },
        "spec": spec,
    })))
}

/// What client `role`'s fetch of the server did ([`classify`]).
fn fetch(role: &str, ip: &str) -> Result<Fetch, Error> {
    let url = if ip.contains(':') {
        format!("http://[{ip}]:{PORT}/")
    } else {
        format!("http://{ip}:{PORT}/")
    };
    let params = ExecParams {
        container: Some("canary".into()),
        // `timeout` bounds the fetch, not `wget -T`: busybox 1.35's wget crashes after a
        // successful fetch when given -T, which read as "not reached" on a working network.
        command: vec![
            "timeout".into(),
            FETCH_TIMEOUT_S.to_string(),
            "wget".into(),
            "-q".into(),
            "-O".into(),
            "/dev/null".into(),
            url,
        ],
        stdin: false,
        tty: false,
    };
    let mut session = Api::<Pod>::namespaced(NAMESPACE)
        .exec(role, &params)
        .map_err(|e| Error::from(e).context(&format!("the canary's `{role}` client")))?;
    let out = ExecSession::stdout(&mut session);
    let err = ExecSession::stderr(&mut session);
    let stderr = exec::pump(out.as_ref(), err.as_ref(), None)?;
    drop((out, err));
    match ExecSession::wait(&mut session) {
        Ok(code) => Ok(classify(code, &stderr)),
        // Not allowed to exec is the adapter's setup, not the network's.
        Err(e @ Error::Denied(_)) => Err(e),
        // The session failing says nothing about the network.
        Err(e) => Ok(Fetch::Broken(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn o43_the_verdict_of_the_two_fetches() {
        assert_eq!(verdict(true, false), Verdict::Enforced);
        assert_eq!(verdict(true, true), Verdict::NotEnforced);
        assert_eq!(verdict(false, false), Verdict::NoNetwork);
        assert_eq!(verdict(false, true), Verdict::NoNetwork);
    }

    #[test]
    fn o43_a_fetch_that_could_not_run_is_not_a_network_finding() {
        assert_eq!(classify(0, b""), Fetch::Reached);
        assert!(matches!(classify(124, b""), Fetch::Refused(m) if m.contains("no answer")));
        assert!(matches!(classify(4, b""), Fetch::Refused(m) if m == "wget exited 4"));
        assert!(matches!(
            classify(1, b"wget: can't connect to remote host\n"),
            Fetch::Refused(m) if m.ends_with("can't connect to remote host")
        ));
        assert!(matches!(
            classify(127, b"timeout: failed to run command 'wget': No such file or directory"),
            Fetch::Broken(m) if m.contains("127") && m.contains("wget")
        ));
    }
}
