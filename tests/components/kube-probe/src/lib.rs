//! `pando-kube-probe`: the smallest adapter that imports
//! `pando:runtime/kubernetes@0.1.0`. Its `health-check` sends `GET /readyz`
//! through the Kubernetes import (a non-2xx answer is `unavailable`);
//! everything else is the SDK's default. The host's tests load it without a
//! Kubernetes grant and expect a load error that says so.

use pando_adapter_sdk::kubernetes::{self, ApiError, Method, Request};
use pando_adapter_sdk::types::{Category, Error, KindInfo};
use pando_adapter_sdk::{Adapter, error, export_adapter};

struct KubeProbe;

impl Adapter for KubeProbe {
    fn info() -> KindInfo {
        KindInfo {
            kind: "kube-probe".into(),
            category: Category::Cluster,
            description: "Probes the Kubernetes API server's /readyz; a test component.".into(),
            config_schema: r#"{"type":"object","additionalProperties":false}"#.into(),
        }
    }

    fn configure(_config: &str) -> Result<Self, Error> {
        Ok(KubeProbe)
    }

    fn health_check(&self) -> Result<(), Error> {
        let request = Request {
            method: Method::Get,
            path: "/readyz".into(),
            query: Vec::new(),
            body: None,
            content_type: None,
        };
        let response = kubernetes::send(&request).map_err(api_error)?;
        if (200..300).contains(&response.status) {
            Ok(())
        } else {
            Err(error::unavailable(format!(
                "the API server answered /readyz with {}",
                response.status
            )))
        }
    }
}

fn api_error(e: ApiError) -> Error {
    match e {
        ApiError::Denied(d) => error::denied(format!("{} (grant: {})", d.message, d.missing_grant)),
        ApiError::InvalidRequest(m) | ApiError::TooLarge(m) => error::internal(m),
        ApiError::Transport(m) => error::unavailable(m),
        ApiError::Timeout => error::timeout("the API server did not answer in time"),
        ApiError::Cancelled => error::cancelled("the call was cancelled"),
    }
}

export_adapter!(KubeProbe);
