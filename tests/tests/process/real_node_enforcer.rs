//! O-43's two verdicts on the real node: `health` passes while kube-router enforces
//! NetworkPolicy, and says "not enforced" once the enforcer is stopped and its rules are gone
//! (`scripts/cluster enforcer stop`). A test binary of its own, one test: while the enforcer is
//! down no other test's isolation holds, and cargo runs test binaries one after another.

use std::process::Command;

use pando_host::CallError;
use pando_host::types::Error as AdapterError;
use pando_tests::cluster;
use pando_tests::kubernetes_adapter::{admin, ctx};
use pando_tests::real_node as node;

fn enforcer(action: &str) {
    let status = Command::new(cluster::repo_root().join("scripts/cluster"))
        .args(["enforcer", action])
        .current_dir(cluster::repo_root())
        .status()
        .expect("running scripts/cluster enforcer");
    assert!(status.success(), "scripts/cluster enforcer {action} failed");
}

/// Starts the enforcer again however the test ends, so that a failure here does not leave the
/// cluster without NetworkPolicy for the tests after it.
struct Restart;

impl Drop for Restart {
    fn drop(&mut self) {
        enforcer("start");
    }
}

#[tokio::test]
async fn o43_health_says_not_enforced_when_the_enforcer_is_gone_and_passes_again_after() {
    let admin = admin().await;
    node::require(&admin).await;
    let (a, _h) = node::load_adapter().await;
    a.health_check(&ctx())
        .await
        .expect("enforced: the canary's denied client is refused (O-43)");

    let restart = Restart;
    enforcer("stop");
    match a.health_check(&ctx()).await {
        Err(CallError::Adapter(AdapterError::Unavailable(m))) => assert!(
            m.contains("does not enforce NetworkPolicy (O-43)"),
            "the verdict is `not enforced`, not `cannot tell`: {m}"
        ),
        other => panic!("with no enforcer, health must say not enforced; got {other:?}"),
    }
    drop(restart);

    a.health_check(&ctx())
        .await
        .expect("enforced again once kube-router is back (O-43)");
}
