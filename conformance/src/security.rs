//! `C-SEC-01` (contract 0.2.0): a workload runs as its `security` says.
//!
//! The server workload, given a user, a group, a volume group and
//! `restricted`, is applied and reaches `running`; then a command in it
//! (through `run` or `exec`) prints who it runs as: the user and group
//! given, the volume group among its groups. A 0.1.0 adapter is not asked:
//! its plans carry no `security`, and the host refuses one that does before
//! the adapter sees it (`tests/tests/all/host_v02.rs`).

use pando_host::types::{RuntimeCapabilities, Security};

use super::apply::converge;
use super::cases::{SECURITY, cases_for};
use super::fixture::{Check, Fixture, Notes, ensure, skip};
use super::plans::{self, SERVER, wref};
use super::probe::{self, NO_PROBE, Via};

/// The user the workload is given: not root, not the image's.
pub(crate) const USER: u32 = 1000;
/// Its group.
pub(crate) const GROUP: u32 = 3000;
/// The group its volumes belong to, which a runtime adds to its groups.
pub(crate) const FS_GROUP: u32 = 2000;

/// The case, for an adapter of contract 0.2.0.
pub(crate) async fn run(fx: &mut Fixture<'_>) {
    if !cases_for(&fx.adapter.shape().version).contains(&SECURITY) || !fx.wants(&SECURITY) {
        return;
    }
    let caps = fx.capabilities().await;
    let app = fx.bundle_id("security");
    fx.case(&SECURITY, async |fx, notes| {
        security(fx, &caps.clone()?, &app, notes).await
    })
    .await;
    fx.cleanup(&app).await;
}

async fn security(
    fx: &Fixture<'_>,
    caps: &RuntimeCapabilities,
    app: &str,
    notes: &mut Notes,
) -> Check {
    let Some(via) = Via::of(caps) else {
        return Err(skip(format!(
            "who a workload runs as is seen from inside it: {NO_PROBE}"
        )));
    };
    if let Some(why) = fx.simulated() {
        return Err(skip(format!(
            "a simulated runtime runs no process as any user ({why})"
        )));
    }
    let mut server = fx.server();
    server.security = Security {
        run_as_user: Some(USER),
        run_as_group: Some(GROUP),
        fs_group: Some(FS_GROUP),
        restricted: true,
    };
    let plan = plans::plan(app, vec![server]);
    converge(fx, &plan).await?;
    let out = probe::output(fx, via, &wref(app, SERVER), "id -u; id -g; id -G").await?;
    let lines: Vec<&str> = out.lines().collect();
    let [user, group, groups] = lines.as_slice() else {
        return Err(super::fixture::fail(format!(
            "`id -u; id -g; id -G` in `{SERVER}` printed {out:?}, not three lines"
        )));
    };
    ensure!(
        *user == USER.to_string(),
        "`{SERVER}` runs as user {user}, not {USER} as its `security.run-as-user` says"
    );
    ensure!(
        *group == GROUP.to_string(),
        "`{SERVER}` runs as group {group}, not {GROUP} as its `security.run-as-group` says"
    );
    ensure!(
        groups.split_whitespace().any(|g| g == FS_GROUP.to_string()),
        "`{SERVER}`'s groups are {groups}, without {FS_GROUP}, its `security.fs-group`"
    );
    notes.push(format!(
        "through {}: `{SERVER}` runs as user {USER}, group {GROUP}, with {FS_GROUP} among its \
         groups",
        via.name()
    ));
    Ok(())
}
