//! The conformance suite: contract cases run against any adapter component
//! through the host's typed API, chosen by the capabilities the adapter
//! declares (R-254). `pando-host conformance` is this module on the
//! command line; `docs/conformance.md` lists every case and why it exists.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use pando_conformance::{self as conformance, Options, Target};
//! use pando_host::{Host, LoadOptions};
//! let target = Target {
//!     host: Host::builder().build()?,
//!     component: "adapter.wasm".into(),
//!     load: LoadOptions::default(),
//! };
//! let report = conformance::run(&target, &Options::default()).await?;
//! for case in &report.cases {
//!     println!("{}", case.line());
//! }
//! assert!(report.is_success());
//! # Ok(()) }
//! ```
//!
//! The suite is runtime-neutral: it calls only the adapter's exports, and
//! for "writes nothing" and "needs no API call" it reads the host's own
//! record of the adapter's Kubernetes requests
//! ([`pando_host::Adapter::kubernetes_requests`]). It makes its own apps, named
//! `conf-<random>-<group>`, and destroys them (volumes included) on every
//! path.

mod apply;
mod capabilities;
mod capacity;
mod cases;
mod config;
mod declared;
mod edge;
mod egress;
mod errors;
mod fixture;
mod info;
mod junit;
mod lifecycle;
mod plans;
mod probe;
mod report;
mod security;
mod sessions;
mod snapshot;
mod tar;
mod upstream;
mod volumes;
mod watch;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;

use pando_host::types::{VolumeHandle, WorkloadRef};
use pando_host::{Host, LoadError, LoadOptions};

pub use cases::{CASES, Case, cases_for};
pub use report::{CaseResult, Outcome, Report, Verdict};

/// The adapter under test: what the suite loads it from. The suite loads
/// it more than once: with configurations it must reject, and a second
/// time for the bundle watch, so the watch's requests are counted apart.
#[derive(Clone)]
pub struct Target {
    /// The host that loads it.
    pub host: Host,
    /// The component file.
    pub component: PathBuf,
    /// Its grants, configuration, limits and Kubernetes client.
    pub load: LoadOptions,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("component", &self.component)
            .field("load", &self.load)
            .finish_non_exhaustive()
    }
}

/// How the suite runs.
#[derive(Clone)]
pub struct Options {
    /// Only the cases whose id matches one of these patterns (`*` matches
    /// any run of characters: `C-APPLY-*`); empty runs every case.
    pub only: Vec<String>,
    /// The image of the test workloads. It needs `sh`, `echo`, `cat`,
    /// `mkdir`, `httpd`, `wget` and `timeout` (busybox has them).
    pub image: String,
    /// Two listeners outside the runtime that its workloads reach when
    /// nothing restricts their egress: `C-CAP-04` restricts a workload's
    /// egress to one and shows it reaching that one and not the other.
    /// Without them that half of the proof is unproven, naming this option.
    pub egress_probe: Option<EgressProbe>,
    /// Where the edge's HTTP port is reached from where the suite runs
    /// (`HOST:PORT`): `C-CAP-02` sends a request there through the edge it
    /// applies. Without it "answers through it" is unproven, naming this
    /// option. On the local test cluster with `examples/kubernetes-config.yaml`:
    /// `198.18.0.1:30080`, the real node's node port.
    pub edge_probe: Option<String>,
    /// What a satisfied `apply` of a plan with pull credentials may still
    /// write, as resources are spelled in grants (`secrets`): what the
    /// adapter documents it rewrites on every call (O-41). The contract has
    /// no field for it yet; the default is the Kubernetes adapter's pull
    /// Secret.
    pub rewrites: Vec<String>,
    /// How long to wait for the runtime to get somewhere: a workload to
    /// run or exit, a deletion, the first watch event. Default 30 s: the
    /// longest such wait measured was 3.2 s on real containers and 0.8 s
    /// on KWOK (`docs/conformance.md`, "The settle timeout"); a wait that
    /// runs out fails its case (or, on a runtime the environment declares
    /// simulated, leaves it unproven or skipped), so a larger value costs
    /// only where something never happens.
    pub settle_timeout: Duration,
    /// The longest any one case may take, its set-up included.
    pub case_timeout: Duration,
    /// What the runtime needs from outside the adapter, for simulated
    /// runtimes; none for a real one.
    pub environment: Option<Arc<dyn Environment>>,
    /// Called with each case's result as it is known, for progress
    /// output; the report holds them all at the end.
    pub progress: Option<Progress>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            only: Vec::new(),
            image: "busybox:1.36".into(),
            egress_probe: None,
            edge_probe: None,
            rewrites: vec!["secrets".into()],
            settle_timeout: Duration::from_secs(30),
            case_timeout: Duration::from_secs(300),
            environment: None,
            progress: None,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("only", &self.only)
            .field("image", &self.image)
            .field("egress_probe", &self.egress_probe)
            .field("edge_probe", &self.edge_probe)
            .field("rewrites", &self.rewrites)
            .field("settle_timeout", &self.settle_timeout)
            .field("case_timeout", &self.case_timeout)
            .field("environment", &self.environment.is_some())
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

/// Two plain-HTTP listeners outside the runtime (`HOST:PORT` each, a
/// name or an address), both reachable from a workload whose egress is
/// open. `C-CAP-04` restricts egress to `allowed` and requires `allowed`
/// reached and `denied` not. On the local test cluster:
/// `allowed.outside.test:80` and `denied.outside.test:80`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressProbe {
    /// The destination the restricted workload's rule names.
    pub allowed: String,
    /// A destination its rule does not name.
    pub denied: String,
}

impl EgressProbe {
    /// From `HOST:PORT` strings; an error naming the one that is not.
    pub fn new(allowed: &str, denied: &str) -> Result<Self, String> {
        for (which, value) in [("allowed", allowed), ("denied", denied)] {
            split_host_port(value).map_err(|e| format!("the {which} egress probe: {e}"))?;
        }
        Ok(EgressProbe {
            allowed: allowed.into(),
            denied: denied.into(),
        })
    }
}

/// Checks that `value` is `HOST:PORT` (as `--edge-address` and
/// [`Options::edge_probe`] are), an error saying what is wrong.
pub fn check_host_port(value: &str) -> Result<(), String> {
    split_host_port(value).map(|_| ())
}

/// `HOST:PORT` as its parts: a non-empty host and a port from 1 to 65535.
pub(crate) fn split_host_port(value: &str) -> Result<(&str, u16), String> {
    let (host, port) = value
        .rsplit_once(':')
        .ok_or_else(|| format!("`{value}` is not HOST:PORT"))?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| format!("`{value}` has no port from 1 to 65535"))?;
    if host.is_empty() || host.contains(['/', ' ']) {
        return Err(format!("`{value}` has no host"));
    }
    Ok((host, port))
}

/// A progress callback: called with each case's result as it is known.
pub type Progress = Arc<dyn Fn(&CaseResult) + Send + Sync>;

/// What a simulated runtime needs from outside the adapter. A real
/// runtime runs the test workloads' commands; a simulator (KWOK, which
/// runs no containers) has to be told what they would have done. The
/// defaults do nothing. (Boxed futures rather than `async fn`, so the
/// trait is object-safe and implementing it needs no macro.)
pub trait Environment: Send + Sync {
    /// Called once the suite's finishing workload (its command is
    /// `echo …; exit CODE`) is running: make it exit with `code`, as the
    /// command would.
    fn finish_workload<'a>(
        &'a self,
        workload: &'a WorkloadRef,
        code: i32,
    ) -> BoxFuture<'a, Result<(), String>> {
        let _ = (workload, code);
        Box::pin(async { Ok(()) })
    }

    /// Called before the suite applies the plan whose volume it writes and
    /// reads back (`C-VOL-01`): provide storage for it on a runtime that
    /// provisions none itself.
    fn prepare_volume<'a>(&'a self, volume: &'a VolumeHandle) -> BoxFuture<'a, Result<(), String>> {
        let _ = volume;
        Box::pin(async { Ok(()) })
    }

    /// Called once the suite has destroyed the app of a volume it
    /// prepared: release what [`Environment::prepare_volume`] provided.
    fn release_volume<'a>(&'a self, volume: &'a VolumeHandle) -> BoxFuture<'a, ()> {
        let _ = volume;
        Box::pin(async {})
    }

    /// Why this runtime's workloads do not really run, when that is known
    /// before the suite runs: a simulator (KWOK runs no containers), whose
    /// workloads' commands have no effect and whose logs and exec sessions
    /// are its own. Then what only a running workload can show (its log
    /// holding what it printed, a command run inside it seeing its files,
    /// a finishing workload exiting by itself) is reported `Unproven` for
    /// a declared capability, or skipped for the rest of a case, naming
    /// this reason; otherwise it fails its case, since the suite cannot
    /// tell a runtime that never runs commands from an adapter that lies
    /// about them. `None` by default, as for every real runtime.
    fn simulated(&self) -> Option<String> {
        None
    }

    /// Why this runtime cannot be found healthy, when that is known before
    /// the suite runs: a simulated cluster with no pod network, where no
    /// adapter can show NetworkPolicy enforced. Then, and only then, an
    /// `unavailable` health check is a skip of `C-INFO-03` (naming this
    /// reason and the adapter's); otherwise it fails the case, since the
    /// suite cannot tell a truthful verdict on the cluster from a broken
    /// check. `None` by default, as for every real runtime.
    fn health_unknowable(&self) -> Option<String> {
        None
    }
}

/// Why the suite could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The adapter did not load with its own configuration.
    #[error("the adapter under test did not load: {0}")]
    Load(#[from] LoadError),
}

/// Runs the suite against `target`: every case, or those `options.only`
/// selects, one after another (the request counts they compare are the
/// adapter's, so cases must not overlap). A case that fails does not stop
/// the others.
pub async fn run(target: &Target, options: &Options) -> Result<Report, Error> {
    let started = Instant::now();
    let adapter = target
        .host
        .load_file(&target.component, target.load.clone())
        .await?;
    let mut fx = fixture::Fixture::new(target, options, adapter.clone());
    info::run(&mut fx).await;
    config::run(&mut fx).await;
    upstream::run(&mut fx).await;
    errors::run(&mut fx).await;
    capabilities::run(&mut fx).await;
    apply::run(&mut fx).await;
    lifecycle::run(&mut fx).await;
    volumes::run(&mut fx).await;
    watch::run(&mut fx).await;
    security::run(&mut fx).await;
    let (cases, longest_settle) = fx.into_results();
    Ok(Report {
        adapter: adapter.kind_info().kind.clone(),
        component: target.component.display().to_string(),
        digest: adapter.digest().to_string(),
        contract: adapter.shape().version.clone(),
        duration: started.elapsed(),
        longest_settle,
        cases,
    })
}
