//! What the adapter declares, held to (R-254). A call made because its
//! capability is declared must work: `unsupported` or `denied` fails,
//! naming the declaration and, for `denied`, what the host's grants
//! refused and the grant that would allow it. A call whose capability is
//! not declared must answer `unsupported`, and the case then says that
//! this is all it checked ([`Notes::not_declared`](crate::fixture::Notes::not_declared)).

use std::future::Future;

use pando_host::CallError;
use pando_host::grants::check::{DenialCount, GrantReport, proposed_rule};
use pando_host::types::{Error as AdapterError, RuntimeCapabilities};

use crate::fixture::{Check, Fixture, Stop, fail, failed, unproven};

/// A capability, by its name in the contract's `runtime-capabilities`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Capability {
    Exec,
    Run,
    Logs,
    VolumeSnapshot,
    ImageImport,
    Edge,
    Trial,
    WriteObservation,
    EgressRestriction,
}

impl Capability {
    /// Its name as the contract spells it (`volume-snapshot`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Capability::Exec => "exec",
            Capability::Run => "run",
            Capability::Logs => "logs",
            Capability::VolumeSnapshot => "volume-snapshot",
            Capability::ImageImport => "image-import",
            Capability::Edge => "edge",
            Capability::Trial => "trial",
            Capability::WriteObservation => "write-observation",
            Capability::EgressRestriction => "egress-restriction",
        }
    }

    /// Whether `caps` declares it.
    pub(crate) fn declared_in(self, caps: &RuntimeCapabilities) -> bool {
        match self {
            Capability::Exec => caps.exec,
            Capability::Run => caps.run,
            Capability::Logs => caps.logs,
            Capability::VolumeSnapshot => caps.volume_snapshot,
            Capability::ImageImport => caps.image_import,
            Capability::Edge => caps.edge,
            Capability::Trial => caps.trial,
            Capability::WriteObservation => caps.write_observation,
            Capability::EgressRestriction => caps.egress_restriction,
        }
    }
}

impl Fixture<'_> {
    /// The host's record of what its grants refused so far, to tell what
    /// a call about to be made is refused ([`Fixture::held_to`]).
    pub(crate) fn refusals(&self) -> Option<GrantReport> {
        self.adapter.grant_report()
    }

    /// Holds `answer`, of a call made because `cap` is declared, to the
    /// declaration: `unsupported` or `denied` fails, naming it (and, for
    /// `denied`, what the host's grants refused since `before`, taken with
    /// [`Fixture::refusals`]); any other answer is the caller's to judge.
    pub(crate) fn held_to<T>(
        &self,
        cap: Capability,
        what: &str,
        before: Option<GrantReport>,
        answer: &Result<T, CallError>,
    ) -> Check {
        match answer {
            Err(CallError::Adapter(AdapterError::Unsupported(message))) => Err(fail(format!(
                "{what} answered `unsupported` ({message}), but the adapter declares `{}: true` \
                 in its capabilities: implement it, or declare it false",
                cap.name()
            ))),
            Err(CallError::Adapter(AdapterError::Denied(message))) => {
                let refused = refused_since(before.as_ref(), self.refusals().as_ref());
                Err(fail(format!(
                    "{what} answered `denied` ({message}), but the adapter declares `{}: true` \
                     in its capabilities: {refused}; or declare it false",
                    cap.name()
                )))
            }
            _ => Ok(()),
        }
    }

    /// Runs `call`, made because `cap` is declared, and hands back its
    /// answer for the caller to judge, unless [`Fixture::held_to`] fails
    /// it.
    pub(crate) async fn declared_answer<T>(
        &self,
        cap: Capability,
        what: &str,
        call: impl Future<Output = Result<T, CallError>>,
    ) -> Check<Result<T, CallError>> {
        let before = self.refusals();
        let answer = call.await;
        self.held_to(cap, what, before, &answer)?;
        Ok(answer)
    }

    /// Runs `call`, made because `cap` is declared: its value, or a
    /// failure (naming the declaration for `unsupported` and `denied`).
    pub(crate) async fn declared<T>(
        &self,
        cap: Capability,
        what: &str,
        call: impl Future<Output = Result<T, CallError>>,
    ) -> Check<T> {
        self.declared_answer(cap, what, call)
            .await?
            .map_err(|e| failed(what, &e))
    }
}

/// What a case could not show of declared `cap` (`said`, naming what the
/// runtime answered instead): a failure naming the declaration; or, where
/// the runner declared the runtime simulated (`simulated`, its reason), the
/// declaration unproven, naming it and the reason.
pub(crate) fn not_shown(cap: Capability, said: &str, simulated: Option<String>) -> Stop {
    match simulated {
        Some(why) => unproven(format!(
            "{}: declared; {said}; the runner declares this runtime simulated: {why}",
            cap.name()
        )),
        None => fail(format!(
            "{said}, but the adapter declares `{}: true` in its capabilities",
            cap.name()
        )),
    }
}

/// What the host's grants refused between two reports of one adapter, as
/// the grants that would allow it; or, when they refused nothing, that the
/// runtime's own authorization did.
fn refused_since(before: Option<&GrantReport>, after: Option<&GrantReport>) -> String {
    let Some(after) = after else {
        return "the adapter has no Kubernetes grants, so the refusal is its own or the \
                runtime's: grant what it needs"
            .into();
    };
    let count = |report: Option<&GrantReport>, d: &DenialCount| {
        report
            .and_then(|r| {
                r.denials.iter().find(|e| {
                    e.verb == d.verb && e.resource == d.resource && e.namespace == d.namespace
                })
            })
            .map_or(0, |e| e.count)
    };
    let mut missing: Vec<String> = Vec::new();
    // Several app namespaces need the one pattern: proposed once.
    for grant in after
        .denials
        .iter()
        .filter(|d| d.count > count(before, d))
        .map(missing_grant)
    {
        if !missing.contains(&grant) {
            missing.push(grant);
        }
    }
    if missing.is_empty() {
        return "the host's grants refused nothing during the call, so the runtime's own \
                authorization did (RBAC, for Kubernetes): allow it there"
            .into();
    }
    format!(
        "the host's grants refused it; the missing grant: {} (add it to `kubernetes.rules`)",
        missing.join(", ")
    )
}

/// The grant rule that allows a refused request, as a line of the grants
/// file: the host's own proposal (`proposed_rule`), so an app namespace is
/// proposed as the `pando-*` pattern the adapter needs for every app, not
/// as the one namespace this run made.
fn missing_grant(d: &DenialCount) -> String {
    match &d.namespace {
        Some(ns) => format!("`{}`", proposed_rule(d.verb, &d.resource, Some(ns))),
        // Cluster-scoped, or a list across namespaces: the count does not
        // tell which, so both spellings are named.
        None => format!(
            "`{} {}` across the cluster (a rule with `cluster: true`, or `namespaces: [\"*\"]` \
             for a list across namespaces)",
            d.verb, d.resource
        ),
    }
}

#[cfg(test)]
mod tests {
    use pando_host::grants::request::Verb;

    use super::*;

    fn report(denials: &[(Verb, &str, Option<&str>, u64)]) -> GrantReport {
        GrantReport {
            rules: vec![],
            denials: denials
                .iter()
                .map(|(verb, resource, ns, count)| DenialCount {
                    verb: *verb,
                    resource: (*resource).into(),
                    namespace: ns.map(Into::into),
                    count: *count,
                })
                .collect(),
            denials_dropped: 0,
            object_denials: vec![],
            limit_refusals: vec![],
        }
    }

    #[test]
    fn a_refusal_of_the_host_names_only_the_grants_missing_since_before() {
        let before = report(&[(Verb::List, "secrets", Some("pando-a"), 2)]);
        let after = report(&[
            (Verb::List, "secrets", Some("pando-a"), 2),
            (Verb::Get, "pods/log", Some("pando-conf-1-life"), 1),
        ]);
        let said = refused_since(Some(&before), Some(&after));
        assert_eq!(
            said,
            "the host's grants refused it; the missing grant: `- {verbs: [get], resources: \
             [pods/log], namespaces: [\"pando-*\"], except: [\"pando-system\"]}` (add it to \
             `kubernetes.rules`)"
        );
        // A namespace outside the apps' pattern is proposed as itself.
        let two_apps = report(&[
            (Verb::Get, "pods/log", Some("pando-conf-1-life"), 1),
            (Verb::Get, "pods/log", Some("pando-conf-2-logs"), 1),
        ]);
        assert_eq!(
            refused_since(None, Some(&two_apps))
                .matches("pods/log")
                .count(),
            1,
            "one pattern for both apps"
        );
        let outside = report(&[(Verb::Get, "configmaps", Some("kube-system"), 1)]);
        assert!(
            refused_since(None, Some(&outside)).contains(r#"namespaces: ["kube-system"]}"#),
            "{}",
            refused_since(None, Some(&outside))
        );
    }

    #[test]
    fn what_a_declaration_could_not_show_fails_unless_the_runtime_is_declared_simulated() {
        let said = "the log does not hold the line";
        assert_eq!(
            not_shown(Capability::Logs, said, None),
            Stop::Fail(
                "the log does not hold the line, but the adapter declares `logs: true` in its \
                 capabilities"
                    .into()
            )
        );
        assert_eq!(
            not_shown(
                Capability::Exec,
                said,
                Some("KWOK runs no containers".into())
            ),
            Stop::Unproven(
                "exec: declared; the log does not hold the line; the runner declares this \
                 runtime simulated: KWOK runs no containers"
                    .into()
            )
        );
    }

    #[test]
    fn a_refusal_the_host_did_not_make_is_the_runtimes() {
        let same = report(&[(Verb::Get, "pods/log", Some("pando-a"), 1)]);
        assert!(
            refused_since(Some(&same), Some(&same)).contains("the runtime's own authorization")
        );
        assert!(refused_since(None, None).contains("no Kubernetes grants"));
        let cluster = report(&[(Verb::List, "nodes", None, 1)]);
        assert!(refused_since(None, Some(&cluster)).contains("`list nodes` across the cluster"));
    }
}
