//! `snapshot-volume` and `restore-volume`: a volume's contents as a tar
//! stream, read and written by a helper pod with the claim mounted
//! ([`helper_pods`]).
//!
//! Snapshot: the claim mounted read-only, `tar -cf - .` streamed to the
//! caller as it comes (the bytes stay in the host), the command's exit
//! status checked at the end, so a stream cut short is an error and never a
//! short snapshot.
//!
//! Restore, in place only (R-206): the claim is found by the app's identity
//! in the handle (`pando-<bundle>/<name>`), never by its location, so it is
//! the app recreated from the same spec. Nothing is lost on a bad stream:
//! `tar -x` unpacks into a staging directory on the volume, and only once
//! it succeeded *and* the caller's stream ended cleanly with tar's
//! end-of-archive marker is the staging directory swapped for the old
//! contents; a stream that fails, is cut short, or is not a tar archive
//! leaves the volume as it was. It needs room for the new contents beside
//! the old until the swap. A volume a running workload mounts is refused:
//! rewriting files under a running process is how data is corrupted; stop
//! the app first.
//!
//! The end of the archive is found by tar itself and by the end of the
//! command's stdin, which the host closes when the stream is dropped: GNU
//! tar stops at the end-of-archive marker, busybox's reads on to the end of
//! its input. Closing stdin through the API server needs the v5 streaming
//! protocol on every hop; KWOK's kubelet stand-in never passes it on, a
//! real kubelet does. A restore waits for pods that a `stop` is still
//! ending to let go of the volume; one a workload still runs is refused.

use pando_adapter_sdk::error::{self, ErrorExt};
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use pando_adapter_sdk::kube::{Api, ListParams};
use pando_adapter_sdk::kubernetes as raw;
use pando_adapter_sdk::types::{Error, InputStream, OutputStream, StreamError, VolumeHandle};
use pando_adapter_sdk::{ExecSession, time};

use crate::app::{binding, objects};
use crate::config::Config;
use crate::kit::{names, pods};
use crate::sessions::exec;
use crate::trial::helper_pods::{self, HelperPod, Mount};

/// The exit status of the unpack script for a stream that is not a tar
/// archive.
const NOT_AN_ARCHIVE: i32 = 65;

/// Writes the volume's contents as a tar stream into `into`.
pub const SNAPSHOT_SCRIPT: &str = r#"set -e
cd "${PANDO_HELPER_ROOT:-}$1"
exec tar -cf - .
"#;

/// Puts a volume that a restore's swap left half-done ([`SWAP_SCRIPT`]) back to
/// whole contents, old or new, never neither: each step is safe to cut and run again.
///
/// - `.pando-old` without `.pando-restore`: the swap had moved every new entry in and
///   removed the staging directory (its commit point) and was cut removing the old
///   ones: the new contents are whole, the old go.
/// - `.pando-old` with `.pando-restore`: cut before its commit point: the new entries
///   that came in go, then `.pando-old` becomes `.pando-undo` (from there on nothing is
///   deleted), and the old entries move back.
macro_rules! recover_script {
    () => {
        r#"v="${PANDO_HELPER_ROOT:-}$1"
s="$v/.pando-restore"
o="$v/.pando-old"
u="$v/.pando-undo"
if [ -d "$o" ] && [ ! -d "$s" ]; then
  rm -rf "$o"
fi
if [ -d "$o" ]; then
  find "$v" -mindepth 1 -maxdepth 1 ! -name .pando-restore ! -name .pando-old ! -name .pando-undo -exec rm -rf {} \;
  mv "$o" "$u"
fi
if [ -d "$u" ]; then
  find "$u" -mindepth 1 -maxdepth 1 -exec mv {} "$v/" \;
  rmdir "$u"
fi
"#
    };
}

/// Unpacks the archive on stdin into a staging directory on the volume.
/// A swap that a crash cut short is recovered first (see [`recover_script`]).
/// It prints [`READY`] once the recovery is done and the staging directory
/// made, and only then reads stdin: from there on it touches nothing but the
/// staging directory, so an abort that follows a failed stream cannot race
/// its recovery or its `mkdir` (a session dropped does not stop the script
/// where stdin's end never reaches it, module doc).
pub const UNPACK_SCRIPT: &str = concat!(
    "set -e\n",
    recover_script!(),
    r#"rm -rf "$s"
mkdir "$s"
echo ready
if ! tar -C "$s" -xf -; then
  echo "the stream is not a tar archive that snapshot-volume wrote; the volume is unchanged" >&2
  exit 65
fi
"#
);

/// Swaps the staging directory for the volume's old contents.
/// The old contents are moved aside before the new are moved in, and only removed once
/// the new are in place and the staging directory is gone (the commit point
/// [`recover_script`] reads): a cut anywhere leaves the old contents or the new whole.
pub const SWAP_SCRIPT: &str = r#"set -e
v="${PANDO_HELPER_ROOT:-}$1"
s="$v/.pando-restore"
o="$v/.pando-old"
rm -rf "$o"
mkdir "$o"
find "$v" -mindepth 1 -maxdepth 1 ! -name .pando-restore ! -name .pando-old -exec mv {} "$o/" \;
find "$s" -mindepth 1 -maxdepth 1 -exec mv {} "$v/" \;
rmdir "$s"
rm -rf "$o"
"#;

/// How many zero bytes end every tar archive (two 512-byte blocks).
const END_OF_ARCHIVE: usize = 1024;

/// tar's record: what it reads from a pipe at a time (20 blocks).
const RECORD: u64 = 10240;

/// How much one read of the caller's stream takes.
const CHUNK: u64 = 64 * 1024;

/// Removes what a failed restore left, and recovers a swap that failed part-way
/// ([`recover_script`]): the old contents, or the new when it had committed.
/// An unpack whose stream failed may still be running its tar, which can
/// make an entry in the staging directory while `rm -rf` empties it (then
/// `rm` fails on the directory); tar's working directory gone, it can make
/// none after, so a second pass removes the rest.
const ABORT_SCRIPT: &str = concat!(
    recover_script!(),
    r#"rm -rf "$s" 2>/dev/null || { sleep 1; rm -rf "$s"; }
"#
);

/// What [`UNPACK_SCRIPT`] prints on stdout before it reads the archive.
const READY: &[u8] = b"ready\n";

/// Where a helper mounts a claim: unique per namespace and claim, so that
/// one directory tree can stand in for every helper's filesystem on the
/// test cluster (see [`helper`]).
fn mount_path(ns: &str, claim: &str) -> String {
    format!("/pando-volumes/{ns}/{claim}")
}

/// The claim of `volume`, found by its app and name (R-206), and the pods
/// of its namespace; `not-found` naming both when there is no such claim.
fn locate(volume: &VolumeHandle) -> Result<(String, String, Vec<Pod>), Error> {
    let ns = names::app_namespace(&volume.bundle)?;
    let claim = objects::claim_name(&volume.name)?.to_owned();
    let ctx = |e| Error::from(e).context(&format!("volume `{}` of app `{}`", claim, volume.bundle));
    // A namespace not the app's own is `conflict`: its claims are not the app's.
    let owned = crate::volumes::owned_namespace(&ns, &volume.bundle)?.is_some();
    let found = match Api::<PersistentVolumeClaim>::namespaced(&ns).get_opt(&claim) {
        Err(e) if binding::namespace_gone(&ns, &e) => None,
        other => other.map_err(ctx)?,
    };
    if !owned || found.is_none() {
        return Err(Error::NotFound(format!(
            "volume `{claim}` of app `{}` does not exist (no claim `{ns}/{claim}`)",
            volume.bundle
        )));
    }
    let pods = Api::<Pod>::namespaced(&ns)
        .list(&ListParams::default())
        .map_err(ctx)?;
    Ok((ns, claim, pods.items))
}

/// Streams the volume's contents, as a tar archive, into `into`.
pub fn snapshot_volume(
    config: &Config,
    volume: &VolumeHandle,
    into: &OutputStream,
) -> Result<(), Error> {
    let (ns, claim, pods) = locate(volume)?;
    let path = mount_path(&ns, &claim);
    let node = helper_pods::node_of_claim_user(&pods, &claim);
    let pod = HelperPod::start(
        config,
        &ns,
        &volume.bundle,
        &format!("pando-snapshot-{claim}"),
        "snapshot",
        Some(Mount {
            claim: &claim,
            path: path.clone(),
            read_only: true,
        }),
        node.as_deref(),
    )?;
    let mut session = pod.exec(SNAPSHOT_SCRIPT, &[&path], false)?;
    finish(&mut session, Some(into))
        .map_err(|e| e.context(&format!("snapshot of volume `{ns}/{claim}`")))
}

/// Replaces the volume's contents with the tar archive read from `from`
/// (see the module doc).
pub fn restore_volume(
    config: &Config,
    volume: &VolumeHandle,
    from: &InputStream,
) -> Result<(), Error> {
    let (ns, claim, pods) = locate(volume)?;
    let users: Vec<&Pod> = pods
        .iter()
        .filter(|p| !pods::has_exited(p) && helper_pods::mounts_claim(p, &claim))
        .filter(|p| {
            !p.metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(helper_pods::HELPER_LABEL))
        })
        .collect();
    if let Some(user) = users
        .iter()
        .find(|p| p.metadata.deletion_timestamp.is_none())
    {
        return Err(Error::Conflict(format!(
            "volume `{claim}` of app `{}` is in use by pod `{ns}/{}`: restoring under a running \
             workload would corrupt it; stop the app first",
            volume.bundle,
            user.metadata.name.as_deref().unwrap_or_default()
        )));
    }
    // Pods being deleted (a `stop` just returned: their containers are still ending) will
    // let go of the volume: wait for them rather than send the caller back.
    let api = Api::<Pod>::namespaced(&ns);
    for user in users {
        let name = user.metadata.name.as_deref().unwrap_or_default();
        // Its grace period, and a margin for the kill after it: a process that ignores
        // SIGTERM takes all of it.
        let limit = pods::gone_limit(user);
        pods::wait_gone_within(&api, name, limit).map_err(|e| {
            e.context(&format!(
                "restore of volume `{ns}/{claim}`: waiting for its stopped user `{name}`"
            ))
        })?;
    }
    let path = mount_path(&ns, &claim);
    let pod = HelperPod::start(
        config,
        &ns,
        &volume.bundle,
        &format!("pando-restore-{claim}"),
        "restore",
        Some(Mount {
            claim: &claim,
            path: path.clone(),
            read_only: false,
        }),
        None,
    )?;
    let context = format!("restore of volume `{ns}/{claim}`");
    let result = unpack(&pod, &path, from).and_then(|()| {
        let mut swap = pod.exec(SWAP_SCRIPT, &[&path], false)?;
        finish(&mut swap, None)
    });
    if result.is_err() {
        // Best effort: what is left is a hidden staging directory, which the
        // next restore removes first.
        if let Ok(mut abort) = pod.exec(ABORT_SCRIPT, &[&path], false) {
            let _ = finish(&mut abort, None);
        }
    }
    result.map_err(|e| e.context(&context))
}

/// Sends `from` to `tar -x` in the helper, into the staging directory.
/// `Ok` only when tar succeeded and `from` ended cleanly with the
/// end-of-archive marker: a stream cut short at a file's boundary would
/// otherwise unpack "successfully" into less than the snapshot held.
fn unpack(pod: &HelperPod, path: &str, from: &InputStream) -> Result<(), Error> {
    let mut session = pod.exec(UNPACK_SCRIPT, &[path], true)?;
    let Some(stdin) = ExecSession::stdin(&mut session) else {
        return Err(Error::Internal("the unpacking session has no stdin".into()));
    };
    let out = ExecSession::stdout(&mut session);
    if !await_ready(out.as_ref())? {
        // The script ended before it read anything: its recovery failed. Its status
        // and stderr say how.
        drop(stdin);
        let ended = finish_with(&mut session, out, None);
        return Err(ended.err().unwrap_or_else(|| {
            Error::Internal("the unpacking script ended before it read the archive".into())
        }));
    }
    let mut zeros = 0usize;
    let mut sent = 0u64;
    let mut open = true;
    loop {
        time::check_cancelled()?;
        let bytes = match from.blocking_read(CHUNK) {
            Ok(bytes) => bytes,
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                // Dropping the session stops tar; nothing was swapped.
                return Err(error::unavailable(format!(
                    "reading the archive to restore failed: {}; the volume is unchanged",
                    e.to_debug_string()
                )));
            }
        };
        zeros = trailing_zeros(zeros, &bytes);
        sent += bytes.len() as u64;
        if !send(&stdin, &bytes)? {
            // tar stopped reading: at the archive's end, or on an error;
            // its status says which.
            zeros = END_OF_ARCHIVE;
            open = false;
            break;
        }
    }
    // tar reads whole records from a pipe: an archive not padded to one
    // (a writer other than `tar -c`) would leave it waiting for the rest,
    // and stdin's end may never come (module doc). Zeros after the
    // end-of-archive marker are what `tar -c` pads with.
    let pad = (RECORD - sent % RECORD) % RECORD;
    if open && zeros >= END_OF_ARCHIVE && pad > 0 {
        send(&stdin, &vec![0u8; pad as usize])?;
    }
    // What was written must have left the stream before it is dropped:
    // dropping it discards what is still on its way.
    match stdin.blocking_flush() {
        Ok(()) | Err(StreamError::Closed) => {}
        Err(StreamError::LastOperationFailed(e)) => {
            return Err(error::unavailable(format!(
                "sending the archive to the helper failed: {}",
                e.to_debug_string()
            )));
        }
    }
    drop(stdin);
    if zeros < END_OF_ARCHIVE {
        return Err(error::invalid(
            "the archive to restore ends without tar's end-of-archive marker: it was cut short; \
             the volume is unchanged",
        ));
    }
    finish_with(&mut session, out, None).map_err(|e| match e {
        Error::CommandFailed(f) if f.exit_code == NOT_AN_ARCHIVE => {
            error::invalid(f.stderr.trim().to_owned())
        }
        e => e,
    })
}

/// Reads the unpack script's stdout up to [`READY`]: `true` once it came,
/// `false` when stdout ended first.
fn await_ready(out: Option<&InputStream>) -> Result<bool, Error> {
    let Some(out) = out else {
        return Err(Error::Internal(
            "the unpacking session has no stdout".into(),
        ));
    };
    let mut seen = Vec::new();
    while !seen.ends_with(READY) {
        let want = READY.len().saturating_sub(seen.len()).max(1) as u64;
        match out.blocking_read(want) {
            Ok(bytes) => seen.extend_from_slice(&bytes),
            Err(StreamError::Closed) => return Ok(false),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(error::unavailable(format!(
                    "reading the unpacking script's output failed: {}",
                    e.to_debug_string()
                )));
            }
        }
        time::check_cancelled()?;
    }
    Ok(true)
}

/// The count of zero bytes that end the stream so far, after `bytes`.
fn trailing_zeros(before: usize, bytes: &[u8]) -> usize {
    match bytes.iter().rposition(|b| *b != 0) {
        Some(last) => bytes.len() - last - 1,
        None => before.saturating_add(bytes.len()),
    }
}

/// Writes `bytes` whole into `out`; `false` when its reader has gone.
fn send(out: &OutputStream, bytes: &[u8]) -> Result<bool, Error> {
    let mut rest = bytes;
    while !rest.is_empty() {
        let permit = match out.check_write() {
            Ok(0) => {
                let ready = out.subscribe();
                time::wait_any(&[&ready])?;
                continue;
            }
            Ok(n) => usize::try_from(n).unwrap_or(usize::MAX).min(rest.len()),
            Err(StreamError::Closed) => return Ok(false),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(error::unavailable(format!(
                    "sending the archive to the helper failed: {}",
                    e.to_debug_string()
                )));
            }
        };
        match out.write(&rest[..permit]) {
            Ok(()) => rest = &rest[permit..],
            Err(StreamError::Closed) => return Ok(false),
            Err(StreamError::LastOperationFailed(e)) => {
                return Err(error::unavailable(format!(
                    "sending the archive to the helper failed: {}",
                    e.to_debug_string()
                )));
            }
        }
    }
    Ok(true)
}

/// Drains the session's output (stdout into `into`, when given), then
/// checks its exit status: non-zero is `command-failed` with stderr's tail.
fn finish(session: &mut raw::ExecSession, into: Option<&OutputStream>) -> Result<(), Error> {
    let out = ExecSession::stdout(session);
    finish_with(session, out, into)
}

/// [`finish`] with stdout already taken from the session.
fn finish_with(
    session: &mut raw::ExecSession,
    out: Option<InputStream>,
    into: Option<&OutputStream>,
) -> Result<(), Error> {
    let err = ExecSession::stderr(session);
    let stderr = exec::pump(out.as_ref(), err.as_ref(), into)?;
    drop((out, err));
    match ExecSession::wait(session)? {
        0 => Ok(()),
        code => Err(error::command_failed(
            code,
            String::from_utf8_lossy(&stderr).into_owned(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::trailing_zeros;

    #[test]
    fn trailing_zeros_are_counted_across_chunks() {
        assert_eq!(trailing_zeros(0, b"abc\0\0"), 2);
        assert_eq!(trailing_zeros(2, &[0; 10]), 12);
        assert_eq!(trailing_zeros(12, b"x"), 0);
        assert_eq!(trailing_zeros(5, b""), 5);
    }
}
