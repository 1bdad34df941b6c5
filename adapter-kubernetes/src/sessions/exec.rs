//! `exec` and `run`, in a workload's running pod.
//! Core has already authorized the call and written its audit event; the
//! adapter only opens the session.

use pando_adapter_sdk::error::{self, ErrorExt};
use pando_adapter_sdk::kube::k8s_openapi::api::core::v1::Pod;
use pando_adapter_sdk::kube::{Api, ExecParams};
use pando_adapter_sdk::kubernetes as raw;
use pando_adapter_sdk::types::{
    Error, ExecRequest, InputStream, OutputStream, RunRequest, StreamError, WorkloadRef,
};
use pando_adapter_sdk::{ExecSession, time};

use crate::app::{objects, pods};

/// How much of a failed command's stderr is kept to explain it (the
/// contract's usual cap).
pub const STDERR_TAIL: usize = 64 * 1024;

/// How much one read or splice moves.
const CHUNK: u64 = 64 * 1024;

/// Opens `command` in the workload's newest running pod (2 requests: the
/// pod list, then the exec).
fn open(
    workload: &WorkloadRef,
    command: &[String],
    stdin: bool,
    tty: bool,
) -> Result<raw::ExecSession, Error> {
    let (ns, pod) = pods::running(workload)?;
    let params = ExecParams {
        container: Some(objects::CONTAINER_NAME.into()),
        command: command.to_vec(),
        stdin,
        tty,
    };
    Api::<Pod>::namespaced(&ns)
        .exec(&pod, &params)
        .map_err(|e| Error::from(e).context(&format!("exec in pod `{ns}/{pod}`")))
}

/// An interactive session in the workload's running pod; `not-found`
/// naming the workload when it has no pod, `unavailable` when none runs. The raw session is returned as it
/// is: it implements the SDK's [`ExecSession`].
pub fn exec(workload: &WorkloadRef, request: &ExecRequest) -> Result<Box<dyn ExecSession>, Error> {
    let mut session = open(workload, &request.command, request.stdin, request.tty)?;
    if request.tty
        && let Some(size) = request.size
    {
        ExecSession::resize(&mut session, size)?;
    }
    Ok(Box::new(session))
}

/// Runs a command to completion in the workload's running pod:
/// its stdout copied into `stdout` as it comes, the last [`STDERR_TAIL`]
/// bytes of its stderr kept, and a non-zero exit `command-failed` with
/// them.
///
/// `request.env` must be empty (`unsupported` otherwise): exec cannot add
/// variables to a running container, and wrapping the command in `env
/// K=V …` would need an `env` binary that minimal images lack.
pub fn run(
    workload: &WorkloadRef,
    request: &RunRequest,
    stdout: &OutputStream,
) -> Result<(), Error> {
    if !request.env.is_empty() {
        return Err(Error::Unsupported(
            "run with environment variables is not supported by the Kubernetes adapter: exec \
             cannot add variables to a running container; pass them in the command instead"
                .into(),
        ));
    }
    if request.command.is_empty() {
        return Err(error::invalid("run needs a command"));
    }
    let mut session = open(workload, &request.command, false, false)?;
    let out = ExecSession::stdout(&mut session);
    let err = ExecSession::stderr(&mut session);
    let stderr = pump(out.as_ref(), err.as_ref(), Some(stdout))?;
    // The streams go before waiting: the session's status comes after them.
    drop((out, err));
    let code = ExecSession::wait(&mut session)?;
    if code == 0 {
        return Ok(());
    }
    Err(error::command_failed(
        code,
        String::from_utf8_lossy(&stderr).into_owned(),
    ))
}

/// Moves stdout into `dest` (or drops it, without one) and keeps stderr's
/// tail, both as they come, so a command that writes much to one is never
/// stalled by the other unread (the host's buffers are bounded). stdout
/// moves with `splice`: its bytes stay in the host. Returns the stderr
/// tail.
pub(crate) fn pump(
    out: Option<&InputStream>,
    err: Option<&InputStream>,
    dest: Option<&OutputStream>,
) -> Result<Vec<u8>, Error> {
    let (mut out, mut err) = (out, err);
    let mut tail = Vec::new();
    while out.is_some() || err.is_some() {
        // Pollables are children of their streams: made and dropped here.
        let ready = {
            let polls: Vec<_> = out
                .iter()
                .chain(err.iter())
                .map(|s| s.subscribe())
                .collect();
            let refs: Vec<_> = polls.iter().collect();
            time::wait_any(&refs)?
        };
        // The pollables were stdout's (when open), then stderr's.
        let err_index = usize::from(out.is_some());
        if let Some(src) = out
            && ready.contains(&0)
        {
            let moved = match dest {
                Some(dest) => dest.blocking_splice(src, CHUNK),
                None => src.skip(CHUNK),
            };
            match moved {
                Ok(_) => {}
                // The command's stdout ended, or the caller stopped
                // reading: either way nothing more goes there.
                Err(StreamError::Closed) => out = None,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(error::unavailable(format!(
                        "copying the command's stdout failed: {}",
                        e.to_debug_string()
                    )));
                }
            }
        }
        if let Some(src) = err
            && ready.contains(&err_index)
        {
            match src.read(CHUNK) {
                Ok(bytes) => keep_tail(&mut tail, &bytes, STDERR_TAIL),
                Err(StreamError::Closed) => err = None,
                Err(StreamError::LastOperationFailed(e)) => {
                    return Err(error::unavailable(format!(
                        "reading the command's stderr failed: {}",
                        e.to_debug_string()
                    )));
                }
            }
        }
    }
    let Some(dest) = dest else {
        return Ok(tail);
    };
    match dest.blocking_flush() {
        Ok(()) | Err(StreamError::Closed) => Ok(tail),
        Err(StreamError::LastOperationFailed(e)) => Err(error::unavailable(format!(
            "flushing the command's stdout failed: {}",
            e.to_debug_string()
        ))),
    }
}

/// Appends `bytes` to `tail`, keeping only its last `limit` bytes.
fn keep_tail(tail: &mut Vec<u8>, bytes: &[u8], limit: usize) {
    tail.extend_from_slice(bytes);
    if tail.len() > limit {
        let excess = tail.len() - limit;
        tail.drain(..excess);
    }
}

#[cfg(test)]
mod tests {
    use super::keep_tail;

    #[test]
    fn r423_only_the_tail_of_stderr_is_kept() {
        let mut tail = Vec::new();
        keep_tail(&mut tail, b"abc", 4);
        assert_eq!(tail, b"abc");
        keep_tail(&mut tail, b"def", 4);
        assert_eq!(tail, b"cdef");
        keep_tail(&mut tail, b"0123456789", 4);
        assert_eq!(tail, b"6789");
    }
}
