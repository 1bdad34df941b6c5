//! What a store carries: an inert WASI context, the resource table, the
//! limiter, the call in progress, and the adapter's identity and log budget
//! for logs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::capability::log::LogBudget;
use crate::held::{Held, HeldBudget};
use crate::limits::{Limiter, Limits};
use crate::stderr::StderrTail;

/// Why a running guest was stopped by the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    Deadline,
    Cancelled,
}

/// The call in progress on a store.
#[derive(Debug, Clone)]
pub(crate) struct ActiveCall {
    pub(crate) deadline: Option<Instant>,
    pub(crate) cancel: CancellationToken,
    pub(crate) stopped: Option<Stopped>,
    /// When the epoch hook first saw the cancellation.
    cancel_seen: Option<Instant>,
}

/// How long a cancelled guest has to return on its own (a watch that sees
/// its cancellation pollable and ends cleanly) before it is stopped.
pub const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

impl ActiveCall {
    pub(crate) fn new(deadline: Option<Instant>, cancel: CancellationToken) -> Self {
        ActiveCall {
            deadline,
            cancel,
            stopped: None,
            cancel_seen: None,
        }
    }

    pub(crate) fn idle() -> Self {
        Self::new(None, CancellationToken::new())
    }

    /// Back to idle after a call. The call's token stays until the next
    /// call replaces it (no guest code runs in between, so nothing asks
    /// it): making a fresh token here cost an allocation on every call.
    pub(crate) fn finish(&mut self) {
        self.deadline = None;
        self.stopped = None;
        self.cancel_seen = None;
    }

    /// Whether the call is over for the guest (cancelled or past its
    /// deadline): what `call.is-cancelled` answers.
    pub(crate) fn is_over(&self) -> bool {
        self.cancel.is_cancelled() || self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Whether the host must stop the guest now, and why: at the deadline,
    /// or [`CANCEL_GRACE`] after a cancellation.
    pub(crate) fn should_stop(&mut self) -> Option<Stopped> {
        let now = Instant::now();
        if self.deadline.is_some_and(|d| now >= d) {
            return Some(Stopped::Deadline);
        }
        if self.cancel.is_cancelled() {
            let seen = *self.cancel_seen.get_or_insert(now);
            if now.duration_since(seen) >= CANCEL_GRACE {
                return Some(Stopped::Cancelled);
            }
        }
        None
    }
}

/// The adapter's identity, for logs and audit.
#[derive(Debug)]
pub(crate) struct Identity {
    /// The adapter's name as the host knows it (its kind unless renamed).
    pub(crate) name: String,
}

/// The data of one adapter instance's store.
pub struct HostState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limiter: Limiter,
    pub(crate) call: ActiveCall,
    pub(crate) identity: Arc<Identity>,
    /// The adapter's log budget, shared by all its instances.
    pub(crate) log_budget: Arc<LogBudget>,
    pub(crate) stderr: StderrTail,
    /// The monotonic clock's zero, shared with the guest's
    /// `wasi:clocks/monotonic-clock` so deadlines translate exactly.
    pub(crate) clock_base: Instant,
    pub(crate) kubernetes: Option<crate::capability::kubernetes::KubeContext>,
    /// The adapter's budget for streams and their buffers, shared by all
    /// its instances.
    held_budget: Arc<HeldBudget>,
    /// Holdings made through this store and still alive.
    held_here: Arc<AtomicU32>,
}

impl HostState {
    pub(crate) fn new(
        identity: Arc<Identity>,
        limits: &Limits,
        log_budget: Arc<LogBudget>,
        held_budget: Arc<HeldBudget>,
        kubernetes: Option<crate::capability::kubernetes::KubeContext>,
    ) -> Self {
        let clock_base = Instant::now();
        let stderr = StderrTail::budgeted(identity.clone(), log_budget.clone());
        let wasi = WasiCtxBuilder::new()
            .stderr(stderr.clone())
            .monotonic_clock(BaseClock(clock_base))
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        HostState {
            wasi,
            table: ResourceTable::new(),
            limiter: Limiter::new(limits),
            call: ActiveCall::idle(),
            identity,
            log_budget,
            stderr,
            clock_base,
            kubernetes,
            held_budget,
            held_here: Arc::new(AtomicU32::new(0)),
        }
    }

    /// Takes from the adapter's stream budget for `what` (see
    /// [`crate::held`]).
    pub(crate) fn hold(&self, what: &str, bytes: u64) -> Result<Held, String> {
        self.held_budget.take(&self.held_here, what, bytes)
    }

    /// Whether streams or sessions opened through this store are still
    /// alive: in its table, or handed to core.
    pub(crate) fn holds_anything(&self) -> bool {
        self.held_here.load(Ordering::Acquire) > 0
    }

    /// Renames the adapter in this store's logs.
    pub(crate) fn set_identity(&mut self, identity: Arc<Identity>) {
        self.stderr.set_identity(identity.clone());
        self.identity = identity;
    }

    /// The resource table.
    pub(crate) fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// A monotonic clock counting from the store's creation.
struct BaseClock(Instant);

impl wasmtime_wasi::HostMonotonicClock for BaseClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        u64::try_from(self.0.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}
