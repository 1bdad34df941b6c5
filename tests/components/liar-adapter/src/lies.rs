//! What the lies answer in place of the truth: pure where they can be, so
//! the unit tests show each lie is the one it is named for.

use pando_adapter_sdk::time;
use pando_adapter_sdk::types::{
    EdgeState, Error, InputStream, ListeningPort, ObservedBundle, StreamError, TrialResult,
    WorkloadSpec,
};

/// The address an edge is said to have when the runtime gave it none: a
/// name under `.invalid`, which resolves nowhere, so a request through it
/// never leaves the machine.
pub const INVENTED_ADDRESS: &str = "edge.liar.invalid";

/// Another workload of the app than `workload`, as observe reported them:
/// whose log is answered in place of its own. `None` when the app has no
/// other.
pub fn other_workload(seen: &ObservedBundle, workload: &str) -> Option<String> {
    seen.workloads
        .iter()
        .map(|w| &w.name)
        .find(|name| *name != workload)
        .cloned()
}

/// The trial's result with `listening` replaced by the ports `spec`
/// declares: what a trial that never watched the sockets would say.
pub fn declared_ports(mut result: TrialResult, spec: &WorkloadSpec) -> TrialResult {
    result.listening = spec
        .ports
        .iter()
        .map(|p| ListeningPort {
            port: p.port,
            protocol: p.protocol,
        })
        .collect();
    result
}

/// The edge's state as a liar reports it: serving, every replica ready,
/// with an address (the runtime's, or [`INVENTED_ADDRESS`]), nothing wrong.
pub fn claim_serving(mut state: EdgeState) -> EdgeState {
    let replicas = state.desired_replicas.max(1);
    state.serving = true;
    state.ready_replicas = replicas;
    state.desired_replicas = replicas;
    state.address = Some(
        state
            .address
            .take()
            .unwrap_or_else(|| INVENTED_ADDRESS.into()),
    );
    state.message.clear();
    state.warnings.clear();
    state
}

/// A port next to `port`: where an edge wired by mistake expects its
/// image to listen.
pub fn miswired(port: u16) -> u16 {
    port.checked_add(1).unwrap_or(port - 1)
}

/// Reads `input` to its end and drops what it read: the number of bytes.
/// Waits include the call's cancellation, as the SDK's own reads do.
pub fn drain(input: &InputStream) -> Result<u64, Error> {
    let mut total = 0u64;
    loop {
        match input.read(64 * 1024) {
            Ok(chunk) if chunk.is_empty() => {
                let ready = input.subscribe();
                time::wait_any(&[&ready])?;
            }
            Ok(chunk) => total += chunk.len() as u64,
            Err(StreamError::Closed) => return Ok(total),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(Error::Unavailable(format!(
                    "reading the snapshot failed: {}",
                    e.to_debug_string()
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use pando_adapter_sdk::types::{
        ObservedWorkload, Port, Protocol, ResourceRequirements, Resources, WorkloadPhase,
    };

    use super::*;

    fn workload(name: &str) -> ObservedWorkload {
        ObservedWorkload {
            name: name.into(),
            phase: WorkloadPhase::Running,
            digest: None,
            exit_code: None,
            reason: String::new(),
            started_at_ms: None,
            finished_at_ms: None,
        }
    }

    #[test]
    fn the_log_answered_is_another_workloads() {
        let seen = ObservedBundle {
            id: "a".into(),
            exists: true,
            workloads: vec![workload("server"), workload("finisher")],
            volumes: vec![],
        };
        assert_eq!(other_workload(&seen, "finisher").as_deref(), Some("server"));
        assert_eq!(other_workload(&seen, "server").as_deref(), Some("finisher"));
        let alone = ObservedBundle {
            workloads: vec![workload("server")],
            ..seen
        };
        assert_eq!(other_workload(&alone, "server"), None);
    }

    #[test]
    fn the_trial_reports_the_declared_ports() {
        let spec = WorkloadSpec {
            name: "server".into(),
            image: "busybox".into(),
            digest: None,
            command: vec![],
            args: vec![],
            env: vec![],
            ports: vec![Port {
                name: None,
                port: 80,
                protocol: Protocol::Udp,
            }],
            resources: ResourceRequirements {
                requests: Resources {
                    cpu_millis: 1,
                    memory_bytes: 1,
                },
                limits: None,
            },
            mounts: vec![],
        };
        let observed = TrialResult {
            listening: vec![ListeningPort {
                port: 8081,
                protocol: Protocol::Tcp,
            }],
            exit_code: None,
            writes: None,
            output_tail: "serving".into(),
        };
        let lie = declared_ports(observed, &spec);
        assert_eq!(lie.listening.len(), 1);
        assert_eq!(lie.listening[0].port, 80);
        assert!(matches!(lie.listening[0].protocol, Protocol::Udp));
        assert_eq!(lie.output_tail, "serving", "the rest is the honest trial's");
    }

    #[test]
    fn an_edge_that_is_not_serving_is_said_to_serve() {
        let state = claim_serving(EdgeState {
            name: "e".into(),
            serving: false,
            ready_replicas: 0,
            desired_replicas: 2,
            address: None,
            message: "0 of 2 replicas ready".into(),
            warnings: vec!["shared node".into()],
        });
        assert!(state.serving && state.message.is_empty() && state.warnings.is_empty());
        assert_eq!((state.ready_replicas, state.desired_replicas), (2, 2));
        assert_eq!(state.address.as_deref(), Some(INVENTED_ADDRESS));
        assert_eq!(miswired(8080), 8081);
        assert_eq!(miswired(u16::MAX), u16::MAX - 1);
    }
}
