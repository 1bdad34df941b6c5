//! `pando-liar-adapter`: the Kubernetes adapter with one lie, chosen by its
//! configuration field `lie` ([`Lie`]), for the conformance suite's own
//! tests (`tests/tests/all/conformance_liars.rs`): the suite must fail each
//! lie, naming the declaration it breaks.
//!
//! In every call but the lie's it is
//! [`KubernetesAdapter`](pando_adapter_kubernetes::KubernetesAdapter) as it
//! is, with the same configuration (less `lie`) and the same grants, so a
//! failure the tests see is the lie's, not another runtime's; `lie: none`
//! is the control. Each lie is one a careless or dishonest adapter would
//! tell:
//!
//! | `lie` | What the adapter does |
//! |---|---|
//! | `logs-of-another-workload` | `logs` of a workload answers another workload's log of the same app |
//! | `egress-ignored` | `apply` opens the plan's egress; `egress_restriction` still declared |
//! | `trial-declared-ports` | `trial` reports the ports the workload declares, not those it listened on |
//! | `restore-ignored` | `restore_volume` reads the snapshot to its end and writes nothing |
//! | `edge-claims-serving` | `apply_edge` wires the edge to ports its image does not listen on (the plan's, plus one), so it never serves; `observe_edge` of an edge that exists says it serves, every replica ready, with an address |
//! | `observe-fails` | `observe` answers `unavailable` |
//! | `image-import-declared` | `image_import` declared; `import_image` still `unsupported` |
//! | `write-observation-declared` | `write_observation` declared; a trial still reports no writes |
//!
//! A test component: never deploy it.
#![warn(missing_docs)]

pub mod lie;
pub mod lies;

use pando_adapter_kubernetes::KubernetesAdapter;
use pando_adapter_kubernetes::config::schema;
use pando_adapter_sdk::types::{
    BundleHandle, BundlePlan, BundleRef, BundleSink, BundleUsage, CapacityReport, Category,
    DestroyOptions, EdgePlan, EdgeState, EgressPolicy, Error, ExecRequest, Fit, InUseReport,
    InputStream, KindInfo, LogOptions, ObservedBundle, OutputStream, RunRequest,
    RuntimeCapabilities, TrialRequest, TrialResult, UpstreamAddress, VolumeHandle, VolumeRequest,
    WatchEnd, WorkloadRef,
};
use pando_adapter_sdk::{Adapter, ExecSession, error, warn};

pub use lie::Lie;

/// The adapter's kind.
pub const KIND: &str = "kubernetes-liar";

/// The Kubernetes adapter and the one lie it tells.
pub struct Liar {
    honest: KubernetesAdapter,
    lie: Lie,
}

impl Liar {
    /// Whether the lie is `lie`, saying so in the host's log when it is, so
    /// that a run's log shows each call that lied.
    fn lies(&self, lie: Lie, call: &str) -> bool {
        let lies = self.lie == lie;
        if lies {
            warn!("lying in {call}: {lie:?}");
        }
        lies
    }
}

impl Adapter for Liar {
    fn info() -> KindInfo {
        KindInfo {
            kind: KIND.into(),
            category: Category::Cluster,
            description: "A test adapter that lies: the Kubernetes adapter with one lie, chosen \
                          by `lie`, which the conformance suite must catch. Never deploy it."
                .into(),
            config_schema: lie::schema(schema::FILLED),
        }
    }

    fn configure(config: &str) -> Result<Self, Error> {
        let (lie, rest) = lie::split(config)?;
        Ok(Liar {
            honest: KubernetesAdapter::configure(&rest)?,
            lie,
        })
    }

    fn capabilities(&self) -> Result<RuntimeCapabilities, Error> {
        let mut caps = self.honest.capabilities()?;
        if self.lies(Lie::ImageImportDeclared, "capabilities") {
            caps.image_import = true;
        }
        if self.lies(Lie::WriteObservationDeclared, "capabilities") {
            caps.write_observation = true;
        }
        Ok(caps)
    }

    fn health_check(&self) -> Result<(), Error> {
        self.honest.health_check()
    }

    fn capacity(&self) -> Result<CapacityReport, Error> {
        self.honest.capacity()
    }

    fn largest_fit_for(&self, bundle: String) -> Result<Option<Fit>, Error> {
        self.honest.largest_fit_for(bundle)
    }

    fn in_use(&self) -> Result<InUseReport, Error> {
        self.honest.in_use()
    }

    fn apply(&self, mut plan: BundlePlan) -> Result<BundleHandle, Error> {
        if self.lies(Lie::EgressIgnored, "apply") {
            plan.network.egress = EgressPolicy::Open;
        }
        self.honest.apply(plan)
    }

    fn observe(&self, bundle: BundleRef) -> Result<ObservedBundle, Error> {
        if self.lies(Lie::ObserveFails, "observe") {
            return Err(error::unavailable("the liar's observe is down"));
        }
        self.honest.observe(bundle)
    }

    fn stop(&self, bundle: BundleRef) -> Result<(), Error> {
        self.honest.stop(bundle)
    }

    fn destroy(&self, bundle: BundleRef, options: DestroyOptions) -> Result<(), Error> {
        self.honest.destroy(bundle, options)
    }

    fn usage(&self, bundle: BundleRef) -> Result<BundleUsage, Error> {
        self.honest.usage(bundle)
    }

    fn create_volume(&self, request: VolumeRequest) -> Result<VolumeHandle, Error> {
        self.honest.create_volume(request)
    }

    fn destroy_volume(&self, volume: VolumeHandle) -> Result<(), Error> {
        self.honest.destroy_volume(volume)
    }

    fn snapshot_volume(&self, volume: VolumeHandle, into: OutputStream) -> Result<(), Error> {
        self.honest.snapshot_volume(volume, into)
    }

    fn restore_volume(&self, volume: VolumeHandle, from: InputStream) -> Result<(), Error> {
        if self.lies(Lie::RestoreIgnored, "restore_volume") {
            // Read to the end, as a restore does, so the caller sees its
            // whole snapshot taken.
            lies::drain(&from)?;
            return Ok(());
        }
        self.honest.restore_volume(volume, from)
    }

    fn has_image(&self, image: String) -> Result<bool, Error> {
        self.honest.has_image(image)
    }

    fn import_image(&self, from: InputStream) -> Result<String, Error> {
        self.honest.import_image(from)
    }

    fn logs(&self, workload: WorkloadRef, options: LogOptions) -> Result<InputStream, Error> {
        if self.lies(Lie::LogsOfAnotherWorkload, "logs") {
            let seen = self.honest.observe(BundleRef {
                id: workload.bundle.clone(),
            })?;
            // An app of one workload has no other log to answer: the truth.
            if let Some(other) = lies::other_workload(&seen, &workload.workload) {
                let other = WorkloadRef {
                    bundle: workload.bundle,
                    workload: other,
                };
                return self.honest.logs(other, options);
            }
        }
        self.honest.logs(workload, options)
    }

    fn exec(
        &self,
        workload: WorkloadRef,
        request: ExecRequest,
    ) -> Result<Box<dyn ExecSession>, Error> {
        self.honest.exec(workload, request)
    }

    fn run(
        &self,
        workload: WorkloadRef,
        request: RunRequest,
        stdout: OutputStream,
    ) -> Result<(), Error> {
        self.honest.run(workload, request, stdout)
    }

    fn trial(&self, request: TrialRequest) -> Result<TrialResult, Error> {
        if self.lies(Lie::TrialDeclaredPorts, "trial") {
            let spec = request.workload.clone();
            return Ok(lies::declared_ports(self.honest.trial(request)?, &spec));
        }
        self.honest.trial(request)
    }

    fn upstream(&self, workload: WorkloadRef, port: u16) -> Result<UpstreamAddress, Error> {
        self.honest.upstream(workload, port)
    }

    fn watch_bundles(&self, sink: BundleSink) -> Result<WatchEnd, Error> {
        self.honest.watch_bundles(sink)
    }

    fn apply_edge(&self, mut plan: EdgePlan) -> Result<(), Error> {
        if self.lies(Lie::EdgeClaimsServing, "apply_edge") {
            // Wired to ports the image does not listen on, so it never
            // serves: saying it does is then a lie the runtime contradicts.
            plan.http_port = lies::miswired(plan.http_port);
            plan.https_port = lies::miswired(plan.https_port);
        }
        self.honest.apply_edge(plan)
    }

    fn observe_edge(&self, name: String) -> Result<EdgeState, Error> {
        let state = self.honest.observe_edge(name)?;
        if self.lies(Lie::EdgeClaimsServing, "observe_edge") {
            return Ok(lies::claim_serving(state));
        }
        Ok(state)
    }

    fn remove_edge(&self, name: String) -> Result<(), Error> {
        self.honest.remove_edge(name)
    }

    fn edges(&self) -> Result<Vec<String>, Error> {
        self.honest.edges()
    }

    fn edge_volumes(&self) -> Result<Vec<VolumeHandle>, Error> {
        self.honest.edge_volumes()
    }
}

// Only for wasm32: the exports' names are not symbols a native linker
// accepts, and the native build exists for the unit tests.
#[cfg(target_arch = "wasm32")]
pando_adapter_sdk::export_adapter!(Liar);

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12""#;

    #[test]
    fn the_kubernetes_configuration_with_a_lie_configures_and_the_rest_is_still_checked() {
        let Ok(liar) = Liar::configure(&format!(r#"{CONFIG},"lie":"observe-fails"}}"#)) else {
            panic!("the Kubernetes configuration plus `lie` configures");
        };
        assert_eq!(liar.lie, Lie::ObserveFails);
        // The Kubernetes parser still refuses what it does not know.
        let Err(Error::Invalid(message)) = Liar::configure(&format!(r#"{CONFIG},"bogus":1}}"#))
        else {
            panic!("an unknown field is invalid");
        };
        assert!(message.contains("bogus"), "{message}");
    }

    #[test]
    fn info_says_it_lies_and_its_schema_is_the_kubernetes_one_with_lie() {
        let info = Liar::info();
        assert_eq!(info.kind, KIND);
        assert!(info.description.contains("lies"));
        let schema: serde_json::Value = serde_json::from_str(&info.config_schema).unwrap();
        assert!(schema["properties"]["pod_cidr"].is_object());
        assert!(schema["properties"]["lie"]["enum"].is_array());
    }
}
