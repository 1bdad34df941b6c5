//! `C-CAP-02`: the edge.
//!
//! Not declared: all five edge calls answer `unsupported`. Declared: an
//! unknown edge is `not-found`, and an edge of the suite's own (its image
//! serving this run's number on both ports) is applied, observed serving,
//! answers a request through it, and is removed: observed gone, listed no
//! more, and no longer answering. The request is sent from where the suite
//! runs to the address the runner names ([`crate::Options::edge_probe`]):
//! the contract's `address` is words for an operator, not a URL. Without
//! it, "answers through it" is unproven, naming the option.
//!
//! The edge is the runtime's public entry point, shared by every app: the
//! suite applies one only of its own name, removes it on every path, and
//! reads a `conflict` (another edge holds what it needs, such as fixed
//! ports) as the runtime's state, not the adapter's failure.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use pando_host::types::{
    EdgePlan, EdgeState, ResourceRequirements, Resources, RuntimeCapabilities,
};

use super::declared::{Capability, not_shown};
use super::fixture::{Check, Fixture, Notes, Stop, answered, ensure, fail, failed, unproven};
use super::plans::{SERVED_DIR, SERVED_FILE, WORKLOAD_FILE};
use super::probe::sh;

/// The ports the suite's edge listens on inside its replicas.
const HTTP_PORT: u16 = 8080;
const HTTPS_PORT: u16 = 8443;

/// How long one request through the edge may take.
const REQUEST_LIMIT: Duration = Duration::from_secs(3);

/// The case.
pub(crate) async fn edge(fx: &Fixture<'_>, caps: &RuntimeCapabilities, notes: &mut Notes) -> Check {
    let ctx = fx.ctx();
    let name = fx.bundle_id("edge");
    let plan = plan(fx, &name);
    if !caps.edge {
        let unsupported = ["unsupported"];
        let what = |call: &str| format!("{call} (the edge is not declared)");
        let r = fx.adapter.apply_edge(&ctx, &plan).await;
        answered(&what("apply-edge"), r, false, &unsupported)?;
        let r = fx.adapter.observe_edge(&ctx, &name).await;
        answered(&what("observe-edge"), r, false, &unsupported)?;
        let r = fx.adapter.remove_edge(&ctx, &name).await;
        answered(&what("remove-edge"), r, false, &unsupported)?;
        let r = fx.adapter.edges(&ctx).await;
        answered(&what("edges"), r, false, &unsupported)?;
        let r = fx.adapter.edge_volumes(&ctx).await;
        answered(&what("edge-volumes"), r, false, &unsupported)?;
        notes.not_declared(
            Capability::Edge,
            "all five edge calls answered `unsupported` as required",
        );
        return Ok(());
    }
    let edges = fx
        .declared(Capability::Edge, "edges", fx.adapter.edges(&ctx))
        .await?;
    ensure!(
        !edges.contains(&name),
        "edges lists `{name}`, which was never applied"
    );
    fx.declared(
        Capability::Edge,
        "edge-volumes",
        fx.adapter.edge_volumes(&ctx),
    )
    .await?;
    let what = "observe-edge of an unknown edge";
    let r = fx
        .declared_answer(Capability::Edge, what, fx.adapter.observe_edge(&ctx, &name))
        .await?;
    answered(what, r, false, &["not-found"])?;

    let served = served(fx, &plan, notes).await;
    // Removed whatever `served` found: the edge is shared, nothing of the
    // suite's may stay.
    let removed = removed(fx, &name).await;
    served?;
    removed
}

/// The suite's edge: its image's `httpd` on both ports, serving the file
/// its command wrote with this run's number.
fn plan(fx: &Fixture<'_>, name: &str) -> EdgePlan {
    EdgePlan {
        name: name.into(),
        image: fx.options.image.clone(),
        command: sh(&format!(
            "echo {} > {WORKLOAD_FILE}; trap 'exit 0' TERM; \
             httpd -f -p {HTTP_PORT} -h {SERVED_DIR} & httpd -f -p {HTTPS_PORT} -h {SERVED_DIR} & \
             wait",
            fx.nonces.file.shell()
        )),
        args: vec![],
        env: vec![],
        replicas: Some(1),
        http_port: HTTP_PORT,
        https_port: HTTPS_PORT,
        resources: ResourceRequirements {
            requests: Resources {
                cpu_millis: 10,
                memory_bytes: 16 << 20,
            },
            limits: None,
        },
    }
}

/// Applied, observed serving, listed, and answering through the runner's
/// address.
async fn served(fx: &Fixture<'_>, plan: &EdgePlan, notes: &mut Notes) -> Check {
    let name = &plan.name;
    let what = format!("apply-edge of `{name}`");
    let r = fx
        .declared_answer(
            Capability::Edge,
            &what,
            fx.adapter.apply_edge(&fx.ctx(), plan),
        )
        .await?;
    match r {
        Ok(()) => {}
        Err(e) if e.kind() == "conflict" => {
            return Err(unproven(format!(
                "edge: declared; {what} answered `conflict` ({e}): another edge holds what this \
                 one needs on this runtime; run the suite where no other edge runs"
            )));
        }
        Err(e) => return Err(failed(&what, &e)),
    }
    let state = serving(fx, name).await?;
    let edges = fx
        .adapter
        .edges(&fx.ctx())
        .await
        .map_err(|e| failed("edges", &e))?;
    ensure!(
        edges.contains(name),
        "edges does not list `{name}`, which is serving: {edges:?}"
    );
    let Some(address) = &fx.options.edge_probe else {
        return Err(unproven(format!(
            "edge: declared; `{name}` was applied and observed serving ({}), but no request was \
             sent through it: the runner did not name where the edge's HTTP port is reached \
             from here (pass --edge-address HOST:PORT)",
            state.address.as_deref().unwrap_or("no address given")
        )));
    };
    let expected = fx.nonces.file.value().to_string();
    // The runtime may route to a ready replica a moment after it is ready
    // (kube-proxy programs the endpoint): a few tries, within the settle
    // timeout.
    let deadline = tokio::time::Instant::now() + fx.options.settle_timeout;
    let answer = loop {
        let answer = get(address).await;
        if answer.as_deref() == Some(expected.as_str()) || tokio::time::Instant::now() >= deadline {
            break answer;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    if answer.as_deref() != Some(expected.as_str()) {
        let said = format!(
            "observe-edge says `{name}` is serving, but a request through it to {address} \
             (--edge-address) {} within {} s",
            match &answer {
                Some(body) =>
                    format!("answered {body:?}, not {expected:?}, which its command wrote"),
                None => "got no answer".into(),
            },
            fx.options.settle_timeout.as_secs()
        );
        return Err(lie(fx, said));
    }
    notes.push(format!(
        "edge `{name}` served this run's number through {address}"
    ));
    Ok(())
}

/// Observe-edge until it says serving, within the settle timeout.
async fn serving(fx: &Fixture<'_>, name: &str) -> Check<EdgeState> {
    let deadline = tokio::time::Instant::now() + fx.options.settle_timeout;
    loop {
        let state = fx
            .adapter
            .observe_edge(&fx.ctx(), name)
            .await
            .map_err(|e| failed(&format!("observe-edge of `{name}`"), &e))?;
        ensure!(
            state.name == *name,
            "observe-edge of `{name}` answered the state of `{}`",
            state.name
        );
        if state.serving {
            return Ok(state);
        }
        ensure!(
            !state.message.is_empty(),
            "observe-edge says `{name}` is not serving without saying why"
        );
        if tokio::time::Instant::now() >= deadline {
            let said = format!(
                "the applied edge `{name}` was not observed serving within {} s; observe-edge \
                 last said: {}",
                fx.options.settle_timeout.as_secs(),
                state.message
            );
            return Err(lie(fx, said));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Removed: observe-edge answers `not-found`, edges lists it no more, and
/// (with the runner's address) nothing answers there.
async fn removed(fx: &Fixture<'_>, name: &str) -> Check {
    fx.adapter
        .remove_edge(&fx.ctx(), name)
        .await
        .map_err(|e| failed(&format!("remove-edge of `{name}`"), &e))?;
    let deadline = tokio::time::Instant::now() + fx.options.settle_timeout;
    loop {
        let gone = match fx.adapter.observe_edge(&fx.ctx(), name).await {
            Err(e) if e.kind() == "not-found" => true,
            Err(e) => return Err(failed(&format!("observe-edge of removed `{name}`"), &e)),
            Ok(_) => false,
        };
        let listed = fx
            .adapter
            .edges(&fx.ctx())
            .await
            .map_err(|e| failed("edges", &e))?
            .contains(&name.to_string());
        let answers = match &fx.options.edge_probe {
            Some(address) => get(address).await.is_some(),
            None => false,
        };
        if gone && !listed && !answers {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(fail(format!(
                "{} s after remove-edge of `{name}`: {}",
                fx.options.settle_timeout.as_secs(),
                [
                    (!gone).then_some("observe-edge still answers for it"),
                    listed.then_some("edges still lists it"),
                    answers.then_some("its address still answers"),
                ]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("; ")
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// What the runtime did contradicts the declaration.
fn lie(fx: &Fixture<'_>, said: String) -> Stop {
    not_shown(Capability::Edge, &said, fx.simulated())
}

/// `GET /{SERVED_FILE}` on `address` (`HOST:PORT`) with HTTP/1.0 from
/// this process: the answer's body, trimmed, for a 2xx; `None` when
/// nothing answers within [`REQUEST_LIMIT`] or the answer is not one.
async fn get(address: &str) -> Option<String> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
        let request = format!("GET /{SERVED_FILE} HTTP/1.0\r\nHost: conformance\r\n\r\n");
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut answer = Vec::new();
        stream.take(1 << 16).read_to_end(&mut answer).await.ok()?;
        Some(String::from_utf8_lossy(&answer).into_owned())
    };
    let answer = tokio::time::timeout(REQUEST_LIMIT, exchange).await.ok()??;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?;
    status.starts_with('2').then(|| body.trim().to_owned())
}
