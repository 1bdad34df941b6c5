//! Per-adapter resource limits, and the store limiter that enforces memory
//! and table growth while remembering which limit was hit, so a trap can be
//! reported as "memory exhausted" rather than a bare crash.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Limits one adapter runs under. The defaults suit the Kubernetes adapter
/// with room to spare.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// The size any one linear memory of an instance may grow to, in bytes.
    /// (A component built from one program, as Rust and Python adapters
    /// are, has one memory that matters; the pool allows at most 8.)
    pub memory_bytes: u64,
    /// Table elements one instance may grow to.
    pub table_elements: u64,
    /// A call's deadline when the caller sets none, in milliseconds.
    #[serde(with = "humantime_ms")]
    #[schemars(with = "u64")]
    pub default_timeout: Duration,
    /// Instances alive at once for ordinary calls; more callers wait.
    pub max_instances: u32,
    /// Configured instances kept idle for reuse. 0 keeps none, not even
    /// the one a load makes: every call then makes its instance.
    pub max_idle: u32,
    /// Instances alive at once for long-running calls (watch, exec).
    pub max_long_running: u32,
    /// Calls one instance serves before it is replaced, bounding any leak
    /// inside the guest.
    pub max_calls_per_instance: u64,
    /// Calls one instance of a 0.2.0 adapter runs at once: its `async
    /// func`s wait without holding their instance, so up to this many share
    /// one, each a task of its own (docs/architecture.md, "Several calls on
    /// one instance"). 1, the default, gives each call an instance of its
    /// own from the pool, as for 0.1.0 adapters, which ignore this; plain
    /// exports and calls that return streams always do. Sharing saves
    /// instances (memory) where calls wait, and costs isolation: a trap or a
    /// memory overrun in one call ends the others on its instance.
    #[schemars(range(min = 1))]
    pub calls_per_instance: u32,
    /// Faults in a row (traps, stack overflows, memory overruns) after which
    /// the adapter is quarantined: its calls fail at once, saying why.
    pub quarantine_after: u32,
    /// The first quarantine's length; it doubles while faults go on (to
    /// five minutes at most) and resets after a call succeeds. In
    /// milliseconds.
    #[serde(with = "humantime_ms")]
    #[schemars(with = "u64")]
    pub quarantine_backoff: Duration,
    /// Log records a second the adapter's instances may send the host's
    /// logs together: its `pando:runtime/log` records and its stderr lines,
    /// each line one record (a record the subscriber would not keep takes
    /// nothing). Past the budget records are dropped, never waited for, and
    /// a warning (at most one a second) says how many before the next one
    /// that passes, so a flooding adapter can neither bury the host's own
    /// logs nor be slowed by them. 0 means no budget: every record passes.
    pub log_records_per_second: u32,
    /// The log records the adapter may send at once, above its rate, after
    /// a quiet spell (the token bucket's size). 0 is taken as 1.
    pub log_burst: u32,
    /// The most the host copies out of the guest for one crossing, in
    /// bytes: the arguments of one import call (a `send` body, `from-bytes`)
    /// or the result of one export. wasmtime's hostcall fuel: lifting
    /// strings and lists draws on it, counting what the host allocates for
    /// them (a list of strings pointing at the same bytes is counted once per
    /// element), and running out traps the call, naming this limit. At least
    /// 1 MiB.
    #[schemars(range(min = MIN_HOSTCALL_BYTES))]
    pub hostcall_bytes: u64,
    /// Component-model handles (resources, streams) live at once in one
    /// instance: wasmtime's store-wide handle cap. Past it the allocation
    /// traps, naming this limit. At least 64.
    #[schemars(range(min = MIN_HANDLES))]
    pub max_handles: u32,
    /// Bytes the host may hold for the adapter, all its instances together,
    /// in stream buffers it asked for: the bytes of each `from-bytes`; for
    /// each `pipe` its capacity, its writer's pending chunk (up to 64 KiB)
    /// and 192 KiB its reader may read ahead; the event buffer of each
    /// Kubernetes watch (1 MiB); 192 KiB read ahead of each log; an exec
    /// session's pipes (256 KiB each of stdout and stderr, 128 KiB of
    /// stdin, as it has them). Held until the stream is dropped; past the
    /// budget `from-bytes` and `pipe` answer streams that fail at once with
    /// an error naming this limit (their WIT signatures have no error case),
    /// a watch, log or exec session is denied naming it.
    pub stream_buffer_bytes: u64,
    /// Streams and sessions the adapter may have open at once, all its
    /// instances together: its pipes and `from-bytes` streams and the
    /// Kubernetes watches, logs and exec sessions it opened. Past it the
    /// open fails (a failing stream, or `denied` naming this limit).
    pub max_streams: u32,
    /// The largest Kubernetes response body handed to the adapter in one
    /// `send`, in bytes, whoever answers: the API server (a body past it
    /// is read no further) or the host's watch-fed cache (an answer past it
    /// is built no further). Past it the read fails (`transport`, saying to
    /// page the list with `limit` and `continue`). At least 64 KiB.
    #[schemars(range(min = MIN_RESPONSE_BYTES))]
    pub max_response_bytes: u64,
}

/// The smallest `hostcall_bytes` a load accepts: less would refuse ordinary
/// calls, not hostile ones.
pub const MIN_HOSTCALL_BYTES: u64 = 1 << 20;
/// The smallest `max_handles` a load accepts.
pub const MIN_HANDLES: u32 = 64;
/// The smallest `max_response_bytes` a load accepts: less would refuse
/// single objects, not lists.
pub const MIN_RESPONSE_BYTES: u64 = 64 << 10;

impl Limits {
    /// Why these limits cannot be used, if they cannot: a message naming
    /// the field and the smallest value accepted.
    pub fn check(&self) -> Result<(), String> {
        if self.hostcall_bytes < MIN_HOSTCALL_BYTES {
            return Err(format!(
                "`limits.hostcall_bytes` is {}, below the smallest accepted, {MIN_HOSTCALL_BYTES}",
                self.hostcall_bytes
            ));
        }
        if self.max_handles < MIN_HANDLES {
            return Err(format!(
                "`limits.max_handles` is {}, below the smallest accepted, {MIN_HANDLES}",
                self.max_handles
            ));
        }
        if self.calls_per_instance == 0 {
            return Err(
                "`limits.calls_per_instance` is 0; at least 1 (one call per instance) is needed"
                    .into(),
            );
        }
        if self.max_response_bytes < MIN_RESPONSE_BYTES {
            return Err(format!(
                "`limits.max_response_bytes` is {}, below the smallest accepted, \
                 {MIN_RESPONSE_BYTES}",
                self.max_response_bytes
            ));
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 256 << 20,
            table_elements: 100_000,
            default_timeout: Duration::from_secs(60),
            max_instances: 32,
            max_idle: 8,
            max_long_running: 64,
            max_calls_per_instance: 100_000,
            calls_per_instance: 1,
            quarantine_after: 5,
            quarantine_backoff: Duration::from_secs(1),
            log_records_per_second: 1000,
            log_burst: 10_000,
            // wasmtime's default, made explicit. Above the largest honest
            // value (the hostile tests return 40 MiB) and above the body cap
            // (3 MiB by default), so an oversized body up to this size is a
            // typed `too-large`, not a trap. What one crossing costs the host
            // is this; 96 instances (32 ordinary, 64 long-running) crossing
            // at once are 12 GiB, half of what their 256 MiB memories
            // already allow.
            hostcall_bytes: 128 << 20,
            // wasmtime's default is 100 000. An adapter holds a few handles a
            // call (a stream, a watch, a session's three streams); 10 000
            // leaves room and bounds the table per instance.
            max_handles: 10_000,
            // The test adapter's largest honest stream is 16 MiB and an exec
            // echo holds two 1 MiB pipes: 256 MiB leaves room for many at
            // once, and bounds what a hostile adapter pins in the host.
            stream_buffer_bytes: 256 << 20,
            max_streams: 1024,
            max_response_bytes: crate::capability::kubernetes::MAX_RESPONSE_BYTES as u64,
        }
    }
}

/// Durations in configuration files are milliseconds: a whole number,
/// nothing else (no `"5s"`, despite the name); the JSON Schema says so with
/// `#[schemars(with = "u64")]`.
mod humantime_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

/// Which limit stopped the guest, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LimitHit {
    Memory,
    Table,
}

/// Enforces [`Limits`] on one store.
pub(crate) struct Limiter {
    memory_bytes: usize,
    table_elements: usize,
    pub(crate) hit: Option<LimitHit>,
}

impl Limiter {
    pub(crate) fn new(limits: &Limits) -> Self {
        Limiter {
            memory_bytes: usize::try_from(limits.memory_bytes).unwrap_or(usize::MAX),
            table_elements: usize::try_from(limits.table_elements).unwrap_or(usize::MAX),
            hit: None,
        }
    }

    /// The memory limit, in bytes.
    pub(crate) fn memory_limit(&self) -> u64 {
        self.memory_bytes as u64
    }

    /// The table limit, in elements.
    pub(crate) fn table_limit(&self) -> u64 {
        self.table_elements as u64
    }
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            // A trap, not a failed grow: a guest allocator that sees a failed
            // grow aborts anyway, and a trap here tells us why.
            self.hit = Some(LimitHit::Memory);
            return Err(wasmtime::format_err!(
                "memory limit of {} bytes exceeded (asked for {desired})",
                self.memory_bytes
            ));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.table_elements {
            self.hit = Some(LimitHit::Table);
            return Err(wasmtime::format_err!(
                "table limit of {} elements exceeded (asked for {desired})",
                self.table_elements
            ));
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        // Components instantiate several core modules; the pooling allocator
        // bounds the real total.
        1000
    }

    fn tables(&self) -> usize {
        1000
    }

    fn memories(&self) -> usize {
        100
    }
}
