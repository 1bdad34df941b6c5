//! The probe's operations over the SDK's kube-rs-style helpers (issue 20):
//! a dynamic kind, metadata-only reads, `create_json`, `wait_for_deletion`
//! and the watcher, each reporting what it saw as text for the host's
//! tests to check against the real API server.

use std::time::Duration;

use pando_adapter_sdk::bindings::wasi::clocks::monotonic_clock;
use pando_adapter_sdk::error;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::ConfigMap;
use pando_adapter_sdk::kube::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
    ResourceExt, WatchParams, WatcherEvent, wait_for_deletion, watcher,
};
use pando_adapter_sdk::types::Error;

/// The label the dynamic operation puts on what it creates.
const LABEL: &str = "pando.test/sdk";

fn args<const N: usize>(arg: &str, usage: &str) -> Result<[String; N], Error> {
    let parts: Vec<String> = arg.splitn(N, ':').map(str::to_owned).collect();
    parts
        .try_into()
        .map_err(|_| error::invalid(format!("plan.id: {usage}")))
}

fn names<'a, K: ResourceExt + 'a>(objects: impl IntoIterator<Item = &'a K>) -> String {
    objects
        .into_iter()
        .map(ResourceExt::name_any)
        .collect::<Vec<_>>()
        .join(",")
}

/// `dynamic:<ns>:<name>`: ConfigMap `<name>` created from JSON through an
/// `Api<DynamicObject>`, merge-patched, read back and listed by its label
/// the same way, then listed and read as metadata only through the typed
/// `Api<ConfigMap>`:
/// `kind=<kind> greeting=<data> patched=<data> listed=<names> meta=<names> meta-rv=<rv>`.
pub fn dynamic(arg: &str) -> Result<String, Error> {
    let [ns, name] = args(arg, "dynamic:<namespace>:<name>")?;
    let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
    let configmaps = Api::<DynamicObject>::namespaced_with(
        &ns,
        &ApiResource::from_gvk_with_plural(&gvk, "configmaps"),
    );
    let object = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": name, "labels": { LABEL: "dynamic" } },
        "data": { "greeting": "hello" },
    });
    configmaps.create_json(&PostParams::default(), &object)?;
    let patch = serde_json::json!({ "data": { "patched": "yes" } });
    configmaps.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))?;
    let got = configmaps.get(&name)?;
    let selector = ListParams::default().labels(&format!("{LABEL}=dynamic"));
    let listed = configmaps.list(&selector)?;
    let typed = Api::<ConfigMap>::namespaced(&ns);
    let meta = typed.list_metadata(&selector)?;
    let one = typed.get_metadata(&name)?;
    Ok(format!(
        "kind={} greeting={} patched={} listed={} meta={} meta-rv={}",
        got.types.map(|t| t.kind).unwrap_or_default(),
        got.data["data"]["greeting"].as_str().unwrap_or_default(),
        got.data["data"]["patched"].as_str().unwrap_or_default(),
        names(&listed.items),
        names(&meta.items),
        one.resource_version().unwrap_or_default(),
    ))
}

/// `wait-deleted:<ns>:<name>:<seconds>`: `wait_for_deletion` of ConfigMap
/// `<name>`: `deleted:<ms>` once it is gone, `present:<ms>` when the
/// seconds passed first.
pub fn wait_deleted(arg: &str) -> Result<String, Error> {
    let [ns, name, seconds] = args(arg, "wait-deleted:<namespace>:<name>:<seconds>")?;
    let seconds: u64 = seconds
        .parse()
        .map_err(|_| error::invalid(format!("plan.id: {seconds:?} is not a number of seconds")))?;
    let started = monotonic_clock::now();
    let gone = wait_for_deletion(
        &Api::<ConfigMap>::namespaced(&ns),
        &name,
        Duration::from_secs(seconds),
    )?;
    let ms = (monotonic_clock::now() - started) / 1_000_000;
    Ok(format!("{}:{ms}", if gone { "deleted" } else { "present" }))
}

/// `watcher:<ns>:<version>:<until>`: a watcher of the ConfigMaps in `<ns>`,
/// from `<version>` (empty: listing first), until it reports ConfigMap
/// `<until>` applied; the events it reported, comma-separated: `init`,
/// `init-apply:<name>`, `init-done`, `apply:<name>`, `delete:<name>`.
pub fn watch_until(arg: &str) -> Result<String, Error> {
    let [ns, version, until] = args(arg, "watcher:<namespace>:<version>:<until>")?;
    let mut configmaps = watcher(Api::<ConfigMap>::namespaced(&ns), WatchParams::default());
    if !version.is_empty() {
        configmaps = configmaps.from_version(&version);
    }
    let mut seen = Vec::new();
    loop {
        let event = configmaps.next()?;
        let done = matches!(&event, WatcherEvent::Apply(cm) if cm.name_any() == until);
        seen.push(match event {
            WatcherEvent::Init => "init".to_string(),
            WatcherEvent::InitApply(cm) => format!("init-apply:{}", cm.name_any()),
            WatcherEvent::InitDone => "init-done".to_string(),
            WatcherEvent::Apply(cm) => format!("apply:{}", cm.name_any()),
            WatcherEvent::Delete(cm) => format!("delete:{}", cm.name_any()),
        });
        if done {
            return Ok(seen.join(","));
        }
    }
}
