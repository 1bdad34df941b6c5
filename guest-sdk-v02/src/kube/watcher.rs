//! A watcher that lists again on 410 Gone and backs off on failures, as
//! kube-runtime's `watcher`, over the host's watch and the call's timers;
//! and [`wait_for_deletion`]. The 0.2 line's (`async`); its events and
//! backoff are the 0.1 line's (`watcher_parts.rs`).

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use futures::future::{Either, select};

use kube_core::PartialObjectMeta;
use serde::de::DeserializeOwned;

use super::error::call_ended;
use super::requests::not_found_is_none;
pub use super::watcher_parts::{Backoff, Event, is_transient};
use super::{Api, KubeError, WatchEnd, WatchEvent, WatchParams, WatchStream};
use crate::bindings::wasi::clocks::monotonic_clock;

enum State<K> {
    /// List next: first, or after a 410.
    List,
    /// Handing out a list's objects, then watching from its version.
    Listed {
        items: std::vec::IntoIter<K>,
        version: String,
    },
    /// Open a watch from this version.
    Resume(String),
    /// Following a watch opened from this version.
    Watching(WatchStream<K>, String),
}

/// A watch of an [`Api`]'s collection that keeps going: it lists first,
/// watches from the list's version, resumes when the server closes the
/// watch, lists again when the version is too old (410 Gone), and on a
/// [transient](is_transient) failure waits ([`Backoff`]) and resumes.
/// Other errors, the call's deadline and its cancellation end it with the
/// error. Build it with [`watcher`].
///
/// Each [`next`](Watcher::next) waits in the host, which ends the wait when
/// the call is cancelled; a watcher needs `list` and `watch` grants on the
/// collection.
///
/// ```no_run
/// use std::collections::BTreeMap;
///
/// use pando_adapter_sdk_v02::kube::k8s_openapi::api::core::v1::Pod;
/// use pando_adapter_sdk_v02::kube::{Api, ResourceExt, WatchParams, WatcherEvent, watcher};
/// use pando_adapter_sdk_v02::types::Error;
///
/// async fn follow(pods: Api<Pod>) -> Result<(), Error> {
///     let mut known = BTreeMap::new();
///     let mut listing = BTreeMap::new();
///     let mut pods = watcher(pods, WatchParams::default().labels("app=web"));
///     loop {
///         match pods.next().await? {
///             WatcherEvent::Init => listing.clear(),
///             WatcherEvent::InitApply(pod) => {
///                 listing.insert(pod.name_any(), pod);
///             }
///             WatcherEvent::InitDone => known = std::mem::take(&mut listing),
///             WatcherEvent::Apply(pod) => {
///                 known.insert(pod.name_any(), pod);
///             }
///             WatcherEvent::Delete(pod) => {
///                 known.remove(&pod.name_any());
///             }
///         }
///     }
/// }
/// ```
pub struct Watcher<K> {
    api: Api<K>,
    params: WatchParams,
    state: State<K>,
    backoff: Backoff,
}

/// A [`Watcher`] of `api`'s collection with `params`' selectors (which the
/// lists use too); it lists first.
pub fn watcher<K>(api: Api<K>, params: WatchParams) -> Watcher<K> {
    Watcher {
        api,
        params,
        state: State::List,
        backoff: Backoff::default(),
    }
}

impl<K: Clone + DeserializeOwned> Watcher<K> {
    /// Watch from `version` (kept from an earlier watch) instead of
    /// listing first; a version too old lists, as any 410 does.
    #[must_use]
    pub fn from_version(mut self, version: &str) -> Self {
        self.state = State::Resume(version.into());
        self
    }

    /// Wait this way after failures.
    #[must_use]
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// The next event, waiting for it (and through closes, 410s and
    /// transient failures); `Err` when the watcher cannot go on.
    // An `Iterator` would hide the error's end in `Option`.
    #[allow(clippy::should_implement_trait)]
    pub async fn next(&mut self) -> Result<Event<K>, KubeError> {
        loop {
            if let Some(event) = self.step().await? {
                return Ok(event);
            }
        }
    }

    /// One step of the state machine: an event, or `None` when the state
    /// changed without one.
    async fn step(&mut self) -> Result<Option<Event<K>>, KubeError> {
        match std::mem::replace(&mut self.state, State::List) {
            State::List => match self.api.list_objects(&self.params.list_params()).await {
                Ok(list) => {
                    self.state = State::Listed {
                        items: list.items.into_iter(),
                        version: list.metadata.resource_version.unwrap_or_default(),
                    };
                    Ok(Some(Event::Init))
                }
                Err(e) => self.retry(e, State::List).await,
            },
            State::Listed { mut items, version } => Ok(Some(match items.next() {
                Some(object) => {
                    self.state = State::Listed { items, version };
                    Event::InitApply(object)
                }
                None => {
                    self.backoff.reset();
                    self.state = State::Resume(version);
                    Event::InitDone
                }
            })),
            State::Resume(version) => match self.api.watch(&self.params, &version).await {
                Ok(stream) => {
                    self.state = State::Watching(stream, version);
                    Ok(None)
                }
                Err(e) if e.is_gone() => Ok(None),
                Err(e) => self.retry(e, State::Resume(version)).await,
            },
            State::Watching(mut stream, from) => {
                let event = stream.next().await;
                let version = stream.resource_version().unwrap_or(&from).to_owned();
                match event {
                    Ok(WatchEvent::Added(object) | WatchEvent::Modified(object)) => {
                        self.backoff.reset();
                        self.state = State::Watching(stream, from);
                        Ok(Some(Event::Apply(object)))
                    }
                    Ok(WatchEvent::Deleted(object)) => {
                        self.backoff.reset();
                        self.state = State::Watching(stream, from);
                        Ok(Some(Event::Delete(object)))
                    }
                    Ok(WatchEvent::Bookmark(_)) => {
                        self.state = State::Watching(stream, from);
                        Ok(None)
                    }
                    Err(WatchEnd::Closed) => {
                        self.state = State::Resume(version);
                        Ok(None)
                    }
                    Err(WatchEnd::Expired(_)) => Ok(None),
                    Err(WatchEnd::Failed(e)) => self.retry(e, State::Resume(version)).await,
                }
            }
        }
    }

    /// After a transient failure, waits its turn and goes on in `then`;
    /// any other failure ends the watcher.
    async fn retry(&mut self, e: KubeError, then: State<K>) -> Result<Option<Event<K>>, KubeError> {
        if !is_transient(&e) {
            return Err(e);
        }
        let wait = self.backoff.next_delay(e.retry_after());
        crate::log::log_with(crate::log::Level::Warn, || {
            let plural = &self.api.resource().plural;
            format!("watching {plural}: {e}; again in {wait:?}")
        });
        sleep(wait).await?;
        self.state = then;
        Ok(None)
    }
}

/// Waits until the object `name` is gone (or replaced by another of the
/// same name): `Ok(true)` once it is, `Ok(false)` when `timeout` passed
/// first. An object that does not exist is gone at once. It reads the
/// object's metadata, then watches it by name from that version, reading
/// it again after the watch ends; it needs `get` and `watch` grants.
///
/// ```no_run
/// use std::time::Duration;
///
/// use pando_adapter_sdk_v02::kube::k8s_openapi::api::core::v1::Namespace;
/// use pando_adapter_sdk_v02::kube::{Api, DeleteParams, wait_for_deletion};
/// use pando_adapter_sdk_v02::{error, types::Error};
///
/// async fn destroy(name: &str) -> Result<(), Error> {
///     let namespaces = Api::<Namespace>::all();
///     namespaces.delete_opt(name, &DeleteParams::background()).await?;
///     if !wait_for_deletion(&namespaces, name, Duration::from_secs(60)).await? {
///         return Err(error::unavailable(format!("namespace {name} is still terminating")));
///     }
///     Ok(())
/// }
/// ```
pub async fn wait_for_deletion<K>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
) -> Result<bool, KubeError> {
    let until = monotonic_clock::now().saturating_add(nanos(timeout));
    let mut backoff = Backoff::default();
    loop {
        let Some(meta) = not_found_is_none(api.get_metadata(name).await)? else {
            return Ok(true);
        };
        let uid = meta.metadata.uid;
        let version = meta.metadata.resource_version.unwrap_or_default();
        let by_name = WatchParams::default().fields(&format!("metadata.name={name}"));
        let mut stream = match api.open_watch(&by_name, &version).await {
            Ok(raw) => WatchStream::<PartialObjectMeta<K>>::new(raw),
            // Compacted between the read and the watch: read again.
            Err(e) if e.is_gone() && monotonic_clock::now() < until => continue,
            Err(e) if e.is_gone() => return Ok(false),
            Err(e) => return Err(e),
        };
        loop {
            let left = Duration::from_nanos(until.saturating_sub(monotonic_clock::now()));
            if left.is_zero() {
                return Ok(false);
            }
            let Some(next) = within(left, stream.next()).await? else {
                return Ok(false);
            };
            match next {
                Ok(WatchEvent::Deleted(_)) => return Ok(true),
                Ok(WatchEvent::Added(m) | WatchEvent::Modified(m)) if m.metadata.uid != uid => {
                    return Ok(true);
                }
                Ok(_) => {}
                Err(WatchEnd::Closed | WatchEnd::Expired(_)) => break,
                Err(WatchEnd::Failed(e)) if is_transient(&e) => {
                    let wait = backoff.next_delay(e.retry_after());
                    sleep(wait.min(Duration::from_nanos(
                        until.saturating_sub(monotonic_clock::now()),
                    )))
                    .await?;
                    break;
                }
                Err(WatchEnd::Failed(e)) => return Err(e),
            }
        }
    }
}

/// Sleeps on the call's timers; the call's end as the client's error.
async fn sleep(duration: Duration) -> Result<(), KubeError> {
    crate::time::sleep(duration).await.map_err(call_ended)
}

/// `work`'s output, or `None` when `left` passed first; the call's end as
/// the client's error.
async fn within<T>(left: Duration, work: impl Future<Output = T>) -> Result<Option<T>, KubeError> {
    let work = pin!(work);
    let timer = pin!(sleep(left));
    match select(work, timer).await {
        Either::Left((out, _)) => Ok(Some(out)),
        Either::Right((Ok(()), _)) => Ok(None),
        Either::Right((Err(e), _)) => Err(e),
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
