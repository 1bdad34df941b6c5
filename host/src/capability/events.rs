//! `pando:runtime/events`: the sink `watch-bundles` sends into.

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use wasmtime::component::Resource;

use super::View;
use crate::bindings::v0_1::pando::runtime::events::{
    self as wit, Host, HostBundleSink, SinkClosed,
};
use crate::types::BundleEvent;

/// A sink lent for one watch: a bounded channel to core, so a slow consumer
/// slows the watch instead of growing memory.
pub struct BundleSink {
    pub(crate) tx: mpsc::Sender<BundleEvent>,
    pub(crate) cancel: CancellationToken,
}

/// `pando:runtime/events`: the sinks live in the store's resource table.
pub(crate) struct Events;

super::stateless_capability!(
    Events,
    "events",
    wit,
    "which pando:runtime@0.2.0 does not have: `watch-bundles` returns its events as a \
     `stream<bundle-event>`"
);

impl Host for View<'_, Events> {}

impl HostBundleSink for View<'_, Events> {
    async fn send(
        &mut self,
        sink: Resource<BundleSink>,
        event: BundleEvent,
    ) -> wasmtime::Result<Result<(), SinkClosed>> {
        let sink = self.env.table.get(&sink)?;
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
        self.env.table.delete(sink)?;
        Ok(())
    }
}
