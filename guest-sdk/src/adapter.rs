//! The [`Adapter`] trait an author implements, and [`ExecSession`].

use crate::error::unsupported;
use crate::types::{
    BundleHandle, BundlePlan, BundleRef, BundleSink, BundleUsage, CapacityReport, DestroyOptions,
    EdgePlan, EdgeState, Error, ExecRequest, Fit, InUseReport, InputStream, IsolationClass,
    KindInfo, LogOptions, ObservedBundle, OutputStream, RunRequest, RuntimeCapabilities,
    TerminalSize, TrialRequest, TrialResult, UpstreamAddress, VolumeHandle, VolumeRequest,
    WatchEnd, WorkloadRef,
};

/// A runtime adapter: one method per export of `pando:runtime/adapter`.
///
/// The host calls [`info`](Adapter::info) once at load, then on every fresh
/// instance [`configure`](Adapter::configure), whose value the other methods
/// are called on. Every method but those two defaults to `unsupported`, so an
/// adapter implements what its runtime offers and says so in
/// [`capabilities`](Adapter::capabilities); a method added to the contract in
/// a later minor version arrives with a default and breaks nobody.
///
/// The host may drop an instance between any two calls: keep nothing in
/// `self` but the configuration and what can be rebuilt from the runtime.
/// The method docs are the contract's, in short; the WIT says the rest.
pub trait Adapter: Sized + 'static {
    /// Who the adapter is. Called before `configure`; must not fail or reach
    /// the runtime.
    fn info() -> KindInfo;

    /// Build the adapter from its JSON configuration (matching
    /// `info().config_schema`; may be empty). Called once per fresh
    /// instance. Reject what cannot be used with `invalid`, naming the field.
    fn configure(config: &str) -> Result<Self, Error>;

    /// What this adapter can do. Defaults to nothing, shared-kernel.
    fn capabilities(&self) -> Result<RuntimeCapabilities, Error> {
        Ok(RuntimeCapabilities {
            isolation: IsolationClass::SharedKernel,
            exec: false,
            run: false,
            logs: false,
            trial: false,
            write_observation: false,
            egress_restriction: false,
            image_import: false,
            volume_snapshot: false,
            edge: false,
        })
    }

    /// Whether the runtime can be used now.
    fn health_check(&self) -> Result<(), Error> {
        Err(unsupported("health_check"))
    }

    /// What the runtime can hold for Pando.
    fn capacity(&self) -> Result<CapacityReport, Error> {
        Err(unsupported("capacity"))
    }

    /// The roomiest node for one app, counting what the app itself reserves.
    fn largest_fit_for(&self, bundle: String) -> Result<Option<Fit>, Error> {
        let _ = bundle;
        Err(unsupported("largest_fit_for"))
    }

    /// What Pando has on the runtime.
    fn in_use(&self) -> Result<InUseReport, Error> {
        Err(unsupported("in_use"))
    }

    /// Converge an app toward the plan, idempotently.
    fn apply(&self, plan: BundlePlan) -> Result<BundleHandle, Error> {
        let _ = plan;
        Err(unsupported("apply"))
    }

    /// Report what exists for an app; never remediate.
    fn observe(&self, bundle: BundleRef) -> Result<ObservedBundle, Error> {
        let _ = bundle;
        Err(unsupported("observe"))
    }

    /// Stop an app's running workloads, keeping everything else.
    fn stop(&self, bundle: BundleRef) -> Result<(), Error> {
        let _ = bundle;
        Err(unsupported("stop"))
    }

    /// Remove an app; its volumes stay unless `keep_volumes` is false.
    fn destroy(&self, bundle: BundleRef, options: DestroyOptions) -> Result<(), Error> {
        let _ = (bundle, options);
        Err(unsupported("destroy"))
    }

    /// What an app uses.
    fn usage(&self, bundle: BundleRef) -> Result<BundleUsage, Error> {
        let _ = bundle;
        Err(unsupported("usage"))
    }

    /// Make a volume for an app.
    fn create_volume(&self, request: VolumeRequest) -> Result<VolumeHandle, Error> {
        let _ = request;
        Err(unsupported("create_volume"))
    }

    /// Delete a volume and its data.
    fn destroy_volume(&self, volume: VolumeHandle) -> Result<(), Error> {
        let _ = volume;
        Err(unsupported("destroy_volume"))
    }

    /// Write a volume's contents as a tar stream into `into`, then drop it
    /// (which closes it).
    fn snapshot_volume(&self, volume: VolumeHandle, into: OutputStream) -> Result<(), Error> {
        let _ = (volume, into);
        Err(unsupported("snapshot_volume"))
    }

    /// Replace a volume's contents, in place, with what `snapshot_volume`
    /// wrote.
    fn restore_volume(&self, volume: VolumeHandle, from: InputStream) -> Result<(), Error> {
        let _ = (volume, from);
        Err(unsupported("restore_volume"))
    }

    /// Whether an image can be run without importing it.
    fn has_image(&self, image: String) -> Result<bool, Error> {
        let _ = image;
        Err(unsupported("has_image"))
    }

    /// Load an image from a tar stream; its reference.
    fn import_image(&self, from: InputStream) -> Result<String, Error> {
        let _ = from;
        Err(unsupported("import_image"))
    }

    /// A workload's log as a stream. Return a stream another import made
    /// as it is: its bytes then never pass through the guest.
    fn logs(&self, workload: WorkloadRef, options: LogOptions) -> Result<InputStream, Error> {
        let _ = (workload, options);
        Err(unsupported("logs"))
    }

    /// Open an interactive session in a workload's running instance.
    fn exec(
        &self,
        workload: WorkloadRef,
        request: ExecRequest,
    ) -> Result<Box<dyn ExecSession>, Error> {
        let _ = (workload, request);
        Err(unsupported("exec"))
    }

    /// Run a command to completion, its stdout into `stdout`; a non-zero
    /// exit is `command-failed` (see [`crate::error::command_failed`]).
    fn run(
        &self,
        workload: WorkloadRef,
        request: RunRequest,
        stdout: OutputStream,
    ) -> Result<(), Error> {
        let _ = (workload, request, stdout);
        Err(unsupported("run"))
    }

    /// Run a workload once, watched, and report what it did.
    fn trial(&self, request: TrialRequest) -> Result<TrialResult, Error> {
        let _ = request;
        Err(unsupported("trial"))
    }

    /// Where the proxy reaches a workload's port. Runs on every proxied
    /// request: compute it, never look it up.
    fn upstream(&self, workload: WorkloadRef, port: u16) -> Result<UpstreamAddress, Error> {
        let _ = (workload, port);
        Err(unsupported("upstream"))
    }

    /// Watch every app's workloads into `sink` until cancelled (see
    /// [`crate::time`]) or until the runtime cannot resume.
    fn watch_bundles(&self, sink: BundleSink) -> Result<WatchEnd, Error> {
        let _ = sink;
        Err(unsupported("watch_bundles"))
    }

    /// Create or update the edge.
    fn apply_edge(&self, plan: EdgePlan) -> Result<(), Error> {
        let _ = plan;
        Err(unsupported("apply_edge"))
    }

    /// Whether an edge serves, in an operator's words.
    fn observe_edge(&self, name: String) -> Result<EdgeState, Error> {
        let _ = name;
        Err(unsupported("observe_edge"))
    }

    /// Remove an edge and everything made for it.
    fn remove_edge(&self, name: String) -> Result<(), Error> {
        let _ = name;
        Err(unsupported("remove_edge"))
    }

    /// The edges that exist.
    fn edges(&self) -> Result<Vec<String>, Error> {
        Err(unsupported("edges"))
    }

    /// Volumes the edge keeps.
    fn edge_volumes(&self) -> Result<Vec<VolumeHandle>, Error> {
        Err(unsupported("edge_volumes"))
    }
}

/// An interactive session [`Adapter::exec`] opened: the WIT's `exec-session`.
///
/// The host never calls into an instance twice at once, so methods take
/// `&mut self`; the streams are handed out once each.
pub trait ExecSession: 'static {
    /// The process's stdin; `None` without `ExecRequest::stdin`, or once
    /// taken. Dropping it closes the process's stdin.
    fn stdin(&mut self) -> Option<OutputStream>;

    /// Its stdout (with a terminal, stdout and stderr together); `None` once
    /// taken.
    fn stdout(&mut self) -> Option<InputStream>;

    /// Its stderr; `None` with a terminal, or once taken.
    fn stderr(&mut self) -> Option<InputStream>;

    /// Resize the terminal. Defaults to `unsupported`.
    fn resize(&mut self, size: TerminalSize) -> Result<(), Error> {
        let _ = size;
        Err(unsupported("resize"))
    }

    /// Wait for the process to exit; its exit code.
    fn wait(&mut self) -> Result<i32, Error>;
}
