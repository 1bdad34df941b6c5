//! A watch's typed events and how it ends, decoded from the host's: the
//! same file in both SDK lines ([`WatchStream`](super::WatchStream)(super::WatchStream) is each
//! line's own).

use serde::de::DeserializeOwned;

use super::KubeError;
use crate::kubernetes as raw;

/// One change a watch reports.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent<K> {
    /// The object was created (or existed when the watch began from `"0"`).
    Added(K),
    /// The object changed.
    Modified(K),
    /// The object is gone; its last state.
    Deleted(K),
    /// Nothing changed, but the collection's version is now this one:
    /// resume from it.
    Bookmark(String),
}

/// Why a [`WatchStream`](super::WatchStream) yields no more events; each asks for something
/// else.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEnd {
    /// The server closed it (its timeout): watch again from
    /// [`WatchStream::resource_version`].
    Closed,
    /// The version is too old (410 Gone): list again, then watch from the
    /// list's version.
    Expired(String),
    /// The stream broke, the server sent an error, or an event did not
    /// decode as the kind: list again, or give up.
    Failed(KubeError),
}

impl From<raw::WatchEnd> for WatchEnd {
    fn from(end: raw::WatchEnd) -> WatchEnd {
        match end {
            raw::WatchEnd::Closed => WatchEnd::Closed,
            raw::WatchEnd::Expired(message) => WatchEnd::Expired(message),
            raw::WatchEnd::Failed(e) => WatchEnd::Failed(e.into()),
        }
    }
}

/// A raw event as a typed one, and the version it carries.
pub(crate) fn decode_event<K: DeserializeOwned>(
    event: &raw::WatchEvent,
) -> Result<(WatchEvent<K>, Option<String>), KubeError> {
    let value: serde_json::Value = super::request::from_json(&event.object)
        .map_err(|e| KubeError::Decode(format!("a watch event: {e}")))?;
    let version = value
        .pointer("/metadata/resourceVersion")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    let object = |value| {
        serde_json::from_value::<K>(value)
            .map_err(|e| KubeError::Decode(format!("a watch event's object: {e}")))
    };
    let typed = match event.event_type {
        raw::EventType::Added => WatchEvent::Added(object(value)?),
        raw::EventType::Modified => WatchEvent::Modified(object(value)?),
        raw::EventType::Deleted => WatchEvent::Deleted(object(value)?),
        raw::EventType::Bookmark => WatchEvent::Bookmark(version.clone().ok_or_else(|| {
            KubeError::Decode("a bookmark without metadata.resourceVersion".into())
        })?),
    };
    Ok((typed, version))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    fn raw_event(event_type: raw::EventType, json: &str) -> raw::WatchEvent {
        raw::WatchEvent {
            event_type,
            object: json.as_bytes().to_vec(),
        }
    }

    #[test]
    fn typed_events() {
        let pod =
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","resourceVersion":"7"}}"#;
        for (t, check) in [
            (raw::EventType::Added, 0),
            (raw::EventType::Modified, 1),
            (raw::EventType::Deleted, 2),
        ] {
            let (event, version) = decode_event::<Pod>(&raw_event(t, pod)).unwrap();
            assert_eq!(version.as_deref(), Some("7"));
            let p = match (check, event) {
                (0, WatchEvent::Added(p))
                | (1, WatchEvent::Modified(p))
                | (2, WatchEvent::Deleted(p)) => p,
                other => panic!("{other:?}"),
            };
            assert_eq!(p.metadata.name.as_deref(), Some("web"));
        }
    }

    #[test]
    fn bookmarks_carry_the_version() {
        let bookmark = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12345","annotations":{"k8s.io/initial-events-end":"true"}}}"#;
        let (event, version) =
            decode_event::<Pod>(&raw_event(raw::EventType::Bookmark, bookmark)).unwrap();
        assert_eq!(event, WatchEvent::Bookmark("12345".into()));
        assert_eq!(version.as_deref(), Some("12345"));
        assert!(decode_event::<Pod>(&raw_event(raw::EventType::Bookmark, "{}")).is_err());
    }

    #[test]
    fn a_foreign_event_is_a_decode_error() {
        let e = decode_event::<Pod>(&raw_event(raw::EventType::Added, r#"{"kind":"Service"}"#))
            .unwrap_err();
        assert!(matches!(e, KubeError::Decode(_)));
        let e = decode_event::<Pod>(&raw_event(raw::EventType::Added, "garbage")).unwrap_err();
        assert!(matches!(e, KubeError::Decode(_)));
    }

    #[test]
    fn ends_stay_distinct() {
        assert_eq!(WatchEnd::from(raw::WatchEnd::Closed), WatchEnd::Closed);
        assert_eq!(
            WatchEnd::from(raw::WatchEnd::Expired("too old".into())),
            WatchEnd::Expired("too old".into())
        );
        assert_eq!(
            WatchEnd::from(raw::WatchEnd::Failed(raw::ApiError::Transport(
                "reset".into()
            ))),
            WatchEnd::Failed(KubeError::Transport("reset".into()))
        );
    }
}
