//! What [`export_adapter!`](crate::export_adapter) expands to: the generated
//! `Guest` traits implemented once, generically, over any [`Adapter`].
//! Not for direct use.

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;

use crate::adapter::{Adapter, ExecSession};
use crate::bindings::exports::pando::runtime::adapter::{
    self as exported, Guest, GuestExecSession,
};
use crate::types::{
    BundleHandle, BundlePlan, BundleRef, BundleSink, BundleUsage, CapacityReport, DestroyOptions,
    EdgePlan, EdgeState, Error, ExecRequest, Fit, InUseReport, InputStream, KindInfo, LogOptions,
    ObservedBundle, OutputStream, RunRequest, RuntimeCapabilities, TerminalSize, TrialRequest,
    TrialResult, UpstreamAddress, VolumeHandle, VolumeRequest, WatchEnd, WorkloadRef,
};

thread_local! {
    // The configured adapter of this instance. A component exports exactly
    // one adapter, so one untyped slot serves every `A`; the downcast is a
    // type-id comparison. (wasm32-wasip2 has one thread: this is a static.)
    static CONFIGURED: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

const NOT_CONFIGURED: &str = "adapter not configured: the host calls configure first";

/// Run `f` on the configured adapter, or fail with `invalid` before
/// `configure`.
fn with<A: Adapter, R>(f: impl FnOnce(&A) -> Result<R, Error>) -> Result<R, Error> {
    CONFIGURED.with(|slot| {
        // The component model forbids re-entering an instance, so the slot is
        // never borrowed mutably here; fail cleanly rather than panic anyway.
        let slot = slot
            .try_borrow()
            .map_err(|_| Error::Internal("adapter re-entered during configure".into()))?;
        match slot.as_ref().and_then(|a| a.downcast_ref::<A>()) {
            Some(adapter) => f(adapter),
            None => Err(Error::Invalid(NOT_CONFIGURED.into())),
        }
    })
}

/// The type the generated export functions are instantiated with.
pub struct Export<A>(PhantomData<A>);

impl<A: Adapter> Guest for Export<A> {
    type ExecSession = SessionResource;

    fn info() -> KindInfo {
        A::info()
    }

    fn configure(config: String) -> Result<(), Error> {
        let adapter = A::configure(&config)?;
        CONFIGURED.with(|slot| {
            let mut slot = slot
                .try_borrow_mut()
                .map_err(|_| Error::Internal("adapter re-entered during a call".into()))?;
            *slot = Some(Box::new(adapter));
            Ok(())
        })
    }

    fn capabilities() -> Result<RuntimeCapabilities, Error> {
        with::<A, _>(|a| a.capabilities())
    }

    fn health_check() -> Result<(), Error> {
        with::<A, _>(|a| a.health_check())
    }

    fn capacity() -> Result<CapacityReport, Error> {
        with::<A, _>(|a| a.capacity())
    }

    fn largest_fit_for(bundle: String) -> Result<Option<Fit>, Error> {
        with::<A, _>(|a| a.largest_fit_for(bundle))
    }

    fn in_use() -> Result<InUseReport, Error> {
        with::<A, _>(|a| a.in_use())
    }

    fn apply(plan: BundlePlan) -> Result<BundleHandle, Error> {
        with::<A, _>(|a| a.apply(plan))
    }

    fn observe(bundle: BundleRef) -> Result<ObservedBundle, Error> {
        with::<A, _>(|a| a.observe(bundle))
    }

    fn stop(bundle: BundleRef) -> Result<(), Error> {
        with::<A, _>(|a| a.stop(bundle))
    }

    fn destroy(bundle: BundleRef, options: DestroyOptions) -> Result<(), Error> {
        with::<A, _>(|a| a.destroy(bundle, options))
    }

    fn usage(bundle: BundleRef) -> Result<BundleUsage, Error> {
        with::<A, _>(|a| a.usage(bundle))
    }

    fn create_volume(request: VolumeRequest) -> Result<VolumeHandle, Error> {
        with::<A, _>(|a| a.create_volume(request))
    }

    fn destroy_volume(volume: VolumeHandle) -> Result<(), Error> {
        with::<A, _>(|a| a.destroy_volume(volume))
    }

    fn snapshot_volume(volume: VolumeHandle, into: OutputStream) -> Result<(), Error> {
        with::<A, _>(|a| a.snapshot_volume(volume, into))
    }

    fn restore_volume(volume: VolumeHandle, from: InputStream) -> Result<(), Error> {
        with::<A, _>(|a| a.restore_volume(volume, from))
    }

    fn has_image(image: String) -> Result<bool, Error> {
        with::<A, _>(|a| a.has_image(image))
    }

    fn import_image(from: InputStream) -> Result<String, Error> {
        with::<A, _>(|a| a.import_image(from))
    }

    fn logs(workload: WorkloadRef, options: LogOptions) -> Result<InputStream, Error> {
        with::<A, _>(|a| a.logs(workload, options))
    }

    fn exec(workload: WorkloadRef, request: ExecRequest) -> Result<exported::ExecSession, Error> {
        let session = with::<A, _>(|a| a.exec(workload, request))?;
        Ok(exported::ExecSession::new(SessionResource(RefCell::new(
            session,
        ))))
    }

    fn run(workload: WorkloadRef, request: RunRequest, stdout: OutputStream) -> Result<(), Error> {
        with::<A, _>(|a| a.run(workload, request, stdout))
    }

    fn trial(request: TrialRequest) -> Result<TrialResult, Error> {
        with::<A, _>(|a| a.trial(request))
    }

    fn upstream(workload: WorkloadRef, port: u16) -> Result<UpstreamAddress, Error> {
        with::<A, _>(|a| a.upstream(workload, port))
    }

    fn watch_bundles(sink: BundleSink) -> Result<WatchEnd, Error> {
        with::<A, _>(|a| a.watch_bundles(sink))
    }

    fn apply_edge(plan: EdgePlan) -> Result<(), Error> {
        with::<A, _>(|a| a.apply_edge(plan))
    }

    fn observe_edge(name: String) -> Result<EdgeState, Error> {
        with::<A, _>(|a| a.observe_edge(name))
    }

    fn remove_edge(name: String) -> Result<(), Error> {
        with::<A, _>(|a| a.remove_edge(name))
    }

    fn edges() -> Result<Vec<String>, Error> {
        with::<A, _>(|a| a.edges())
    }

    fn edge_volumes() -> Result<Vec<VolumeHandle>, Error> {
        with::<A, _>(|a| a.edge_volumes())
    }
}

/// The exported `exec-session` resource: a boxed [`ExecSession`].
pub struct SessionResource(RefCell<Box<dyn ExecSession>>);

const SESSION_BUSY: &str = "exec session re-entered while in use";

impl GuestExecSession for SessionResource {
    fn stdin(&self) -> Option<OutputStream> {
        self.0.try_borrow_mut().ok()?.stdin()
    }

    fn stdout(&self) -> Option<InputStream> {
        self.0.try_borrow_mut().ok()?.stdout()
    }

    fn stderr(&self) -> Option<InputStream> {
        self.0.try_borrow_mut().ok()?.stderr()
    }

    fn resize(&self, size: TerminalSize) -> Result<(), Error> {
        self.0
            .try_borrow_mut()
            .map_err(|_| Error::Internal(SESSION_BUSY.into()))?
            .resize(size)
    }

    fn wait(&self) -> Result<i32, Error> {
        self.0
            .try_borrow_mut()
            .map_err(|_| Error::Internal(SESSION_BUSY.into()))?
            .wait()
    }
}

/// Export `$adapter` (a type implementing [`Adapter`](crate::Adapter)) as
/// this component's `pando:runtime/adapter@0.1.0`. Use it once, in the
/// `cdylib` crate that builds the component.
///
/// `configure` stores the adapter it builds for the instance's later calls;
/// any call before it fails with `invalid` ("adapter not configured"), and
/// `info` works without it.
#[macro_export]
macro_rules! export_adapter {
    ($adapter:ty) => {
        const _: () = {
            // The generated export macro takes an identifier: name the
            // generic glue through an alias.
            type PandoAdapterExport = $crate::export::Export<$adapter>;
    $crate::bindings::export!(PandoAdapterExport with_types_in $crate::bindings);
        };
    };
}
