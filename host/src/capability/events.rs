//! `pando:runtime/events`: the sink `watch-bundles` sends into.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use wasmtime::component::Resource;

use crate::bindings::v0_1::pando::runtime::events::{Host, HostBundleSink, SinkClosed};
use crate::state::HostState;
use crate::types::BundleEvent;

/// A sink lent for one watch: a bounded channel to core, so a slow consumer
/// slows the watch instead of growing memory.
pub struct BundleSink {
    pub(crate) tx: mpsc::Sender<BundleEvent>,
    pub(crate) cancel: CancellationToken,
}

impl Host for HostState {}

impl HostBundleSink for HostState {
    async fn send(
        &mut self,
        sink: Resource<BundleSink>,
        event: BundleEvent,
    ) -> wasmtime::Result<Result<(), SinkClosed>> {
        let sink = self.table().get(&sink)?;
        let (tx, cancel) = (sink.tx.clone(), sink.cancel.clone());
        tokio::select! {
            sent = tx.send(event) => Ok(sent.map_err(|_| SinkClosed {
                reason: "core stopped receiving bundle events".into(),
            })),
            // Cancelled while core is not reading: tell the guest the sink
            // is closed so it returns instead of waiting.
            () = cancel.cancelled() => Ok(Err(SinkClosed {
                reason: "the watch was cancelled".into(),
            })),
        }
    }

    async fn drop(&mut self, sink: Resource<BundleSink>) -> wasmtime::Result<()> {
        self.table().delete(sink)?;
        Ok(())
    }
}
