//! Issue 47's escapes, each shown at both layers against the real API server: the body a
//! hostile adapter would send, through the host with the shipped grants
//! (`deploy/grants/kubernetes.yaml`), refused by the host naming its object rule; and the same
//! body sent as `pando` straight to the API server, refused by the admission policy
//! (`deploy/kubernetes/admission-policy.yaml`) naming its rule, not by RBAC (which allows
//! `pando` every one of these verbs there). The allowed variant of each passes both layers.
//! Where a controller makes the object from the adapter's template (a Deployment's pods, a
//! pod's ephemeral claims), the policy's refusal of the controller is shown too.

use std::time::Duration;

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Event, PersistentVolumeClaim, Pod, Secret, Service};
use kube::api::{ApiResource, DynamicObject, ListParams, Patch, PatchParams};
use pando_tests::kubernetes_adapter as ka;

use super::*;

/// The probe with the shipped grants, as `pando`: what a hostile adapter has.
async fn load_shipped() -> (Adapter, Host) {
    probe::load_as_pando(&components::kube_probe(), ka::grants(), "{}").await
}

async fn pando() -> kube::Client {
    cluster::client(Identity::Pando).await.expect("pando")
}

/// Creates `body` (a `K`) in `ns` as `client`'s identity, exactly as given; the API server's
/// refusal (status, message) if any.
async fn create_as<K>(client: kube::Client, ns: &str, body: &Value) -> Result<(), (u16, String)>
where
    K: kube::Resource<DynamicType = ()>,
{
    let api: Api<DynamicObject> = Api::namespaced_with(client, ns, &ApiResource::erase::<K>(&()));
    let obj: DynamicObject = serde_json::from_value(body.clone()).expect("an object");
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) => Err((e.code, e.message)),
        Err(e) => panic!("the API server did not answer: {e}"),
    }
}

/// Asserts the admission policy (not RBAC) refused `pando`, naming `rule`.
fn policy_refused(result: Result<(), (u16, String)>, rule: &str) {
    let Err((code, m)) = result else {
        panic!("the cluster let pando write what {rule} refuses");
    };
    assert!(
        code != 403 || !m.contains("cannot"),
        "RBAC, not the policy, refused it ({rule}): {m}"
    );
    assert!(
        m.contains("pando-adapter-objects") && m.contains(&format!("{rule}:")),
        "the admission policy names {rule}: {m}"
    );
}

/// Sends `body` to `path` (`…/pods`) through the host, then as `pando` straight to the API
/// server: the host refuses it by `host_rule` naming `field`, the policy by `policy_rule`.
async fn refused_by_both<K>(
    a: &Adapter,
    ns: &str,
    body: &Value,
    (host_rule, field): (&str, &str),
    policy_rule: &str,
) where
    K: kube::Resource<DynamicType = ()>,
{
    let plural = K::plural(&());
    let path = format!("/{}/namespaces/{ns}/{plural}", api_prefix::<K>());
    refused(send(a, "post", "json", &path, body).await, host_rule, field);
    policy_refused(create_as::<K>(pando().await, ns, body).await, policy_rule);
}

fn api_prefix<K: kube::Resource<DynamicType = ()>>() -> String {
    let group = K::group(&());
    let version = K::version(&());
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// A pod of the adapter's shape (no token, a memory limit), `spec` merged in.
fn app_pod(name: &str, extra: Value) -> Value {
    let mut p = pod(name, extra);
    for c in p["spec"]["containers"].as_array_mut().into_iter().flatten() {
        if c.get("resources").is_none() {
            c["resources"] = json!({"limits": {"memory": "64Mi"}});
        }
    }
    p
}

fn container(extra: Value) -> Value {
    let mut c =
        json!({"name": "c", "image": "busybox:1.36", "resources": {"limits": {"memory": "64Mi"}}});
    if let (Value::Object(c), Value::Object(e)) = (&mut c, extra) {
        c.extend(e);
    }
    c
}

fn claim(name: &str, spec: Value) -> Value {
    let mut s =
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
    if let (Value::Object(s), Value::Object(e)) = (&mut s, spec) {
        s.extend(e);
    }
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": s})
}

#[tokio::test]
async fn volumes_the_node_mounts_are_refused_by_the_host_and_the_cluster() {
    let (a, _h) = load_shipped().await;
    let ns = probe::app_namespace("objvol").await;
    let name = ns.name.clone();
    for (i, (volume, field)) in [
        (
            json!({"name": "v", "nfs": {"server": "198.18.0.9", "path": "/exports"}}),
            "spec.volumes[0].nfs",
        ),
        (
            json!({"name": "v", "iscsi": {"targetPortal": "198.18.0.9:3260",
                    "iqn": "iqn.2001-04.com.example:storage", "lun": 0}}),
            "spec.volumes[0].iscsi",
        ),
        (
            json!({"name": "v", "fc": {"targetWWNs": ["500a0982991b8dc5"], "lun": 0}}),
            "spec.volumes[0].fc",
        ),
        (
            json!({"name": "v", "csi": {"driver": "inline.example.com"}}),
            "spec.volumes[0].csi",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        refused_by_both::<Pod>(
            &a,
            &name,
            &app_pod(&format!("mount-{i}"), json!({"volumes": [volume]})),
            ("pods.volumes", field),
            "pods.volumes",
        )
        .await;
    }
    // restricted's types pass both.
    let fine = json!({"volumes": [{"name": "a", "emptyDir": {}},
                                  {"name": "b", "projected": {"sources": [{"downwardAPI": {"items": [
                                      {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}}]}}]});
    written(
        send(
            &a,
            "post",
            "json",
            &format!("/api/v1/namespaces/{name}/pods"),
            &app_pod("fine", fine.clone()),
        )
        .await,
    );
    create_as::<Pod>(pando().await, &name, &app_pod("fine-direct", fine))
        .await
        .expect("the cluster admits restricted's volume types");
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn claims_and_claim_templates_name_a_granted_class_and_no_volume() {
    let (a, _h) = load_shipped().await;
    let ns = probe::app_namespace("objclaim").await;
    let name = ns.name.clone();
    for (body, host, policy) in [
        (
            claim("no-class", json!({"storageClassName": ""})),
            ("claims.storage-class", "spec.storageClassName"),
            "claims.storage-class",
        ),
        (
            claim("static", json!({"storageClassName": "local-static"})),
            ("claims.storage-class", "spec.storageClassName"),
            "claims.storage-class",
        ),
        (
            claim(
                "huge",
                json!({"storageClassName": "standard",
                                 "resources": {"requests": {"storage": "2Ti"}}}),
            ),
            ("claims.size", "spec.resources.requests.storage"),
            "claims.size",
        ),
    ] {
        refused_by_both::<PersistentVolumeClaim>(&a, &name, &body, host, policy).await;
    }
    // A pod's claim template, as the ephemeral-volume controller would make it.
    let template = |spec: Value| {
        app_pod(
            "scratch",
            json!({"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                "spec": spec}}}]}),
        )
    };
    let base = json!({"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                      "resources": {"requests": {"storage": "1Gi"}}});
    let with = |extra: Value| {
        let mut s = base.clone();
        if let (Value::Object(s), Value::Object(e)) = (&mut s, extra) {
            s.extend(e);
        }
        s
    };
    let at = "spec.volumes[0].ephemeral.volumeClaimTemplate.spec";
    for (spec, rule, field) in [
        (
            with(json!({"volumeName": "pv-of-another"})),
            "claims.binding",
            "volumeName",
        ),
        (
            with(json!({"selector": {"matchLabels": {"tier": "db"}}})),
            "claims.binding",
            "selector",
        ),
        (
            with(json!({"storageClassName": ""})),
            "claims.storage-class",
            "storageClassName",
        ),
    ] {
        refused_by_both::<Pod>(
            &a,
            &name,
            &template(spec),
            (rule, &format!("{at}.{field}")),
            rule,
        )
        .await;
    }
    // Granted: a class of the list, under the ceiling, in a claim and a template.
    written(
        send(
            &a,
            "post",
            "json",
            &format!("/api/v1/namespaces/{name}/persistentvolumeclaims"),
            &claim("data", json!({"storageClassName": "standard"})),
        )
        .await,
    );
    create_as::<Pod>(pando().await, &name, &template(base.clone()))
        .await
        .expect("the cluster admits a granted template");

    // The claim the controller makes from a template the admin wrote (the policy does not
    // bind the admin) is the controller's create: refused there by the policy, by namespace.
    let pods: Api<Pod> = Api::namespaced(admin().await, &name);
    let mut stolen = template(with(json!({"volumeName": "pv-of-another"})));
    stolen["metadata"]["name"] = json!("by-controller");
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(stolen).expect("a pod"),
    )
    .await
    .expect("the admin may write the template");
    let events: Api<Event> = Api::namespaced(admin().await, &name);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let list = events
            .list(&ListParams::default().fields("involvedObject.name=by-controller"))
            .await
            .expect("events");
        if list.items.iter().any(|e| {
            e.message.as_deref().is_some_and(|m| {
                m.contains("pando-adapter-objects") && m.contains("claims.binding")
            })
        }) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the ephemeral-volume controller's claim is refused by claims.binding: {:?}",
            list.items
                .iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(admin().await, &name);
    assert!(
        claims
            .get_opt("by-controller-scratch")
            .await
            .expect("read")
            .is_none(),
        "no claim was made from the hostile template"
    );
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn service_account_token_secrets_are_refused_by_the_host_and_the_cluster() {
    let (a, _h) = load_shipped().await;
    let ns = probe::app_namespace("objsecret").await;
    let token = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "minted", "annotations": {"kubernetes.io/service-account.name": "default"}},
        "type": "kubernetes.io/service-account-token"});
    refused_by_both::<Secret>(
        &a,
        &ns.name,
        &token,
        ("secrets.service-account-token", "type"),
        "secrets.service-account-token",
    )
    .await;
    let secrets: Api<Secret> = Api::namespaced(admin().await, &ns.name);
    assert!(secrets.get_opt("minted").await.expect("read").is_none());
    let opaque = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "plain"},
                        "type": "Opaque", "stringData": {"k": "v"}});
    written(
        send(
            &a,
            "post",
            "json",
            &format!("/api/v1/namespaces/{}/secrets", ns.name),
            &opaque,
        )
        .await,
    );
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn probe_hosts_pull_policy_and_security_contexts_are_refused_by_both_layers() {
    let (a, _h) = load_shipped().await;
    let ns = probe::app_namespace("objctx").await;
    let name = ns.name.clone();
    let one = |c: Value| json!({"containers": [container(c)]});
    let cases: Vec<(Value, (&str, &str), &str)> = vec![
        (
            one(json!({"readinessProbe": {"httpGet": {"host": "198.18.0.1", "port": 10250}}})),
            (
                "pods.baseline",
                "spec.containers[0].readinessProbe.httpGet.host",
            ),
            "pods.probe-host",
        ),
        (
            one(json!({"livenessProbe": {"tcpSocket": {"host": "198.18.0.1", "port": 2379}}})),
            (
                "pods.baseline",
                "spec.containers[0].livenessProbe.tcpSocket.host",
            ),
            "pods.probe-host",
        ),
        (
            one(
                json!({"lifecycle": {"postStart": {"httpGet": {"host": "198.18.0.1", "port": 80}}}}),
            ),
            (
                "pods.baseline",
                "spec.containers[0].lifecycle.postStart.httpGet.host",
            ),
            "pods.probe-host",
        ),
        (
            one(json!({"imagePullPolicy": "Never"})),
            (
                "pods.image-pull-policy",
                "spec.containers[0].imagePullPolicy",
            ),
            "pods.image-pull-policy",
        ),
        (
            json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
            ("pods.baseline", "spec.securityContext.seccompProfile.type"),
            "pods.seccomp",
        ),
        (
            one(json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}})),
            (
                "pods.baseline",
                "spec.containers[0].securityContext.appArmorProfile.type",
            ),
            "pods.apparmor",
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"user": "system_u"}}}),
            ("pods.baseline", "spec.securityContext.seLinuxOptions.user"),
            "pods.selinux",
        ),
    ];
    for (i, (spec, host, policy)) in cases.into_iter().enumerate() {
        refused_by_both::<Pod>(&a, &name, &app_pod(&format!("ctx-{i}"), spec), host, policy).await;
    }
    // A Windows host process: the host refuses it; the API server's own validation refuses it
    // before admission unless the pod also asks for the host's network, which the policy's
    // `pods.host-namespaces` refuses (`pods.host-process` is the rule behind both).
    let host_process = json!({"securityContext": {"windowsOptions": {"hostProcess": true}}});
    refused(
        send(
            &a,
            "post",
            "json",
            &format!("/api/v1/namespaces/{name}/pods"),
            &app_pod("host-process", host_process.clone()),
        )
        .await,
        "pods.baseline",
        "spec.securityContext.windowsOptions.hostProcess",
    );
    let mut with_network = host_process;
    with_network["hostNetwork"] = json!(true);
    policy_refused(
        create_as::<Pod>(pando().await, &name, &app_pod("host-process", with_network)).await,
        "pods.host-namespaces",
    );
    // The allowed variants: a probe of the pod itself, IfNotPresent, RuntimeDefault.
    let fine = json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                      "containers": [container(json!({"imagePullPolicy": "IfNotPresent",
                          "readinessProbe": {"tcpSocket": {"port": 8080}}}))]});
    written(
        send(
            &a,
            "post",
            "json",
            &format!("/api/v1/namespaces/{name}/pods"),
            &app_pod("fine", fine.clone()),
        )
        .await,
    );
    create_as::<Pod>(pando().await, &name, &app_pod("fine-direct", fine))
        .await
        .expect("the cluster admits the allowed variants");
    ns.delete().await.expect("cleanup");
}

/// `pando-edge`, Pando's (labelled as the adapter labels it) and with `pando`'s binding, made
/// if missing; waits out a deletion (the adapter's tests remove it with their last edge).
async fn edge_namespace() -> &'static str {
    const EDGE: &str = "pando-edge";
    let namespaces: Api<Namespace> = Api::all(admin().await);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        match namespaces.get_opt(EDGE).await.expect("read") {
            Some(n) if n.metadata.deletion_timestamp.is_none() => break,
            Some(_) => {}
            None => {
                let ns = json!({"metadata": {"name": EDGE,
                    "labels": {"app.kubernetes.io/managed-by": "pando"}}});
                match namespaces
                    .create(
                        &PostParams::default(),
                        &serde_json::from_value(ns).expect("ns"),
                    )
                    .await
                {
                    Ok(_) => break,
                    Err(kube::Error::Api(e)) if e.code == 409 => {}
                    Err(e) => panic!("making {EDGE}: {e}"),
                }
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{EDGE} is never usable"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    cluster::bind_adapter(EDGE)
        .await
        .expect("the adapter's binding");
    EDGE
}

#[tokio::test]
async fn the_edge_exposes_only_its_own_pods_and_its_deployments_are_bounded() {
    let (a, _h) = load_shipped().await;
    let edge = edge_namespace().await;
    let suffix = cluster::unique_name("t");
    let edge_labels = json!({"app.kubernetes.io/managed-by": "pando", "pando.dev/edge": suffix});
    let service = |name: &str, selector: &Value, target: Value| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"type": "NodePort", "selector": selector,
                        "ports": [{"name": "http", "port": 80, "targetPort": target}]}})
    };
    let db = json!({"app": "db"});
    refused_by_both::<Service>(
        &a,
        edge,
        &service(&format!("db-{suffix}"), &db, json!("http")),
        (
            "services.exposed-selector",
            "spec.selector[app.kubernetes.io/managed-by]",
        ),
        "services.exposed-selector",
    )
    .await;
    refused_by_both::<Service>(
        &a,
        edge,
        &service(&format!("port-{suffix}"), &edge_labels, json!(5432)),
        ("services.exposed-ports", "spec.ports[0].targetPort"),
        "services.exposed-ports",
    )
    .await;
    // The edge's own Service passes both layers.
    let own = format!("edge-{suffix}");
    written(
        send(
            &a,
            "post",
            "json",
            &format!("/api/v1/namespaces/{edge}/services"),
            &service(&own, &edge_labels, json!("http")),
        )
        .await,
    );
    let services: Api<Service> = Api::namespaced(pando().await, edge);
    services
        .delete(&own, &DeleteParams::default())
        .await
        .expect("cleanup");
    create_as::<Service>(
        pando().await,
        edge,
        &service(&own, &edge_labels, json!("http")),
    )
    .await
    .expect("the cluster admits the edge's Service");
    services
        .delete(&own, &DeleteParams::default())
        .await
        .expect("cleanup");

    // The edge's Deployment: replicas and resources bounded.
    let deploy = |name: &str, replicas: i64, memory: &str| {
        let mut d = deployment(name);
        d["metadata"]["labels"] = json!({"pando.test/objects": suffix});
        d["spec"]["replicas"] = json!(replicas);
        d["spec"]["template"]["spec"]["containers"][0]["resources"] =
            json!({"limits": {"memory": memory}});
        d
    };
    refused_by_both::<Deployment>(
        &a,
        edge,
        &deploy(&format!("wide-{suffix}"), 1000, "64Mi"),
        ("workloads.replicas", "spec.replicas"),
        "workloads.replicas",
    )
    .await;
    refused_by_both::<Deployment>(
        &a,
        edge,
        &deploy(&format!("big-{suffix}"), 0, "1Ti"),
        (
            "workloads.resources",
            "spec.template.spec.containers[0].resources.limits.memory",
        ),
        "workloads.resources",
    )
    .await;
    let small = format!("small-{suffix}");
    written(
        send(
            &a,
            "post",
            "json",
            &format!("/apis/apps/v1/namespaces/{edge}/deployments"),
            &deploy(&small, 0, "64Mi"),
        )
        .await,
    );
    let deployments: Api<Deployment> = Api::namespaced(admin().await, edge);
    deployments
        .delete(&small, &DeleteParams::default())
        .await
        .expect("cleanup");

    // The pods the Deployment controller makes from a template the admin wrote are the
    // controller's creates, refused by the policy in pando-edge: the ReplicaSet says so.
    let mut hostile = deploy(&format!("ctl-{suffix}"), 1, "64Mi");
    hostile["spec"]["template"]["spec"]["volumes"] =
        json!([{"name": "v", "nfs": {"server": "198.18.0.9", "path": "/"}}]);
    let hostile_name = format!("ctl-{suffix}");
    deployments
        .create(
            &PostParams::default(),
            &serde_json::from_value(hostile).expect("a deployment"),
        )
        .await
        .expect("the admin may write it");
    let sets: Api<ReplicaSet> = Api::namespaced(admin().await, edge);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let message = loop {
        let list = sets
            .list(&ListParams::default().labels(&format!("app={hostile_name}")))
            .await
            .expect("replica sets");
        let failure = list.items.iter().find_map(|rs| {
            rs.status
                .as_ref()?
                .conditions
                .as_ref()?
                .iter()
                .find(|c| c.type_ == "ReplicaFailure")
                .and_then(|c| c.message.clone())
        });
        if let Some(m) = failure {
            break m;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the ReplicaSet reports its pod refused"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(
        message.contains("pando-adapter-objects") && message.contains("pods.volumes"),
        "{message}"
    );
    let pods: Api<Pod> = Api::namespaced(admin().await, edge);
    assert!(
        pods.list(&ListParams::default().labels(&format!("app={hostile_name}")))
            .await
            .expect("pods")
            .items
            .is_empty(),
        "no pod was made"
    );
    deployments
        .delete(&hostile_name, &DeleteParams::default())
        .await
        .expect("cleanup");
}

#[tokio::test]
async fn the_ceiling_objects_stay_even_if_rbac_let_pando_delete_or_raise_them() {
    let ns = probe::app_namespace("objceil").await;
    let name = ns.name.clone();
    let admin = admin().await;
    let quota = json!({"metadata": {"name": "pando-ceiling"},
                       "spec": {"hard": {"pods": "10", "count/secrets": "50"}}});
    Api::<k8s_openapi::api::core::v1::ResourceQuota>::namespaced(admin.clone(), &name)
        .create(
            &PostParams::default(),
            &serde_json::from_value(quota).expect("quota"),
        )
        .await
        .expect("the host's ceiling, as the admin");
    let quotas: Api<k8s_openapi::api::core::v1::ResourceQuota> =
        Api::namespaced(pando().await, &name);
    // RBAC first: the namespace role has no delete on quotas.
    match quotas
        .delete("pando-ceiling", &DeleteParams::default())
        .await
    {
        Err(kube::Error::Api(e)) => assert!(e.code == 403 && e.message.contains("cannot delete")),
        other => panic!("RBAC refuses pando deleting its ceiling: {other:?}"),
    }
    // A wider role bound by mistake: the policy still holds.
    let role = json!({"metadata": {"name": "too-wide"}, "rules": [{"apiGroups": [""],
        "resources": ["resourcequotas"], "verbs": ["get", "update", "patch", "delete"]}]});
    Api::<k8s_openapi::api::rbac::v1::Role>::namespaced(admin.clone(), &name)
        .create(
            &PostParams::default(),
            &serde_json::from_value(role).expect("role"),
        )
        .await
        .expect("a role");
    let binding = json!({"metadata": {"name": "too-wide"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "too-wide"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "pando"}]});
    Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(admin.clone(), &name)
        .create(
            &PostParams::default(),
            &serde_json::from_value(binding).expect("binding"),
        )
        .await
        .expect("a binding");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let raise = json!({"spec": {"hard": {"pods": "100000"}}});
    loop {
        match quotas
            .patch(
                "pando-ceiling",
                &PatchParams::default(),
                &Patch::Merge(&raise),
            )
            .await
        {
            Err(kube::Error::Api(e)) if e.code == 403 && e.message.contains("cannot patch") => {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "RBAC never saw the role"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(kube::Error::Api(e)) => {
                assert!(
                    e.message.contains("pando-adapter-objects")
                        && e.message.contains("quotas.ceiling:"),
                    "the policy refuses raising the ceiling: {}",
                    e.message
                );
                break;
            }
            other => panic!("pando raised its ceiling: {other:?}"),
        }
    }
    match quotas
        .delete("pando-ceiling", &DeleteParams::default())
        .await
    {
        Err(kube::Error::Api(e)) => assert!(
            e.message.contains("pando-adapter-objects")
                && e.message.contains("quotas.ceiling-kept:"),
            "the policy refuses deleting the ceiling: {}",
            e.message
        ),
        other => panic!("pando deleted its ceiling: {other:?}"),
    }
    // Lowering it is no escape: allowed.
    quotas
        .patch(
            "pando-ceiling",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"hard": {"pods": "5"}}})),
        )
        .await
        .expect("a lower ceiling");
    ns.delete().await.expect("cleanup");
}

#[tokio::test]
async fn pando_writes_only_persistent_volumes_claimed_in_its_namespaces() {
    let admin = admin().await;
    let pvs: Api<PersistentVolume> = Api::all(admin.clone());
    let make = |name: String, claim_ns: &str| PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeSpec {
            capacity: Some(
                [(
                    "storage".to_string(),
                    k8s_openapi::apimachinery::pkg::api::resource::Quantity("1Gi".into()),
                )]
                .into(),
            ),
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            host_path: Some(HostPathVolumeSource {
                path: "/tmp/pando-test-pv".into(),
                type_: None,
            }),
            persistent_volume_reclaim_policy: Some("Delete".into()),
            claim_ref: Some(ObjectReference {
                namespace: Some(claim_ns.into()),
                name: Some("data".into()),
                ..ObjectReference::default()
            }),
            ..PersistentVolumeSpec::default()
        }),
        ..PersistentVolume::default()
    };
    let foreign = cluster::unique_name("pv-objforeign");
    let owned = cluster::unique_name("pv-objowned");
    pvs.create(
        &PostParams::default(),
        &make(foreign.clone(), "kube-system"),
    )
    .await
    .expect("a PV");
    pvs.create(&PostParams::default(), &make(owned.clone(), "pando-objpv"))
        .await
        .expect("a PV");
    let as_pando: Api<PersistentVolume> = Api::all(pando().await);
    let retain = json!({"spec": {"persistentVolumeReclaimPolicy": "Retain"}});
    let refusal = |r: Result<PersistentVolume, kube::Error>| match r {
        Err(kube::Error::Api(e)) => e.message,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let m = refusal(
        as_pando
            .patch(&foreign, &PatchParams::default(), &Patch::Merge(&retain))
            .await,
    );
    assert!(m.contains("persistentvolumes.claimed:"), "{m}");
    match as_pando.delete(&foreign, &DeleteParams::default()).await {
        Err(kube::Error::Api(e)) => {
            assert!(
                e.message.contains("persistentvolumes.claimed:"),
                "{}",
                e.message
            )
        }
        other => panic!("pando deleted a volume of kube-system's: {other:?}"),
    }
    as_pando
        .patch(&owned, &PatchParams::default(), &Patch::Merge(&retain))
        .await
        .expect("the reclaim policy of a volume claimed in a pando-* namespace");
    let m = refusal(
        as_pando
            .patch(
                &owned,
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"claimRef": {"namespace": "pando-mine"}}})),
            )
            .await,
    );
    assert!(m.contains("persistentvolumes.reclaim-policy:"), "{m}");
    for name in [&foreign, &owned] {
        pvs.delete(name, &DeleteParams::default())
            .await
            .expect("cleanup");
    }
}
