//! The Kubernetes adapter, in the host, against a failing control plane:
//! the API server restarted during an apply and during the bundle watch, a
//! watch that comes back to a compacted version (410), a write conflict
//! (409), throttling (429, from API Priority and Fairness), and a
//! connection cut in the middle of a log stream and of a volume snapshot.
//!
//! The adapter talks to the *fault* API server (a second kube-apiserver on
//! the test cluster's etcd, `scripts/cluster restart-fault-apiserver`), so
//! breaking it disturbs no other test; the tests make their changes and
//! look behind the adapter through the main API server, as admin. One
//! fault test runs at a time ([`faults::exclusive`]), and each leaves the
//! fault API server running. See docs/testing.md, "Faults".

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use kube::Api;
use kube::api::{DeleteParams, ListParams, ObjectMeta, PostParams};
use pando_host::types::{
    BundleEvent, Error as AdapterError, LogOptions, VolumeHandle, WatchEnd, WorkloadChange,
    WorkloadPhase,
};
use pando_host::{Adapter, CallContext, CallError, CancellationToken, Host};
use pando_tests::cluster;
use pando_tests::faults::{self, FaultIdentity, Leftovers, Stop, eventually};
use pando_tests::kubernetes_adapter::{
    self as ka, admin, audit_mark, ctx, id, requests, wait_phase, with_volume,
};
use pando_tests::plans::{bundle, plan, wref};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

/// Pods on the `apps` pool (`kwok-node-0`, `-1`), away from the node the
/// capacity tests measure.
const POOL_CONFIG: &str = r#"{"pod_cidr": "198.19.128.0/17", "service_cidr": "198.19.0.0/17",
    "node_selector": "pando.dev/pool=apps"}"#;

/// The Kubernetes adapter on the fault API server, as `who`.
async fn fault_adapter(who: FaultIdentity) -> (Adapter, Host) {
    let client = faults::client(who, true)
        .await
        .expect("a client of the fault API server");
    // The adapter binds itself by the name it is known by (`adapter_user`).
    let config = POOL_CONFIG.replacen('{', &format!(r#"{{"adapter_user": "{}", "#, who.name()), 1);
    ka::load_with_client_grants(&config, client, ka::grants_for_user(who.name())).await
}

// ---------------------------------------------------------------------------------------------
// Apply across a restart
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn apply_converges_after_the_api_server_restarts() {
    let _fault = faults::exclusive().await;
    let (a, _h) = fault_adapter(FaultIdentity::Pando).await;
    let app = id("fault-apply");
    let ns = format!("pando-{app}");
    let mut left = Leftovers::default();
    left.namespace(&ns);
    let names: Vec<String> = (0..16).map(|i| format!("w{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let p = plan(&app, &names);

    // Restart the API server once the apply has begun writing workloads: at
    // the adapter's 5 requests a second, 16 Services and 16 pods are still
    // to come.
    let mark = audit_mark();
    let first = {
        let (a, p) = (a.clone(), p.clone());
        tokio::spawn(async move { a.apply(&ctx(), &p).await })
    };
    eventually("the apply's first Service", ka::WAIT, || async {
        requests(mark, &ns)
            .iter()
            .any(|r| r.is_write() && r.resource == "services")
            .then_some(())
    })
    .await;
    let started = Instant::now();
    faults::restart(Stop::Graceful).await;
    eprintln!("the fault API server restarted in {:?}", started.elapsed());
    let first = first.await.expect("join");
    eprintln!("the apply during the restart: {first:?}");
    assert!(
        matches!(&first, Err(CallError::Adapter(AdapterError::Unavailable(m))) if m.contains("unreachable")),
        "an apply cut off by the restart fails with a typed `unavailable`: {first:?}"
    );

    // Once the API server is back, the same apply converges …
    a.apply(&ctx(), &p)
        .await
        .expect("the apply after the restart");
    let c = admin().await;
    for w in &names {
        wait_phase(&ns, w, "Running").await;
    }
    let pods = Api::<Pod>::namespaced(c.clone(), &ns)
        .list(&ListParams::default())
        .await
        .expect("pods");
    let mut pod_names: Vec<String> = pods
        .items
        .iter()
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    pod_names.sort();
    let mut wanted: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    wanted.sort();
    assert_eq!(pod_names, wanted, "one pod per workload, nothing else");
    let services = Api::<Service>::namespaced(c.clone(), &ns)
        .list(&ListParams::default())
        .await
        .expect("services");
    assert_eq!(
        services.items.len(),
        names.len(),
        "one Service per workload"
    );

    // … and is satisfied: applying again writes nothing (O-41).
    let mark = audit_mark();
    a.apply(&ctx(), &p).await.expect("a satisfied apply");
    let writes: Vec<_> = requests(mark, &ns)
        .into_iter()
        .filter(|r| r.is_write())
        .collect();
    assert!(
        writes.is_empty(),
        "a satisfied plan writes nothing: {writes:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The bundle watch across a restart, and after compaction
// ---------------------------------------------------------------------------------------------

/// A workload's state as the tests change it and as the watch reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Running,
    Exited(i32),
    Deleted,
}

/// What one report says of a workload (`None`: nothing the ground truth
/// names, such as `pending`).
fn state_of(change: &WorkloadChange) -> Option<State> {
    if change.deleted {
        return Some(State::Deleted);
    }
    match change.workload.phase {
        WorkloadPhase::Running => Some(State::Running),
        WorkloadPhase::Succeeded | WorkloadPhase::Failed => {
            Some(State::Exited(change.workload.exit_code.unwrap_or(i32::MIN)))
        }
        _ => None,
    }
}

/// One thing the test learnt of a workload: from an event, or from a list
/// after the watch returned.
#[derive(Clone, Debug)]
struct Seen {
    workload: String,
    state: State,
    listed: bool,
}

/// Makes pods that look like an app's workloads, as admin through the main
/// API server (the adapter watches through the fault one).
struct App {
    id: String,
    ns: String,
    pods: Api<Pod>,
}

impl App {
    async fn new(prefix: &str) -> App {
        let id = id(prefix);
        let ns = format!("pando-{id}");
        let c = admin().await;
        let labels = [
            (
                "app.kubernetes.io/managed-by".to_owned(),
                "pando".to_owned(),
            ),
            ("pando.dev/app".to_owned(), id.clone()),
        ];
        Api::<Namespace>::all(c.clone())
            .create(
                &PostParams::default(),
                &Namespace {
                    metadata: ObjectMeta {
                        name: Some(ns.clone()),
                        labels: Some(labels.into()),
                        ..ObjectMeta::default()
                    },
                    ..Namespace::default()
                },
            )
            .await
            .expect("creating the app's namespace");
        // And the adapter's binding, as the adapter makes it with the namespace
        // (deploy/kubernetes/rbac.yaml): inside it, the adapter acts only through it.
        let binding: k8s_openapi::api::rbac::v1::RoleBinding =
            serde_json::from_value(serde_json::json!({
                "metadata": { "name": cluster::ADAPTER_BINDING },
                "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                             "name": cluster::NAMESPACE_ROLE },
                "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                               "name": "pando" }],
            }))
            .expect("a binding");
        Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(c.clone(), &ns)
            .create(&PostParams::default(), &binding)
            .await
            .expect("the adapter's binding");
        let pods = Api::namespaced(c, &ns);
        App { id, ns, pods }
    }

    /// Creates workload `name`'s pod and waits until it runs.
    async fn run(&self, name: &str) {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {
                "app.kubernetes.io/managed-by": "pando",
                "pando.dev/app": self.id,
                "pando.dev/workload": name}},
            "spec": {
                "restartPolicy": "Never",
                "nodeSelector": {"pando.dev/pool": "apps"},
                "containers": [{"name": "workload", "image": "registry.invalid/pando/test:1"}]},
        }))
        .expect("a pod");
        self.pods
            .create(&PostParams::default(), &pod)
            .await
            .expect("creating a workload's pod");
        wait_phase(&self.ns, name, "Running").await;
    }

    /// Ends workload `name` with `code` (KWOK) and waits for its phase.
    async fn exit(&self, name: &str, code: i32) {
        ka::exit_pod(&self.ns, name, code).await;
    }

    /// Deletes workload `name`'s pod and waits until it is gone.
    async fn delete(&self, name: &str) {
        self.pods
            .delete(name, &DeleteParams::default().grace_period(0))
            .await
            .expect("deleting a workload's pod");
        eventually("the pod to be gone", ka::WAIT, || async {
            self.pods
                .get_opt(name)
                .await
                .expect("reading the pod")
                .is_none()
                .then_some(())
        })
        .await;
    }
}

/// `watch_bundles`, called again whenever it returns (but for
/// cancellation), as core calls it; everything it reports of one app kept,
/// with a list of the app (`observe`) on every `watching` after the first,
/// as core looks at every app then.
struct Watcher {
    seen: Arc<Mutex<Vec<Seen>>>,
    ends: Arc<Mutex<Vec<Result<WatchEnd, String>>>>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Watcher {
    /// Starts watching for app `app`; returns once the first `watching`
    /// arrived.
    async fn start(a: &Adapter, app: &str) -> Watcher {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let ends = Arc::new(Mutex::new(Vec::new()));
        let cancel = CancellationToken::new();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let task = {
            let (a, app, seen, ends, cancel) = (
                a.clone(),
                app.to_owned(),
                seen.clone(),
                ends.clone(),
                cancel.clone(),
            );
            tokio::spawn(async move {
                let mut ready = Some(ready_tx);
                while !cancel.is_cancelled() {
                    let (tx, mut rx) = mpsc::channel(256);
                    let call = {
                        let (a, cancel) = (a.clone(), cancel.clone());
                        tokio::spawn(async move {
                            let ctx = CallContext::new(cancel).without_deadline();
                            a.watch_bundles(&ctx, tx).await
                        })
                    };
                    while let Some(event) = rx.recv().await {
                        match event {
                            BundleEvent::Watching => match ready.take() {
                                Some(r) => {
                                    let _ = r.send(());
                                }
                                None => relist(&a, &app, &seen).await,
                            },
                            BundleEvent::Changed(c) if c.bundle == app => {
                                if let Some(state) = state_of(&c) {
                                    seen.lock().unwrap().push(Seen {
                                        workload: c.workload.name.clone(),
                                        state,
                                        listed: false,
                                    });
                                }
                            }
                            BundleEvent::Changed(_) => {}
                        }
                    }
                    let end = call.await.expect("join");
                    eprintln!("watch_bundles returned: {end:?}");
                    let cancelled = matches!(end, Ok(WatchEnd::Cancelled));
                    if !cancelled {
                        ends.lock()
                            .unwrap()
                            .push(end.map_err(|e| format!("{} {e}", e.kind())));
                    }
                    if cancelled || cancel.is_cancelled() {
                        break;
                    }
                    // Core calls it again; not in a tight loop while the
                    // API server is down.
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            })
        };
        tokio::time::timeout(ka::WAIT, ready_rx)
            .await
            .expect("`watching` within the limit")
            .expect("the watch reports `watching`");
        Watcher {
            seen,
            ends,
            cancel,
            task,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn ends(&self) -> Vec<Result<WatchEnd, String>> {
        self.ends.lock().unwrap().clone()
    }

    /// Waits until `workload`'s latest known state is `state`.
    async fn until(&self, workload: &str, state: State) {
        eventually(&format!("{workload} seen {state:?}"), ka::WAIT, || async {
            self.seen()
                .iter()
                .rev()
                .find(|s| s.workload == workload)
                .is_some_and(|s| s.state == state)
                .then_some(())
        })
        .await;
    }

    async fn stop(self) {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("the watch ends after cancellation")
            .expect("join");
    }
}

/// Lists the app through the adapter (what core does after a watch
/// returned) and records every workload of it, those gone as deleted.
async fn relist(a: &Adapter, app: &str, seen: &Mutex<Vec<Seen>>) {
    let observed = match a.observe(&ctx(), &bundle(app)).await {
        Ok(o) => o,
        Err(e) => {
            eprintln!("the list after the watch returned failed: {e}");
            return;
        }
    };
    let mut all = seen.lock().unwrap();
    let known: Vec<String> = all.iter().map(|s| s.workload.clone()).collect();
    let mut listed: BTreeMap<String, State> =
        known.into_iter().map(|w| (w, State::Deleted)).collect();
    for w in &observed.workloads {
        let state = match w.phase {
            WorkloadPhase::Running => State::Running,
            WorkloadPhase::Succeeded | WorkloadPhase::Failed => {
                State::Exited(w.exit_code.unwrap_or(i32::MIN))
            }
            _ => continue,
        };
        listed.insert(w.name.clone(), state);
    }
    for (workload, state) in listed {
        all.push(Seen {
            workload,
            state,
            listed: true,
        });
    }
}

/// Whether what was seen of `workload` accounts for every change of the
/// ground truth `truth`, in order: each change is an event seen, or is
/// covered by a later list (a list shows where a workload ended up, the
/// changes in between included). The last state seen must be the last of
/// the truth.
fn accounts_for(seen: &[Seen], workload: &str, truth: &[State]) -> Result<(), String> {
    let seen: Vec<&Seen> = seen.iter().filter(|s| s.workload == workload).collect();
    let mut at = 0;
    for (i, wanted) in truth.iter().enumerate() {
        let found = seen[at..]
            .iter()
            .position(|s| &s.state == wanted || (s.listed && truth[i..].contains(&s.state)));
        match found {
            Some(j) => {
                // A list showing a later state accounts for this one and for
                // the ones up to it; stay on it.
                at += if seen[at + j].state == *wanted {
                    j + 1
                } else {
                    j
                };
            }
            None => {
                return Err(format!(
                    "{workload}: {wanted:?} (change {} of {truth:?}) is not accounted for by what \
                     was seen: {seen:?}",
                    i + 1
                ));
            }
        }
    }
    match seen.last() {
        Some(last) if Some(&last.state) == truth.last() => Ok(()),
        other => Err(format!(
            "{workload}: last seen {other:?}, but it ended {:?}",
            truth.last()
        )),
    }
}

#[test]
fn a_list_accounts_for_the_changes_before_it_and_nothing_else_does() {
    let event = |w: &str, state| Seen {
        workload: w.into(),
        state,
        listed: false,
    };
    let list = |w: &str, state| Seen {
        workload: w.into(),
        state,
        listed: true,
    };
    let truth = [State::Running, State::Exited(3), State::Deleted];
    let all_events = [
        event("p", State::Running),
        event("p", State::Running),
        event("p", State::Exited(3)),
        event("p", State::Deleted),
    ];
    assert!(accounts_for(&all_events, "p", &truth).is_ok());
    // The exit fell in a gap the list after it covers.
    let gap = [event("p", State::Running), list("p", State::Deleted)];
    assert!(accounts_for(&gap, "p", &truth).is_ok());
    // An event is no list: a missed exit is missed.
    let missed = [event("p", State::Running), event("p", State::Deleted)];
    assert!(accounts_for(&missed, "p", &truth).is_err());
    // Out of order, or not where it ended.
    let reordered = [
        event("p", State::Exited(3)),
        event("p", State::Running),
        event("p", State::Deleted),
    ];
    assert!(accounts_for(&reordered, "p", &truth).is_err());
    let unfinished = [event("p", State::Running), event("p", State::Exited(3))];
    assert!(accounts_for(&unfinished, "p", &truth).is_err());
}

#[tokio::test]
async fn watch_bundles_across_an_api_server_restart_misses_no_pod_change() {
    let _fault = faults::exclusive().await;
    let (a, _h) = fault_adapter(FaultIdentity::Pando).await;
    let app = App::new("fault-watch").await;
    let mut left = Leftovers::default();
    left.namespace(&app.ns);
    let watcher = Watcher::start(&a, &app.id).await;

    // Before: two workloads run, and the watch says so.
    app.run("p0").await;
    app.run("p1").await;
    watcher.until("p0", State::Running).await;
    watcher.until("p1", State::Running).await;

    // During: the API server the adapter watches through is killed (its
    // connections cut), and the pods change meanwhile.
    faults::stop(Stop::Kill).await;
    app.exit("p0", 3).await;
    app.delete("p1").await;
    app.run("p2").await;
    faults::start().await;

    // After.
    app.exit("p2", 0).await;
    app.run("p3").await;
    app.delete("p0").await;

    let truth: BTreeMap<&str, Vec<State>> = [
        ("p0", vec![State::Running, State::Exited(3), State::Deleted]),
        ("p1", vec![State::Running, State::Deleted]),
        ("p2", vec![State::Running, State::Exited(0)]),
        ("p3", vec![State::Running]),
    ]
    .into();
    for (w, states) in &truth {
        watcher.until(w, states.last().cloned().unwrap()).await;
    }
    let seen = watcher.seen();
    let ends = watcher.ends();
    eprintln!("the watch returned {} time(s): {ends:?}", ends.len());
    eprintln!("seen: {seen:?}");
    for (w, states) in &truth {
        accounts_for(&seen, w, states).unwrap_or_else(|e| panic!("{e}"));
    }
    if ends.is_empty() {
        // It resumed: then every change is an event, none from a list.
        assert!(seen.iter().all(|s| !s.listed), "{seen:?}");
    }
    watcher.stop().await;
}

#[tokio::test]
async fn r148_watch_bundles_returns_expired_after_compaction() {
    let _fault = faults::exclusive().await;
    let (a, _h) = fault_adapter(FaultIdentity::Pando).await;
    let app = App::new("fault-r148").await;
    let mut left = Leftovers::default();
    left.namespace(&app.ns);
    let (tx, mut rx) = mpsc::channel(256);
    let cancel = CancellationToken::new();
    let call = {
        let (a, cancel) = (a.clone(), cancel.clone());
        tokio::spawn(async move {
            let ctx = CallContext::new(cancel).without_deadline();
            a.watch_bundles(&ctx, tx).await
        })
    };
    let first = tokio::time::timeout(ka::WAIT, rx.recv())
        .await
        .expect("watching within the limit");
    assert_eq!(first, Some(BundleEvent::Watching));
    let seen = Arc::new(Mutex::new(Vec::<WorkloadChange>::new()));
    let drain = {
        let (seen, id) = (seen.clone(), app.id.clone());
        tokio::spawn(async move {
            while let Some(event) = rx.recv().await {
                if let BundleEvent::Changed(c) = event
                    && c.bundle == id
                {
                    seen.lock().unwrap().push(c);
                }
            }
        })
    };
    app.run("p0").await;
    eventually("p0 reported running", ka::WAIT, || async {
        seen.lock()
            .unwrap()
            .iter()
            .any(|c| state_of(c) == Some(State::Running))
            .then_some(())
    })
    .await;

    // The API server goes away; while it is away the pods change and etcd
    // is compacted past the last version the watch saw. When it is back the
    // adapter reopens from that version: 410 Gone.
    faults::stop(Stop::Kill).await;
    app.exit("p0", 3).await;
    app.run("p1").await;
    let revision = faults::compact_etcd().await;
    eprintln!("etcd compacted at revision {revision}");
    let started = Instant::now();
    faults::start().await;
    let end = tokio::time::timeout(ka::WAIT, call)
        .await
        .expect("the watch returns within the limit")
        .expect("join");
    eprintln!(
        "watch_bundles returned {end:?} {:?} after the API server was started again",
        started.elapsed()
    );
    assert_eq!(
        end.expect("no error"),
        WatchEnd::Expired,
        "a version that cannot be resumed returns `expired`"
    );
    drain.await.expect("join");
    let events = seen.lock().unwrap().clone();
    assert!(
        !events.iter().any(|c| c.workload.name == "p1"),
        "p1 was made while the watch was away: only a list can tell of it: {events:?}"
    );

    // The caller lists again: everything the watch could not report.
    let listed = a.observe(&ctx(), &bundle(&app.id)).await.expect("observe");
    let phase = |name: &str| {
        listed
            .workloads
            .iter()
            .find(|w| w.name == name)
            .map(|w| (w.phase, w.exit_code))
    };
    assert_eq!(phase("p0"), Some((WorkloadPhase::Failed, Some(3))));
    assert_eq!(phase("p1").map(|p| p.0), Some(WorkloadPhase::Running));
    cancel.cancel();
}

// ---------------------------------------------------------------------------------------------
// Conflicts
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_write_conflict_is_typed_and_apply_converges() {
    let _fault = faults::exclusive().await;
    let (a, _h) = fault_adapter(FaultIdentity::Pando).await;
    let c = admin().await;
    let app = id("fault-409");
    let ns = format!("pando-{app}");
    let taken = id("fault-409ns");
    let mut left = Leftovers::default();
    left.namespace(&ns);
    left.namespace(format!("pando-{taken}"));
    a.apply(&ctx(), &plan(&app, &["web"]))
        .await
        .expect("the first apply");

    // A pod that is not Pando's takes the name of the workload to come: the
    // API server answers the adapter's create with 409 AlreadyExists.
    let pods: Api<Pod> = Api::namespaced(c.clone(), &ns);
    let squatter: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "db"},
        "spec": {"nodeSelector": {"pando.dev/pool": "apps"},
                 "containers": [{"name": "c", "image": "registry.invalid/other:1"}]},
    }))
    .expect("a pod");
    pods.create(&PostParams::default(), &squatter)
        .await
        .expect("creating the pod that is not Pando's");
    let p = plan(&app, &["web", "db"]);
    let conflict = a.apply(&ctx(), &p).await;
    assert!(
        matches!(&conflict, Err(CallError::Adapter(AdapterError::Conflict(m)))
            if m.contains("409") && m.contains("already exists")),
        "a name taken by something that is not Pando's is `conflict`: {conflict:?}"
    );
    let stranger = pods.get("db").await.expect("the other pod stays");
    assert!(
        stranger.metadata.labels.is_none(),
        "the adapter leaves what is not its own alone"
    );

    // Once it is gone, the apply converges.
    pods.delete("db", &DeleteParams::default().grace_period(0))
        .await
        .expect("removing the other pod");
    eventually("the other pod to be gone", ka::WAIT, || async {
        pods.get_opt("db")
            .await
            .expect("reading")
            .is_none()
            .then_some(())
    })
    .await;
    a.apply(&ctx(), &p).await.expect("the apply converges");
    let db = wait_phase(&ns, "db", "Running").await;
    assert_eq!(
        db.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("pando.dev/workload"))
            .map(String::as_str),
        Some("db"),
        "now it is the workload's pod"
    );

    // A namespace of the app's name that is not Pando's is a conflict too,
    // and nothing is written into it.
    Api::<Namespace>::all(c.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(format!("pando-{taken}")),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            },
        )
        .await
        .expect("a namespace that is not Pando's");
    let r = a.apply(&ctx(), &plan(&taken, &["web"])).await;
    assert!(
        matches!(&r, Err(CallError::Adapter(AdapterError::Conflict(m))) if m.contains("not Pando's")),
        "{r:?}"
    );
    let inside = Api::<Pod>::namespaced(c.clone(), &format!("pando-{taken}"))
        .list(&ListParams::default())
        .await
        .expect("pods");
    assert!(inside.items.is_empty(), "nothing written into it");
}

// ---------------------------------------------------------------------------------------------
// Throttling
// ---------------------------------------------------------------------------------------------

/// Observes `app` while a request of the throttled identity holds its
/// level's seat (for `hold`, or throughout), with a deadline of `limit`;
/// the outcome, how long it took, and how many requests got 429 meanwhile.
async fn observe_throttled(
    a: &Adapter,
    app: &str,
    ballast: &str,
    hold: Option<Duration>,
    limit: Duration,
) -> (
    Result<pando_host::types::ObservedBundle, CallError>,
    Duration,
    u64,
) {
    let before = faults::throttled_rejections().await;
    let holder = faults::hold_seat(ballast).await;
    let observe = {
        let (a, app) = (a.clone(), app.to_owned());
        tokio::spawn(async move {
            let started = Instant::now();
            let r = a
                .observe(&CallContext::default().with_timeout(limit), &bundle(&app))
                .await;
            (r, started.elapsed())
        })
    };
    if let Some(hold) = hold {
        eventually("the observe to be throttled", ka::WAIT, || async {
            (faults::throttled_rejections().await > before).then_some(())
        })
        .await;
        tokio::time::sleep(hold).await;
        drop(holder);
        let (r, took) = observe.await.expect("join");
        (r, took, faults::throttled_rejections().await - before)
    } else {
        let (r, took) = observe.await.expect("join");
        drop(holder);
        (r, took, faults::throttled_rejections().await - before)
    }
}

#[tokio::test]
async fn throttling_429_is_survived() {
    let _fault = faults::exclusive().await;
    let c = admin().await;
    let ballast = cluster::create_test_namespace(&c, "fault-ballast")
        .await
        .expect("a namespace");
    // The seat holder lists its ConfigMaps as pando-throttled, which reads inside a namespace
    // only where the namespace role is bound to it (deploy/kubernetes/rbac.yaml).
    let binding: k8s_openapi::api::rbac::v1::RoleBinding =
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "pando-throttled" },
            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                         "name": cluster::NAMESPACE_ROLE },
            "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                           "name": "pando-throttled" }],
        }))
        .expect("a binding");
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(c.clone(), &ballast.name)
        .create(&PostParams::default(), &binding)
        .await
        .expect("pando-throttled's binding in the ballast namespace");
    let app = id("fault-429");
    let mut left = Leftovers::default();
    left.namespace(&ballast.name);
    left.namespace(format!("pando-{app}"));
    faults::fill_with_configmaps(&ballast.name).await;
    let hold = Duration::from_secs(3);
    let limit = Duration::from_secs(10);

    // The client as kube-rs builds it by default, retrying 429 itself.
    let (a, _h) = fault_adapter(FaultIdentity::Throttled).await;
    // One request at a time passes: an apply, its requests one after the
    // other, is not throttled.
    a.apply(&ctx(), &plan(&app, &["web"]))
        .await
        .expect("an apply, unthrottled");
    // Throttled for a while: the call waits, then succeeds.
    let (r, took, rejected) = observe_throttled(&a, &app, &ballast.name, Some(hold), limit).await;
    eprintln!("kube-rs retrying, seat held {hold:?}: {r:?} after {took:?}; {rejected} got 429");
    assert!(
        r.expect("the observe succeeds once the seat is free")
            .exists
    );
    assert!(took >= hold && rejected >= 1, "it was throttled and waited");
    // Throttled throughout: kube-rs would go on retrying for minutes; the
    // host gives up before the deadline, and the adapter returns a typed
    // `timeout` instead of being stopped at the deadline.
    let (r, took, rejected) = observe_throttled(&a, &app, &ballast.name, None, limit).await;
    eprintln!("kube-rs retrying, throttled throughout: {r:?} after {took:?}; {rejected} got 429");
    assert!(
        matches!(&r, Err(CallError::Adapter(AdapterError::Timeout(_)))),
        "a call throttled past its deadline is the adapter's `timeout`: {r:?}"
    );
    assert!(took < limit, "returned before the deadline: {took:?}");

    // A client that does not retry by itself: the host retries the 429,
    // after the server's Retry-After.
    let client = faults::client(FaultIdentity::Throttled, false)
        .await
        .expect("a client");
    let config = POOL_CONFIG.replacen('{', r#"{"adapter_user": "pando-throttled", "#, 1);
    let grants = ka::grants_for_user("pando-throttled");
    let (a, _h2) = ka::load_with_client_grants(&config, client, grants).await;
    let (r, took, rejected) = observe_throttled(&a, &app, &ballast.name, Some(hold), limit).await;
    eprintln!("the host retrying, seat held {hold:?}: {r:?} after {took:?}; {rejected} got 429");
    assert!(
        r.expect("the observe succeeds once the seat is free")
            .exists
    );
    assert!(took >= hold && rejected >= 1, "it was throttled and waited");
    let (r, took, rejected) = observe_throttled(&a, &app, &ballast.name, None, limit).await;
    eprintln!("the host retrying, throttled throughout: {r:?} after {took:?}; {rejected} got 429");
    assert!(
        matches!(&r, Err(CallError::Adapter(AdapterError::Unavailable(m))) if m.contains("429")),
        "a call throttled until its deadline is `unavailable`, naming the 429: {r:?}"
    );
    assert!(took < limit, "returned before the deadline: {took:?}");
    assert!(rejected >= 2, "retried: {rejected} requests got 429");
}

// ---------------------------------------------------------------------------------------------
// Streams cut mid-way
// ---------------------------------------------------------------------------------------------

/// The container KWOK serves the 64 MiB log for (`scripts/cluster`):
/// 65536 lines of 1024 bytes, line N starting `line NNNNNN `.
const BIG_LOG_CONTAINER: &str = "big-log";
const BIG_LOG_BYTES: usize = 65536 * 1024;

#[tokio::test]
async fn a_log_stream_cut_mid_way_is_an_error_not_a_short_log() {
    let _fault = faults::exclusive().await;
    // KWOK serves the big log for containers named `big-log`, and the
    // Kubernetes adapter's pods' container is `workload`: the kube probe
    // opens the log the same way (the SDK's `Api::logs`, the host's
    // `kubernetes.logs` stream handed on untouched), for a pod of its own.
    let client = faults::client(FaultIdentity::Pando, true)
        .await
        .expect("a client of the fault API server");
    let host = Host::builder()
        .cache_dir(pando_tests::probe::shared_cache())
        .build()
        .expect("host");
    let probe = host
        .load_file(
            &pando_tests::components::kube_probe(),
            pando_host::LoadOptions {
                grants: pando_host::Grants::from_text("probe", pando_tests::probe::GRANTS)
                    .expect("grants"),
                config: "{}".into(),
                kubernetes: Some(client),
                ..pando_host::LoadOptions::default()
            },
        )
        .await
        .expect("the probe loads");
    let ns = pando_tests::probe::app_namespace("fault-log").await;
    let mut left = Leftovers::default();
    left.namespace(&ns.name);
    pando_tests::probe::running_pod(&ns.name, "chatty", BIG_LOG_CONTAINER).await;
    let options = LogOptions {
        follow: false,
        tail_lines: None,
        since_seconds: None,
        timestamps: false,
        limit_bytes: None,
    };
    let mut log = probe
        .logs(&ctx(), &wref(&ns.name, "chatty"), &options)
        .await
        .expect("logs");

    // Read the first 4 MiB, cut the connection, read on.
    let mut received = Vec::new();
    while received.len() < 4 << 20 {
        let chunk = log
            .next_chunk()
            .await
            .expect("more of the log")
            .expect("the stream is whole so far");
        received.extend_from_slice(&chunk);
    }
    faults::stop(Stop::Kill).await;
    let end = loop {
        match log.next_chunk().await {
            Some(Ok(chunk)) => received.extend_from_slice(&chunk),
            Some(Err(e)) => break Some(e),
            None => break None,
        }
    };
    eprintln!(
        "the log stream ended after {} of {BIG_LOG_BYTES} bytes: {end:?}",
        received.len()
    );
    assert!(
        received.len() < BIG_LOG_BYTES,
        "the cut landed mid-stream ({} bytes arrived)",
        received.len()
    );
    assert!(
        end.is_some(),
        "a log cut short ends with an error, never as if it were whole"
    );
    // What arrived is the log's beginning, line for line.
    for (n, line) in received.chunks(1024).enumerate() {
        if line.len() == 1024 {
            assert!(line.starts_with(format!("line {n:06} ").as_bytes()));
        }
    }
}

/// The directory that is the claim's contents on the test cluster
/// (KWOK's exec runs the helper's scripts here, `PANDO_HELPER_ROOT`).
fn volume_dir(ns: &str, claim: &str) -> std::path::PathBuf {
    cluster::state_dir()
        .join("helper-root/pando-volumes")
        .join(ns)
        .join(claim)
}

#[tokio::test]
async fn a_snapshot_cut_mid_way_is_an_error_not_a_short_archive() {
    let _fault = faults::exclusive().await;
    let (a, _h) = fault_adapter(FaultIdentity::Pando).await;
    let app = id("fault-snap");
    let ns = format!("pando-{app}");
    let mut left = Leftovers::default();
    left.namespace(&ns);
    left.dir(
        cluster::state_dir()
            .join("helper-root/pando-volumes")
            .join(&ns),
    );
    left.volume(ka::bound_pv(&ns, "data").await);
    let p = with_volume(plan(&app, &["web"]), "data");
    a.apply(&ctx(), &p).await.expect("apply");
    ka::wait_volume_ready(&a, &app, "data").await;
    wait_phase(&ns, "web", "Running").await;
    let dir = volume_dir(&ns, "data");
    std::fs::create_dir_all(&dir).expect("mkdir");
    // 64 MiB that tar passes as they are.
    let size = 64usize << 20;
    let bytes: Vec<u8> = (0..size as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(dir.join("big.bin"), &bytes).expect("writing the volume");
    let h = VolumeHandle {
        bundle: app.clone(),
        name: "data".into(),
        location: String::new(),
    };

    // The snapshot flows into a pipe this test reads: after 4 MiB, the API
    // server is killed.
    let (writer, mut reader) = tokio::io::duplex(64 << 10);
    let snapshot = {
        let (a, h) = (a.clone(), h.clone());
        tokio::spawn(async move { a.snapshot_volume(&ctx(), &h, writer).await })
    };
    let mut received = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    while received.len() < 4 << 20 {
        let n = reader.read(&mut buf).await.expect("reading the snapshot");
        assert!(n > 0, "the snapshot ended after {} bytes", received.len());
        received.extend_from_slice(&buf[..n]);
    }
    faults::stop(Stop::Kill).await;
    let cut = Instant::now();
    reader
        .read_to_end(&mut received)
        .await
        .expect("reading the rest");
    let r = snapshot.await.expect("join");
    let took = cut.elapsed();
    eprintln!(
        "the snapshot ended {took:?} after the cut, after {} bytes of a {size} byte file: {r:?}",
        received.len(),
    );
    assert!(
        received.len() < size,
        "the cut landed mid-stream ({} bytes)",
        received.len()
    );
    assert!(
        matches!(&r, Err(CallError::Adapter(AdapterError::Unavailable(m))) if m.contains("broke off")),
        "a snapshot cut short is `unavailable`, never a short archive returned as whole: {r:?}"
    );
    assert!(
        took < Duration::from_secs(30),
        "it fails when the connection breaks, not at the call's deadline: {took:?}"
    );
}
