//! The bundle watch (O-52, R-148): `watching` first, then the changes
//! that follow; it never acts; cancelled, it ends cleanly, and a new watch
//! reports again.
//!
//! The watch runs on a second load of the adapter, so its Kubernetes
//! requests are counted apart from the app's, which the suite makes on the
//! first.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use pando_host::types::{BundleEvent, WatchEnd};
use pando_host::{Adapter, CallContext, CallError, CancellationToken};

use super::cases::{Case, WATCH_ACTS, WATCH_RESTART, WATCHING};
use super::fixture::{Check, Fixture, Notes, Stop, bref, ensure, fail, failed, unmeasured_note};
use super::plans::{self, SERVER};

/// Events buffered from the watch: it may report every app on the runtime.
const BUFFER: usize = 4096;
/// How long a cancelled watch has to return, beyond the host's grace.
const END_WITHIN: Duration = Duration::from_secs(10);

pub(crate) async fn run(fx: &mut Fixture<'_>) {
    if !fx.wants_any(&[WATCHING, WATCH_ACTS, WATCH_RESTART]) {
        return;
    }
    let app = fx.bundle_id("watch");
    let mut results: Vec<Verdict> = Vec::new();
    let flow = fx.setup(flow(fx, &app, &mut results)).await;
    // Whatever did not get its own verdict gets the flow's, and its time:
    // the case waited for all of it.
    for case in [&WATCHING, &WATCH_ACTS, &WATCH_RESTART] {
        if !results.iter().any(|(c, ..)| c.id == case.id) {
            let why = match flow.result() {
                Err(Stop::Fail(why)) => fail(format!("the watch flow failed first: {why}")),
                Err(other @ (Stop::Skip(_) | Stop::Unproven(_))) => other.clone(),
                Ok(()) => fail("not reached"),
            };
            results.push((case, Err(why), flow.took(), Notes::default()));
        }
    }
    for (case, check, took, notes) in results {
        fx.record(case, check, took, notes);
    }
    fx.cleanup(&app).await;
}

/// One case's verdict, its time and notes.
type Verdict = (&'static Case, Check, Duration, Notes);

/// A watch running in a task of its own, cancelled when dropped.
struct Watch {
    events: mpsc::Receiver<BundleEvent>,
    task: Option<JoinHandle<Result<WatchEnd, CallError>>>,
    cancel: CancellationToken,
}

impl Watch {
    fn start(adapter: &Adapter) -> Watch {
        let (tx, events) = mpsc::channel(BUFFER);
        let cancel = CancellationToken::new();
        let ctx = CallContext::new(cancel.clone()).without_deadline();
        let adapter = adapter.clone();
        let task = tokio::spawn(async move { adapter.watch_bundles(&ctx, tx).await });
        Watch {
            events,
            task: Some(task),
            cancel,
        }
    }

    /// The next event within `limit`.
    async fn next(&mut self, limit: Duration) -> Check<BundleEvent> {
        match tokio::time::timeout(limit, self.events.recv()).await {
            Ok(Some(e)) => Ok(e),
            Ok(None) => {
                let end = match self.task.take() {
                    Some(t) => format!("{:?}", t.await),
                    None => "already ended".into(),
                };
                Err(fail(format!("the watch ended unasked: {end}")))
            }
            Err(_) => Err(fail(format!("no event within {} s", limit.as_secs()))),
        }
    }

    /// Waits for a change of `app`'s `workload`, skipping others'.
    async fn change_of(&mut self, app: &str, workload: &str, limit: Duration) -> Check {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left).await {
                Ok(BundleEvent::Changed(c)) if c.bundle == app && c.workload.name == workload => {
                    return Ok(());
                }
                Ok(_) => {}
                Err(Stop::Fail(why)) => {
                    return Err(fail(format!(
                        "no change of `{app}/{workload}` reported: {why}"
                    )));
                }
                Err(other) => return Err(other),
            }
        }
    }

    /// Cancels it and waits for its end.
    async fn end(mut self) -> Check<WatchEnd> {
        self.cancel.cancel();
        let Some(task) = self.task.take() else {
            return Err(fail("the watch had already ended"));
        };
        let limit = pando_host::CANCEL_GRACE + END_WITHIN;
        match tokio::time::timeout(limit, task).await {
            Ok(Ok(Ok(end))) => Ok(end),
            Ok(Ok(Err(e))) => Err(failed(
                "the cancelled watch (it should return `cancelled` within the host's grace)",
                &e,
            )),
            Ok(Err(e)) => Err(fail(format!("the watch's task failed: {e}"))),
            Err(_) => Err(fail(format!(
                "the cancelled watch did not end within {} s",
                limit.as_secs()
            ))),
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

async fn flow(fx: &Fixture<'_>, app: &str, results: &mut Vec<Verdict>) -> Check {
    let settle = fx.options.settle_timeout;
    // A second load: its own instances, its own request record.
    let watcher = fx
        .target
        .host
        .load_file(&fx.target.component, fx.target.load.clone())
        .await
        .map_err(|e| {
            fail(format!(
                "loading the adapter again for the watch failed: {e}"
            ))
        })?;

    let started = Instant::now();
    let mut watch = Watch::start(&watcher);
    let watching = watching(fx, app, &mut watch, started).await;
    let ok = watching.is_ok();
    results.push((&WATCHING, watching, started.elapsed(), Notes::default()));
    if !ok {
        return Err(fail("the watch reported no change"));
    }

    let started = Instant::now();
    let mut notes = Notes::default();
    let acts = acts(&watcher, &mut notes);
    results.push((&WATCH_ACTS, acts, started.elapsed(), notes));

    let started = Instant::now();
    let restarted = restarted(fx, app, &watcher, watch, settle).await;
    results.push((
        &WATCH_RESTART,
        restarted,
        started.elapsed(),
        Notes::default(),
    ));
    Ok(())
}

/// The watch's first event is `watching`, and an apply is seen as a change.
async fn watching(fx: &Fixture<'_>, app: &str, watch: &mut Watch, started: Instant) -> Check {
    let settle = fx.options.settle_timeout;
    let first = watch.next(settle).await;
    let first = first?;
    fx.settled(started.elapsed());
    ensure!(
        first == BundleEvent::Watching,
        "the watch's first event was {first:?}, not watching"
    );
    fx.adapter
        .apply(&fx.ctx(), &plans::plan(app, vec![fx.server()]))
        .await
        .map_err(|e| failed("apply", &e))?;
    let applied = Instant::now();
    watch.change_of(app, SERVER, settle).await?;
    fx.settled(applied.elapsed());
    Ok(())
}

/// A watch only reads: what it sent holds no write.
fn acts(watcher: &Adapter, notes: &mut Notes) -> Check {
    match watcher.kubernetes_requests() {
        Some(sent) => {
            notes.push(format!("the watch sent: {sent}"));
            if sent.writes() == 0 {
                Ok(())
            } else {
                Err(fail(format!("the watch wrote: {}", sent.only_writes())))
            }
        }
        None => {
            notes.push(unmeasured_note());
            Ok(())
        }
    }
}

/// A cancelled watch ends `cancelled`, and a new one watches again.
async fn restarted(
    fx: &Fixture<'_>,
    app: &str,
    watcher: &Adapter,
    watch: Watch,
    settle: Duration,
) -> Check {
    let end = watch.end().await?;
    ensure!(
        end == WatchEnd::Cancelled,
        "the cancelled watch returned {end:?}, not cancelled"
    );
    let mut again = Watch::start(watcher);
    let first = again.next(settle).await?;
    ensure!(
        first == BundleEvent::Watching,
        "the new watch's first event was {first:?}, not watching"
    );
    fx.adapter
        .stop(&fx.ctx(), &bref(app))
        .await
        .map_err(|e| failed("stop", &e))?;
    again.change_of(app, SERVER, settle).await?;
    let end = again.end().await?;
    ensure!(
        end == WatchEnd::Cancelled,
        "the second watch, cancelled, returned {end:?}"
    );
    Ok(())
}
