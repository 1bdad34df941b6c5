//! What [`export_adapter!`](crate::export_adapter) expands to: the
//! generated `Guest` trait implemented once, generically, over any
//! [`Adapter`]. Not for direct use.

use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;

use crate::adapter::Adapter;
use crate::bindings::exports::pando::runtime::adapter::Guest;
use crate::types::{
    BundleHandle, BundlePlan, BundleRef, BundleUsage, BundleWatch, ByteStream, CapacityReport,
    DestroyOptions, EdgePlan, EdgeState, Error, ExecRequest, ExecSession, Fit, InUseReport,
    KindInfo, LogOptions, ObservedBundle, RunRequest, RuntimeCapabilities, StreamReader,
    TerminalSize, TrialRequest, TrialResult, UpstreamAddress, VolumeHandle, VolumeRequest,
    WorkloadRef,
};

thread_local! {
    // The configured adapter of this instance. A component exports exactly
    // one adapter, so one untyped slot serves every `A`; the downcast is a
    // type-id comparison. An `Rc`, because an async call holds the adapter
    // across its waits while the instance may start another call.
    static CONFIGURED: RefCell<Option<Rc<dyn Any>>> = const { RefCell::new(None) };
}

const NOT_CONFIGURED: &str = "adapter not configured: the host calls configure first";

/// The configured adapter, or `invalid` before `configure`.
fn adapter<A: Adapter>() -> Result<Rc<A>, Error> {
    let any = CONFIGURED
        .with(|slot| slot.borrow().clone())
        .ok_or_else(|| Error::Invalid(NOT_CONFIGURED.into()))?;
    any.downcast::<A>()
        .map_err(|_| Error::Internal("the configured adapter is of another type".into()))
}

/// The type the generated export functions are instantiated with.
pub struct Export<A>(PhantomData<A>);

impl<A: Adapter> Guest for Export<A> {
    fn info() -> KindInfo {
        A::info()
    }

    fn configure(config: String) -> Result<(), Error> {
        let configured: Rc<dyn Any> = Rc::new(A::configure(&config)?);
        CONFIGURED.with(|slot| *slot.borrow_mut() = Some(configured));
        Ok(())
    }

    fn capabilities() -> Result<RuntimeCapabilities, Error> {
        adapter::<A>()?.capabilities()
    }

    async fn health_check() -> Result<(), Error> {
        adapter::<A>()?.health_check().await
    }

    async fn capacity() -> Result<CapacityReport, Error> {
        adapter::<A>()?.capacity().await
    }

    async fn largest_fit_for(bundle: String) -> Result<Option<Fit>, Error> {
        adapter::<A>()?.largest_fit_for(bundle).await
    }

    async fn in_use() -> Result<InUseReport, Error> {
        adapter::<A>()?.in_use().await
    }

    async fn apply(plan: BundlePlan) -> Result<BundleHandle, Error> {
        adapter::<A>()?.apply(plan).await
    }

    async fn observe(bundle: BundleRef) -> Result<ObservedBundle, Error> {
        adapter::<A>()?.observe(bundle).await
    }

    async fn stop(bundle: BundleRef) -> Result<(), Error> {
        adapter::<A>()?.stop(bundle).await
    }

    async fn destroy(bundle: BundleRef, options: DestroyOptions) -> Result<(), Error> {
        adapter::<A>()?.destroy(bundle, options).await
    }

    async fn usage(bundle: BundleRef) -> Result<BundleUsage, Error> {
        adapter::<A>()?.usage(bundle).await
    }

    async fn create_volume(request: VolumeRequest) -> Result<VolumeHandle, Error> {
        adapter::<A>()?.create_volume(request).await
    }

    async fn destroy_volume(volume: VolumeHandle) -> Result<(), Error> {
        adapter::<A>()?.destroy_volume(volume).await
    }

    async fn snapshot_volume(volume: VolumeHandle) -> Result<ByteStream, Error> {
        adapter::<A>()?.snapshot_volume(volume).await
    }

    async fn restore_volume(volume: VolumeHandle, from: StreamReader<u8>) -> Result<(), Error> {
        adapter::<A>()?.restore_volume(volume, from).await
    }

    async fn has_image(image: String) -> Result<bool, Error> {
        adapter::<A>()?.has_image(image).await
    }

    async fn import_image(from: StreamReader<u8>) -> Result<String, Error> {
        adapter::<A>()?.import_image(from).await
    }

    async fn logs(workload: WorkloadRef, options: LogOptions) -> Result<ByteStream, Error> {
        adapter::<A>()?.logs(workload, options).await
    }

    async fn exec(
        workload: WorkloadRef,
        request: ExecRequest,
        stdin: Option<StreamReader<u8>>,
        resize: Option<StreamReader<TerminalSize>>,
    ) -> Result<ExecSession, Error> {
        adapter::<A>()?.exec(workload, request, stdin, resize).await
    }

    async fn run(workload: WorkloadRef, request: RunRequest) -> Result<ByteStream, Error> {
        adapter::<A>()?.run(workload, request).await
    }

    async fn trial(request: TrialRequest) -> Result<TrialResult, Error> {
        adapter::<A>()?.trial(request).await
    }

    fn upstream(workload: WorkloadRef, port: u16) -> Result<UpstreamAddress, Error> {
        adapter::<A>()?.upstream(workload, port)
    }

    async fn watch_bundles() -> Result<BundleWatch, Error> {
        adapter::<A>()?.watch_bundles().await
    }

    async fn apply_edge(plan: EdgePlan) -> Result<(), Error> {
        adapter::<A>()?.apply_edge(plan).await
    }

    async fn observe_edge(name: String) -> Result<EdgeState, Error> {
        adapter::<A>()?.observe_edge(name).await
    }

    async fn remove_edge(name: String) -> Result<(), Error> {
        adapter::<A>()?.remove_edge(name).await
    }

    async fn edges() -> Result<Vec<String>, Error> {
        adapter::<A>()?.edges().await
    }

    async fn edge_volumes() -> Result<Vec<VolumeHandle>, Error> {
        adapter::<A>()?.edge_volumes().await
    }
}

/// Export `$adapter`, a type implementing [`Adapter`], as the component's
/// `pando:runtime/adapter@0.2.0`. Use once, in the crate's root.
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
