//! The Python adapter beside the Rust one: the same objects, the same
//! capacity and in-use counts.

use super::*;

#[tokio::test]
async fn the_rust_and_python_adapters_make_the_same_objects_but_the_app_binding_and_read_them_alike()
 {
    let (a, _h) = py::load().await;
    let (rust, _h2) = rust_adapter().await;
    let c = admin().await;
    for python_first in [true, false] {
        let app = id(if python_first { "py-same" } else { "py-same-r" });
        let ns = format!("pando-{app}");
        let mut p = with_claim(plan(&app, &["web", "db"]));
        p.workloads[0].digest = Some("sha256:abcd".into());
        p.workloads[0].command = vec!["sh".into(), "-c".into()];
        p.workloads[0].args = vec!["echo héllo; sleep 3600".into()];
        p.workloads[0].env = vec![pando_host::types::EnvVar {
            name: "MODE".into(),
            value: "prod \"quoted\"\n".into(),
        }];
        p.network.egress = EgressPolicy::Restricted(vec![pando_host::types::EgressRule {
            destination: "192.0.2.7/24".into(),
            ports: vec![443],
        }]);
        let (first, second) = if python_first {
            (&a, &rust)
        } else {
            (&rust, &a)
        };
        first.apply(&ctx(), &p).await.expect("first apply");
        wait_phase(&ns, "web", "Running").await;
        wait_phase(&ns, "db", "Running").await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let before = versions(&c, &ns).await;
        second
            .apply(&ctx(), &p)
            .await
            .expect("the other adapter's apply");
        let after = versions(&c, &ns).await;
        // Every kind both write, RoleBindings included. The one object only the Rust adapter
        // makes is Pando's app binding (`pando-app`: the Python adapter refuses `app_role` and
        // `service_account` as not its features): the Rust adapter adds it when second, and
        // the Python adapter leaves the Rust adapter's alone.
        let app_binding = "rolebinding/pando-app";
        let mut expected = before.clone();
        if python_first {
            assert!(
                !before.contains_key(app_binding),
                "the Python adapter makes no app binding: {before:?}"
            );
            let made = after
                .get(app_binding)
                .unwrap_or_else(|| panic!("the Rust adapter makes its app binding: {after:?}"));
            expected.insert(app_binding.into(), made.clone());
        }
        assert_eq!(
            after, expected,
            "the other adapter finds every object satisfied (python first: {python_first})"
        );
        let seen_py = a.observe(&ctx(), &bundle(&app)).await.expect("observe");
        let seen_rust = rust
            .observe(&ctx(), &bundle(&app))
            .await
            .expect("rust observe");
        assert_eq!(seen_py, seen_rust, "both observe the same");
        let usage_py = a.usage(&ctx(), &bundle(&app)).await.expect("usage");
        let usage_rust = rust.usage(&ctx(), &bundle(&app)).await.expect("rust usage");
        assert_eq!(usage_py, usage_rust, "both count the same usage");
        assert_eq!(usage_py.workloads.len(), 2);
        assert_eq!(usage_py.volume_bytes, 1 << 30);
        cleanup(&a, &app).await;
    }
}

#[tokio::test]
async fn r243_r242_capacity_and_in_use_are_counted_as_the_rust_adapter_counts() {
    let (a, _h) = py::load().await;
    let (rust, _h2) = rust_adapter().await;
    let app = id("py-cap");
    let ns = format!("pando-{app}");
    a.apply(&ctx(), &with_claim(plan(&app, &["web"])))
        .await
        .expect("apply");
    wait_phase(&ns, "web", "Running").await;
    let mark = audit_mark();
    // Other tests start and stop pods meanwhile: read both until a pair
    // agrees, which a correct port does as soon as nothing moves between
    // the two reads.
    let mut last = None;
    for _ in 0..10 {
        let py_cap = a.capacity(&ctx()).await.expect("capacity");
        let rust_cap = rust.capacity(&ctx()).await.expect("rust capacity");
        let py_fit = a.largest_fit_for(&ctx(), &app).await.expect("fit");
        let rust_fit = rust.largest_fit_for(&ctx(), &app).await.expect("rust fit");
        if py_cap == rust_cap && py_fit == rust_fit {
            last = None;
            assert!(py_cap.nodes >= 1);
            assert!(py_cap.largest_fit.is_some());
            assert!(py_fit.is_some());
            break;
        }
        last = Some((py_cap, rust_cap, py_fit, rust_fit));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(last.is_none(), "capacity differs: {last:?}");
    let in_use = a.in_use(&ctx()).await.expect("in-use");
    assert!(in_use.bundles.contains(&app), "{in_use:?}");
    assert!(
        in_use
            .volumes
            .iter()
            .any(|v| v.bundle == app && v.name == "data" && v.location == format!("{ns}/data"))
    );
    assert!(in_use.requested.cpu_millis >= 100);
    let writes: Vec<_> = requests(mark, &ns)
        .into_iter()
        .filter(|r| r.is_write())
        .collect();
    assert!(
        writes.is_empty(),
        "reading capacity writes nothing: {writes:?}"
    );

    // A volume of its own: made, found, and destroyed with its claim.
    let handle = a
        .create_volume(
            &ctx(),
            &VolumeRequest {
                bundle: app.clone(),
                name: "cache".into(),
                size_bytes: Some(1 << 20),
            },
        )
        .await
        .expect("create_volume");
    assert_eq!(handle.location, format!("{ns}/cache"));
    let err = a
        .create_volume(
            &ctx(),
            &VolumeRequest {
                bundle: app.clone(),
                name: "Not_A_Volume!".into(),
                size_bytes: None,
            },
        )
        .await
        .expect_err("a bad name");
    assert_eq!(err.kind(), "invalid", "{err}");
    let usage = a.usage(&ctx(), &bundle(&app)).await.expect("usage");
    assert_eq!(usage.volume_bytes, (1 << 30) + (1 << 20));
    a.destroy_volume(&ctx(), &handle)
        .await
        .expect("destroy_volume");
    a.destroy_volume(&ctx(), &handle)
        .await
        .expect("destroying it again is not an error");
    cleanup(&a, &app).await;
}
