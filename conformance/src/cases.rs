//! The catalogue of cases: stable ids, the spec rules they check, and why
//! each exists. `docs/conformance.md` says the same at length; a unit test
//! keeps the two in step.

/// One case of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Case {
    /// Its stable id (`C-APPLY-02`).
    pub id: &'static str,
    /// The spec rules it checks (`O-41`), if the spec names one.
    pub rules: &'static [&'static str],
    /// What it checks, in a line.
    pub name: &'static str,
    /// The failure it catches.
    pub why: &'static str,
}

macro_rules! cases {
    ($($konst:ident = $id:literal [$($rule:literal),*] $name:literal, $why:literal;)*) => {
        $(
            #[doc = concat!("`", $id, "`: ", $name, ".")]
            pub(crate) const $konst: Case = Case {
                id: $id,
                rules: &[$($rule),*],
                name: $name,
                why: $why,
            };
        )*
        /// Every case, in the order the suite runs them.
        pub const CASES: &[Case] = &[$($konst),*];
    };
}

cases! {
    INFO = "C-INFO-01" [] "info names the adapter and carries a JSON Schema of its configuration",
        "core shows the kind to operators and checks a configuration against the schema before configure";
    CAPABILITIES = "C-INFO-02" ["R-254"] "capabilities answer, the same each time, and are consistent",
        "core offers a feature only where capabilities say so; a failing or changing answer offers calls that answer unsupported";
    HEALTH = "C-INFO-03" ["O-43"] "the health check says the runtime can be used",
        "core places apps only on a healthy runtime, and every other case needs one";
    CONFIGURE = "C-CONF-01" [] "configure rejects bad input with invalid, naming the field",
        "an operator's typo must stop the load with a message naming it, not be ignored or crash the instance";
    UPSTREAM = "C-UP-01" ["R-023"] "upstream is deterministic and needs no API call",
        "upstream runs on every proxied request: a lookup adds latency and API load to each, a changing answer breaks the proxy";
    INVALID = "C-ERR-01" [] "invalid input is answered with invalid",
        "core tells an operator's mistake (fix the plan) from the runtime's trouble (retry): a wrong kind retries forever or gives up too soon";
    UNKNOWN = "C-ERR-02" [] "unknown apps, workloads, volumes and edges get a typed answer, never a crash",
        "the reconciler calls with stale names all the time; a trap there quarantines the adapter";
    REFUSED = "C-ERR-03" [] "a refused plan writes nothing",
        "a plan refused halfway must not leave part of an app behind that no plan describes";
    OBSERVE_MISSING = "C-OBS-02" [] "observing an app that does not exist reports exists: false",
        "core's sweep creates an app by what exists says; an error or a phantom workload makes it retry or believe the app runs";
    IMAGE_IMPORT = "C-CAP-01" ["R-254"] "import-image is unsupported unless declared, and answers when declared",
        "core offers image upload from the capability; a declared capability that answers unsupported fails every upload";
    EDGE = "C-CAP-02" ["R-254", "R-174"] "the edge calls are unsupported unless declared; declared, an edge applied serves a request through it and is removed",
        "core runs the edge on the runtime only where declared; a half-implemented edge takes the public entry point down";
    TRIAL = "C-CAP-03" ["R-254", "R-097"] "trial is unsupported unless declared; declared, it reports, with writes exactly when write observation is declared",
        "core trials an unknown image before deploying it; a trial that fails or misreports what it observed misleads that decision";
    EGRESS = "C-CAP-04" ["R-186"] "restricted egress is unsupported and writes nothing unless declared; declared, a restricted workload reaches what its rule allows and nothing else",
        "an app whose egress cannot be enforced must not run as if it were restricted, and a refused plan must leave nothing behind";
    CONVERGE = "C-APPLY-01" [] "apply converges: the handle names the app and observe reports every workload running",
        "apply is how every app starts; the handle's location is what operators see";
    OBSERVE = "C-OBS-01" [] "observe reports and never changes anything",
        "observe runs in every reconciler pass; an observe that remediates fights the reconciler and hides failures";
    REAPPLY = "C-APPLY-02" ["O-41"] "apply again with the same plan writes nothing",
        "the reconciler applies every app on every pass; writes there cost API load, restarts and audit noise";
    REWRITES = "C-APPLY-03" ["O-41"] "apply again with pull credentials writes nothing but what the adapter declares it rewrites",
        "credentials may expire and are rewritten each time, but nothing else may be";
    CAPACITY = "C-CAPACITY-01" ["R-243", "R-242"] "capacity is consistent with what was applied, and reading it writes nothing",
        "the planner admits apps by these numbers; inconsistent ones over- or under-commit the runtime";
    EXEC = "C-EXEC-01" ["R-084"] "exec carries stdin and stdout and returns the exit status",
        "operators debug apps through exec; a session that loses output or the exit status misleads them";
    EXEC_RESIZE = "C-EXEC-02" [] "a 0.2.0 exec on a terminal is resized while its program runs, and the program sees the size",
        "an operator's terminal changes size during a session; a session that cannot follow garbles every full-screen program";
    RUN = "C-RUN-01" ["R-423"] "run returns stdout, and a failure's exit status and stderr",
        "backups and migrations run through run; a failure reported as success loses data";
    LOGS = "C-LOGS-01" ["R-150"] "logs of a finished workload are readable",
        "the crash that failed an app is read from the finished workload's log";
    STOP = "C-STOP-01" ["R-150"] "stop stops running workloads and keeps finished ones and their logs",
        "the reconciler stops an app as it gives up on it; deleting the finished workload loses the crash's log";
    DESTROY_KEEP = "C-DESTROY-01" ["R-204"] "destroy keeps volumes by default",
        "losing data must take an explicit choice";
    DESTROY_ALL = "C-DESTROY-02" ["R-204"] "destroy removes volumes when asked",
        "an operator who deletes an app and its data must not keep paying for the storage";
    SNAPSHOT = "C-VOL-01" ["R-206", "R-254"] "a volume snapshot gives back what a workload wrote, byte for byte, after a restore (or both calls are unsupported)",
        "backups are only as good as their restore";
    WATCHING = "C-WATCH-01" ["O-52"] "watch emits watching, then the changes that follow",
        "core re-lists when watching arrives and relies on every later change being reported";
    WATCH_ACTS = "C-WATCH-02" ["R-148"] "the watch never acts",
        "only the reconciler, under backoff, restarts workloads; a watch that acts restarts a failing app in a loop";
    // A restart, not a resume: the suite cannot make the runtime cut a watch through the
    // adapter's API; the resume is tested against the test cluster (docs/conformance.md).
    WATCH_RESTART = "C-WATCH-03" ["O-52"] "a cancelled watch ends cleanly and a new watch reports again",
        "core restarts its watch after cancelling it or after expired; a watch that cannot start again leaves core blind";
    SECURITY = "C-SEC-01" [] "a 0.2.0 adapter runs a workload as its security says: user, group, volume group, restricted",
        "an app under Pod Security restricted, or one that must not run as root, is refused or runs as root when the adapter drops the plan's security";
}

/// The cases only an adapter of contract 0.2.0 is asked: a 0.1.0 session
/// cannot be resized while its program runs, and a 0.1.0 plan carries no
/// `security`.
const SINCE_0_2: &[Case] = &[EXEC_RESIZE, SECURITY];

/// The cases the suite runs for an adapter exporting `contract` (`0.1.0`,
/// `0.2.0`): every case, but a later contract's.
pub fn cases_for(contract: &str) -> Vec<Case> {
    CASES
        .iter()
        .filter(|c| contract != "0.1.0" || !SINCE_0_2.contains(c))
        .copied()
        .collect()
}

impl Case {
    /// The rules as one token: `R-243,R-242`; empty without one.
    pub fn rule(&self) -> String {
        self.rules.join(",")
    }
}

/// Whether `id` is selected by `only` (empty selects all).
pub(crate) fn selected(only: &[String], id: &str) -> bool {
    only.is_empty()
        || only
            .iter()
            .any(|p| pando_host::grants::check::pattern_matches(p, id))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_0_1_adapter_is_not_asked_the_cases_of_0_2() {
        let old = super::cases_for("0.1.0");
        for case in super::SINCE_0_2 {
            assert!(!old.contains(case), "{}", case.id);
        }
        assert_eq!(old.len(), super::CASES.len() - super::SINCE_0_2.len());
        assert_eq!(super::cases_for("0.2.0"), super::CASES);
    }

    use super::*;

    #[test]
    fn ids_are_unique_and_documented() {
        let mut ids: Vec<&str> = CASES.iter().map(|c| c.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), CASES.len(), "a case id is used twice");
        let doc = include_str!("../../docs/conformance.md");
        for case in CASES {
            assert!(
                doc.contains(&format!("`{}`", case.id)),
                "docs/conformance.md does not document {}",
                case.id
            );
        }
    }

    #[test]
    fn patterns_select_cases() {
        assert!(selected(&[], "C-APPLY-02"));
        assert!(selected(&["C-APPLY-*".into()], "C-APPLY-02"));
        assert!(!selected(&["C-APPLY-*".into()], "C-OBS-01"));
        assert!(selected(&["C-OBS-01".into(), "C-UP-*".into()], "C-UP-01"));
    }
}
