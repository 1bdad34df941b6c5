//! The plans the suite applies: plain enough for any runtime that runs
//! images. One workload that serves on a port until stopped, one whose
//! command prints a line and exits, optionally a volume.

use pando_host::types::{
    BundlePlan, EgressPolicy, EnvVar, NetworkRules, Port, Protocol, RegistryCredential,
    ResourceRequirements, Resources, VolumeMount, VolumeSpec, WorkloadRef, WorkloadSpec,
};

/// The workload that runs until stopped.
pub(crate) const SERVER: &str = "server";
/// Its port.
pub(crate) const PORT: u16 = 8080;
/// The workload whose command exits.
pub(crate) const FINISHER: &str = "finisher";
/// The code it exits with: not 0, so "finished" is told from "succeeded by
/// accident".
pub(crate) const FINISH_CODE: i32 = 3;
/// What it prints before exiting, followed by the run's [`Nonce`] for
/// logs.
pub(crate) const FINISH_LINE: &str = "conformance: finished";
/// The file the server writes its run's [`Nonce`] to as it starts: only a
/// command run in that workload, after its own command ran, reads it back
/// (`C-EXEC-01`, `C-RUN-01`); its `httpd` serves it as `/`[`SERVED_FILE`]
/// (`C-CAP-04`).
pub(crate) const WORKLOAD_FILE: &str = "/tmp/pando-conformance";
/// The directory the server's `httpd` serves: the one [`WORKLOAD_FILE`] is in.
pub(crate) const SERVED_DIR: &str = "/tmp";
/// [`WORKLOAD_FILE`]'s name in [`SERVED_DIR`].
pub(crate) const SERVED_FILE: &str = "pando-conformance";
/// A port the trial's workload declares and does not listen on
/// (`C-CAP-03`).
pub(crate) const DECLARED_ONLY_PORT: u16 = 9090;

/// A number the suite chose for this run, which a workload's own command
/// computes and prints as the sum of two parts: a log or a session holding
/// the sum shows the command ran. An adapter answering a fixed line, or
/// echoing the command it was given, does not hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Nonce {
    a: u32,
    b: u32,
}

impl Nonce {
    /// Two random parts, each below 2^31 so the sum fits any shell's
    /// arithmetic.
    pub(crate) fn random() -> Self {
        use std::hash::BuildHasher;
        let state = std::collections::hash_map::RandomState::new();
        let x = state.hash_one((std::process::id(), std::time::SystemTime::now()));
        Nonce {
            a: (x as u32) >> 1,
            b: ((x >> 32) as u32) >> 1,
        }
    }

    /// The shell arithmetic that prints it: `$((A + B))`.
    pub(crate) fn shell(self) -> String {
        format!("$(({} + {}))", self.a, self.b)
    }

    /// What that prints.
    pub(crate) fn value(self) -> u64 {
        u64::from(self.a) + u64::from(self.b)
    }
}

/// The nonces of one run: one for the finisher's log, one for the server's
/// file, so neither proves the other.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Nonces {
    /// Printed by the finisher after [`FINISH_LINE`].
    pub(crate) log: Nonce,
    /// Written by the server to [`WORKLOAD_FILE`].
    pub(crate) file: Nonce,
}

impl Nonces {
    /// New ones.
    pub(crate) fn random() -> Self {
        let log = Nonce::random();
        let mut file = Nonce::random();
        while file == log {
            file = Nonce::random();
        }
        Nonces { log, file }
    }

    /// The line the finisher prints: `conformance: finished N`.
    pub(crate) fn finish_line(&self) -> String {
        format!("{FINISH_LINE} {}", self.log.value())
    }
}
/// The variable carrying the finisher's exit code. A real runtime ignores
/// it (the command exits by itself); a simulated one (a KWOK stage) can
/// read it to end the workload as the command would.
pub(crate) const EXIT_CODE_ENV: &str = "PANDO_CONFORMANCE_EXIT_CODE";
/// The volume of plans that have one.
pub(crate) const VOLUME: &str = "data";
/// Its size: small, the data written is smaller.
pub(crate) const VOLUME_BYTES: u64 = 64 << 20;

/// What the server reserves.
pub(crate) fn server_requests() -> Resources {
    Resources {
        cpu_millis: 50,
        memory_bytes: 32 << 20,
    }
}

fn workload(name: &str, image: &str, script: &str, requests: Resources) -> WorkloadSpec {
    WorkloadSpec {
        name: name.into(),
        image: image.into(),
        digest: None,
        command: vec!["sh".into(), "-c".into(), script.into()],
        args: vec![],
        env: vec![],
        ports: vec![],
        resources: ResourceRequirements {
            requests,
            limits: None,
        },
        mounts: vec![],
        security: Default::default(),
    }
}

/// A workload serving HTTP on [`PORT`] until stopped, having written the
/// run's file nonce to [`WORKLOAD_FILE`]. Its shell, PID 1 in
/// a container, exits on SIGTERM: a PID 1 without a handler ignores it, so
/// every stop and replacement would wait out the runtime's whole grace
/// period (Kubernetes' 30 s), which is the runtime's, not the adapter's,
/// and was the longest wait of a run on real containers.
pub(crate) fn server(image: &str, nonces: &Nonces) -> WorkloadSpec {
    let mut w = workload(
        SERVER,
        image,
        &format!(
            "echo conformance: serving; echo {} > {WORKLOAD_FILE}; trap 'exit 0' TERM; \
             httpd -f -p {PORT} -h {SERVED_DIR} & wait",
            nonces.file.shell()
        ),
        server_requests(),
    );
    w.ports.push(Port {
        name: Some("http".into()),
        port: PORT,
        protocol: Protocol::Tcp,
    });
    w
}

/// A workload that prints [`FINISH_LINE`] and the run's log nonce, and
/// exits with [`FINISH_CODE`].
pub(crate) fn finisher(image: &str, nonces: &Nonces) -> WorkloadSpec {
    let mut w = workload(
        FINISHER,
        image,
        &format!(
            "echo \"{FINISH_LINE} {}\"; exit {FINISH_CODE}",
            nonces.log.shell()
        ),
        Resources {
            cpu_millis: 10,
            memory_bytes: 16 << 20,
        },
    );
    w.env.push(EnvVar {
        name: EXIT_CODE_ENV.into(),
        value: FINISH_CODE.to_string(),
    });
    w
}

/// The workload of the snapshot case (`C-VOL-01`): it writes the run's
/// file nonce to [`VOLUME_FILE`] on the volume and exits 0, or exits with
/// the write's error when the volume is not writable.
pub(crate) const WRITER: &str = "writer";
/// Where plans with a volume mount it.
pub(crate) const VOLUME_PATH: &str = "/data";
/// The file [`WRITER`] writes, as a snapshot of the volume names it
/// (relative to the volume's root).
pub(crate) const VOLUME_FILE: &str = "conformance/workload.txt";

/// [`WRITER`], with this run's image and nonces. It is planned with the
/// volume mounted ([`with_volume`]).
pub(crate) fn writer(image: &str, nonces: &Nonces) -> WorkloadSpec {
    let mut w = workload(
        WRITER,
        image,
        &format!(
            "mkdir -p {VOLUME_PATH}/conformance && echo {} > {VOLUME_PATH}/{VOLUME_FILE}",
            nonces.file.shell()
        ),
        Resources {
            cpu_millis: 10,
            memory_bytes: 16 << 20,
        },
    );
    w.env.push(EnvVar {
        name: EXIT_CODE_ENV.into(),
        value: "0".into(),
    });
    w
}

/// A plan of these workloads, egress open, no volumes, no credentials.
pub(crate) fn plan(id: &str, workloads: Vec<WorkloadSpec>) -> BundlePlan {
    BundlePlan {
        id: id.into(),
        revision: "1".into(),
        workloads,
        volumes: vec![],
        network: NetworkRules {
            egress: EgressPolicy::Open,
        },
        pull_credentials: vec![],
    }
}

/// The plan with [`VOLUME`], mounted at [`VOLUME_PATH`] by its first
/// workload.
pub(crate) fn with_volume(mut plan: BundlePlan) -> BundlePlan {
    plan.volumes.push(VolumeSpec {
        name: VOLUME.into(),
        size_bytes: Some(VOLUME_BYTES),
    });
    if let Some(w) = plan.workloads.first_mut() {
        w.mounts.push(VolumeMount {
            volume: VOLUME.into(),
            path: VOLUME_PATH.into(),
            read_only: false,
        });
    }
    plan
}

/// Credentials for a registry the plans do not pull from: present, so the
/// adapter writes them, and harmless.
pub(crate) fn credentials() -> Vec<RegistryCredential> {
    vec![RegistryCredential {
        registry: "registry.conformance.invalid".into(),
        username: "pando".into(),
        password: "conformance".into(),
    }]
}

/// A reference to a workload.
pub(crate) fn wref(bundle: &str, workload: &str) -> WorkloadRef {
    WorkloadRef {
        bundle: bundle.into(),
        workload: workload.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commands_print_the_nonces_only_as_shell_arithmetic() {
        let nonces = Nonces::random();
        let finisher = finisher("busybox", &nonces);
        let script = &finisher.command[2];
        assert!(script.contains(&nonces.log.shell()), "{script}");
        // The sum itself is nowhere in the plan: only running the command makes it.
        let sum = nonces.log.value().to_string();
        assert!(!script.contains(&sum), "{script}");
        assert_eq!(nonces.finish_line(), format!("{FINISH_LINE} {sum}"));
        let server = server("busybox", &nonces);
        let script = &server.command[2];
        assert!(
            script.contains(&format!("echo {} > {WORKLOAD_FILE};", nonces.file.shell())),
            "{script}"
        );
        assert!(
            !script.contains(&nonces.file.value().to_string()),
            "{script}"
        );
        assert_ne!(nonces.log, nonces.file);
        assert_eq!(WORKLOAD_FILE, format!("{SERVED_DIR}/{SERVED_FILE}"));
        assert_ne!(DECLARED_ONLY_PORT, PORT);
    }

    #[test]
    fn the_writer_writes_the_file_nonce_only_as_shell_arithmetic_onto_its_volume() {
        let nonces = Nonces::random();
        let plan = with_volume(plan("vol", vec![writer("busybox", &nonces)]));
        let w = &plan.workloads[0];
        assert_eq!(w.mounts[0].path, VOLUME_PATH);
        let script = &w.command[2];
        assert!(
            script.contains(&format!(
                "echo {} > {VOLUME_PATH}/{VOLUME_FILE}",
                nonces.file.shell()
            )),
            "{script}"
        );
        assert!(
            !script.contains(&nonces.file.value().to_string()),
            "{script}"
        );
    }
}
