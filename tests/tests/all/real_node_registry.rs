//! O-41 on the real node: an app's image comes from the test registry, which asks for basic auth,
//! and the kubelet pulls it with the pull Secret the adapter writes from the plan's credentials.
//! The registry's images are never in the node's image store under their names before a test
//! pulls them, and the kubelet verifies credentials for an image pulled with some
//! (`imagePullCredentialsVerificationPolicy`), so each pull below is a real, authenticated one.

use pando_host::types::BundlePlan;
use pando_tests::cluster;
use pando_tests::kubernetes_adapter::{admin, cleanup, ctx, id, wait_phase};
use pando_tests::plans::plan;
use pando_tests::real_node::{self as node, Registry};

fn registry_plan(app: &str, registry: &Registry, password: &str) -> BundlePlan {
    let mut p = plan(app, &["web"]);
    p.workloads[0].image = registry.busybox();
    p.workloads[0].command = vec!["sleep".into(), "2147483647".into()];
    p.pull_credentials = vec![registry.credential(password)];
    p
}

#[tokio::test]
async fn o41_apply_pulls_the_apps_image_from_the_registry_with_its_credentials() {
    let admin = admin().await;
    node::require(&admin).await;
    let registry = Registry::get();
    let (a, _h) = node::load_adapter().await;
    let app = id("node-pull");
    a.apply(&ctx(), &registry_plan(&app, &registry, &registry.password))
        .await
        .expect("apply");
    let pod = wait_phase(&format!("pando-{app}"), "web", "Running").await;
    let status = pod
        .status
        .and_then(|s| s.container_statuses)
        .and_then(|c| c.into_iter().next())
        .expect("the container's status");
    assert_eq!(status.image, registry.busybox(), "the registry's image");
    assert!(
        status.image_id.contains("sha256:"),
        "pulled, with a digest: {}",
        status.image_id
    );
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn o41_a_wrong_password_is_a_pull_failure_in_words_and_the_corrected_one_is_used_next() {
    let admin = admin().await;
    node::require(&admin).await;
    let registry = Registry::get();
    let (a, _h) = node::load_adapter().await;
    let app = id("node-pull-wrong");
    a.apply(&ctx(), &registry_plan(&app, &registry, "not-the-password"))
        .await
        .expect("apply");
    let reason = node::reason_of_a_workload_that_never_runs(
        &a,
        &app,
        "web",
        |r| r.starts_with("ErrImagePull") || r.starts_with("ImagePullBackOff"),
        "a wrong password must not pull the image",
    )
    .await;
    assert!(
        reason.contains(&registry.busybox()) || reason.contains("Back-off pulling image"),
        "the failure names the image, in the kubelet's words: {reason}"
    );

    // The plan's password corrected: the next apply rewrites the pull Secret, and the kubelet's
    // next attempt pulls with it.
    a.apply(&ctx(), &registry_plan(&app, &registry, &registry.password))
        .await
        .expect("apply with the right password");
    wait_phase(&format!("pando-{app}"), "web", "Running").await;
    cleanup(&a, &app).await;
}

/// The registry's own digest of its busybox manifest (`Docker-Content-Digest`), asked of it
/// directly with the pull user's credentials.
fn manifest_digest(registry: &Registry) -> String {
    let out = std::process::Command::new("curl")
        .args([
            "-sS",
            "--max-time",
            "10",
            "-o",
            "/dev/null",
            "-D",
            "-",
            "--cacert",
        ])
        .arg(cluster::state_dir().join("pki/ca.crt"))
        .args([
            "-u",
            &format!("{}:{}", registry.username, registry.password),
        ])
        .args([
            "-H",
            "Accept: application/vnd.oci.image.index.v1+json, \
             application/vnd.oci.image.manifest.v1+json, \
             application/vnd.docker.distribution.manifest.list.v2+json, \
             application/vnd.docker.distribution.manifest.v2+json",
        ])
        .arg(format!(
            "https://{}/v2/pando/busybox/manifests/1",
            registry.server
        ))
        .output()
        .expect("running curl against the registry");
    let head = String::from_utf8_lossy(&out.stdout);
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("docker-content-digest")
                .then(|| v.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("the registry named no digest: {head}"))
}

#[tokio::test]
async fn observe_reports_the_digest_the_runtime_says_the_container_runs() {
    let admin = admin().await;
    node::require(&admin).await;
    let registry = Registry::get();
    let (a, _h) = node::load_adapter().await;
    let app = id("node-digest");
    // The plan names the tag only: the digest observe reports can come from nowhere but the
    // runtime, which pulled the manifest the registry's tag points at.
    let plan = registry_plan(&app, &registry, &registry.password);
    assert_eq!(plan.workloads[0].digest, None);
    a.apply(&ctx(), &plan).await.expect("apply");
    wait_phase(&format!("pando-{app}"), "web", "Running").await;
    let observed = a
        .observe(&ctx(), &pando_tests::plans::bundle(&app))
        .await
        .expect("observe");
    let web = observed
        .workloads
        .iter()
        .find(|w| w.name == "web")
        .expect("the workload");
    assert_eq!(
        web.digest.as_deref(),
        Some(manifest_digest(&registry).as_str()),
        "the registry's digest of the image the container runs"
    );
    cleanup(&a, &app).await;
}
