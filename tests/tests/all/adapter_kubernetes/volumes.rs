//! Volumes: destroy keeps them by default and removes them when asked,
//! a bound volume is retained, and `create_volume` makes a claim in the
//! app's namespace.

use super::*;

#[tokio::test]
async fn r204_destroy_keeps_volumes_by_default() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-keep");
    let ns = format!("pando-{app}");
    let mut p = with_volume(plan(&app, &["web"]), "data");
    p.pull_credentials = credentials();
    a.apply(&ctx(), &p).await.expect("apply");
    // The default options, as core passes them when nobody asked for the data to go.
    a.destroy(&ctx(), &bundle(&app), DestroyOptions::default())
        .await
        .expect("destroy");
    let c = admin().await;
    assert!(
        Api::<Namespace>::all(c.clone())
            .get_opt(&ns)
            .await
            .expect("ns")
            .is_some()
    );
    assert!(
        Api::<PersistentVolumeClaim>::namespaced(c.clone(), &ns)
            .get_opt("data")
            .await
            .expect("pvc")
            .is_some()
    );
    assert!(
        Api::<NetworkPolicy>::namespaced(c.clone(), &ns)
            .get_opt("pando-default-deny")
            .await
            .expect("np")
            .is_some()
    );
    assert!(
        Api::<Secret>::namespaced(c.clone(), &ns)
            .get_opt("pando-pull")
            .await
            .expect("secret")
            .is_none()
    );
    let svcs = Api::<Service>::namespaced(c, &ns)
        .list(&ListParams::default())
        .await
        .expect("services");
    assert!(svcs.items.is_empty());
    let usage = a.usage(&ctx(), &bundle(&app)).await.expect("usage");
    assert_eq!(usage.volume_bytes, 1 << 30);
    cleanup(&a, &app).await;
}

#[tokio::test]
async fn destroy_without_keep_volumes_removes_claims_and_namespace() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-gone");
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &with_volume(plan(&app, &["web"]), "data"))
        .await
        .expect("apply");
    let in_use = a.in_use(&ctx()).await.expect("in_use");
    assert!(in_use.bundles.contains(&app));
    assert!(
        in_use
            .volumes
            .iter()
            .any(|v| v.bundle == app && v.name == "data")
    );
    a.destroy(
        &ctx(),
        &bundle(&app),
        DestroyOptions {
            keep_volumes: false,
        },
    )
    .await
    .expect("destroy");
    let c = admin().await;
    let n = Api::<Namespace>::all(c.clone())
        .get_opt(&ns)
        .await
        .expect("ns");
    assert!(
        n.is_none_or(|n| n.metadata.deletion_timestamp.is_some()),
        "the namespace goes"
    );
    let claim = Api::<PersistentVolumeClaim>::namespaced(c, &ns)
        .get_opt("data")
        .await
        .expect("pvc");
    assert!(claim.is_none_or(|c| c.metadata.deletion_timestamp.is_some()));
}

#[tokio::test]
async fn r204_a_bound_volume_is_retained() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-ret");
    let ns = format!("pando-{app}");
    let c = admin().await;
    let pvs = Api::<PersistentVolume>::all(c.clone());
    let pv_name = ka::bound_pv(&ns, "data").await;

    let p = with_volume(plan(&app, &["web"]), "data");
    a.apply(&ctx(), &p).await.expect("apply");
    ka::wait_volume_ready(&a, &app, "data").await;
    a.apply(&ctx(), &p).await.expect("apply once bound");
    let policy = |pv: PersistentVolume| pv.spec.and_then(|s| s.persistent_volume_reclaim_policy);
    assert_eq!(
        policy(pvs.get(&pv_name).await.expect("pv")).as_deref(),
        Some("Retain"),
        "R-204"
    );

    let handle = pando_host::types::VolumeHandle {
        bundle: app.clone(),
        name: "data".into(),
        location: format!("{ns}/data"),
    };
    a.destroy_volume(&ctx(), &handle)
        .await
        .expect("destroy_volume");
    let pv_after = pvs.get_opt(&pv_name).await.expect("pv");
    if let Some(pv) = pv_after {
        assert_eq!(
            policy(pv).as_deref(),
            Some("Delete"),
            "back to Delete first"
        );
    }
    cleanup(&a, &app).await;
    ka::delete_pv(&pv_name).await;
}

#[tokio::test]
async fn create_volume_makes_a_claim_in_the_apps_namespace() {
    let (a, _h) = ka::load().await;
    let app = id("k8s-vol");
    let handle = a
        .create_volume(
            &ctx(),
            &pando_host::types::VolumeRequest {
                bundle: app.clone(),
                name: "cache".into(),
                size_bytes: None,
            },
        )
        .await
        .expect("create_volume");
    assert_eq!(handle.location, format!("pando-{app}/cache"));
    let claim = Api::<PersistentVolumeClaim>::namespaced(admin().await, &format!("pando-{app}"))
        .get("cache")
        .await
        .expect("the claim");
    let size = claim
        .spec
        .and_then(|s| s.resources)
        .and_then(|r| r.requests)
        .unwrap_or_default();
    assert_eq!(size["storage"], Quantity((1u64 << 30).to_string()));
    a.destroy_volume(&ctx(), &handle)
        .await
        .expect("destroy_volume");
    cleanup(&a, &app).await;
}
