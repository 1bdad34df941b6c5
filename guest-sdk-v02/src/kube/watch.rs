//! [`WatchStream`]: a watch's typed events, and how it ends; the 0.2
//! line's, over the import's `stream<watch-event>` and its `end` future.

use std::collections::VecDeque;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;

use super::watch_event::decode_event;
use super::{WatchEnd, WatchEvent};
use crate::kubernetes as raw;
use crate::types::{FutureReader, StreamReader, StreamResult};

/// How many events one read of the import's stream takes at most.
const BATCH: usize = 64;

/// An open watch of kind `K` (from [`Api::watch`](super::Api::watch)).
///
/// [`next`](WatchStream::next) waits for the next event; the host ends the
/// watch when the call is cancelled, and to wait on it together with a
/// timer, race it (`futures::future::select`, or
/// [`time::cancellable`](crate::time::cancellable)). The stream remembers
/// the last version it saw, to resume from after [`WatchEnd::Closed`].
pub struct WatchStream<K> {
    events: StreamReader<raw::WatchEvent>,
    /// The import's end, until it is read; then the end it was.
    end: Result<FutureReader<raw::WatchEnd>, WatchEnd>,
    read: VecDeque<raw::WatchEvent>,
    resource_version: Option<String>,
    kind: PhantomData<fn() -> K>,
}

impl<K: DeserializeOwned> WatchStream<K> {
    pub(crate) fn new(raw: raw::WatchStream) -> Self {
        WatchStream {
            events: raw.events,
            end: Ok(raw.end),
            read: VecDeque::new(),
            resource_version: None,
            kind: PhantomData,
        }
    }

    /// The next event, waiting for it; `Err` once the watch has ended
    /// (every later call answers the same end).
    // Named as the WIT's; not a `Stream`, whose end carries no reason.
    #[allow(clippy::should_implement_trait)]
    pub async fn next(&mut self) -> Result<WatchEvent<K>, WatchEnd> {
        loop {
            if let Some(event) = self.read.pop_front() {
                return self.take(event);
            }
            if self.end.is_ok() {
                let (result, batch) = self.events.read(Vec::with_capacity(BATCH)).await;
                self.read.extend(batch);
                if matches!(result, StreamResult::Complete(_)) || !self.read.is_empty() {
                    continue;
                }
            }
            return Err(self.ended().await);
        }
    }

    /// How the watch ended, read from the import once. A wait dropped
    /// half-way (a caller's race lost) leaves `Closed`: resume from the
    /// last version, which is what a closed watch asks for anyway.
    async fn ended(&mut self) -> WatchEnd {
        let end = std::mem::replace(&mut self.end, Err(WatchEnd::Closed));
        let end = match end {
            Ok(future) => WatchEnd::from(future.await),
            Err(end) => end,
        };
        self.end = Err(end.clone());
        end
    }

    /// The `resourceVersion` of the last event that carried one (bookmarks
    /// included): where to resume after [`WatchEnd::Closed`].
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    fn take(&mut self, event: raw::WatchEvent) -> Result<WatchEvent<K>, WatchEnd> {
        let (event, version) = decode_event(&event).map_err(WatchEnd::Failed)?;
        if version.is_some() {
            self.resource_version = version;
        }
        Ok(event)
    }
}
