//! The bundle watch across an API server restart (no pod change missed) and
//! after compaction (`expired`, R-148).

use super::*;

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
