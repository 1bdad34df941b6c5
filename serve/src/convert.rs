//! Between the host's types and the wire's messages. The conversions
//! themselves are generated from the WIT at build time (`pando-wit-proto`);
//! what is here is what they share: the error a message the host cannot take
//! gets, and the two checks no Rust type does for free.

// The wire's messages are the newest contract's types (wit-proto's
// `Model::wire`), which are the host's public types: a plan's workloads
// carry `security`, absent from an older peer's message and then the
// default (every workload run as its image says).
use pando_host::types as h;

use crate::pb;

/// A request the host cannot take: a field that must be set is not, an enum
/// or oneof is unset or unknown, a number is out of its WIT type's range.
/// Becomes `INVALID_ARGUMENT`, naming the message and field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl Invalid {
    pub(crate) fn missing(at: &str) -> Self {
        Invalid(format!("`{at}` is required and was not set"))
    }

    pub(crate) fn unset(what: &str) -> Self {
        Invalid(format!(
            "`{what}` has no case set (or one this host does not know)"
        ))
    }
}

/// A wire enum (an `i32`) as the host's enum; 0 (`…_UNSPECIFIED`) and
/// unknown values are refused.
pub(crate) fn enum_from<P, H>(v: i32, at: &str) -> Result<H, Invalid>
where
    P: TryFrom<i32>,
    H: TryFrom<P, Error = Invalid>,
{
    let p = P::try_from(v).map_err(|_| Invalid(format!("`{at}`: {v} is not a value it has")))?;
    H::try_from(p).map_err(|_| Invalid(format!("`{at}` is unset")))
}

/// A `uint32` that carries a WIT `u16`.
pub(crate) fn u16_from(v: u32, at: &str) -> Result<u16, Invalid> {
    u16::try_from(v).map_err(|_| Invalid(format!("`{at}`: {v} is over 65535")))
}

/// The generated impls (`From` and `TryFrom` between `h::` and `pb::`).
#[allow(clippy::all, clippy::pedantic)]
mod generated {
    use super::{Invalid, enum_from, h, pb, u16_from};

    include!(concat!(env!("OUT_DIR"), "/convert.rs"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> h::BundlePlan {
        h::BundlePlan {
            id: "shop".into(),
            revision: "r7".into(),
            workloads: vec![h::WorkloadSpec {
                name: "web".into(),
                image: "registry.test/web:1".into(),
                digest: Some("sha256:ab".into()),
                command: vec!["/bin/web".into()],
                args: vec![],
                env: vec![h::EnvVar {
                    name: "A".into(),
                    value: "1".into(),
                }],
                ports: vec![h::Port {
                    name: None,
                    port: 8080,
                    protocol: h::Protocol::Tcp,
                }],
                resources: h::ResourceRequirements {
                    requests: h::Resources {
                        cpu_millis: 250,
                        memory_bytes: 64 << 20,
                    },
                    limits: None,
                },
                mounts: vec![],
                security: h::Security {
                    run_as_user: Some(1000),
                    run_as_group: None,
                    fs_group: Some(2000),
                    restricted: true,
                },
            }],
            volumes: vec![h::VolumeSpec {
                name: "data".into(),
                size_bytes: Some(1 << 30),
            }],
            network: h::NetworkRules {
                egress: h::EgressPolicy::Restricted(vec![h::EgressRule {
                    destination: "api.example.test".into(),
                    ports: vec![443],
                }]),
            },
            pull_credentials: vec![],
        }
    }

    #[test]
    fn a_plan_survives_the_wire_unchanged() {
        let p = plan();
        let wire = pb::BundlePlan::from(p.clone());
        assert_eq!(h::BundlePlan::try_from(wire), Ok(p));
    }

    /// `security` came with contract 0.2.0: a plan from a peer of the
    /// first contract has none, and its workloads run as their images say;
    /// a field of the first contract missing is still refused.
    #[test]
    fn a_workload_without_the_security_a_later_contract_added_runs_as_its_image_says() {
        let mut wire = pb::BundlePlan::from(plan());
        wire.workloads[0].security = None;
        let read = h::BundlePlan::try_from(wire).expect("a plan of the first contract");
        assert_eq!(read.workloads[0].security, h::Security::default());
        let mut wire = pb::BundlePlan::from(plan());
        wire.workloads[0].resources = None;
        let err = h::BundlePlan::try_from(wire).unwrap_err();
        assert!(err.0.contains("WorkloadSpec.resources"), "{err}");
    }

    #[test]
    fn a_missing_message_field_is_refused_by_name() {
        let mut wire = pb::BundlePlan::from(plan());
        wire.network = None;
        let err = h::BundlePlan::try_from(wire).unwrap_err();
        assert!(err.0.contains("BundlePlan.network"), "{err}");
    }

    #[test]
    fn an_unset_enum_and_an_out_of_range_port_are_refused() {
        let mut wire = pb::BundlePlan::from(plan());
        wire.workloads[0].ports[0].protocol = 0;
        let err = h::BundlePlan::try_from(wire).unwrap_err();
        assert!(err.0.contains("Port.protocol"), "{err}");

        let mut wire = pb::BundlePlan::from(plan());
        wire.workloads[0].ports[0].port = 70_000;
        let err = h::BundlePlan::try_from(wire).unwrap_err();
        assert!(
            err.0.contains("Port.port") && err.0.contains("70000"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_oneof_is_refused() {
        let mut wire = pb::BundlePlan::from(plan());
        if let Some(n) = wire.network.as_mut() {
            n.egress = Some(pb::EgressPolicy { case: None });
        }
        let err = h::BundlePlan::try_from(wire).unwrap_err();
        assert!(err.0.contains("EgressPolicy"), "{err}");
    }

    #[test]
    fn absent_and_empty_optional_lists_stay_apart() {
        let mut r = h::TrialResult {
            listening: vec![],
            exit_code: Some(0),
            writes: None,
            output_tail: String::new(),
        };
        let back = h::TrialResult::try_from(pb::TrialResult::from(r.clone()));
        assert_eq!(back, Ok(r.clone()));
        r.writes = Some(vec![]);
        let back = h::TrialResult::try_from(pb::TrialResult::from(r.clone()));
        assert_eq!(back, Ok(r));
    }
}
