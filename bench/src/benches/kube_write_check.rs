//! The body check alone, in process: what the host does to a write's body
//! besides sending it, with the public `ObjectPolicy` of the bench's write
//! grants (`pando_host::grants::objects`), as
//! `capability::kubernetes::writes` does it.
//!
//! - create: parse the Pod body, check it, prepare it, re-serialize it;
//! - patch: parse the merge patch, parse the pod read before (a Pod's rules
//!   compare old and new), serialize the patch for the dry run, parse the
//!   dry run's result, check the change, and serialize the patch
//!   conditioned on the result's resourceVersion. The pod read and the
//!   dry run's result are both the patch pod as the API server stores it
//!   (read once: defaults, managed fields and status included).
//!
//! There is no native twin: a client without the host does none of it.
//! Each sample is the mean of a batch of operations; the rows alternate.

use std::time::Instant;

use anyhow::{Context as _, Result, ensure};
use kube::Client;
use pando_host::grants::objects::{Kind, ObjectPolicy};
use serde_json::{Value, json};

use super::kube_write::{NAMESPACE, pod_body};
use super::ns;
use crate::env;
use crate::report::{Row, Unit};
use crate::stats::Summary;

/// Operations per sample.
const OPS: u64 = 1_000;

/// The in-process rows; `admin` reads the stored pod the patch path checks.
pub(super) async fn rows(quick: bool, admin: &Client) -> Result<Vec<Row>> {
    let samples = if quick { 20 } else { 200 };
    let rules = env::write_probe_grants()?
        .kubernetes
        .context("the write grants have a kubernetes section")?
        .objects;
    let policy = ObjectPolicy::new(&rules);
    let create = pod_body(None, "create").to_string().into_bytes();
    let stored = stored_pod(admin).await?;
    let patch = json!({"metadata": {"labels": {"pando.test/rev": "h0"}}})
        .to_string()
        .into_bytes();
    // Both paths pass on these bodies, as in the network rows.
    create_path(&policy, &create)?;
    patch_path(&policy, &patch, &stored)?;
    let parsed: Value = serde_json::from_slice(&create)?;
    let stored_parsed: Value = serde_json::from_slice(&stored)?;

    let (mut c, mut p, mut only_c, mut only_p) = (vec![], vec![], vec![], vec![]);
    for _ in 0..samples {
        c.push(batch(|| create_path(&policy, &create))?);
        p.push(batch(|| patch_path(&policy, &patch, &stored))?);
        only_c.push(batch(|| check(&policy, &parsed))?);
        only_p.push(batch(|| check(&policy, &stored_parsed))?);
    }
    let p50 = |s: &[f64]| Summary::of(s).map_or(0.0, |s| s.median);
    Ok(vec![
        Row::new(
            "in process: create's parse + check + re-serialize",
            Unit::Ns,
            &c,
            &[],
        )
        .per_sample(OPS)
        .extra(
            "of which ObjectPolicy::check, p50",
            format!("{:.0} ns ({} bytes of Pod)", p50(&only_c), create.len()),
        ),
        Row::new(
            "in process: patch's parses + check of the change + conditioned body",
            Unit::Ns,
            &p,
            &[],
        )
        .per_sample(OPS)
        .extra(
            "of which ObjectPolicy::check, p50",
            format!(
                "{:.0} ns ({} bytes of stored Pod)",
                p50(&only_p),
                stored.len()
            ),
        ),
    ])
}

/// The mean time of `OPS` calls of `op`, in ns.
fn batch(mut op: impl FnMut() -> Result<()>) -> Result<f64> {
    let t = Instant::now();
    for _ in 0..OPS {
        op()?;
    }
    Ok(ns(t.elapsed()) / OPS as f64)
}

fn check(policy: &ObjectPolicy, pod: &Value) -> Result<()> {
    policy
        .check(Kind::Pod, Some(NAMESPACE), std::hint::black_box(pod))
        .map_err(|v| anyhow::anyhow!("the bench's pod is refused: {v}"))
}

/// A create's body work: parse, check, prepare, serialize.
fn create_path(policy: &ObjectPolicy, body: &[u8]) -> Result<()> {
    let mut v: Value = serde_json::from_slice(std::hint::black_box(body))?;
    check(policy, &v)?;
    policy.prepare_create(Kind::Pod, &mut v);
    std::hint::black_box(v.to_string().into_bytes());
    Ok(())
}

/// A patch's body work around its read and dry run, `result` the answer
/// of both.
fn patch_path(policy: &ObjectPolicy, patch: &[u8], result: &[u8]) -> Result<()> {
    let mut body: Value = serde_json::from_slice(std::hint::black_box(patch))?;
    std::hint::black_box(body.to_string().into_bytes());
    let old: Value = serde_json::from_slice(std::hint::black_box(result))?;
    let result: Value = serde_json::from_slice(std::hint::black_box(result))?;
    let rv = result
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    policy
        .check_change(Kind::Pod, Some(NAMESPACE), &old, &result)
        .map_err(|v| anyhow::anyhow!("the stored pod's change is refused: {v}"))?;
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv));
    }
    std::hint::black_box(body.to_string().into_bytes());
    Ok(())
}

/// The host's patch pod as the API server returns it (what a dry run of a
/// patch answers), as raw JSON.
async fn stored_pod(admin: &Client) -> Result<Vec<u8>> {
    let path = format!(
        "/api/v1/namespaces/{NAMESPACE}/pods/{}",
        super::kube_write::PATCH_PODS[0]
    );
    let req = http::Request::get(path).body(Vec::new())?;
    let text = admin.request_text(req).await?;
    ensure!(text.contains("\"kind\":\"Pod\""), "not a pod: {text:.200}");
    Ok(text.into_bytes())
}
