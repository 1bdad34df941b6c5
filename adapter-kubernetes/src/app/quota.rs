//! The ResourceQuota and LimitRange of each app (and trial) namespace,
//! made with it (configuration fields `app_quota`, `container_limits`):
//! an app's pods, CPU and memory requests, memory limits, claims and
//! storage are bounded per namespace, and a container that sets no memory
//! limit is given one. The adapter's namespace role may create and read
//! them, never change or delete them (deploy/kubernetes/rbac.yaml), and
//! the cluster's admission policy refuses a quota or a limit range above
//! its ceiling (deploy/kubernetes/admission-policy.yaml).

use pando_adapter_sdk::error::ErrorExt;
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{LimitRange, Namespace, ResourceQuota};
use pando_adapter_sdk::kube::{Api, NamespaceResourceScope, Resource};
use pando_adapter_sdk::types::Error;
use serde_json::json;

use crate::app::binding;
use crate::config::Config;
use crate::kit::{self, post};

/// The ResourceQuota's and the LimitRange's name.
pub const NAME: &str = "pando-app";

/// The app namespace's ResourceQuota.
pub fn resource_quota(config: &Config) -> Result<ResourceQuota, Error> {
    let q = &config.app_quota;
    kit::typed(json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": { "name": NAME, "labels": { kit::MANAGED_BY: kit::MANAGER } },
        "spec": { "hard": {
            "pods": q.pods.to_string(),
            "requests.cpu": format!("{}m", q.cpu_millis),
            "requests.memory": q.memory_bytes.to_string(),
            "limits.memory": q.memory_limit_bytes.to_string(),
            "requests.storage": q.storage_bytes.to_string(),
            "persistentvolumeclaims": q.claims.to_string(),
        } },
    }))
}

/// The app namespace's LimitRange: defaults for containers that set no
/// memory limit or no requests, and the largest memory limit.
pub fn limit_range(config: &Config) -> Result<LimitRange, Error> {
    let l = &config.container_limits;
    kit::typed(json!({
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": { "name": NAME, "labels": { kit::MANAGED_BY: kit::MANAGER } },
        "spec": { "limits": [{
            "type": "Container",
            "default": { "memory": l.default_memory_bytes.to_string() },
            "defaultRequest": {
                "cpu": format!("{}m", l.default_cpu_request_millis),
                "memory": l.default_memory_request_bytes.to_string(),
            },
            "max": { "memory": l.max_memory_bytes.to_string() },
        }] },
    }))
}

/// Binds the adapter to its namespace role in `ns` and makes the quota and
/// the limit range: what every app and trial namespace gets right after it
/// is made, before anything runs in it. Existing ones are left as they are
/// (the role cannot change them). 4 requests.
pub fn set_up(config: &Config, ns: &str) -> Result<(), Error> {
    binding::bind_self(config, ns)?;
    let ctx = |kind: &str, field: &str| {
        format!(
            "the {kind} `{ns}/{NAME}` (configuration field `{field}`; the cluster's admission \
             policy refuses values above its ceiling)"
        )
    };
    create(
        Api::<ResourceQuota>::namespaced(ns),
        &resource_quota(config)?,
    )
    .map_err(|e| e.context(&ctx("ResourceQuota", "app_quota")))?;
    create(Api::<LimitRange>::namespaced(ns), &limit_range(config)?)
        .map_err(|e| e.context(&ctx("LimitRange", "container_limits")))?;
    Ok(())
}

/// Creates `object`; one that exists is kept.
fn create<K>(api: Api<K>, object: &K) -> Result<(), Error>
where
    K: Resource<Scope = NamespaceResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    match api.create(&post(), object) {
        Ok(_) => Ok(()),
        Err(e) if e.is_conflict() => Ok(()),
        Err(e) => Err(Error::from(e)),
    }
}

/// Undoes a namespace made moments ago whose set-up failed, so that no
/// namespace is left in which the adapter has no binding: best effort.
pub fn abandon(ns: &str) {
    if let Err(e) = Api::<Namespace>::all().delete_opt(ns, &Default::default()) {
        pando_adapter_sdk::warn!(namespace = ns; "namespace not removed after its set-up failed ({e})");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quota_and_the_limit_range_carry_the_configured_values() {
        let config = Config::parse(
            r#"{"pod_cidr":"10.244.0.0/16","service_cidr":"10.96.0.0/12",
                "app_quota":{"pods":7,"cpu_millis":1500},
                "container_limits":{"default_memory_bytes":268435456}}"#,
        )
        .unwrap();
        let q = serde_json::to_value(resource_quota(&config).unwrap()).unwrap();
        let hard = &q["spec"]["hard"];
        assert_eq!(hard["pods"], "7");
        assert_eq!(hard["requests.cpu"], "1500m");
        assert_eq!(hard["limits.memory"], (64u64 << 30).to_string());
        assert_eq!(hard.as_object().unwrap().len(), 6);
        let l = serde_json::to_value(limit_range(&config).unwrap()).unwrap();
        let c = &l["spec"]["limits"][0];
        assert_eq!(c["type"], "Container");
        assert_eq!(c["default"]["memory"], "268435456");
        assert_eq!(c["max"]["memory"], (16u64 << 30).to_string());
        assert_eq!(c["defaultRequest"]["cpu"], "100m");
    }
}
