//! [`WatchStream`]: a watch's typed events, and how it ends; the 0.1
//! line's, over the host's `watch-stream` resource and its pollable.

use std::marker::PhantomData;

use serde::de::DeserializeOwned;

use super::watch_event::decode_event;
use super::{WatchEnd, WatchEvent};
use crate::kubernetes as raw;
use crate::types::Pollable;

/// An open watch of kind `K` (from [`Api::watch`](super::Api::watch)).
///
/// [`next`](WatchStream::next) waits in the host, which ends the wait when
/// the call is cancelled; to wait on it together with timers or other
/// streams, pass [`subscribe`](WatchStream::subscribe)'s pollable to
/// [`time::wait_any`](crate::time::wait_any), then call
/// [`try_next`](WatchStream::try_next). The stream remembers the last
/// version it saw, to resume from after [`WatchEnd::Closed`].
pub struct WatchStream<K> {
    raw: raw::WatchStream,
    resource_version: Option<String>,
    kind: PhantomData<fn() -> K>,
}

impl<K: DeserializeOwned> WatchStream<K> {
    pub(crate) fn new(raw: raw::WatchStream) -> Self {
        WatchStream {
            raw,
            resource_version: None,
            kind: PhantomData,
        }
    }

    /// The next event, waiting for it; `Err` once the watch has ended.
    // Named as the WIT's `next`; not an `Iterator`, whose end carries no
    // reason.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<WatchEvent<K>, WatchEnd> {
        let event = self.raw.next().map_err(WatchEnd::from)?;
        self.take(event)
    }

    /// The next event if one is ready, without waiting.
    pub fn try_next(&mut self) -> Result<Option<WatchEvent<K>>, WatchEnd> {
        match self.raw.try_next().map_err(WatchEnd::from)? {
            Some(event) => self.take(event).map(Some),
            None => Ok(None),
        }
    }

    /// Ready when [`next`](WatchStream::next) has something to return: an
    /// event, or the end.
    pub fn subscribe(&self) -> Pollable {
        self.raw.subscribe()
    }

    /// The `metadata.resourceVersion` of the last event (or bookmark)
    /// seen: where to watch from again after [`WatchEnd::Closed`].
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// The raw stream, for events of another shape.
    pub fn into_raw(self) -> raw::WatchStream {
        self.raw
    }

    fn take(&mut self, event: raw::WatchEvent) -> Result<WatchEvent<K>, WatchEnd> {
        let (event, version) = decode_event(&event).map_err(WatchEnd::Failed)?;
        if version.is_some() {
            self.resource_version = version;
        }
        Ok(event)
    }
}
