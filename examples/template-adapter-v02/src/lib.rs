//! A template Pando runtime adapter of contract `pando:runtime@0.2.0` (WASI
//! 0.3), on the SDK's 0.2 line: the 0.1 template (`examples/template-adapter`)
//! with its calls `async`. Each app is a Kubernetes namespace
//! `pando-<app>` holding one bare pod (and one headless Service, for its
//! name) per workload, and one PersistentVolumeClaim per volume.
//!
//! Copy this crate to start an adapter of your own; docs/authoring.md walks
//! through it. Beyond the 0.1 template it runs each workload as its
//! `security` says, and offers `exec` (the Kubernetes import's session
//! handed on: a terminal resized while its program runs). Everything this
//! file does not implement (run, logs, trial, snapshots, image import, the
//! edge) keeps the SDK's default answer, `unsupported`, and `capabilities`
//! says so in advance.
//!
//! Everything the adapter writes carries the label `LABEL` (the app's id),
//! so that it finds its own objects again, and never touches anyone else's.

use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{
    Namespace, Node, PersistentVolumeClaim, Pod, Secret, Service,
};
use pando_adapter_sdk::kube::watcher::{Event, Watcher, wait_for_deletion, watcher};
use pando_adapter_sdk::kube::{
    Api, DeleteParams, ExecParams, ListParams, PostParams, ResourceExt, WatchParams,
};
use pando_adapter_sdk::types::*;
use pando_adapter_sdk::{Adapter, error, export_adapter, info, time, watch};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

mod objects;
use objects::*;

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
    /// The RuntimeClass of the app's pods; `None`: the cluster's default.
    runtime_class: Option<String>,
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
                    "volume_size_bytes": {"type": "integer", "minimum": 1, "default": 1073741824u64},
                    "runtime_class": {"type": "string", "description": "the RuntimeClass the app's pods run under; unset: the cluster's default"}
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
        let runtime_class = runtime_class(take("runtime_class"))?;
        if let Some(unknown) = fields.keys().next() {
            return Err(error::invalid(format!(
                "configuration field `{unknown}` is not known; allowed: cluster_domain, \
                 volume_size_bytes, runtime_class"
            )));
        }
        Ok(Template {
            cluster_domain,
            volume_size_bytes,
            runtime_class,
        })
    }

    /// What works. Core only offers what is `true` here; every call left to
    /// the SDK's defaults answers `unsupported`, which is what `false` means.
    fn capabilities(&self) -> Result<RuntimeCapabilities, Error> {
        Ok(RuntimeCapabilities {
            isolation: IsolationClass::SharedKernel, // plain containers
            exec: true,                              // the import's session, handed on
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
    async fn health_check(&self) -> Result<(), Error> {
        Api::<Node>::all()
            .list(&ListParams::default().limit(1))
            .await?;
        Ok(())
    }

    /// A command in a workload's pod: core's stdin and terminal sizes go to
    /// the Kubernetes import as they are, and its session comes back as it
    /// is; the bytes never pass through the adapter.
    async fn exec(
        &self,
        workload: WorkloadRef,
        request: ExecRequest,
        stdin: Option<StreamReader<u8>>,
        resize: Option<StreamReader<TerminalSize>>,
    ) -> Result<ExecSession, Error> {
        check_name("workload", &workload.workload)?;
        let params = ExecParams {
            container: None,
            command: request.command,
            stdin: request.stdin,
            tty: request.tty,
        };
        let session = Api::<Pod>::namespaced(&namespace(&workload.bundle))
            .exec(&workload.workload, &params, stdin, resize)
            .await?;
        Ok(ExecSession::from(session))
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
    async fn apply(&self, plan: BundlePlan) -> Result<BundleHandle, Error> {
        check_plan(&plan)?;
        let ns = namespace(&plan.id);
        let labels = json!({ LABEL: plan.id });
        if Api::<Namespace>::all().get_opt(&ns).await?.is_none() {
            create(
                &Api::<Namespace>::all(),
                json!({"metadata": {"name": ns, "labels": labels}}),
            )
            .await?;
        }
        // Credentials may have changed anywhere: rewritten on every apply
        // (the conformance suite's `--rewrites` allows `secrets`).
        if !plan.pull_credentials.is_empty() {
            let secret = pull_secret(&plan.pull_credentials, &labels);
            let secrets = Api::<Secret>::namespaced(&ns);
            match secrets.get_opt(PULL_SECRET).await? {
                None => create(&secrets, secret).await?,
                Some(_) => {
                    secrets
                        .replace(PULL_SECRET, &PostParams::default(), &from_json(secret)?)
                        .await?;
                }
            }
        }
        for volume in &plan.volumes {
            let claims = Api::<PersistentVolumeClaim>::namespaced(&ns);
            if claims.get_opt(&volume.name).await?.is_none() {
                let size = volume.size_bytes.unwrap_or(self.volume_size_bytes);
                create(
                    &claims,
                    json!({
                        "metadata": {"name": volume.name, "labels": labels},
                        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size.to_string()}}}
                    }),
                ).await?;
            }
        }
        let pods = Api::<Pod>::namespaced(&ns);
        let services = Api::<Service>::namespaced(&ns);
        for w in &plan.workloads {
            // A headless Service gives the pod the name `upstream` computes.
            if services.get_opt(&w.name).await?.is_none() {
                create(
                    &services,
                    json!({
                        "metadata": {"name": w.name, "labels": labels},
                        "spec": {"clusterIP": "None", "selector": {LABEL: plan.id, "template.pando.dev/workload": w.name}}
                    }),
                ).await?;
            }
            // A pod's spec cannot change: compare a hash of what we would
            // write with the one we wrote, and replace the pod only if they
            // differ. Same hash: nothing is written, nothing restarts.
            let spec = pod_spec(w, &plan, self.runtime_class.as_deref());
            let hash = format!("{:016x}", fnv1a(spec.to_string().as_bytes()));
            if let Some(existing) = pods.get_opt(&w.name).await? {
                if existing.annotations().get(HASH) == Some(&hash)
                    && existing.metadata.deletion_timestamp.is_none()
                {
                    continue;
                }
                // Wait until the old pod is gone: the new one has its name.
                pods.delete_opt(&w.name, &DeleteParams::default().grace_period(0))
                    .await?;
                if !wait_for_deletion(&pods, &w.name, std::time::Duration::from_secs(30)).await? {
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
            )
            .await?;
            info!(bundle = plan.id, workload = w.name, "pod created");
        }
        Ok(BundleHandle {
            location: format!("kubernetes/{ns}"),
            id: plan.id,
        })
    }

    /// What exists, read only: observe never repairs anything.
    async fn observe(&self, bundle: BundleRef) -> Result<ObservedBundle, Error> {
        let ns = namespace(&bundle.id);
        let exists = Api::<Namespace>::all()
            .get_opt(&ns)
            .await?
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
            .list(&ours())
            .await?
            .items
            .iter()
            .map(observed)
            .collect();
        for claim in Api::<PersistentVolumeClaim>::namespaced(&ns)
            .list(&ours())
            .await?
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
    async fn stop(&self, bundle: BundleRef) -> Result<(), Error> {
        let pods = Api::<Pod>::namespaced(&namespace(&bundle.id));
        for pod in pods.list(&ours()).await?.items {
            let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
            if !matches!(phase, Some("Succeeded" | "Failed")) {
                pods.delete_opt(&pod.name_any(), &DeleteParams::default())
                    .await?;
            }
        }
        Ok(())
    }

    /// Remove the app. With volumes: the whole namespace. Without: its pods,
    /// Services and Secret; the namespace stays, holding the claims.
    async fn destroy(&self, bundle: BundleRef, options: DestroyOptions) -> Result<(), Error> {
        let ns = namespace(&bundle.id);
        if !options.keep_volumes {
            // The claims first, so that they are marked as going at once
            // (the namespace controller would take its time).
            let claims = Api::<PersistentVolumeClaim>::namespaced(&ns);
            for claim in claims.list(&ours()).await?.items {
                claims
                    .delete_opt(&claim.name_any(), &DeleteParams::default())
                    .await?;
            }
            Api::<Namespace>::all()
                .delete_opt(&ns, &DeleteParams::background())
                .await?;
            return Ok(());
        }
        if Api::<Namespace>::all().get_opt(&ns).await?.is_none() {
            return Ok(()); // nothing to destroy
        }
        let pods = Api::<Pod>::namespaced(&ns);
        for pod in pods.list(&ours()).await?.items {
            pods.delete_opt(&pod.name_any(), &DeleteParams::default())
                .await?;
        }
        let services = Api::<Service>::namespaced(&ns);
        for svc in services.list(&ours()).await?.items {
            services
                .delete_opt(&svc.name_any(), &DeleteParams::default())
                .await?;
        }
        Api::<Secret>::namespaced(&ns)
            .delete_opt(PULL_SECRET, &DeleteParams::default())
            .await?;
        Ok(())
    }

    /// Destroying a volume that is not there succeeds: callers retry.
    async fn destroy_volume(&self, volume: VolumeHandle) -> Result<(), Error> {
        check_name("volume name", &volume.name)?;
        Api::<PersistentVolumeClaim>::namespaced(&namespace(&volume.bundle))
            .delete_opt(&volume.name, &DeleteParams::default())
            .await?;
        Ok(())
    }

    /// Volumes come with plans here; a volume of its own is refused, after
    /// checking the name (an invalid name is `invalid`, whatever we offer).
    async fn create_volume(&self, request: VolumeRequest) -> Result<VolumeHandle, Error> {
        check_name("volume name", &request.name)?;
        Err(error::unsupported(
            "create-volume (volumes are made by apply)",
        ))
    }

    /// What an app's pods request.
    async fn usage(&self, bundle: BundleRef) -> Result<BundleUsage, Error> {
        let pods = Api::<Pod>::namespaced(&namespace(&bundle.id))
            .list(&ours())
            .await?
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
    async fn in_use(&self) -> Result<InUseReport, Error> {
        let mut report = InUseReport {
            bundles: vec![],
            volumes: vec![],
            requested: Resources {
                cpu_millis: 0,
                memory_bytes: 0,
            },
        };
        for pod in Api::<Pod>::all()
            .list(&ours())
            .await?
            .items
            .iter()
            .filter(|p| active(p))
        {
            add(&mut report.requested, &requests(pod));
            report.bundles.push(app_of(pod));
        }
        for claim in Api::<PersistentVolumeClaim>::all()
            .list(&ours())
            .await?
            .items
        {
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
    async fn capacity(&self) -> Result<CapacityReport, Error> {
        let fits = free_by_node(None).await?;
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
    async fn largest_fit_for(&self, bundle: String) -> Result<Option<Fit>, Error> {
        let fits = free_by_node(Some(&bundle)).await?;
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
    async fn watch_bundles(&self) -> Result<BundleWatch, Error> {
        let pods = watcher(Api::<Pod>::all(), WatchParams::default().labels(LABEL));
        Ok(watch::bundle_watch(|events| follow(pods, events)))
    }
}

/// The events of `watch_bundles`, sent by a task of the adapter after the
/// call returned, until core drops them, the call is cancelled or the
/// watcher cannot go on.
async fn follow(mut pods: Watcher<Pod>, mut events: watch::Events) -> Result<WatchEnd, Error> {
    let mut listed = false;
    loop {
        let (pod, deleted) = match pods.next().await {
            Ok(Event::Init) if listed => return Ok(WatchEnd::Expired),
            Ok(Event::Init | Event::InitApply(_)) => continue,
            Ok(Event::InitDone) => {
                listed = true;
                if events.send(BundleEvent::Watching).await.is_err() {
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
        if events.send(BundleEvent::Changed(change)).await.is_err() {
            return Ok(WatchEnd::Cancelled);
        }
    }
}

export_adapter!(Template);
