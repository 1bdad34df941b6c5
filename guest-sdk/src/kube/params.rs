//! The parameters of the typed calls, and the query each one sends.

use serde::Serialize;

use super::KubeError;
use crate::kubernetes as raw;
use crate::types::LogOptions;

/// A query as the raw import takes it: pairs, unencoded.
pub(crate) type Query = Vec<(String, String)>;

fn push(query: &mut Query, key: &str, value: impl ToString) {
    query.push((key.to_string(), value.to_string()));
}

/// Which objects a [`list`](super::Api::list) (or
/// [`delete_collection`](super::Api::delete_collection)) takes, and how many.
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
    /// `timeoutSeconds`: the server gives up after this long.
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

    /// The query it sends.
    pub(crate) fn query(&self) -> Query {
        let mut q = Query::new();
        if let Some(s) = &self.label_selector {
            push(&mut q, "labelSelector", s);
        }
        if let Some(s) = &self.field_selector {
            push(&mut q, "fieldSelector", s);
        }
        if let Some(n) = self.limit {
            push(&mut q, "limit", n);
        }
        if let Some(t) = &self.continue_token {
            push(&mut q, "continue", t);
        }
        if let Some(v) = &self.resource_version {
            push(&mut q, "resourceVersion", v);
        }
        if let Some(t) = self.timeout_seconds {
            push(&mut q, "timeoutSeconds", t);
        }
        q
    }
}

/// How a [`create`](super::Api::create) or [`replace`](super::Api::replace)
/// is made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PostParams {
    /// `dryRun=All`: validate and answer, persist nothing.
    pub dry_run: bool,
    /// `fieldManager`: who owns the fields written.
    pub field_manager: Option<String>,
}

impl PostParams {
    /// The query it sends.
    pub(crate) fn query(&self) -> Query {
        let mut q = Query::new();
        if self.dry_run {
            push(&mut q, "dryRun", "All");
        }
        if let Some(m) = &self.field_manager {
            push(&mut q, "fieldManager", m);
        }
        q
    }
}

/// A patch and its strategy; the strategy is the request's content type.
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

    /// The body: the patch as JSON (a JSON patch must be an array).
    pub(crate) fn body(&self) -> Result<Vec<u8>, KubeError> {
        let (Patch::Apply(p) | Patch::Json(p) | Patch::Merge(p) | Patch::Strategic(p)) = self;
        let value = serde_json::to_value(p)
            .map_err(|e| KubeError::InvalidRequest(format!("the patch does not serialize: {e}")))?;
        if matches!(self, Patch::Json(_)) && !value.is_array() {
            return Err(KubeError::InvalidRequest(
                "a JSON patch is an array of operations".into(),
            ));
        }
        serde_json::to_vec(&value)
            .map_err(|e| KubeError::InvalidRequest(format!("the patch does not serialize: {e}")))
    }
}

/// How a [`patch`](super::Api::patch) is made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchParams {
    /// `dryRun=All`: validate and answer, persist nothing.
    pub dry_run: bool,
    /// `force=true`: server-side apply takes fields other managers own.
    /// Only with [`Patch::Apply`].
    pub force: bool,
    /// `fieldManager`: who owns the fields written; required by
    /// [`Patch::Apply`].
    pub field_manager: Option<String>,
}

impl PatchParams {
    /// Parameters for server-side apply by `manager`.
    pub fn apply(manager: &str) -> Self {
        PatchParams {
            field_manager: Some(manager.into()),
            ..PatchParams::default()
        }
    }

    /// Take fields other managers own (server-side apply only).
    #[must_use]
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    /// Validate and answer, persist nothing.
    #[must_use]
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// The query it sends with `patch`, checked against the patch's
    /// strategy.
    pub(crate) fn query<P: Serialize>(&self, patch: &Patch<P>) -> Result<Query, KubeError> {
        let apply = matches!(patch, Patch::Apply(_));
        if apply && self.field_manager.as_deref().is_none_or(str::is_empty) {
            return Err(KubeError::InvalidRequest(
                "server-side apply needs a field manager (PatchParams::apply)".into(),
            ));
        }
        if self.force && !apply {
            return Err(KubeError::InvalidRequest(
                "force is only for server-side apply".into(),
            ));
        }
        let mut q = Query::new();
        if self.dry_run {
            push(&mut q, "dryRun", "All");
        }
        if self.force {
            push(&mut q, "force", "true");
        }
        if let Some(m) = &self.field_manager {
            push(&mut q, "fieldManager", m);
        }
        Ok(q)
    }
}

/// What happens to the dependents of a deleted object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PropagationPolicy {
    /// The object goes once its dependents are gone.
    Foreground,
    /// The object goes now; the garbage collector removes its dependents.
    Background,
    /// The dependents stay, without an owner.
    Orphan,
}

impl PropagationPolicy {
    /// Its name in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            PropagationPolicy::Foreground => "Foreground",
            PropagationPolicy::Background => "Background",
            PropagationPolicy::Orphan => "Orphan",
        }
    }
}

/// How a [`delete`](super::Api::delete) is made. Sent as query
/// parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteParams {
    /// `dryRun=All`: validate and answer, delete nothing.
    pub dry_run: bool,
    /// `gracePeriodSeconds`: how long the object may take to end (0 is
    /// now).
    pub grace_period_seconds: Option<u32>,
    /// `propagationPolicy`; none is the kind's default.
    pub propagation_policy: Option<PropagationPolicy>,
}

impl DeleteParams {
    /// Delete dependents first, then the object.
    pub fn foreground() -> Self {
        DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            ..DeleteParams::default()
        }
    }

    /// Delete the object now and its dependents in the background.
    pub fn background() -> Self {
        DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        }
    }

    /// Delete the object and leave its dependents.
    pub fn orphan() -> Self {
        DeleteParams {
            propagation_policy: Some(PropagationPolicy::Orphan),
            ..DeleteParams::default()
        }
    }

    /// Give the object `seconds` to end.
    #[must_use]
    pub fn grace_period(mut self, seconds: u32) -> Self {
        self.grace_period_seconds = Some(seconds);
        self
    }

    /// Validate and answer, delete nothing.
    #[must_use]
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// The query it sends.
    pub(crate) fn query(&self) -> Query {
        let mut q = Query::new();
        if self.dry_run {
            push(&mut q, "dryRun", "All");
        }
        if let Some(s) = self.grace_period_seconds {
            push(&mut q, "gracePeriodSeconds", s);
        }
        if let Some(p) = self.propagation_policy {
            push(&mut q, "propagationPolicy", p.as_str());
        }
        q
    }
}

/// Which changes a [`watch`](super::Api::watch) reports.
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

    /// The raw watch request for the collection at `path`, from
    /// `resource_version` (empty: from now).
    pub(crate) fn request(&self, path: String, resource_version: &str) -> raw::WatchRequest {
        raw::WatchRequest {
            path,
            label_selector: self.label_selector.clone(),
            field_selector: self.field_selector.clone(),
            resource_version: (!resource_version.is_empty()).then(|| resource_version.into()),
            allow_bookmarks: self.bookmarks,
            timeout_seconds: self.timeout_seconds,
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

    fn q(pairs: &[(&str, &str)]) -> Query {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn list_query() {
        assert!(ListParams::default().query().is_empty());
        let lp = ListParams::default()
            .labels("app=web,tier!=cache")
            .fields("status.phase=Running")
            .limit(50)
            .continue_token("abc")
            .resource_version("0");
        assert_eq!(
            lp.query(),
            q(&[
                ("labelSelector", "app=web,tier!=cache"),
                ("fieldSelector", "status.phase=Running"),
                ("limit", "50"),
                ("continue", "abc"),
                ("resourceVersion", "0"),
            ])
        );
    }

    #[test]
    fn post_query() {
        assert!(PostParams::default().query().is_empty());
        let pp = PostParams {
            dry_run: true,
            field_manager: Some("pando".into()),
        };
        assert_eq!(
            pp.query(),
            q(&[("dryRun", "All"), ("fieldManager", "pando")])
        );
    }

    #[test]
    fn patch_query_and_checks() {
        let apply = Patch::Apply(serde_json::json!({}));
        assert_eq!(
            PatchParams::apply("pando").force().query(&apply).unwrap(),
            q(&[("force", "true"), ("fieldManager", "pando")])
        );
        assert_eq!(
            PatchParams::apply("pando").dry_run().query(&apply).unwrap(),
            q(&[("dryRun", "All"), ("fieldManager", "pando")])
        );
        assert!(matches!(
            PatchParams::default().query(&apply),
            Err(KubeError::InvalidRequest(_))
        ));
        let merge = Patch::Merge(serde_json::json!({}));
        assert!(PatchParams::default().query(&merge).unwrap().is_empty());
        assert!(matches!(
            PatchParams::default().force().query(&merge),
            Err(KubeError::InvalidRequest(_))
        ));
    }

    #[test]
    fn patch_content_types_and_bodies() {
        let v = serde_json::json!({"metadata": {"labels": {"a": "b"}}});
        assert_eq!(
            Patch::Apply(&v).content_type(),
            raw::ContentType::ApplyPatch
        );
        assert_eq!(
            Patch::Merge(&v).content_type(),
            raw::ContentType::MergePatch
        );
        assert_eq!(
            Patch::Strategic(&v).content_type(),
            raw::ContentType::StrategicMergePatch
        );
        let ops = serde_json::json!([{"op": "remove", "path": "/metadata/labels/a"}]);
        assert_eq!(
            Patch::Json(&ops).content_type(),
            raw::ContentType::JsonPatch
        );
        assert_eq!(
            Patch::Merge(&v).body().unwrap(),
            br#"{"metadata":{"labels":{"a":"b"}}}"#
        );
        assert_eq!(
            Patch::Json(&ops).body().unwrap(),
            br#"[{"op":"remove","path":"/metadata/labels/a"}]"#
        );
        assert!(matches!(
            Patch::Json(&v).body(),
            Err(KubeError::InvalidRequest(_))
        ));
    }

    #[test]
    fn delete_query() {
        assert!(DeleteParams::default().query().is_empty());
        assert_eq!(
            DeleteParams::foreground().query(),
            q(&[("propagationPolicy", "Foreground")])
        );
        assert_eq!(
            DeleteParams::background().grace_period(0).dry_run().query(),
            q(&[
                ("dryRun", "All"),
                ("gracePeriodSeconds", "0"),
                ("propagationPolicy", "Background")
            ])
        );
        assert_eq!(
            DeleteParams::orphan().query(),
            q(&[("propagationPolicy", "Orphan")])
        );
    }

    #[test]
    fn watch_request() {
        let r = WatchParams::default()
            .labels("app=web")
            .timeout(30)
            .request("/api/v1/pods".into(), "");
        assert_eq!(r.path, "/api/v1/pods");
        assert_eq!(r.label_selector.as_deref(), Some("app=web"));
        assert_eq!(r.field_selector, None);
        assert_eq!(r.resource_version, None);
        assert!(r.allow_bookmarks);
        assert_eq!(r.timeout_seconds, Some(30));
        let r = WatchParams {
            bookmarks: false,
            ..WatchParams::default()
        }
        .request("/api/v1/pods".into(), "42");
        assert_eq!(r.resource_version.as_deref(), Some("42"));
        assert!(!r.allow_bookmarks);
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
