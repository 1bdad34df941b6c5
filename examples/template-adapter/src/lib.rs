//! A template Pando runtime adapter: each app is a Kubernetes namespace
//! `pando-<app>` holding one bare pod (and one headless Service, for its
//! name) per workload, and one PersistentVolumeClaim per volume.
//!
//! Copy this crate to start an adapter of your own; docs/authoring.md walks
//! through it. Everything this file does not implement (exec, run, logs,
//! trial, snapshots, image import, the edge) keeps the SDK's default answer,
//! `unsupported`, and `capabilities` says so in advance.
//!
//! Everything the adapter writes carries the label `LABEL` (the app's id),
//! so that it finds its own objects again, and never touches anyone else's.

use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolumeClaim, Pod, Secret, Service,
};
use pando_adapter_sdk::kube::watcher::{Event, wait_for_deletion, watcher};
use pando_adapter_sdk::kube::{
    Api, DeleteParams, ListParams, PostParams, ResourceExt, WatchParams,
};
use pando_adapter_sdk::types::*;
use pando_adapter_sdk::{Adapter, error, export_adapter, info, time};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The label on every object this adapter makes: the app's id.
const LABEL: &str = "template.pando.dev/app";
/// The annotation holding a hash of the pod spec we wrote (see `apply`).
const HASH: &str = "template.pando.dev/spec-hash";
/// The Secret holding an app's registry credentials.
const PULL_SECRET: &str = "pando-pull";

/// The configuration, once `configure` has checked it. An instance is
/// configured once and may serve many calls: keep no other state here.
pub struct Template {
    cluster_domain: String,
    volume_size_bytes: u64,
}

impl Adapter for Template {
    /// Who we are. Called at load, before `configure`: no runtime access here.
    fn info() -> KindInfo {
        KindInfo {
            kind: "template".into(),
            category: Category::Cluster,
            description: "A template adapter: one bare pod per workload on Kubernetes.".into(),
            config_schema: json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "cluster_domain": {"type": "string", "default": "cluster.local"},
                    "volume_size_bytes": {"type": "integer", "minimum": 1, "default": 1073741824u64}
                }
            })
            .to_string(),
        }
    }

    /// Check the configuration; refuse it with `invalid` naming the field.
    fn configure(config: &str) -> Result<Self, Error> {
        // Read it field by field: serde's own type errors do not say which
        // field was wrong, and an operator needs to know.
        let mut fields: serde_json::Map<String, Value> = pando_adapter_sdk::config::parse(config)?;
        let mut take = |name: &str| fields.remove(name);
        let cluster_domain = match take("cluster_domain") {
            None => "cluster.local".to_string(),
            Some(Value::String(s)) if !s.is_empty() => s,
            Some(other) => {
                return Err(error::invalid(format!(
                    "configuration field `cluster_domain` must be a non-empty string, not {other}"
                )));
            }
        };
        let volume_size_bytes = match take("volume_size_bytes") {
            None => 1 << 30,
            Some(v) => v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
                error::invalid(format!(
                    "configuration field `volume_size_bytes` must be a positive integer, not {v}"
                ))
            })?,
        };
        if let Some(unknown) = fields.keys().next() {
            return Err(error::invalid(format!(
                "configuration field `{unknown}` is not known; allowed: cluster_domain, volume_size_bytes"
            )));
        }
        Ok(Template {
            cluster_domain,
            volume_size_bytes,
        })
    }

    /// What works. Core only offers what is `true` here; every call left to
    /// the SDK's defaults answers `unsupported`, which is what `false` means.
    fn capabilities(&self) -> Result<RuntimeCapabilities, Error> {
        Ok(RuntimeCapabilities {
            isolation: IsolationClass::SharedKernel, // plain containers
            exec: false,
            run: false,
            logs: false,
            trial: false,
            write_observation: false,
            egress_restriction: false, // no NetworkPolicy: egress is open
            image_import: false,
            volume_snapshot: false,
            edge: false,
        })
    }

    /// The runtime can be used when the API server answers.
    fn health_check(&self) -> Result<(), Error> {
        Api::<Node>::all().list(&ListParams::default().limit(1))?;
        Ok(())
    }

    /// Computed, never looked up: core calls it on every proxied request.
    fn upstream(&self, workload: WorkloadRef, port: u16) -> Result<UpstreamAddress, Error> {
        let host = format!(
            "{}.{}.svc.{}",
            workload.workload,
            namespace(&workload.bundle),
            self.cluster_domain
        );
        Ok(UpstreamAddress { host, port })
    }

    /// Converge the app toward the plan. Check everything before writing
    /// anything (a refused plan writes nothing), then write only what
    /// differs (a satisfied plan writes nothing).
    fn apply(&self, plan: BundlePlan) -> Result<BundleHandle, Error> {
        check_plan(&plan)?;
        let ns = namespace(&plan.id);
        let labels = json!({ LABEL: plan.id });
        if Api::<Namespace>::all().get_opt(&ns)?.is_none() {
            create(
                &Api::<Namespace>::all(),
                json!({"metadata": {"name": ns, "labels": labels}}),
            )?;
        }
        // Credentials may have changed anywhere: rewritten on every apply
        // (the conformance suite's `--rewrites` allows `secrets`).
        if !plan.pull_credentials.is_empty() {
            let secret = pull_secret(&plan.pull_credentials, &labels);
            let secrets = Api::<Secret>::namespaced(&ns);
            match secrets.get_opt(PULL_SECRET)? {
                None => create(&secrets, secret)?,
                Some(_) => {
                    secrets.replace(PULL_SECRET, &PostParams::default(), &from_json(secret)?)?;
                }
            }
        }
        for volume in &plan.volumes {
            let claims = Api::<PersistentVolumeClaim>::namespaced(&ns);
            if claims.get_opt(&volume.name)?.is_none() {
                let size = volume.size_bytes.unwrap_or(self.volume_size_bytes);
                create(
                    &claims,
                    json!({
                        "metadata": {"name": volume.name, "labels": labels},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size.to_string()}}}
                    }),
                )?;
            }
        }
        let pods = Api::<Pod>::namespaced(&ns);
        let services = Api::<Service>::namespaced(&ns);
        for w in &plan.workloads {
            // A headless Service gives the pod the name `upstream` computes.
            if services.get_opt(&w.name)?.is_none() {
                create(
                    &services,
                    json!({
                        "metadata": {"name": w.name, "labels": labels},
                        "spec": {"clusterIP": "None", "selector": {LABEL: plan.id, "template.pando.dev/workload": w.name}}
                    }),
                )?;
            }
            // A pod's spec cannot change: compare a hash of what we would
            // write with the one we wrote, and replace the pod only if they
            // differ. Same hash: nothing is written, nothing restarts.
            let spec = pod_spec(w, &plan);
            let hash = format!("{:016x}", fnv1a(spec.to_string().as_bytes()));
            if let Some(existing) = pods.get_opt(&w.name)? {
                if existing.annotations().get(HASH) == Some(&hash)
                    && existing.metadata.deletion_timestamp.is_none()
                {
                    continue;
                }
                // Wait until the old pod is gone: the new one has its name.
                pods.delete_opt(&w.name, &DeleteParams::default().grace_period(0))?;
                if !wait_for_deletion(&pods, &w.name, std::time::Duration::from_secs(30))? {
                    return Err(error::unavailable(format!(
                        "pod {ns}/{} is still terminating; apply again",
                        w.name
                    )));
                }
            }
            create(
                &pods,
                json!({
                    "metadata": {
                        "name": w.name,
                        "labels": {LABEL: plan.id, "template.pando.dev/workload": w.name},
                        "annotations": {HASH: hash}
                    },
                    "spec": spec
                }),
            )?;
            info!(bundle = plan.id, workload = w.name, "pod created");
        }
        Ok(BundleHandle {
            location: format!("kubernetes/{ns}"),
            id: plan.id,
        })
    }

    /// What exists, read only: observe never repairs anything.
    fn observe(&self, bundle: BundleRef) -> Result<ObservedBundle, Error> {
        let ns = namespace(&bundle.id);
        let exists = Api::<Namespace>::all()
            .get_opt(&ns)?
            .is_some_and(|n| n.metadata.deletion_timestamp.is_none());
        let mut seen = ObservedBundle {
            id: bundle.id,
            exists,
            workloads: vec![],
            volumes: vec![],
        };
        if !exists {
            return Ok(seen);
        }
        seen.workloads = Api::<Pod>::namespaced(&ns)
            .list(&ours())?
            .items
            .iter()
            .map(observed)
            .collect();
        for claim in Api::<PersistentVolumeClaim>::namespaced(&ns)
            .list(&ours())?
            .items
        {
            if claim.metadata.deletion_timestamp.is_some() {
                continue; // going away: no longer the app's
            }
            let name = claim.name_any();
            let status = claim.status.unwrap_or_default();
            seen.volumes.push(ObservedVolume {
                name,
                ready: status.phase.as_deref() == Some("Bound"),
                size_bytes: status
                    .capacity
                    .and_then(|c| c.get("storage").and_then(|q| quantity(&q.0))),
            });
        }
        Ok(seen)
    }

    /// Stop running workloads; finished pods stay, with their logs.
    fn stop(&self, bundle: BundleRef) -> Result<(), Error> {
        let pods = Api::<Pod>::namespaced(&namespace(&bundle.id));
        for pod in pods.list(&ours())?.items {
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            if !matches!(phase, Some("Succeeded" | "Failed")) {
                pods.delete_opt(&pod.name_any(), &DeleteParams::default())?;
            }
        }
        Ok(())
    }

    /// Remove the app. With volumes: the whole namespace. Without: its pods,
    /// Services and Secret; the namespace stays, holding the claims.
    fn destroy(&self, bundle: BundleRef, options: DestroyOptions) -> Result<(), Error> {
        let ns = namespace(&bundle.id);
        if !options.keep_volumes {
            // The claims first, so that they are marked as going at once
            // (the namespace controller would take its time).
            let claims = Api::<PersistentVolumeClaim>::namespaced(&ns);
            for claim in claims.list(&ours())?.items {
                claims.delete_opt(&claim.name_any(), &DeleteParams::default())?;
            }
            Api::<Namespace>::all().delete_opt(&ns, &DeleteParams::background())?;
            return Ok(());
        }
        if Api::<Namespace>::all().get_opt(&ns)?.is_none() {
            return Ok(()); // nothing to destroy
        }
        let pods = Api::<Pod>::namespaced(&ns);
        for pod in pods.list(&ours())?.items {
            pods.delete_opt(&pod.name_any(), &DeleteParams::default())?;
        }
        let services = Api::<Service>::namespaced(&ns);
        for svc in services.list(&ours())?.items {
            services.delete_opt(&svc.name_any(), &DeleteParams::default())?;
        }
        Api::<Secret>::namespaced(&ns).delete_opt(PULL_SECRET, &DeleteParams::default())?;
        Ok(())
    }

    /// Destroying a volume that is not there succeeds: callers retry.
    fn destroy_volume(&self, volume: VolumeHandle) -> Result<(), Error> {
        check_name("volume name", &volume.name)?;
        Api::<PersistentVolumeClaim>::namespaced(&namespace(&volume.bundle))
            .delete_opt(&volume.name, &DeleteParams::default())?;
        Ok(())
    }

    /// Volumes come with plans here; a volume of its own is refused, after
    /// checking the name (an invalid name is `invalid`, whatever we offer).
    fn create_volume(&self, request: VolumeRequest) -> Result<VolumeHandle, Error> {
        check_name("volume name", &request.name)?;
        Err(error::unsupported(
            "create-volume (volumes are made by apply)",
        ))
    }

    /// What an app's pods request.
    fn usage(&self, bundle: BundleRef) -> Result<BundleUsage, Error> {
        let pods = Api::<Pod>::namespaced(&namespace(&bundle.id))
            .list(&ours())?
            .items;
        let workloads = pods.iter().filter(|p| active(p)).map(|p| WorkloadUsage {
            name: p.name_any(),
            requested: requests(p),
            used: None, // no metrics API here
        });
        Ok(BundleUsage {
            workloads: workloads.collect(),
            volume_bytes: 0,
        })
    }

    /// What Pando has on the cluster: every app's pods and claims.
    fn in_use(&self) -> Result<InUseReport, Error> {
        let mut report = InUseReport {
            bundles: vec![],
            volumes: vec![],
            requested: Resources {
                cpu_millis: 0,
                memory_bytes: 0,
            },
        };
        for pod in Api::<Pod>::all()
            .list(&ours())?
            .items
            .iter()
            .filter(|p| active(p))
        {
            add(&mut report.requested, &requests(pod));
            report.bundles.push(app_of(pod));
        }
        for claim in Api::<PersistentVolumeClaim>::all().list(&ours())?.items {
            if claim.metadata.deletion_timestamp.is_none() {
                let bundle = app_of(&claim);
                report.bundles.push(bundle.clone());
                let name = claim.name_any();
                report.volumes.push(VolumeHandle {
                    location: format!("{}/{name}", namespace(&bundle)),
                    bundle,
                    name,
                });
            }
        }
        report.bundles.sort();
        report.bundles.dedup();
        Ok(report)
    }

    /// Nodes' allocatable resources, less what Pando's pods request there.
    /// (A real adapter also counts everyone else's pods.)
    fn capacity(&self) -> Result<CapacityReport, Error> {
        let fits = free_by_node(None)?;
        let mut total = Resources {
            cpu_millis: 0,
            memory_bytes: 0,
        };
        for (_, all, _) in &fits {
            add(&mut total, all);
        }
        let largest_fit =
            fits.iter()
                .max_by_key(|(_, _, free)| free.cpu_millis)
                .map(|(node, _, free)| Fit {
                    node: node.clone(),
                    free: *free,
                });
        Ok(CapacityReport {
            total,
            largest_fit,
            nodes: fits.len() as u32,
        })
    }

    /// As capacity, counting the app's own pods as free: a redeploy replaces them.
    fn largest_fit_for(&self, bundle: String) -> Result<Option<Fit>, Error> {
        let fits = free_by_node(Some(&bundle))?;
        Ok(fits
            .into_iter()
            .max_by_key(|(_, _, free)| free.cpu_millis)
            .map(|(node, _, free)| Fit { node, free }))
    }

    /// Every change of Pando's pods: list, say `watching`, then follow.
    /// Reports only; never acts. The SDK's `watcher` (kube-runtime's shape)
    /// watches again after a close and waits out transient failures; it
    /// lists again after a 410, which this reports as `expired`: what
    /// changed meanwhile is unknown, so core lists again (O-52).
    fn watch_bundles(&self, sink: BundleSink) -> Result<WatchEnd, Error> {
        let mut pods = watcher(Api::<Pod>::all(), WatchParams::default().labels(LABEL));
        let mut listed = false;
        loop {
            let (pod, deleted) = match pods.next() {
                Ok(Event::Init) if listed => return Ok(WatchEnd::Expired),
                Ok(Event::Init | Event::InitApply(_)) => continue,
                Ok(Event::InitDone) => {
                    listed = true;
                    if sink.send(&BundleEvent::Watching).is_err() {
                        return Ok(WatchEnd::Cancelled); // core stopped listening
                    }
                    continue;
                }
                Ok(Event::Apply(pod)) => (pod, false),
                Ok(Event::Delete(pod)) => (pod, true),
                Err(_) if time::is_cancelled() => return Ok(WatchEnd::Cancelled),
                Err(e) => return Err(e.into()),
            };
            let change = WorkloadChange {
                bundle: app_of(&pod),
                workload: observed(&pod),
                deleted,
            };
            if sink.send(&BundleEvent::Changed(change)).is_err() {
                return Ok(WatchEnd::Cancelled);
            }
        }
    }
}

export_adapter!(Template);

// ---- helpers ---------------------------------------------------------------

fn namespace(app: &str) -> String {
    format!("pando-{app}")
}

/// Only our objects.
fn ours() -> ListParams {
    ListParams::default().labels(LABEL)
}

/// The app an object of ours belongs to: its `LABEL`.
fn app_of(object: &impl ResourceExt) -> String {
    object.labels().get(LABEL).cloned().unwrap_or_default()
}

/// Create an object described as JSON (the SDK fills in nothing: give
/// `metadata.name`).
fn create<K>(api: &Api<K>, object: Value) -> Result<(), Error>
where
    K: pando_adapter_sdk::kube::k8s_openapi::Resource + serde::Serialize + DeserializeOwned,
    K::Scope: pando_adapter_sdk::kube::Scope,
{
    api.create_json(&PostParams::default(), &object)?;
    Ok(())
}

fn from_json<K: DeserializeOwned>(object: Value) -> Result<K, Error> {
    serde_json::from_value(object).map_err(|e| Error::Internal(format!("building an object: {e}")))
}

/// A Kubernetes name: a DNS label.
fn check_name(what: &str, name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(error::invalid(format!(
            "{what} `{name}` is not a DNS label"
        )))
    }
}

/// Everything that can be wrong with a plan, before anything is written.
fn check_plan(plan: &BundlePlan) -> Result<(), Error> {
    // `pando-` + id must itself be a DNS label.
    check_name("plan.id", &plan.id)?;
    if plan.id.len() > 57 {
        return Err(error::invalid("plan.id: at most 57 characters"));
    }
    if let EgressPolicy::Restricted(_) = plan.network.egress {
        return Err(error::unsupported(
            "restricted egress (this adapter writes no NetworkPolicy)",
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    for w in &plan.workloads {
        check_name("plan.workloads[].name", &w.name)?;
        if !names.insert(&w.name) {
            return Err(error::invalid(format!(
                "plan.workloads: `{}` appears twice",
                w.name
            )));
        }
        for m in &w.mounts {
            if !plan.volumes.iter().any(|v| v.name == m.volume) {
                return Err(error::invalid(format!(
                    "plan.workloads[{}].mounts: no volume `{}` in the plan",
                    w.name, m.volume
                )));
            }
        }
    }
    for v in &plan.volumes {
        check_name("plan.volumes[].name", &v.name)?;
    }
    Ok(())
}

/// The pod spec for one workload. Bare pods, never restarted: a finished
/// workload stays finished, with its log (the reconciler decides what next).
fn pod_spec(w: &WorkloadSpec, plan: &BundlePlan) -> Value {
    let image = match &w.digest {
        Some(digest) => format!("{}@{digest}", w.image.split('@').next().unwrap_or_default()),
        None => w.image.clone(),
    };
    let r = &w.resources;
    let mut resources = json!({"requests": {"cpu": format!("{}m", r.requests.cpu_millis), "memory": r.requests.memory_bytes.to_string()}});
    match &r.limits {
        Some(l) => {
            resources["limits"] =
                json!({"cpu": format!("{}m", l.cpu_millis), "memory": l.memory_bytes.to_string()});
        }
        // Pando's cluster admission policy wants a memory limit on every
        // container; without a LimitRange in the namespace, the request is it.
        None => resources["limits"] = json!({"memory": r.requests.memory_bytes.to_string()}),
    }
    let mut spec = json!({
        "restartPolicy": "Never",
        "hostname": w.name,
        // Pod Security `baseline`, and two rules of `restricted` that cost an
        // app nothing it should rely on: the default seccomp profile, no
        // setuid gains. Running as non-root is the image's choice.
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        // An app has no business with the Kubernetes API: no token mounted
        // (the host's pod rules refuse a pod that would mount one).
        "automountServiceAccountToken": false,
        "containers": [{
            "name": w.name,
            "image": image,
            "command": w.command,
            "args": w.args,
            "env": w.env.iter().map(|e| json!({"name": e.name, "value": e.value})).collect::<Vec<_>>(),
            "ports": w.ports.iter().map(|p| json!({"containerPort": p.port, "protocol": match p.protocol { Protocol::Tcp => "TCP", Protocol::Udp => "UDP" }})).collect::<Vec<_>>(),
            "resources": resources,
            "volumeMounts": w.mounts.iter().map(|m| json!({"name": m.volume, "mountPath": m.path, "readOnly": m.read_only})).collect::<Vec<_>>(),
            "securityContext": {"allowPrivilegeEscalation": false},
        }],
        "volumes": w.mounts.iter().map(|m| json!({"name": m.volume, "persistentVolumeClaim": {"claimName": m.volume}})).collect::<Vec<_>>(),
    });
    if !plan.pull_credentials.is_empty() {
        spec["imagePullSecrets"] = json!([{"name": PULL_SECRET}]);
    }
    spec
}

fn pull_secret(credentials: &[RegistryCredential], labels: &Value) -> Value {
    let auths: serde_json::Map<String, Value> = credentials
        .iter()
        .map(|c| {
            (
                c.registry.clone(),
                json!({"username": c.username, "password": c.password}),
            )
        })
        .collect();
    json!({
        "metadata": {"name": PULL_SECRET, "labels": labels},
        "type": "kubernetes.io/dockerconfigjson",
        "stringData": {".dockerconfigjson": json!({"auths": auths}).to_string()}
    })
}

/// FNV-1a: a stable hash (std's `DefaultHasher` may change between releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}

/// A pod as core sees a workload.
fn observed(pod: &Pod) -> ObservedWorkload {
    let status = pod.status.clone().unwrap_or_default();
    let ms = |t: &pando_adapter_sdk::kube::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time| {
        t.0.as_millisecond() as u64
    };
    let container = status.container_statuses.as_ref().and_then(|c| c.first());
    let terminated = container
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref());
    ObservedWorkload {
        name: pod.name_any(),
        phase: match status.phase.as_deref() {
            None | Some("Pending") => WorkloadPhase::Pending,
            Some("Running") => WorkloadPhase::Running,
            Some("Succeeded") => WorkloadPhase::Succeeded,
            Some("Failed") => WorkloadPhase::Failed,
            Some(_) => WorkloadPhase::Unknown,
        },
        digest: container
            .and_then(|c| c.image_id.split_once('@'))
            .map(|(_, d)| d.to_string()),
        exit_code: terminated.map(|t| t.exit_code),
        reason: status
            .reason
            .or(terminated.and_then(|t| t.reason.clone()))
            .unwrap_or_default(),
        started_at_ms: status.start_time.as_ref().map(ms),
        finished_at_ms: terminated.and_then(|t| t.finished_at.as_ref()).map(ms),
    }
}

/// Running or waiting to run: what holds resources.
fn active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    !matches!(phase, Some("Succeeded" | "Failed")) && pod.metadata.deletion_timestamp.is_none()
}

fn requests(pod: &Pod) -> Resources {
    let mut sum = Resources {
        cpu_millis: 0,
        memory_bytes: 0,
    };
    for c in pod.spec.iter().flat_map(|s| &s.containers) {
        let req = c
            .resources
            .as_ref()
            .and_then(|r| r.requests.clone())
            .unwrap_or_default();
        sum.cpu_millis += req.get("cpu").and_then(|q| millis(&q.0)).unwrap_or(0);
        sum.memory_bytes += req.get("memory").and_then(|q| quantity(&q.0)).unwrap_or(0);
    }
    sum
}

fn add(to: &mut Resources, r: &Resources) {
    to.cpu_millis += r.cpu_millis;
    to.memory_bytes += r.memory_bytes;
}

/// Per node: its name, allocatable resources, and what is left once
/// Pando's active pods (other than `except`'s) are counted.
fn free_by_node(except: Option<&str>) -> Result<Vec<(String, Resources, Resources)>, Error> {
    let pods = Api::<Pod>::all().list(&ours())?.items;
    let mut out = vec![];
    for node in Api::<Node>::all().list(&ListParams::default())?.items {
        let name = node.name_any();
        let alloc = node.status.and_then(|s| s.allocatable).unwrap_or_default();
        let all = Resources {
            cpu_millis: alloc.get("cpu").and_then(|q| millis(&q.0)).unwrap_or(0),
            memory_bytes: alloc
                .get("memory")
                .and_then(|q| quantity(&q.0))
                .unwrap_or(0),
        };
        let mut free = all;
        for pod in pods
            .iter()
            .filter(|p| active(p) && except.is_none_or(|app| app_of(*p) != app))
        {
            if pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(&name) {
                let r = requests(pod);
                free.cpu_millis = free.cpu_millis.saturating_sub(r.cpu_millis);
                free.memory_bytes = free.memory_bytes.saturating_sub(r.memory_bytes);
            }
        }
        out.push((name, all, free));
    }
    Ok(out)
}

/// A Kubernetes quantity in base units ("64Mi", "1G", "1073741824", "2").
fn quantity(q: &str) -> Option<u64> {
    let split = q.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(q.len());
    let (number, suffix) = q.split_at(split);
    let factor: f64 = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1048576.0,
        "Gi" => 1073741824.0,
        "Ti" => 1099511627776.0,
        _ => return None,
    };
    number
        .parse::<f64>()
        .ok()
        .map(|n| (n * factor).round() as u64)
}

/// A CPU quantity in millicores ("500m", "4", "1.5").
fn millis(q: &str) -> Option<u64> {
    match q.strip_suffix('m') {
        Some(m) => m.parse().ok(),
        None => q.parse::<f64>().ok().map(|n| (n * 1000.0).round() as u64),
    }
}

// Pure functions test natively: `cargo test` (no `--target`). Anything that
// reaches a host import (Kubernetes, logging) only works inside a component.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(quantity("64Mi"), Some(64 << 20));
        assert_eq!(quantity("1G"), Some(1_000_000_000));
        assert_eq!(millis("500m"), Some(500));
        assert_eq!(millis("4"), Some(4000));
    }

    #[test]
    fn names() {
        assert!(check_name("x", "web-1").is_ok());
        assert!(matches!(
            check_name("x", "Not_A_Name!"),
            Err(Error::Invalid(_))
        ));
    }
}
