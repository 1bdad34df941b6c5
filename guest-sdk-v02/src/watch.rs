//! A watch of every app's workloads fed by a task: the events core reads
//! while the adapter's task sends them after `watch-bundles` returned, and
//! how the watch ended.
//!
//! ```no_run
//! use std::time::Duration;
//! use pando_adapter_sdk_v02::types::{BundleEvent, BundleWatch, WatchEnd};
//! use pando_adapter_sdk_v02::{time, watch};
//!
//! fn heartbeat() -> BundleWatch {
//!     watch::bundle_watch(|mut events| async move {
//!         events.send(BundleEvent::Watching).await?;
//!         // Until core cancels the call (or drops the events).
//!         while time::sleep(Duration::from_secs(1)).await.is_ok() {
//!             // … send what changed …
//!         }
//!         Ok(WatchEnd::Cancelled)
//!     })
//! }
//! ```

use std::future::Future;

use crate::bindings::{wit_future, wit_stream};
use crate::streams::{dropped, settle};
use crate::types::{BundleEvent, BundleWatch, Error, StreamWriter, WatchEnd};

/// The sending end of a watch's events.
#[derive(Debug)]
pub struct Events(StreamWriter<BundleEvent>);

impl Events {
    /// Send one event; `cancelled` once core dropped its end (then stop:
    /// nobody reads).
    pub async fn send(&mut self, event: BundleEvent) -> Result<(), Error> {
        match self.0.write_one(event).await {
            None => Ok(()),
            Some(_) => Err(dropped()),
        }
    }
}

/// A watch whose events `feed` sends, in a task of its own after the call
/// returned; its outcome is the watch's end. The events are closed before
/// the end is written.
pub fn bundle_watch<F, Fut>(feed: F) -> BundleWatch
where
    F: FnOnce(Events) -> Fut,
    Fut: Future<Output = Result<WatchEnd, Error>> + 'static,
{
    let (events, reader) = wit_stream::new::<BundleEvent>();
    let (end, end_reader) = wit_future::new::<Result<WatchEnd, Error>>(unwritten_end);
    settle(end, feed(Events(events)));
    BundleWatch {
        events: reader,
        end: end_reader,
    }
}

/// What core reads when an adapter drops the end unwritten.
fn unwritten_end() -> Result<WatchEnd, Error> {
    Err(Error::Internal(
        "the adapter dropped the watch's end unwritten".into(),
    ))
}
