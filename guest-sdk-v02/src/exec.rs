//! An exec session played by a task: its stdout, stderr (none on a
//! terminal) and exit, which core reads while the adapter's task writes
//! them after `exec` returned.
//!
//! The stdin and terminal sizes core sends are `exec`'s own arguments
//! (`stdin`, `resize`): the program's task takes them along.
//!
//! ```no_run
//! use pando_adapter_sdk_v02::exec;
//! use pando_adapter_sdk_v02::types::{ExecSession, StreamReader, TerminalSize};
//!
//! // A "program" that prints each size its terminal is given, then exits 0.
//! fn sizes(resize: StreamReader<TerminalSize>) -> ExecSession {
//!     exec::session(true, move |mut stdout, _stderr| async move {
//!         let mut resize = resize;
//!         while let Some(size) = resize.next().await {
//!             stdout.write(format!("{}x{}\n", size.cols, size.rows).into_bytes()).await?;
//!         }
//!         Ok(0)
//!     })
//! }
//! ```

use std::future::Future;

use crate::bindings::{wit_future, wit_stream};
use crate::streams::{Writer, settle};
use crate::types::{Error, ExecSession};

/// A session whose program `play` is, run in a task of its own after the
/// call returned: it is handed stdout and, without a terminal (`tty`
/// false), stderr; its outcome is the session's exit (the exit code, or
/// the error that ended it). Both streams are closed before the exit is
/// written.
pub fn session<F, Fut>(tty: bool, play: F) -> ExecSession
where
    F: FnOnce(Writer, Option<Writer>) -> Fut,
    Fut: Future<Output = Result<i32, Error>> + 'static,
{
    let (out, stdout) = wit_stream::new::<u8>();
    let (err, stderr) = if tty {
        (None, None)
    } else {
        let (writer, reader) = wit_stream::new::<u8>();
        (Some(Writer::from(writer)), Some(reader))
    };
    let (exit, exit_reader) = wit_future::new::<Result<i32, Error>>(unwritten_exit);
    settle(exit, play(Writer::from(out), err));
    ExecSession {
        stdout,
        stderr,
        exit: exit_reader,
    }
}

/// What core reads when an adapter drops the exit unwritten.
fn unwritten_exit() -> Result<i32, Error> {
    Err(Error::Internal(
        "the adapter dropped the session's exit unwritten".into(),
    ))
}
