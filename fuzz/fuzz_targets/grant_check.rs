//! The grants document (`Grants::from_text`) and the checker
//! (`grants::check::Checker`), on arbitrary documents and requests.
//!
//! Two modes. Raw: the bytes are a YAML document; it must parse or fail
//! with an error naming where (`at `…``), never panic, and a valid one must
//! read back the same after it is written out (the usage report writes
//! rules). Structured: a document built from rules that speak the grammar,
//! written out as YAML and read back through `from_text`, then requests
//! canonicalized by `grants::request::parse` and checked. Properties:
//! - the checker agrees with a reference written from docs/grants.md: a
//!   request is allowed by the first rule whose verbs, resource spelling and
//!   scope all match; a namespaced request needs a namespace pattern that
//!   matches and no `except` that does; an all-namespaces request needs
//!   `"*"` and no `except`; a cluster-scoped object needs `cluster: true`,
//!   a matching name pattern when `names` is given, and no `except`
//!   matching its name; a cluster-scoped request without a name needs a
//!   rule with neither `names` nor `except`; PVs only by name, and then
//!   `AllowIfClaimed`;
//! - so: an allowed request matches its rule, and a rule with `except`
//!   never allows an excepted namespace or name;
//! - a denial's `missing-grant` is a rule that, once added, allows that
//!   very request (unless the resource cannot be spelled in a grant);
//! - the usage report counts every decision exactly once;
//! - the rate budget of a valid document never panics.
#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use pando_fuzz::{Req, glob, is_dns_subdomain};
use pando_host::Grants;
use pando_host::grants::check::{Checker, Decision, GrantUsage};
use pando_host::grants::request::{ApiRequest, ApiTarget, Verb, parse};
use pando_host::grants::{KubernetesGrants, Rate, Rule};

const VERBS: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
const RESOURCES: &[&str] = &[
    "pods",
    "pods/log",
    "pods/exec",
    "secrets",
    "configmaps",
    "namespaces",
    "namespaces/status",
    "nodes",
    "persistentvolumes",
    "persistentvolumeclaims",
    "apps/deployments",
    "apps/deployments/scale",
    "networking.k8s.io/networkpolicies",
    "node.k8s.io/runtimeclasses",
    "policy/poddisruptionbudgets",
];
const NS_PATTERNS: &[&str] = &[
    "pando-*",
    "*",
    "pando-x",
    "pando-shop",
    "pando-system",
    "pando-edge",
    "kube-system",
    "p*x",
    "*-x",
    "**",
    "default",
];
const NAME_PATTERNS: &[&str] = &[
    "pando-*", "n1", "pv-*", "*", "pv-1", "web", "*.crt", "pando-x", "n*",
];

fn pick(u: &mut Unstructured<'_>, from: &[&str], max: usize) -> Result<Vec<String>> {
    let n = u.int_in_range(0..=max)?;
    (0..n)
        .map(|_| {
            Ok(if u.ratio(15, 16)? {
                (*u.choose(from)?).to_string()
            } else {
                String::arbitrary(u)?
            })
        })
        .collect()
}

fn rule(u: &mut Unstructured<'_>) -> Result<Rule> {
    let cluster = u.arbitrary()?;
    let namespaces = if cluster && u.ratio(7, 8)? {
        Vec::new()
    } else {
        pick(u, NS_PATTERNS, 3)?
    };
    let names = if cluster || u.ratio(1, 16)? {
        pick(u, NAME_PATTERNS, 2)?
    } else {
        Vec::new()
    };
    Ok(Rule {
        verbs: pick(u, VERBS, 4)?,
        resources: pick(u, RESOURCES, 3)?,
        namespaces,
        except: if u.ratio(1, 2)? {
            let mut both = NS_PATTERNS.to_vec();
            both.extend_from_slice(NAME_PATTERNS);
            pick(u, &both, 2)?
        } else {
            Vec::new()
        },
        cluster,
        names,
    })
}

struct Structured {
    grants: Grants,
    requests: Vec<(Req, Option<String>)>,
    later_ms: u64,
}

impl<'a> Arbitrary<'a> for Structured {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let n = u.int_in_range(0..=6)?;
        let rules = (0..n).map(|_| rule(u)).collect::<Result<Vec<_>>>()?;
        let rate = if u.ratio(1, 2)? {
            Rate::default()
        } else {
            Rate {
                qps: u.arbitrary()?,
                burst: u.int_in_range(0..=20)?,
                write_bytes_per_second: u.arbitrary()?,
                write_burst_bytes: u.arbitrary()?,
                write_bytes_per_hour: u.arbitrary()?,
                cache_reads_per_second: u.arbitrary()?,
                cache_read_burst: u.int_in_range(0..=20)?,
            }
        };
        let grants = Grants {
            kubernetes: Some(KubernetesGrants {
                rules,
                rate,
                max_body_bytes: u.arbitrary()?,
                objects: Default::default(),
                ceilings: Default::default(),
                read_masks: Default::default(),
            }),
        };
        let m = u.int_in_range(1..=8)?;
        let requests = (0..m)
            .map(|_| {
                let body_name = if u.ratio(1, 3)? {
                    Some(if u.ratio(7, 8)? {
                        (*u.choose(NAME_PATTERNS)?).replace('*', "a")
                    } else {
                        String::arbitrary(u)?
                    })
                } else {
                    None
                };
                Ok((Req::arbitrary(u)?, body_name))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Structured {
            grants,
            requests,
            later_ms: u.arbitrary()?,
        })
    }
}

#[derive(Clone, Copy, Debug)]
enum Scope<'a> {
    Namespace(&'a str),
    AllNamespaces,
    Cluster(Option<&'a str>),
}

fn any_glob(patterns: &[String], text: &str) -> bool {
    patterns.iter().any(|p| glob(p.as_bytes(), text.as_bytes()))
}

/// The reference: does `rule` allow `verb` on `spelling` in `scope`?
fn model_allows(rule: &Rule, verb: Verb, spelling: &str, scope: Scope<'_>) -> bool {
    if !rule.verbs.iter().any(|v| v == verb.as_str())
        || !rule.resources.iter().any(|r| r == spelling)
    {
        return false;
    }
    match scope {
        Scope::Namespace(ns) => {
            !rule.cluster && any_glob(&rule.namespaces, ns) && !any_glob(&rule.except, ns)
        }
        Scope::AllNamespaces => {
            !rule.cluster && rule.except.is_empty() && rule.namespaces.iter().any(|p| p == "*")
        }
        Scope::Cluster(Some(name)) => {
            rule.cluster
                && (rule.names.is_empty() || any_glob(&rule.names, name))
                && !any_glob(&rule.except, name)
        }
        // A list, watch or deletecollection of a cluster-scoped resource, or
        // a create without a usable name: only a rule without names, and
        // (like an all-namespaces request) without exceptions it would cross.
        Scope::Cluster(None) => rule.cluster && rule.names.is_empty() && rule.except.is_empty(),
    }
}

fn scope<'a>(verb: Verb, target: &'a ApiTarget, body_name: Option<&'a str>) -> Scope<'a> {
    match &target.namespace {
        Some(ns) => Scope::Namespace(ns),
        None if target.name.is_some() || target.is_cluster_scoped() => {
            Scope::Cluster(match (&target.name, body_name) {
                (Some(n), _) => Some(n),
                (None, Some(n)) if verb == Verb::Create && is_dns_subdomain(n) => Some(n),
                _ => None,
            })
        }
        None => Scope::AllNamespaces,
    }
}

fn rate(k: &KubernetesGrants, later_ms: u64) {
    let takes = k.rate.burst.saturating_add(2).min(64);
    let waits = pando_host::fuzzing::rate_waits(
        k.rate.qps,
        k.rate.burst,
        takes,
        std::time::Duration::from_millis(later_ms),
    );
    // The burst is there at once.
    assert!(waits.len() as u32 <= takes - takes.min(k.rate.burst) + 1);
}

/// A YAML document, then optionally `--- requests` and one request per line
/// (`req_from_line`).
fn raw(text: &str) {
    let (doc, requests) = match text.split_once("\n--- requests\n") {
        Some((doc, lines)) => (
            doc,
            lines
                .lines()
                .filter_map(pando_fuzz::req_from_line)
                .collect(),
        ),
        None => (text, Vec::new()),
    };
    match Grants::from_text("fuzz", doc) {
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("grants fuzz: "), "{msg}");
            // A field's error names the field; a syntax error, its line.
            assert!(
                msg.contains("at `") || msg.contains(" line "),
                "the error names neither a field nor a line: {msg}"
            );
        }
        Ok(g) => {
            let written = pando_host::yaml::to_string(&g).expect("grants serialize");
            let again = Grants::from_text("again", &written)
                .unwrap_or_else(|e| panic!("written grants do not read back: {e}\n{written}"));
            assert_eq!(again, g);
            if let Some(k) = &g.kubernetes {
                rate(k, 1000);
                decide_all(k, &requests);
            }
        }
    }
}

fn structured(s: Structured) {
    let written = pando_host::yaml::to_string(&s.grants).expect("grants serialize");
    let grants = match Grants::from_text("fuzz", &written) {
        Ok(g) => g,
        Err(e) => {
            assert!(e.to_string().contains("at `"), "{e}");
            return;
        }
    };
    assert_eq!(grants, s.grants, "grants do not read back as written");
    let Some(k) = &grants.kubernetes else {
        return;
    };
    rate(k, s.later_ms);
    decide_all(k, &s.requests);
}

/// Checks each request against the checker and the reference, then the
/// usage report against the decisions.
fn decide_all(k: &KubernetesGrants, requests: &[(Req, Option<String>)]) {
    let checker = Checker::new(k);
    let usage = GrantUsage::default();
    let (mut allowed, mut denied) = (0u64, 0u64);
    for (req, body_name) in requests {
        let Ok(ApiRequest::Resource { verb, target }) = parse(req.method, &req.path, &req.query)
        else {
            continue;
        };
        let body_name = body_name.as_deref();
        let decision = checker.check_and_record(&usage, verb, &target, body_name);
        let spelling = target.grant_spelling();
        let scope = scope(verb, &target, body_name);
        let is_pv = target.group.is_empty() && target.resource == "persistentvolumes";
        let expected = if is_pv && target.name.is_none() {
            None
        } else {
            k.rules
                .iter()
                .position(|r| model_allows(r, verb, &spelling, scope))
        };
        match (&decision, expected) {
            (Decision::Allow { rule }, Some(i)) if !is_pv && *rule == i => allowed += 1,
            (Decision::AllowIfClaimed { rule }, Some(i)) if is_pv && *rule == i => allowed += 1,
            (Decision::Deny(d), None) => {
                denied += 1;
                if is_pv && target.name.is_none() {
                    // Never granted: the proposal is a comment.
                } else if d.missing_grant.starts_with("# none:") {
                    assert!(d.message.contains("no grant can allow it"), "{d:?}");
                } else {
                    assert!(d.message.contains(&d.missing_grant), "{d:?}");
                }
                missing_grant_allows(&d.missing_grant, verb, &target, body_name, is_pv);
            }
            _ => panic!(
                "checker and reference disagree on {verb} {target:?} (body name {body_name:?}, \
                 scope {scope:?}): checker {decision:?}, reference rule {expected:?}\nrules: {:#?}",
                k.rules
            ),
        }
    }
    let report = usage.report(k);
    assert_eq!(report.rules.len(), k.rules.len());
    assert_eq!(report.rules.iter().map(|r| r.uses).sum::<u64>(), allowed);
    assert_eq!(
        report.denials.iter().map(|d| d.count).sum::<u64>() + report.denials_dropped,
        denied
    );
}

/// The rule a denial proposes allows the request it was proposed for.
fn missing_grant_allows(
    missing: &str,
    verb: Verb,
    target: &ApiTarget,
    body_name: Option<&str>,
    is_pv: bool,
) {
    if is_pv && target.name.is_none() {
        // Never granted: the proposal is a comment.
        assert!(missing.starts_with('#'), "{missing}");
        return;
    }
    let spelling = target.grant_spelling();
    if missing.starts_with("# none:") {
        // A resource Kubernetes does not serve: no rule can name it, and the
        // grants refuse one that tries.
        let doc = format!(
            "kubernetes:\n  rules:\n  - {{verbs: [get], resources: [{spelling}], cluster: true}}\n"
        );
        let e = Grants::from_text("unserved", &doc).expect_err(missing);
        let e = e.to_string();
        assert!(
            e.contains("names no resource")
                || e.contains("has no subresource")
                || e.contains("is never granted")
                || e.contains("without a group")
                || e.contains("there is no API group"),
            "{e}"
        );
        return;
    }
    let doc = format!("kubernetes:\n  rules:\n  {missing}\n");
    let unspellable =
        matches!(spelling.split('/').next(), Some("core" | "v1" | "api")) && spelling.contains('/');
    let grants = match Grants::from_text("missing", &doc) {
        Ok(g) => g,
        Err(e) if unspellable => {
            assert!(e.to_string().contains("without a group"), "{e}");
            return;
        }
        Err(e) => panic!("missing-grant `{missing}` is not a valid rule: {e}"),
    };
    let k = grants.kubernetes.expect("kubernetes section");
    let decision = Checker::new(&k).check(verb, target, body_name);
    assert!(
        !matches!(decision, Decision::Deny(_)),
        "missing-grant `{missing}` does not allow {verb} {target:?}: {decision:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 4 == 0 {
        raw(&String::from_utf8_lossy(rest));
    } else if let Ok(s) = Structured::arbitrary_take_rest(Unstructured::new(rest)) {
        structured(s);
    }
});
