//! `C-CAP-04`: restricted egress, by what a workload can reach.
//!
//! Not declared: a plan restricting egress to a DNS name is `unsupported`
//! and writes nothing. Declared: the plan applies, and then, from inside
//! the workloads (through `run` or `exec`):
//!
//! - a workload of another app, whose egress is open, reaches its own
//!   listener at the address `upstream` gives (the control: the address
//!   serves);
//! - the restricted workload does not reach that listener;
//! - with two listeners outside the runtime ([`crate::EgressProbe`]), the
//!   restricted workload reaches the one its rule names and not the other,
//!   which the open workload does reach (the control for "not").
//!
//! An adapter that applies the rules as written but enforces nothing fails
//! on the second point; one that cuts every connection, on the third.

use pando_host::types::{EgressPolicy, EgressRule, RuntimeCapabilities, WorkloadRef};

use super::apply::converge;
use super::declared::{Capability, not_shown};
use super::fixture::{Check, Fixture, Notes, Stop, answered, fail, failed, unmeasured_note};
use super::plans::{self, PORT, SERVED_FILE, SERVER, wref};
use super::probe::{self, Fetch, NO_PROBE, Via};

/// The rule's destination when the runner named no listener outside: a
/// name that resolves nowhere (`.invalid`, RFC 6761).
const UNRESOLVED: &str = "api.conformance.invalid";

/// The two apps of the case: the restricted one and one with open egress.
pub(crate) struct Apps {
    /// Egress restricted to one destination.
    pub(crate) restricted: String,
    /// Egress open: the listener the restricted workload must not reach,
    /// and the control.
    pub(crate) open: String,
}

/// The case.
pub(crate) async fn egress(
    fx: &Fixture<'_>,
    caps: &RuntimeCapabilities,
    apps: &Apps,
    notes: &mut Notes,
) -> Check {
    let (destination, port) = match &fx.options.egress_probe {
        Some(p) => {
            let (host, port) = crate::split_host_port(&p.allowed).map_err(fail)?;
            (host.to_string(), port)
        }
        None => (UNRESOLVED.to_string(), 443),
    };
    let mut plan = plans::plan(&apps.restricted, vec![fx.server()]);
    plan.network.egress = EgressPolicy::Restricted(vec![EgressRule {
        destination: destination.clone(),
        ports: vec![port],
    }]);
    let before = fx.refusals();
    let (r, sent) = fx.measured(fx.adapter.apply(&fx.ctx(), &plan)).await;
    if !caps.egress_restriction {
        answered(
            "apply of a plan with egress restricted to a DNS name (egress restriction is not \
             declared)",
            r,
            false,
            &["unsupported"],
        )?;
        match sent {
            Some(sent) if sent.writes() != 0 => {
                return Err(fail(format!(
                    "the refused plan wrote: {}",
                    sent.only_writes()
                )));
            }
            Some(_) => {}
            None => notes.push(unmeasured_note()),
        }
        notes.not_declared(
            Capability::EgressRestriction,
            "the restricted plan answered `unsupported` as required and wrote nothing",
        );
        return Ok(());
    }
    let what = "apply of a plan with egress restricted to a DNS name";
    fx.held_to(Capability::EgressRestriction, what, before, &r)?;
    r.map_err(|e| failed(what, &e))?;
    let rule = format!("{destination}:{port}");
    let Some(via) = Via::of(caps) else {
        return Err(super::fixture::unproven(format!(
            "egress-restriction: declared; the restricted plan applied, but what it lets a \
             workload reach is not shown: {NO_PROBE}"
        )));
    };
    Proof { fx, via, rule }.run(apps, notes).await
}

/// The reachability checks, once the restricted plan applied.
struct Proof<'f, 'a> {
    fx: &'f Fixture<'a>,
    via: Via,
    /// The restricted workload's one rule, `HOST:PORT`.
    rule: String,
}

impl Proof<'_, '_> {
    async fn run(&self, apps: &Apps, notes: &mut Notes) -> Check {
        let fx = self.fx;
        let open_plan = plans::plan(&apps.open, vec![fx.server()]);
        converge(fx, &open_plan).await?;
        fx.observe_until(&apps.restricted, &format!("`{SERVER}` running"), |seen| {
            super::apply::running(seen, SERVER)
        })
        .await?;
        let open = wref(&apps.open, SERVER);
        let restricted = wref(&apps.restricted, SERVER);

        let address = fx
            .adapter
            .upstream(&fx.ctx(), &open, PORT)
            .await
            .map_err(|e| failed(&format!("upstream of `{}/{SERVER}`", apps.open), &e))?;
        let url = format!("http://{}:{}/{SERVED_FILE}", address.host, address.port);
        let nonce = fx.nonces.file.value().to_string();
        match self.reached(&open, &url).await? {
            Fetch::Reached(body) if body == nonce => {}
            seen => {
                return Err(self.control(format!(
                    "from `{}/{SERVER}` itself, {url} (the address `upstream` gave for its \
                     port {PORT}) {}; the listener must answer there before a restricted \
                     workload's not reaching it shows anything",
                    apps.open,
                    describe(&seen, &nonce)
                )));
            }
        }
        if let Fetch::Reached(body) = self.fetch(&restricted, &url).await? {
            return Err(self.lie(format!(
                "a workload whose egress is restricted to `{}` reached the listener of another \
                 app, `{}/{SERVER}`, at {url} (it answered {body:?})",
                self.rule, apps.open
            )));
        }
        notes.push(format!(
            "through {}: a workload restricted to `{}` did not reach another app's listener, \
             which answered its own app",
            self.via.name(),
            self.rule
        ));

        let Some(outside) = &fx.options.egress_probe else {
            return Err(super::fixture::unproven(
                "egress-restriction: declared; a restricted workload did not reach another \
                 app's listener, but reaching what its rule allows, and nothing else outside, \
                 takes two listeners outside the runtime, which the runner did not name (pass \
                 --egress-allowed and --egress-denied; on the local test cluster \
                 allowed.outside.test:80 and denied.outside.test:80)",
            ));
        };
        let allowed = format!("http://{}/", outside.allowed);
        let denied = format!("http://{}/", outside.denied);
        if self.reached(&restricted, &allowed).await? == Fetch::Unreached {
            return Err(self.lie(format!(
                "a workload whose egress is restricted to `{}` did not reach it ({allowed})",
                self.rule
            )));
        }
        if self.reached(&open, &denied).await? == Fetch::Unreached {
            return Err(self.control(format!(
                "a workload with open egress did not reach {denied} (--egress-denied): the \
                 runner's second listener must be reachable for its refusal to show anything"
            )));
        }
        if let Fetch::Reached(body) = self.fetch(&restricted, &denied).await? {
            return Err(self.lie(format!(
                "a workload whose egress is restricted to `{}` reached {denied}, which its rule \
                 does not name (it answered {body:?})",
                self.rule
            )));
        }
        notes.push(format!(
            "it reached `{}` and not `{}`, which a workload with open egress reached",
            outside.allowed, outside.denied
        ));
        Ok(())
    }

    async fn fetch(&self, from: &WorkloadRef, url: &str) -> Check<Fetch> {
        probe::fetch(self.fx, self.via, from, url).await
    }

    /// Fetches until an answer comes, within the settle timeout: for what
    /// must be reached. A workload's name resolves, and a gateway serves,
    /// a moment after the workload is seen running; a refusal is only
    /// ever checked once what must be reached was.
    async fn reached(&self, from: &WorkloadRef, url: &str) -> Check<Fetch> {
        let deadline = tokio::time::Instant::now() + self.fx.options.settle_timeout;
        loop {
            let seen = self.fetch(from, url).await?;
            if matches!(seen, Fetch::Reached(_)) || tokio::time::Instant::now() >= deadline {
                return Ok(seen);
            }
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    }

    /// What the runtime did contradicts the declaration.
    fn lie(&self, said: String) -> Stop {
        not_shown(Capability::EgressRestriction, &said, self.fx.simulated())
    }

    /// A control did not hold: nothing is shown either way. Unproven on a
    /// runtime declared simulated (its workloads run no commands); else a
    /// failure, since the address or the runner's listener is wrong.
    fn control(&self, said: String) -> Stop {
        match self.fx.simulated() {
            Some(why) => super::fixture::unproven(format!(
                "egress-restriction: declared; {said}; the runner declares this runtime \
                 simulated: {why}"
            )),
            None => fail(said),
        }
    }
}

/// A fetch's result, in words.
fn describe(seen: &Fetch, expected: &str) -> String {
    match seen {
        Fetch::Reached(body) => {
            format!("answered {body:?}, not {expected:?}, the number its command wrote")
        }
        Fetch::Unreached => "did not answer".into(),
    }
}
