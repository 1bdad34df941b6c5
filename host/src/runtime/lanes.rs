//! Instances of a 0.2.0 adapter that each serve several calls at once.
//!
//! A 0.2.0 adapter's `async func`s wait without holding their instance: a
//! call that waits on the API server leaves the store's event loop free to
//! run another call's task. With `limits.calls_per_instance` above one, such
//! calls do not lease an instance each from the pool; they take a seat in a
//! *lane*: a task that owns one configured instance and runs its event loop
//! (`Store::run_concurrent`), taking calls over a channel and running each
//! as a concurrent export call beside the others. A lane seats at most
//! `calls_per_instance` calls; there are at most `max_instances` lanes, and
//! beyond `max_idle` an emptied lane is closed. Plain (sync) exports and
//! calls that return streams keep the pool.
//!
//! A store runs on one thread at a time, so one lane is at most one core's
//! worth of guest code however many calls it seats. Calls therefore spread
//! over lanes up to the machine's cores before they share one: a caller
//! who finds every open lane busy makes another while there are fewer than
//! `min(cores, max_instances)`, and only past that sits beside others.
//!
//! Each call's deadline and cancellation reach its own code through the
//! task group its export call made (`capability/tasks.rs`). What the calls
//! share is the instance: a trap, a memory overrun or the epoch hook
//! stopping one call's code ends the store, and every call seated in it
//! fails with that error. A lane whose call was given up on (its deadline
//! passed while it waited, or it was cancelled and did not return within
//! the grace) is closed as a pooled instance would be poisoned: the calls
//! in it finish, nothing new is seated, and the instance is dropped.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio::sync::{Notify, Semaphore, SemaphorePermit, TryAcquireError, mpsc, watch};
use wasmtime::component::Accessor;

use crate::bindings::v0_2::exports::pando::runtime::adapter::Guest as V02Guest;
use crate::capability::tasks::TaskCalls;
use crate::error::CallError;
use crate::runtime::instance::{Bindings, Instance};
use crate::runtime::pool::Waits;
use crate::runtime::state::{HostState, Stopped};

/// A call to run in a lane: given the lane's event loop and the adapter's
/// exports, a future that makes the export call and hands its outcome to
/// its caller.
pub(crate) type Job = Box<
    dyn for<'a> FnOnce(
            &'a Accessor<HostState>,
            &'a V02Guest,
            &'a TaskCalls,
        ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>
        + Send,
>;

/// Boxes `f` as a [`Job`], giving its closure the higher-ranked signature
/// (a closure's own inference cannot).
pub(crate) fn job<F>(f: F) -> Job
where
    F: for<'a> FnOnce(
            &'a Accessor<HostState>,
            &'a V02Guest,
            &'a TaskCalls,
        ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>
        + Send
        + 'static,
{
    Box::new(f)
}

/// How a lane ended, when it failed: the error every call seated in it
/// gets.
type Failure = watch::Receiver<Option<CallError>>;

/// Names what ended a lane's store: the adapter's name, why the host stopped
/// a call's code (if it did), the error. The call pipeline's classification
/// (`adapter/classify.rs`), which the runtime does not import.
pub(crate) type Classify =
    fn(&mut wasmtime::Store<HostState>, &str, Option<Stopped>, wasmtime::Error) -> CallError;

/// One instance serving several calls at once.
pub(crate) struct Lane {
    jobs: mpsc::UnboundedSender<Job>,
    seated: AtomicU32,
    /// Calls seated over the lane's life, against the per-instance quota.
    served: AtomicU64,
    /// Set once nothing new may be seated: the lane failed, a call in it
    /// was given up on, it served its quota, or it emptied beyond
    /// `max_idle`. Shared with the lane's task, which sets it as it ends.
    closed: Arc<AtomicBool>,
    failure: Failure,
}

impl Lane {
    /// Starts the task that runs `instance`'s event loop, whose calls come
    /// over the lane's channel; none for a 0.1.0 instance. `name` is the
    /// adapter's, for errors.
    fn start(instance: Instance, name: Arc<str>, classify: Classify) -> Option<Arc<Lane>> {
        if !matches!(instance.bindings, Bindings::V0_2(_)) {
            return None;
        }
        let (jobs, rx) = mpsc::unbounded_channel();
        let (failed, failure) = watch::channel(None);
        let closed = Arc::new(AtomicBool::new(false));
        let lane = Arc::new(Lane {
            jobs,
            seated: AtomicU32::new(0),
            served: AtomicU64::new(0),
            closed: Arc::clone(&closed),
            failure,
        });
        let ended = Ended {
            closed,
            failed,
            name,
            classify,
        };
        tokio::spawn(serve(instance, rx, ended));
        Some(lane)
    }

    fn is_open(&self) -> bool {
        !self.closed.load(Ordering::Acquire)
    }

    /// Stops seating calls here; the seated ones finish.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Hands `job` to the lane's loop. `false` when the loop has ended (the
    /// lane failed): the job is dropped, and its caller reads why.
    pub(crate) fn run(&self, job: Job) -> bool {
        self.jobs.send(job).is_ok()
    }

    /// Why the lane failed, once it has (waiting for its loop to say), or
    /// `None` if it ended without a failure of its own.
    pub(crate) async fn failure(&self) -> Option<CallError> {
        let mut failure = self.failure.clone();
        match failure.wait_for(Option::is_some).await {
            Ok(f) => f.clone(),
            Err(_) => None,
        }
    }
}

/// What the lane's task tells the lane as it ends.
struct Ended {
    closed: Arc<AtomicBool>,
    failed: watch::Sender<Option<CallError>>,
    name: Arc<str>,
    classify: Classify,
}

/// The lane's task: runs the instance's event loop, each job a future in it,
/// until every caller's handle on the lane is gone and its jobs are done,
/// or the store fails.
async fn serve(mut instance: Instance, mut jobs: mpsc::UnboundedReceiver<Job>, ended: Ended) {
    let tasks = Arc::new(TaskCalls::default());
    let Instance {
        store, bindings, ..
    } = &mut instance;
    let Bindings::V0_2(bindings) = bindings else {
        ended.closed.store(true, Ordering::Release);
        return;
    };
    store.data_mut().env.tasks = Some(Arc::clone(&tasks));
    store.task_group_hook(tasks.hook());
    let guest = bindings.pando_runtime_adapter();
    let ran = store
        .run_concurrent(async |a| {
            let mut running = FuturesUnordered::new();
            loop {
                tokio::select! {
                    Some(()) = running.next(), if !running.is_empty() => {}
                    job = jobs.recv() => match job {
                        Some(job) => running.push(job(a, guest, &tasks)),
                        None => break,
                    },
                }
            }
            while running.next().await.is_some() {}
        })
        .await;
    // Closed before the failure is told: no caller told it is seated here
    // after.
    ended.closed.store(true, Ordering::Release);
    if let Err(e) = ran {
        let error = (ended.classify)(store, &ended.name, tasks.last_stop(), e);
        ended.failed.send_replace(Some(error));
    }
}

/// A 0.2.0 adapter's instances that serve several calls at once
/// (`limits.calls_per_instance`), as [`crate::Adapter::shared_instances`]
/// reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedUsage {
    /// Instances taking calls now.
    pub instances: usize,
    /// Calls running in them now.
    pub calls: u32,
    /// Instances made to serve calls this way since the adapter was loaded.
    pub made: u64,
    /// Of those, the ones that have ended (closed and emptied: failed,
    /// given up on, past their quota, or beyond `max_idle`); their
    /// instances are dropped.
    pub ended: u64,
    /// Calls that found every seat taken and waited for one, since the load.
    pub waits: u64,
    /// The time those calls waited, in all (a wait given up at the call's
    /// deadline counted too).
    pub waited: Duration,
}

/// An adapter's lanes.
pub(crate) struct Lanes {
    per_lane: u32,
    max_lanes: usize,
    /// Lanes made for busy ones before calls share one: one per core.
    spread: usize,
    /// Lanes kept open once emptied.
    keep: usize,
    quota: u64,
    name: Arc<str>,
    classify: Classify,
    /// One per seat of every lane there may be: a caller past it will find
    /// a seat, in a lane or in one it may make.
    seats: Semaphore,
    set: Mutex<Set>,
    /// Told when a seat frees or a lane is made, for a caller that found
    /// every lane full while another was being made.
    changed: Notify,
    /// Lanes made and ended, calls that waited and for how long, since the
    /// load: [`Lanes::usage`], which the Prometheus metrics read.
    made: AtomicU64,
    ended: AtomicU64,
    waits: Waits,
}

/// What [`Lanes::pick`] found.
enum Pick<'l> {
    Lane(Arc<Lane>),
    Make(Making<'l>),
    Wait,
}

/// A lane being made, counted in [`Set::making`] until it joins the set,
/// or until the caller making it fails or gives up (its future dropped
/// while the instance was being made): either way the count goes back.
struct Making<'l> {
    lanes: &'l Lanes,
}

impl Making<'_> {
    /// The lane made, in the set, with its maker seated.
    fn made(self, lane: Arc<Lane>) -> Arc<Lane> {
        lane.seated.fetch_add(1, Ordering::Relaxed);
        self.lanes.lock().lanes.push(Arc::clone(&lane));
        lane
    }
}

impl Drop for Making<'_> {
    fn drop(&mut self) {
        self.lanes.lock().making -= 1;
        self.lanes.changed.notify_waiters();
    }
}

#[derive(Default)]
struct Set {
    lanes: Vec<Arc<Lane>>,
    making: usize,
}

/// A caller's wait for a seat, counted in [`Lanes`]' waits once it ends
/// if it began.
struct Waiting<'l> {
    lanes: &'l Lanes,
    since: Option<Instant>,
}

impl Waiting<'_> {
    fn start(&mut self) {
        self.since.get_or_insert_with(Instant::now);
    }

    /// The wait over (a seat found, or the caller gone): counted once.
    fn end(&mut self) {
        if let Some(since) = self.since.take() {
            self.lanes.waits.record(since.elapsed());
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.end();
    }
}

/// A call's seat in a lane, given back when dropped.
pub(crate) struct Seat<'l> {
    lanes: &'l Lanes,
    pub(crate) lane: Arc<Lane>,
    _permit: SemaphorePermit<'l>,
}

impl Lanes {
    /// Lanes of `per_lane` seats: at most `max_lanes`, `keep` of them kept
    /// open when empty, each closed after seating `quota` calls.
    pub(crate) fn new(
        per_lane: u32,
        max_lanes: u32,
        keep: u32,
        quota: u64,
        name: Arc<str>,
        classify: Classify,
    ) -> Self {
        let per_lane = per_lane.max(1);
        let max_lanes = max_lanes.max(1) as usize;
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Lanes {
            per_lane,
            max_lanes,
            spread: cores.min(max_lanes),
            keep: keep as usize,
            quota: quota.max(1),
            name,
            classify,
            seats: Semaphore::new(max_lanes * per_lane as usize),
            set: Mutex::new(Set::default()),
            changed: Notify::new(),
            made: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            waits: Waits::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Set> {
        self.set.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lanes now and since the load.
    pub(crate) fn usage(&self) -> SharedUsage {
        let set = self.lock();
        let open = set.lanes.iter().filter(|l| l.is_open());
        let (instances, calls) = open.fold((0, 0), |(n, s), l| {
            (n + 1, s + l.seated.load(Ordering::Relaxed))
        });
        SharedUsage {
            instances,
            calls,
            made: self.made.load(Ordering::Relaxed),
            ended: self.ended.load(Ordering::Relaxed),
            waits: self.waits.count(),
            waited: self.waits.total(),
        }
    }

    /// A seat for one call: in the open lane with the fewest calls, or in a
    /// lane made by `make` (an instantiated, configured instance) when every
    /// lane is full and there is room for another. Waits while every seat
    /// is taken; the caller bounds the wait by its deadline.
    pub(crate) async fn seat(
        &self,
        make: impl AsyncFnOnce() -> Result<Instance, CallError>,
    ) -> Result<Seat<'_>, CallError> {
        // Counted when it ends, however it ends: a caller whose deadline
        // passed while it waited has its future dropped here.
        let mut waiting = Waiting {
            lanes: self,
            since: None,
        };
        let permit = match self.seats.try_acquire() {
            Ok(permit) => permit,
            Err(TryAcquireError::Closed) => return Err(self.closed()),
            Err(TryAcquireError::NoPermits) => {
                waiting.start();
                self.seats.acquire().await.map_err(|_| self.closed())?
            }
        };
        let mut make = Some(make);
        loop {
            let changed = self.changed.notified();
            let mut changed = pin!(changed);
            // Registered before the set is read: a change after the read
            // wakes this caller.
            changed.as_mut().enable();
            match self.pick(make.is_some()) {
                Pick::Lane(lane) => {
                    waiting.end();
                    return Ok(self.sit(lane, permit));
                }
                Pick::Make(making) => {
                    // The instance's making is not the wait's.
                    waiting.end();
                    if let Some(make) = make.take() {
                        let lane = self.make_lane(make).await?;
                        return Ok(self.sit(making.made(lane), permit));
                    }
                }
                Pick::Wait => {
                    waiting.start();
                    changed.await;
                }
            }
        }
    }

    /// What a caller holding a seat's permit does: sit in an open lane
    /// (counted seated there at once, so no two callers take its last
    /// seat), make one, or wait for either. A lane is made, rather than a
    /// busy one shared, while there are fewer than one per core.
    fn pick(&self, may_make: bool) -> Pick<'_> {
        let mut set = self.lock();
        let room = may_make && set.lanes.len() + set.making < self.max_lanes;
        let emptiest = self.emptiest(&set);
        let spreading = room
            && emptiest
                .as_ref()
                .is_none_or(|l| l.seated.load(Ordering::Relaxed) > 0)
            && set.lanes.iter().filter(|l| l.is_open()).count() + set.making < self.spread;
        if let Some(lane) = emptiest
            && !spreading
        {
            lane.seated.fetch_add(1, Ordering::Relaxed);
            return Pick::Lane(lane);
        }
        if room {
            set.making += 1;
            return Pick::Make(Making { lanes: self });
        }
        Pick::Wait
    }

    fn closed(&self) -> CallError {
        CallError::Host {
            adapter: self.name.to_string(),
            method: "call",
            message: "the adapter's lanes are closed".into(),
        }
    }

    /// The open lane with a free seat and the fewest calls seated.
    fn emptiest(&self, set: &Set) -> Option<Arc<Lane>> {
        set.lanes
            .iter()
            .filter(|l| l.is_open() && l.seated.load(Ordering::Relaxed) < self.per_lane)
            .min_by_key(|l| l.seated.load(Ordering::Relaxed))
            .cloned()
    }

    /// The seat of a caller counted seated in `lane`.
    fn sit<'l>(&'l self, lane: Arc<Lane>, permit: SemaphorePermit<'l>) -> Seat<'l> {
        if lane.served.fetch_add(1, Ordering::Relaxed) + 1 >= self.quota {
            // Its last call: it serves the calls seated and no more,
            // bounding any leak inside the guest as the pool's quota does.
            lane.close();
        }
        Seat {
            lanes: self,
            lane,
            _permit: permit,
        }
    }

    async fn make_lane(
        &self,
        make: impl AsyncFnOnce() -> Result<Instance, CallError>,
    ) -> Result<Arc<Lane>, CallError> {
        let instance = make().await?;
        self.made.fetch_add(1, Ordering::Relaxed);
        Lane::start(instance, Arc::clone(&self.name), self.classify).ok_or_else(|| {
            CallError::Host {
                adapter: self.name.to_string(),
                method: "call",
                message:
                    "a lane was given an instance of contract 0.1.0, which runs one call at a \
                      time"
                        .into(),
            }
        })
    }

    /// A seat given back: the lane leaves the set once closed and empty,
    /// or once empty beyond the lanes kept.
    fn stand(&self, lane: &Arc<Lane>) {
        let mut set = self.lock();
        let left = lane.seated.fetch_sub(1, Ordering::Relaxed) - 1;
        if left == 0 {
            let open = set.lanes.iter().filter(|l| l.is_open()).count();
            if !lane.is_open() || open > self.keep {
                lane.close();
                let before = set.lanes.len();
                set.lanes.retain(|l| !Arc::ptr_eq(l, lane));
                if set.lanes.len() < before {
                    self.ended.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        drop(set);
        self.changed.notify_waiters();
    }
}

impl Drop for Seat<'_> {
    fn drop(&mut self) {
        self.lanes.stand(&self.lane);
    }
}
