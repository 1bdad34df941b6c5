//! `pando-host grants rbac` and `pando-host grants check`: the grants beside
//! the cluster's RBAC. `rbac` prints the RBAC objects the grants need (so
//! the RBAC file is generated, never kept by hand); `check` asks the
//! cluster what the identity may really do and names the drift both ways.

pub mod check;
pub mod rbac;
pub mod report;
mod yaml;

use clap::{Args, Subcommand};
use pando_host::grants::KubernetesGrants;
use pando_host::grants::objects::schema::Subject;

use crate::args::{Format, Global};
use crate::failure::{Failure, Outcome};
use crate::{output, session};

/// `grants` verbs.
#[derive(Debug, Subcommand)]
pub enum GrantsVerb {
    /// Print the RBAC objects (ClusterRoles, Roles, bindings) exactly the
    /// grants need, as YAML (`-o json`: a `List`).
    Rbac(RbacArgs),
    /// Ask the cluster what the identity may do and compare it with the
    /// grants: rules the cluster would refuse (exit 1), permissions beyond
    /// the grants (informational).
    Check(CheckArgs),
}

/// `grants rbac` flags (with the global `--grants`).
#[derive(Debug, Args)]
pub struct RbacArgs {
    /// The roles' and bindings' name; the role the adapter binds in each
    /// namespace it makes is NAME-namespace.
    #[arg(long, value_name = "NAME", default_value = "pando-adapter")]
    pub name: String,
    /// Bind the roles to this user (default: the subjects the grants let
    /// the adapter bind NAME-namespace to, its own identity).
    #[arg(long, value_name = "USER", conflicts_with = "service_account")]
    pub user: Option<String>,
    /// Bind the roles to this ServiceAccount, in `--namespace`, and print
    /// it too.
    #[arg(long, value_name = "NAME", requires = "namespace")]
    pub service_account: Option<String>,
    /// The ServiceAccount's namespace.
    #[arg(long, value_name = "NS", requires = "service_account")]
    pub namespace: Option<String>,
}

/// `grants check` flags (with the global `--grants`, `--kubeconfig`,
/// `--context`).
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// At most this many existing namespaces are checked for each
    /// namespace pattern (`pando-*`).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub per_pattern: usize,
}

/// Runs a `grants` verb.
pub async fn run(global: &Global, verb: &GrantsVerb) -> Outcome {
    let path = global.grants.as_ref().ok_or_else(|| {
        Failure::input("no grants given: pass --grants FILE (or set PANDO_GRANTS)")
    })?;
    let grants = session::grants(global)?;
    let Some(kubernetes) = grants.kubernetes.as_ref() else {
        return Err(Failure::input(format!(
            "{}: the grants have no `kubernetes` section, so they need no RBAC and reach no cluster",
            path.display()
        )));
    };
    match verb {
        GrantsVerb::Rbac(args) => rbac_verb(global, kubernetes, args),
        GrantsVerb::Check(args) => check::run(global, &grants, kubernetes, args).await,
    }
}

fn rbac_verb(global: &Global, grants: &KubernetesGrants, args: &RbacArgs) -> Outcome {
    let mut command = String::from("pando-host grants rbac");
    if let Some(path) = &global.grants {
        command += &format!(" --grants {}", path.display());
    }
    if args.name != "pando-adapter" {
        command += &format!(" --name {}", args.name);
    }
    let service_account = args.service_account.as_ref().map(|name| Subject {
        kind: "ServiceAccount".into(),
        name: name.clone(),
        namespace: args.namespace.clone(),
    });
    let subjects = if let Some(user) = &args.user {
        command += &format!(" --user {user}");
        vec![Subject {
            kind: "User".into(),
            name: user.clone(),
            namespace: None,
        }]
    } else if let Some(sa) = &service_account {
        command += &format!(
            " --service-account {} --namespace {}",
            sa.name,
            sa.namespace.as_deref().unwrap_or_default()
        );
        vec![sa.clone()]
    } else {
        let role = format!("{}-namespace", args.name);
        grants
            .objects
            .role_bindings
            .iter()
            .find(|b| b.role == role)
            .map(|b| b.subjects.clone())
            .ok_or_else(|| {
                Failure::input(format!(
                    "whom to bind the roles to: pass --user USER or --service-account NAME \
                     --namespace NS (the grants' kubernetes.objects.role_bindings has no entry \
                     for `{role}` naming the adapter's own identity)"
                ))
            })?
    };
    let options = rbac::RbacOptions {
        name: args.name.clone(),
        subjects,
        service_account,
        command,
    };
    let (yaml, notes) = rbac::generate(grants, &options);
    for note in notes {
        eprintln!("note: {note}");
    }
    match global.output {
        Format::Json => output::write_stdout(&output::json(&as_list(&yaml)?)?),
        _ => output::write_stdout(&yaml),
    }
}

/// The YAML stream as a `v1` `List` (what `kubectl get -o json` prints).
fn as_list(yaml: &str) -> Outcome<serde_json::Value> {
    let items = pando_host::yaml::documents(yaml)
        .map_err(|e| Failure::other("reading back the generated RBAC", e))?;
    Ok(serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}))
}
