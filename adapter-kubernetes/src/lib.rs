//! `pando-adapter-kubernetes`: Pando's Kubernetes runtime adapter, as a
//! WebAssembly component (`cargo build --release --target wasm32-wasip2
//! -p pando-adapter-kubernetes`).
//!
//! It is the reference adapter (`package kubernetes`, issue #72, O-33)
//! ported to the `pando:runtime` contract. It runs apps on a Kubernetes
//! cluster: one namespace per app, `pando-<app id>`, with a default-deny
//! NetworkPolicy (R-023, R-025); a headless Service per workload; bare pods
//! with `restartPolicy: Never` (R-151); a PersistentVolumeClaim per volume,
//! retained (R-204); and the edge in its own namespace (R-174). Core never
//! learns any of this vocabulary (R-251): it sees the capabilities (R-254).
//!
//! The cluster's credentials are the host's: every request goes through the
//! host's `pando:runtime/kubernetes` import, checked against the adapter's
//! grants (deploy/grants/kubernetes.yaml). So the reference's `kubeconfig`
//! and `context` settings are not this adapter's configuration.
//!
//! # Modules
//!
//! In folders by concern, over a kit that builds on none of them; no module
//! imports one that imports it back.
//!
//! - [`kit`]: the labels, the hash annotation (O-41), typed objects, the
//!   field manager; [`kit::names`], every Kubernetes name rule and the names
//!   the adapter gives (R-023); [`kit::pods`], a pod's life (R-151);
//!   [`kit::security`], the pods' security contexts;
//! - [`config`]: the configuration, its defaults and its checks, and
//!   [`config::schema`], its JSON Schema, reported by `info()`;
//! - [`app`]: an app's objects built from its plan, `apply` (O-41),
//!   `observe`, `stop` (R-150), `destroy` (R-204), `usage`, `in-use`,
//!   `watch-bundles` (O-52, R-148); the adapter's own binding, the quota and
//!   Pando's RoleBinding in each namespace it makes;
//! - [`isolation`]: the isolation class of a RuntimeClass handler (R-114,
//!   R-115), egress rules and the egress gateway (R-186, R-187), the ranges
//!   no egress rule reaches into (R-025), and DNS;
//! - [`volumes`]: claims, their volumes retained (R-204), and the namespace;
//! - [`trial`]: `trial` (R-097, R-187) with an observer container, the
//!   helper pods (`helper_image`) the adapter execs into, and
//!   `snapshot-volume` and `restore-volume` (R-206);
//! - [`edge`]: `apply-edge`, `observe-edge`, `remove-edge`, `edges`,
//!   `edge-volumes` (R-174), the edge's objects, and the NetworkPolicy canary
//!   of `health-check` (O-43);
//! - [`sessions`]: `exec` (R-084, R-228), `run` (R-423) and `logs`;
//! - [`capacity`]: `capacity` (R-243) and `largest-fit-for` (R-242), pure
//!   arithmetic over one node list and one pod list, and Kubernetes
//!   quantities read back as base units.
//!
//! # Methods
//!
//! | Method | |
//! |---|---|
//! | `info` | kind `kubernetes`, category cluster, the schema |
//! | `configure` | [`Config::parse`] |
//! | `capabilities` | R-254; reads the configured RuntimeClass for the isolation class (R-114, R-115); `egress-restriction` only with `egress_gateway_image` (R-186); `write-observation` and `image-import` false |
//! | `health-check` | O-43: the API answers, the RuntimeClass exists, and the NetworkPolicy canary says policies are enforced |
//! | `upstream` | R-023, computed |
//! | `has-image` | always true: images stay in their registry |
//! | `import-image` | `unsupported`: every node pulls from a registry |
//! | `apply` | namespace, Pando's RoleBinding, default-deny policy (R-023, R-025; open, none, or restricted egress, host names through an egress gateway, R-187), headless Services, bare pods (R-026, R-151), claims retained once bound (R-204), the pull Secret rewritten each call (O-41); deletes workloads the plan no longer has |
//! | `observe` | phases, digest, exit code and reason, times, claims; 4 requests whatever the number of workloads |
//! | `stop` | running and pending pods go; finished ones, Services, claims stay (R-150) |
//! | `destroy` | R-204: keeps the namespace, claims, policy and role binding by default; else each volume as `destroy-volume`, then the namespace |
//! | `usage`, `in-use` | from the pods' requests and the claims (no metrics API: `used` is none) |
//! | `create-volume`, `destroy-volume` | a claim in the app's namespace; its volume's reclaim policy back to `Delete` before the claim goes |
//! | `snapshot-volume` | a tar stream from a helper pod with the claim mounted read-only |
//! | `restore-volume` | R-206: in place, by the app's identity; unpacked beside the old contents and swapped only when whole; refused while a workload mounts the claim |
//! | `trial` | R-097, R-187: a namespace of its own that denies every connection in, the app's egress rules, an observer container reading `/proc/net`; removed on every path |
//! | `apply-edge` | R-174: in `edge_namespace`, a Deployment of at least two replicas spread by a soft anti-affinity, a PodDisruptionBudget (`minAvailable: 1`), the one LoadBalancer or NodePort Service; idempotent by hash (O-41) |
//! | `observe-edge` | serving when a replica is ready and the Service has an address; why not, in words; a warning when ready replicas share a node |
//! | `remove-edge` | the edge's Deployment, budget and Service; the namespace with the last edge |
//! | `edges`, `edge-volumes` | the edges' names; no volumes (replicas share nothing) |
//! | `logs` | the workload's newest pod by creation time, a finished one included; the host's stream returned as it is; `not-found` without a pod; 2 requests |
//! | `exec` | R-084, R-228: in the newest running pod, the raw session returned; `not-found` when the workload has no pod, `unavailable` when none runs |
//! | `run` | R-423: stdout spliced to the caller as it comes, the last 64 KiB of stderr kept for `command-failed`; `env` is `unsupported` (exec cannot add variables to a running container) |
//! | `capacity` | R-243: eligible nodes (Ready, schedulable, `node_selector`) less what pods that are not Pando's apps request; `largest_fit` counts every pod (R-242); 2 requests |
//! | `largest-fit-for` | R-242: as `largest_fit`, the app's own pods added back; 2 requests |
//! | `watch-bundles` | O-52, R-148: list, `watching`, one cluster-wide pod watch from the list's version, reopened after the server closes it; `expired` on 410 |
//!
//! Not done: deleting a pull Secret a plan no longer needs (it stays,
//! unused, until `destroy`).
#![warn(missing_docs)]

pub mod app;
pub mod capacity;
pub mod config;
pub mod edge;
pub mod isolation;
pub mod kit;
pub mod sessions;
pub mod trial;
pub mod volumes;

use app::{apply, lifecycle, observe, watch};
use config::schema;
use edge::canary;
use kit::names;
use sessions::{exec, logs};
use trial::snapshot;

use pando_adapter_sdk::Adapter;
use pando_adapter_sdk::error::{self, ErrorExt};
#[cfg(all(target_arch = "wasm32", feature = "export"))]
use pando_adapter_sdk::export_adapter;
use pando_adapter_sdk::kube::k8s_openapi::api::node::v1::RuntimeClass;
use pando_adapter_sdk::kube::{Api, KubeError};
use pando_adapter_sdk::kubernetes::{self, Method, Request};
use pando_adapter_sdk::types::{
    BundleHandle, BundlePlan, BundleRef, BundleUsage, Category, DestroyOptions, EdgePlan,
    EdgeState, Error, InUseReport, InputStream, IsolationClass, KindInfo, ObservedBundle,
    RuntimeCapabilities, UpstreamAddress, VolumeHandle, VolumeRequest, WorkloadRef,
};

pub use config::Config;

/// The adapter's kind string (the reference's `const Kind`).
pub const KIND: &str = "kubernetes";

/// The one sentence `info()` gives an operator.
pub const DESCRIPTION: &str = "Runs each app in its own namespace of a Kubernetes cluster, as \
    bare pods behind headless Services, isolated by default-deny NetworkPolicies.";

/// The Kubernetes adapter: its configuration, and nothing else (the host
/// may drop an instance between calls; the cluster holds the state).
pub struct KubernetesAdapter {
    config: Config,
}

impl KubernetesAdapter {
    /// The adapter for a configuration already parsed.
    pub fn new(config: Config) -> Self {
        KubernetesAdapter { config }
    }

    /// Its configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The configured RuntimeClass, read from the cluster; `None` when none
    /// is configured. One that does not exist is `unavailable`, naming the
    /// setting: pods asking for it would never start.
    fn runtime_class(&self) -> Result<Option<RuntimeClass>, Error> {
        let Some(name) = &self.config.runtime_class else {
            return Ok(None);
        };
        match Api::<RuntimeClass>::all().get_opt(name) {
            Ok(Some(class)) => Ok(Some(class)),
            Ok(None) => Err(error::unavailable(format!(
                "RuntimeClass `{name}` (configuration field `runtime_class`) does not exist in \
                 the cluster: create it, or unset `runtime_class`"
            ))),
            Err(e) => Err(Error::from(e).context(&format!("reading RuntimeClass `{name}`"))),
        }
    }
}

impl Adapter for KubernetesAdapter {
    fn info() -> KindInfo {
        KindInfo {
            kind: KIND.into(),
            category: Category::Cluster,
            description: DESCRIPTION.into(),
            config_schema: schema::FILLED.into(),
        }
    }

    fn configure(config: &str) -> Result<Self, Error> {
        let config = Config::parse(config)?;
        // The adapter's own budget, under the host's grant rate: every
        // request of this instance waits its turn at `api_qps`.
        pando_adapter_sdk::kube::set_budget(config.api_qps, config.api_burst);
        Ok(KubernetesAdapter::new(config))
    }

    /// What this adapter can do (R-254): true only for what works, so core
    /// never offers a call that answers `unsupported`.
    ///
    /// The isolation class is the configured RuntimeClass's (R-114,
    /// R-115): `sandboxed` for a gVisor or Kata handler, read from the
    /// cluster; `shared-kernel` without one.
    fn capabilities(&self) -> Result<RuntimeCapabilities, Error> {
        let isolation = match self.runtime_class()? {
            Some(class) => isolation::for_handler(&class.handler),
            None => IsolationClass::SharedKernel,
        };
        Ok(RuntimeCapabilities {
            isolation,
            exec: true,
            run: true,
            logs: true,
            // R-097: an observer container reads the sockets ([`trial`]).
            trial: true,
            // Nothing like a container diff exists in the API.
            write_observation: false,
            // R-186: only with a gateway image to run (R-187, [`isolation::egress`]).
            egress_restriction: self.config.egress_gateway_image.is_some(),
            // Every node pulls from a registry.
            image_import: false,
            // A helper pod with the claim mounted ([`snapshot`]).
            volume_snapshot: true,
            // R-174: the edge methods are implemented ([`edge`]).
            edge: true,
        })
    }

    /// Whether the cluster can be used (O-43): the API answers (`GET
    /// /readyz`), the configured RuntimeClass exists, and the network
    /// plugin enforces NetworkPolicy, which every isolation guarantee here
    /// rests on ([`canary`]).
    fn health_check(&self) -> Result<(), Error> {
        let response = kubernetes::send(&Request {
            method: Method::Get,
            path: "/readyz".into(),
            query: Vec::new(),
            body: None,
            content_type: None,
        })
        .map_err(|e| Error::from(KubeError::from(e)))?;
        if !(200..300).contains(&response.status) {
            let why = KubeError::from_response(response.status, &response.headers, &response.body);
            return Err(error::unavailable(format!(
                "the Kubernetes API server is not ready (GET /readyz): {why}"
            )));
        }
        self.runtime_class()?;
        canary::check(&self.config)
    }

    /// Where the proxy reaches a workload's port (R-023): its Service's
    /// name, computed (see [`names::upstream`]).
    fn upstream(&self, workload: WorkloadRef, port: u16) -> Result<UpstreamAddress, Error> {
        names::upstream(&self.config.cluster_domain, &workload, port)
    }

    /// True: this runtime runs images from a registry, which is where they
    /// stay, and imports none of its own.
    fn has_image(&self, _image: String) -> Result<bool, Error> {
        Ok(true)
    }

    /// Converges the app's namespace toward the plan ([`apply`], O-41).
    fn apply(&self, plan: BundlePlan) -> Result<BundleHandle, Error> {
        apply::apply(&self.config, &plan)
    }

    /// What exists of the app; never remediates ([`observe`]).
    fn observe(&self, bundle: BundleRef) -> Result<ObservedBundle, Error> {
        observe::observe(&bundle)
    }

    /// Removes the running pods, keeps the finished ones (R-150).
    fn stop(&self, bundle: BundleRef) -> Result<(), Error> {
        lifecycle::stop(&bundle)
    }

    /// Removes the app, its volumes only when asked (R-204).
    fn destroy(&self, bundle: BundleRef, options: DestroyOptions) -> Result<(), Error> {
        lifecycle::destroy(&bundle, &options)
    }

    /// What the app's pods request and its claims hold.
    fn usage(&self, bundle: BundleRef) -> Result<BundleUsage, Error> {
        lifecycle::usage(&bundle)
    }

    /// Pando's apps, volumes and requests on the cluster.
    fn in_use(&self) -> Result<InUseReport, Error> {
        lifecycle::in_use()
    }

    /// A claim in the app's namespace.
    fn create_volume(&self, request: VolumeRequest) -> Result<VolumeHandle, Error> {
        volumes::create_volume(&self.config, &request)
    }

    /// The claim, its volume's reclaim policy set back to `Delete` first.
    fn destroy_volume(&self, volume: VolumeHandle) -> Result<(), Error> {
        volumes::destroy_volume(&volume)
    }

    /// The volume's contents as a tar stream, from a helper pod with the
    /// claim mounted read-only ([`snapshot`]).
    fn snapshot_volume(
        &self,
        volume: VolumeHandle,
        into: pando_adapter_sdk::types::OutputStream,
    ) -> Result<(), Error> {
        snapshot::snapshot_volume(&self.config, &volume, &into)
    }

    /// Replaces the volume's contents with a snapshot, in place only
    /// (R-206), losing nothing on a bad stream ([`snapshot`]).
    fn restore_volume(&self, volume: VolumeHandle, from: InputStream) -> Result<(), Error> {
        snapshot::restore_volume(&self.config, &volume, &from)
    }

    /// The workload once, in a namespace of its own, watched (R-097,
    /// R-187) ([`trial`]).
    fn trial(
        &self,
        request: pando_adapter_sdk::types::TrialRequest,
    ) -> Result<pando_adapter_sdk::types::TrialResult, Error> {
        trial::trial(&self.config, &request)
    }

    /// Creates or updates the edge (R-174, [`edge::apply_edge`]).
    fn apply_edge(&self, plan: EdgePlan) -> Result<(), Error> {
        edge::apply_edge(&self.config, &plan)
    }

    /// Whether the edge serves, why not, and its warnings (R-174).
    fn observe_edge(&self, name: String) -> Result<EdgeState, Error> {
        edge::observe_edge(&self.config, &name)
    }

    /// Removes the edge, and its namespace with the last one (R-174).
    fn remove_edge(&self, name: String) -> Result<(), Error> {
        edge::remove_edge(&self.config, &name)
    }

    /// The edges' names (R-174).
    fn edges(&self) -> Result<Vec<String>, Error> {
        edge::edges(&self.config)
    }

    /// None: edge replicas share nothing; certificates on this runtime are
    /// kept by Pando, not by the edge.
    fn edge_volumes(&self) -> Result<Vec<VolumeHandle>, Error> {
        Ok(Vec::new())
    }

    /// What the eligible nodes can hold, less what others request there
    /// (R-243), and the roomiest node (R-242): [`capacity::report`], from
    /// 2 requests.
    fn capacity(&self) -> Result<pando_adapter_sdk::types::CapacityReport, Error> {
        let c = capacity::read(
            &self.config.node_selector,
            self.config.runtime_class.as_deref(),
        )?;
        Ok(capacity::report(&c.nodes, &c.pods, c.overhead))
    }

    /// The roomiest node for one app, its own pods' requests added back
    /// (R-242): [`capacity::largest_fit_for`].
    fn largest_fit_for(
        &self,
        bundle: String,
    ) -> Result<Option<pando_adapter_sdk::types::Fit>, Error> {
        let c = capacity::read(
            &self.config.node_selector,
            self.config.runtime_class.as_deref(),
        )?;
        Ok(capacity::largest_fit_for(
            &c.nodes, &c.pods, &bundle, c.overhead,
        ))
    }

    /// The newest pod's log, a finished one included ([`logs`]).
    fn logs(
        &self,
        workload: WorkloadRef,
        options: pando_adapter_sdk::types::LogOptions,
    ) -> Result<InputStream, Error> {
        logs::logs(&workload, &options)
    }

    /// A session in the running pod (R-084, R-228: core authorized and
    /// audited it) ([`exec::exec`]).
    fn exec(
        &self,
        workload: WorkloadRef,
        request: pando_adapter_sdk::types::ExecRequest,
    ) -> Result<Box<dyn pando_adapter_sdk::ExecSession>, Error> {
        exec::exec(&workload, &request)
    }

    /// A command to completion in the running pod (R-423) ([`exec::run`]).
    fn run(
        &self,
        workload: WorkloadRef,
        request: pando_adapter_sdk::types::RunRequest,
        stdout: pando_adapter_sdk::types::OutputStream,
    ) -> Result<(), Error> {
        exec::run(&workload, &request, &stdout)
    }

    /// Reports every app pod's changes, never acts (O-52, R-148)
    /// ([`watch::watch_bundles`]).
    fn watch_bundles(
        &self,
        sink: pando_adapter_sdk::types::BundleSink,
    ) -> Result<pando_adapter_sdk::types::WatchEnd, Error> {
        watch::watch_bundles(&sink)
    }

    /// Not offered: every node pulls from a registry.
    fn import_image(&self, _from: InputStream) -> Result<String, Error> {
        Err(Error::Unsupported(
            "import_image is not supported by the Kubernetes adapter: every node pulls its \
             images from a registry; push the image there instead"
                .into(),
        ))
    }
}

// The component's exports. Only for wasm32: their names (`pando:runtime/…`)
// are not symbols a native linker accepts, and the native build exists for
// the unit tests. Without the `export` feature, for a component that exports
// an adapter of its own built on these modules.
#[cfg(all(target_arch = "wasm32", feature = "export"))]
export_adapter!(KubernetesAdapter);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_names_the_kind_and_carries_the_schema() {
        let info = KubernetesAdapter::info();
        assert_eq!(info.kind, "kubernetes");
        assert_eq!(info.category, Category::Cluster);
        assert!(!info.description.is_empty());
        let schema: serde_json::Value = serde_json::from_str(&info.config_schema).unwrap();
        assert_eq!(schema, schema::schema());
    }

    #[test]
    fn configure_parses_the_config() {
        let adapter = KubernetesAdapter::configure(
            r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12","cluster_domain":"k.example"}"#,
        )
        .ok()
        .unwrap();
        assert_eq!(adapter.config().cluster_domain, "k.example");
        assert!(matches!(
            KubernetesAdapter::configure("{}"),
            Err(Error::Invalid(_))
        ));
    }

    #[test]
    fn r023_upstream_uses_the_configured_cluster_domain() {
        let adapter = KubernetesAdapter::configure(
            r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12","cluster_domain":"k.example"}"#,
        )
        .ok()
        .unwrap();
        let up = adapter
            .upstream(
                WorkloadRef {
                    bundle: "shop".into(),
                    workload: "web".into(),
                },
                80,
            )
            .unwrap();
        assert_eq!(up.host, "web.pando-shop.svc.k.example");
        assert_eq!(up.port, 80);
    }

    #[test]
    fn r186_capabilities_without_a_runtime_class_need_no_cluster() {
        // Without `runtime_class` no request is made, so this runs natively.
        let mut config =
            Config::parse(r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12"}"#).unwrap();
        let caps = KubernetesAdapter::new(config.clone())
            .capabilities()
            .unwrap();
        assert_eq!(caps.isolation, IsolationClass::SharedKernel);
        // Only what this build implements is declared (R-254).
        assert!(caps.exec && caps.run && caps.logs);
        assert!(caps.trial, "R-097");
        assert!(caps.volume_snapshot);
        assert!(caps.edge, "R-174: the edge is implemented");
        assert!(!caps.write_observation && !caps.image_import);
        assert!(
            !caps.egress_restriction,
            "R-186: no gateway image, no egress restriction"
        );
        config.egress_gateway_image = Some("registry.example.com/pando:1".into());
        let caps = KubernetesAdapter::new(config).capabilities().unwrap();
        assert!(
            caps.egress_restriction,
            "R-187: with a gateway image, egress is restricted through it"
        );
    }

    #[test]
    fn has_image_is_true() {
        let adapter = KubernetesAdapter::new(
            Config::parse(r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12"}"#).unwrap(),
        );
        assert!(adapter.has_image("busybox:1.36".into()).unwrap());
    }
}
