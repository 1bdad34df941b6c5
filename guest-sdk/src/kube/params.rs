//! The parameters of the typed calls. Where kube-core's parameters are the
//! SDK's (`PostParams`, `PatchParams`, `DeleteParams`) they are re-exported
//! from [`kube_core::params`]; [`ListParams`], [`WatchParams`] and [`Patch`]
//! keep the SDK's fields and variants and become kube-core's when a request
//! is built. Logs and exec are the host's own requests.

use serde::Serialize;

use super::KubeError;
use crate::kubernetes as raw;
use crate::types::LogOptions;

pub use kube_core::params::{
    DeleteParams, PatchParams, PostParams, Preconditions, PropagationPolicy,
};

/// Which objects a [`list`](super::Api::list) (or
/// [`delete_collection`](super::Api::delete_collection), which takes only
/// the selectors) takes, and how many.
///
/// kube-core's [`ListParams`](kube_core::params::ListParams) under the
/// SDK's field names; it becomes that when the request is built, and so
/// follows its rules: a `resource_version` is not sent with a `continue`
/// token, nor `"0"` with a `limit` (the API server would ignore the limit).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListParams {
    /// `labelSelector`, e.g. `app=web,tier!=cache`.
    pub label_selector: Option<String>,
    /// `fieldSelector`, e.g. `status.phase=Running`.
    pub field_selector: Option<String>,
    /// `limit`: at most this many items; the answer's
    /// `metadata.continue` then fetches the next page.
    pub limit: Option<u32>,
    /// `continue`: the token of the previous page.
    pub continue_token: Option<String>,
    /// `resourceVersion`: `"0"` lets the server answer from its cache.
    pub resource_version: Option<String>,
    /// Kept for source compatibility, and not sent: kube-core no longer
    /// sends `timeoutSeconds` with a list (it has no effect there); a
    /// watch's is [`WatchParams::timeout_seconds`].
    pub timeout_seconds: Option<u32>,
}

impl ListParams {
    /// Only objects whose labels match `selector`.
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only objects whose fields match `selector`.
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// At most `limit` items per page.
    #[must_use]
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// The page after the one whose `metadata.continue` was `token`.
    #[must_use]
    pub fn continue_token(mut self, token: &str) -> Self {
        self.continue_token = Some(token.into());
        self
    }

    /// List at (or, with `"0"`, at any) resource version.
    #[must_use]
    pub fn resource_version(mut self, version: &str) -> Self {
        self.resource_version = Some(version.into());
        self
    }

    /// List at any resource version (`"0"`), kube-rs's spelling: the API
    /// server, or the host's watch-fed cache, may answer from a cache.
    #[must_use]
    pub fn match_any(self) -> Self {
        self.resource_version("0")
    }
}

impl From<&ListParams> for kube_core::params::ListParams {
    fn from(lp: &ListParams) -> Self {
        kube_core::params::ListParams {
            label_selector: lp.label_selector.clone(),
            field_selector: lp.field_selector.clone(),
            limit: lp.limit,
            continue_token: lp.continue_token.clone(),
            version_match: None,
            resource_version: lp.resource_version.clone(),
            ..kube_core::params::ListParams::default()
        }
    }
}

/// A patch and its strategy; the strategy is the request's content type.
///
/// Every variant takes any serializable value (a `serde_json::Value`, a
/// k8s-openapi object). It becomes kube-core's
/// [`Patch`](kube_core::params::Patch) when the request is built, but for
/// [`Patch::Json`]: kube-core's takes a `json_patch::Patch` behind a
/// feature and a crate of its own, so the SDK sends the array of
/// operations itself, as kube-core builds a merge patch, with the JSON
/// patch's content type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Patch<P: Serialize> {
    /// Server-side apply (`application/apply-patch+yaml`): the fields the
    /// manager owns. Needs [`PatchParams::field_manager`]; the object must
    /// carry `apiVersion` and `kind` (k8s-openapi types do).
    Apply(P),
    /// A JSON patch (`application/json-patch+json`): an array of operations.
    Json(P),
    /// A JSON merge patch (`application/merge-patch+json`).
    Merge(P),
    /// A strategic merge patch (`application/strategic-merge-patch+json`),
    /// built-in kinds only.
    Strategic(P),
}

impl<P: Serialize> Patch<P> {
    /// The content type the raw import sends it with.
    pub fn content_type(&self) -> raw::ContentType {
        match self {
            Patch::Apply(_) => raw::ContentType::ApplyPatch,
            Patch::Json(_) => raw::ContentType::JsonPatch,
            Patch::Merge(_) => raw::ContentType::MergePatch,
            Patch::Strategic(_) => raw::ContentType::StrategicMergePatch,
        }
    }

    /// kube-core's patch to build the request with (its content type is
    /// then set from [`content_type`](Self::content_type)), checked against
    /// `pp` where kube-core does not: server-side apply needs a field
    /// manager, a JSON patch is an array.
    pub(crate) fn to_core(
        &self,
        pp: &PatchParams,
    ) -> Result<kube_core::params::Patch<&P>, KubeError> {
        use kube_core::params::Patch as Core;
        Ok(match self {
            Patch::Apply(p) => {
                if pp.field_manager.as_deref().is_none_or(str::is_empty) {
                    return Err(KubeError::InvalidRequest(
                        "server-side apply needs a field manager (PatchParams::apply)".into(),
                    ));
                }
                Core::Apply(p)
            }
            Patch::Json(p) => {
                let value = serde_json::to_value(p).map_err(|e| {
                    KubeError::InvalidRequest(format!("the patch does not serialize: {e}"))
                })?;
                if !value.is_array() {
                    return Err(KubeError::InvalidRequest(
                        "a JSON patch is an array of operations".into(),
                    ));
                }
                Core::Merge(p)
            }
            Patch::Merge(p) => Core::Merge(p),
            Patch::Strategic(p) => Core::Strategic(p),
        })
    }
}

/// Which changes a [`watch`](super::Api::watch) reports.
///
/// kube-core's [`WatchParams`](kube_core::params::WatchParams) under the
/// SDK's field names; it becomes that when the request is built, but for
/// the timeout: none leaves it to the API server, where kube-core would
/// ask for 290 seconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchParams {
    /// Only objects whose labels match.
    pub label_selector: Option<String>,
    /// Only objects whose fields match.
    pub field_selector: Option<String>,
    /// The server ends the watch after this long (it chooses when none);
    /// the stream then ends with [`WatchEnd::Closed`](super::WatchEnd::Closed).
    pub timeout_seconds: Option<u32>,
    /// Ask for bookmarks, so the version advances while nothing changes.
    /// On by default.
    pub bookmarks: bool,
}

impl Default for WatchParams {
    fn default() -> Self {
        WatchParams {
            label_selector: None,
            field_selector: None,
            timeout_seconds: None,
            bookmarks: true,
        }
    }
}

impl WatchParams {
    /// Only objects whose labels match `selector`.
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only objects whose fields match `selector`.
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.into());
        self
    }

    /// The server ends the watch after `seconds`.
    #[must_use]
    pub fn timeout(mut self, seconds: u32) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// The same selectors as a list's, to list what a watch then follows.
    pub(crate) fn list_params(&self) -> ListParams {
        ListParams {
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            ..ListParams::default()
        }
    }
}

impl From<&WatchParams> for kube_core::params::WatchParams {
    fn from(wp: &WatchParams) -> Self {
        kube_core::params::WatchParams {
            label_selector: wp.label_selector.clone(),
            field_selector: wp.field_selector.clone(),
            timeout: wp.timeout_seconds,
            bookmarks: wp.bookmarks,
            send_initial_events: false,
        }
    }
}

/// Which part of a container's log [`logs`](super::Api::logs) streams.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogParams {
    /// The container; none is the pod's only container.
    pub container: Option<String>,
    /// Keep the stream open and send new output as it comes.
    pub follow: bool,
    /// The previous instance's log (after a restart).
    pub previous: bool,
    /// Only the last N lines.
    pub tail_lines: Option<u64>,
    /// Only output newer than this many seconds.
    pub since_seconds: Option<u64>,
    /// Prefix every line with its RFC 3339 time.
    pub timestamps: bool,
    /// Stop after this many bytes.
    pub limit_bytes: Option<u64>,
}

impl From<&LogOptions> for LogParams {
    /// The contract's log options, for the pod's only container.
    fn from(o: &LogOptions) -> Self {
        LogParams {
            container: None,
            follow: o.follow,
            previous: false,
            tail_lines: o.tail_lines,
            since_seconds: o.since_seconds,
            timestamps: o.timestamps,
            limit_bytes: o.limit_bytes,
        }
    }
}

impl LogParams {
    pub(crate) fn request(&self, namespace: &str, pod: &str) -> raw::LogRequest {
        raw::LogRequest {
            namespace: namespace.into(),
            pod: pod.into(),
            container: self.container.clone(),
            follow: self.follow,
            previous: self.previous,
            tail_lines: self.tail_lines,
            since_seconds: self.since_seconds,
            timestamps: self.timestamps,
            limit_bytes: self.limit_bytes,
        }
    }
}

/// A process [`exec`](super::Api::exec) starts in a container.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecParams {
    /// The container; none is the pod's only container.
    pub container: Option<String>,
    /// The program and its arguments.
    pub command: Vec<String>,
    /// Open the process's stdin.
    pub stdin: bool,
    /// Allocate a terminal (stdout and stderr are then one stream).
    pub tty: bool,
}

impl ExecParams {
    pub(crate) fn request(
        &self,
        namespace: &str,
        pod: &str,
    ) -> Result<raw::ExecRequest, KubeError> {
        if self.command.is_empty() {
            return Err(KubeError::InvalidRequest("exec needs a command".into()));
        }
        Ok(raw::ExecRequest {
            namespace: namespace.into(),
            pod: pod.into(),
            container: self.container.clone(),
            command: self.command.clone(),
            stdin: self.stdin,
            tty: self.tty,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_params_become_kube_cores() {
        let core = kube_core::params::ListParams::from(&ListParams::default());
        assert_eq!(core, kube_core::params::ListParams::default());
        let lp = ListParams::default()
            .labels("app=web")
            .fields("status.phase=Running")
            .limit(50)
            .continue_token("abc");
        let core = kube_core::params::ListParams::from(&lp);
        assert_eq!(core.label_selector.as_deref(), Some("app=web"));
        assert_eq!(core.field_selector.as_deref(), Some("status.phase=Running"));
        assert_eq!(core.limit, Some(50));
        assert_eq!(core.continue_token.as_deref(), Some("abc"));
        let any = ListParams::default().match_any();
        assert_eq!(any, ListParams::default().resource_version("0"));
        assert_eq!(
            kube_core::params::ListParams::from(&any)
                .resource_version
                .as_deref(),
            Some("0")
        );
    }

    #[test]
    fn patches_are_checked_where_kube_core_does_not() {
        let v = serde_json::json!({"metadata": {"labels": {"a": "b"}}});
        assert!(matches!(
            Patch::Apply(&v).to_core(&PatchParams::default()),
            Err(KubeError::InvalidRequest(_))
        ));
        assert!(
            Patch::Apply(&v)
                .to_core(&PatchParams::apply("pando"))
                .is_ok()
        );
        assert!(matches!(
            Patch::Json(&v).to_core(&PatchParams::default()),
            Err(KubeError::InvalidRequest(_))
        ));
        let ops = serde_json::json!([{"op": "remove", "path": "/metadata/labels/a"}]);
        assert!(Patch::Json(&ops).to_core(&PatchParams::default()).is_ok());
        for (patch, ct) in [
            (Patch::Apply(&v), raw::ContentType::ApplyPatch),
            (Patch::Json(&ops), raw::ContentType::JsonPatch),
            (Patch::Merge(&v), raw::ContentType::MergePatch),
            (Patch::Strategic(&v), raw::ContentType::StrategicMergePatch),
        ] {
            assert_eq!(patch.content_type(), ct);
        }
    }

    #[test]
    fn watch_params_become_kube_cores() {
        let wp = WatchParams::default().labels("app=web").timeout(30);
        let core = kube_core::params::WatchParams::from(&wp);
        assert_eq!(core.label_selector.as_deref(), Some("app=web"));
        assert_eq!(core.timeout, Some(30));
        assert!(core.bookmarks && !core.send_initial_events);
        let lp = wp.list_params();
        assert_eq!(lp.label_selector.as_deref(), Some("app=web"));
        assert_eq!(lp.timeout_seconds, None);
    }

    #[test]
    fn log_and_exec_requests() {
        let opts = LogOptions {
            follow: true,
            tail_lines: Some(10),
            since_seconds: None,
            timestamps: true,
            limit_bytes: Some(1024),
        };
        let r = LogParams::from(&opts).request("pando-x", "web-0");
        assert_eq!((r.namespace.as_str(), r.pod.as_str()), ("pando-x", "web-0"));
        assert!(r.follow && r.timestamps && !r.previous);
        assert_eq!((r.tail_lines, r.limit_bytes), (Some(10), Some(1024)));
        let e = ExecParams {
            command: vec!["sh".into()],
            stdin: true,
            tty: true,
            ..ExecParams::default()
        }
        .request("pando-x", "web-0")
        .unwrap();
        assert_eq!(e.command, ["sh"]);
        assert!(e.stdin && e.tty);
        assert!(ExecParams::default().request("n", "p").is_err());
    }
}
