//! The [`Adapter`] trait an author implements.

use crate::error::unsupported;
use crate::types::{
    BundleHandle, BundlePlan, BundleRef, BundleUsage, BundleWatch, ByteStream, CapacityReport,
    DestroyOptions, EdgePlan, EdgeState, Error, ExecRequest, ExecSession, Fit, InUseReport,
    IsolationClass, KindInfo, LogOptions, ObservedBundle, RunRequest, RuntimeCapabilities,
    StreamReader, TerminalSize, TrialRequest, TrialResult, UpstreamAddress, VolumeHandle,
    VolumeRequest, WorkloadRef,
};

/// A runtime adapter of contract 0.2.0: one method per export of
/// `pando:runtime/adapter@0.2.0`.
///
/// The host calls [`info`](Adapter::info) once at load, then on every fresh
/// instance [`configure`](Adapter::configure), whose value the other methods
/// are called on. Every method but those two defaults to `unsupported`, so
/// an adapter implements what its runtime offers and says so in
/// [`capabilities`](Adapter::capabilities); a method added to the contract
/// in a later minor version arrives with a default and breaks nobody.
///
/// The methods the contract declares `async` are `async fn`s here: while
/// one waits (on the runtime, a timer, a stream), the instance's event loop
/// runs the tasks the adapter spawned, which is how a returned stream is
/// written after its call returned. A component has one thread, so the
/// futures need not be `Send`.
///
/// The host may drop an instance between any two calls: keep nothing in
/// `self` but the configuration and what can be rebuilt from the runtime.
/// The method docs are the contract's, in short; the WIT says the rest.
// `async fn` in a public trait cannot promise `Send`; a component's one
// thread never needs it.
#[allow(async_fn_in_trait)]
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
    async fn health_check(&self) -> Result<(), Error> {
        Err(unsupported("health-check"))
    }

    /// What the runtime can hold for Pando.
    async fn capacity(&self) -> Result<CapacityReport, Error> {
        Err(unsupported("capacity"))
    }

    /// The roomiest node for one app, counting what the app itself reserves.
    async fn largest_fit_for(&self, bundle: String) -> Result<Option<Fit>, Error> {
        let _ = bundle;
        Err(unsupported("largest-fit-for"))
    }

    /// What Pando has on the runtime.
    async fn in_use(&self) -> Result<InUseReport, Error> {
        Err(unsupported("in-use"))
    }

    /// Converge an app toward the plan, idempotently. Each workload's
    /// `security` says who its processes run as.
    async fn apply(&self, plan: BundlePlan) -> Result<BundleHandle, Error> {
        let _ = plan;
        Err(unsupported("apply"))
    }

    /// Report what exists for an app; never remediate.
    async fn observe(&self, bundle: BundleRef) -> Result<ObservedBundle, Error> {
        let _ = bundle;
        Err(unsupported("observe"))
    }

    /// Stop an app's running workloads, keeping everything else.
    async fn stop(&self, bundle: BundleRef) -> Result<(), Error> {
        let _ = bundle;
        Err(unsupported("stop"))
    }

    /// Remove an app; its volumes stay unless `keep_volumes` is false.
    async fn destroy(&self, bundle: BundleRef, options: DestroyOptions) -> Result<(), Error> {
        let _ = (bundle, options);
        Err(unsupported("destroy"))
    }

    /// What an app uses.
    async fn usage(&self, bundle: BundleRef) -> Result<BundleUsage, Error> {
        let _ = bundle;
        Err(unsupported("usage"))
    }

    /// Make a volume for an app.
    async fn create_volume(&self, request: VolumeRequest) -> Result<VolumeHandle, Error> {
        let _ = request;
        Err(unsupported("create-volume"))
    }

    /// Delete a volume and its data.
    async fn destroy_volume(&self, volume: VolumeHandle) -> Result<(), Error> {
        let _ = volume;
        Err(unsupported("destroy-volume"))
    }

    /// A volume's contents as a tar stream (see [`crate::streams`]); its
    /// `done` fails if the stream was cut, so a partial archive never reads
    /// as whole.
    async fn snapshot_volume(&self, volume: VolumeHandle) -> Result<ByteStream, Error> {
        let _ = volume;
        Err(unsupported("snapshot-volume"))
    }

    /// Replace a volume's contents, in place, with what `snapshot_volume`
    /// wrote, read from `from` to its end.
    async fn restore_volume(
        &self,
        volume: VolumeHandle,
        from: StreamReader<u8>,
    ) -> Result<(), Error> {
        let _ = (volume, from);
        Err(unsupported("restore-volume"))
    }

    /// Whether an image can be run without importing it.
    async fn has_image(&self, image: String) -> Result<bool, Error> {
        let _ = image;
        Err(unsupported("has-image"))
    }

    /// Load an image from a tar stream; its reference.
    async fn import_image(&self, from: StreamReader<u8>) -> Result<String, Error> {
        let _ = from;
        Err(unsupported("import-image"))
    }

    /// A workload's log as a stream. A log the Kubernetes import opened can
    /// be handed on as it is: its bytes then never pass through the guest.
    async fn logs(&self, workload: WorkloadRef, options: LogOptions) -> Result<ByteStream, Error> {
        let _ = (workload, options);
        Err(unsupported("logs"))
    }

    /// Open an interactive session in a workload's running instance: the
    /// program's stdin (when `request.stdin`) and, on a terminal, its sizes
    /// as they change, while it runs (see [`crate::exec`]).
    async fn exec(
        &self,
        workload: WorkloadRef,
        request: ExecRequest,
        stdin: Option<StreamReader<u8>>,
        resize: Option<StreamReader<TerminalSize>>,
    ) -> Result<ExecSession, Error> {
        let _ = (workload, request, stdin, resize);
        Err(unsupported("exec"))
    }

    /// Run a command to completion: its stdout as a stream whose `done`
    /// fails `command-failed` on a non-zero exit (see
    /// [`crate::error::command_failed`]).
    async fn run(&self, workload: WorkloadRef, request: RunRequest) -> Result<ByteStream, Error> {
        let _ = (workload, request);
        Err(unsupported("run"))
    }

    /// Run a workload once, watched, and report what it did.
    async fn trial(&self, request: TrialRequest) -> Result<TrialResult, Error> {
        let _ = request;
        Err(unsupported("trial"))
    }

    /// Where the proxy reaches a workload's port. Runs on every proxied
    /// request, and is not `async`: compute it, never look it up.
    fn upstream(&self, workload: WorkloadRef, port: u16) -> Result<UpstreamAddress, Error> {
        let _ = (workload, port);
        Err(unsupported("upstream"))
    }

    /// Every app's workload changes as a stream (see [`crate::watch`]),
    /// until core drops it or cancels the call, or the runtime cannot
    /// resume.
    async fn watch_bundles(&self) -> Result<BundleWatch, Error> {
        Err(unsupported("watch-bundles"))
    }

    /// Create or update the edge.
    async fn apply_edge(&self, plan: EdgePlan) -> Result<(), Error> {
        let _ = plan;
        Err(unsupported("apply-edge"))
    }

    /// Whether an edge serves, in an operator's words.
    async fn observe_edge(&self, name: String) -> Result<EdgeState, Error> {
        let _ = name;
        Err(unsupported("observe-edge"))
    }

    /// Remove an edge and everything made for it.
    async fn remove_edge(&self, name: String) -> Result<(), Error> {
        let _ = name;
        Err(unsupported("remove-edge"))
    }

    /// The edges that exist.
    async fn edges(&self) -> Result<Vec<String>, Error> {
        Err(unsupported("edges"))
    }

    /// The volumes the edge keeps its state in.
    async fn edge_volumes(&self) -> Result<Vec<VolumeHandle>, Error> {
        Err(unsupported("edge-volumes"))
    }
}
