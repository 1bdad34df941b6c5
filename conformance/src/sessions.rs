//! Exec (R-084) and run (R-423) in the running server workload: output
//! and exit status come back, and the command ran in that workload (it
//! reads back the file the workload's own command wrote, with this run's
//! nonce); or, when not declared, `unsupported`.

use pando_host::CallError;
use pando_host::types::{Error as AdapterError, ExecRequest, RunRequest, TerminalSize};

use super::declared::{Capability, not_shown};
use super::fixture::{Check, Fixture, Notes, answered, ensure, fail, failed};
use super::plans::{SERVER, WORKLOAD_FILE, wref};
use super::probe::{read_all, run_collect, sh};

/// Reads the workload's file back, printing nothing when it is absent: the
/// session's exit status stays the script's.
fn read_back() -> String {
    format!("cat {WORKLOAD_FILE} 2>/dev/null || true")
}

/// Judges what a command printed after `before` (the part of its output
/// that does not depend on the workload): the file nonce the workload's own
/// command wrote, or the command did not run in that workload. A failure
/// naming `cap`'s declaration; unproven on a runtime declared simulated.
fn ran_in_the_workload(
    fx: &Fixture<'_>,
    cap: Capability,
    what: &str,
    before: &str,
    out: &str,
) -> Check {
    let expected = format!("{before}{}\n", fx.nonces.file.value());
    if out == expected {
        return Ok(());
    }
    let said = format!(
        "{what} printed {out:?}, not {expected:?}: it did not read back `{WORKLOAD_FILE}`, \
         which `{SERVER}`'s own command wrote with a number this run chose, so the command \
         did not run in that workload"
    );
    Err(not_shown(cap, &said, fx.simulated()))
}

/// A line on stdin comes back on stdout, then the workload's file, a line
/// on stderr, and the exit status is the script's.
pub(crate) async fn exec(fx: &Fixture<'_>, app: &str, declared: bool, notes: &mut Notes) -> Check {
    let request = ExecRequest {
        // One line, not to the end of stdin: whether closing stdin reaches
        // the process depends on the runtime's protocol.
        command: sh(&format!(
            r#"read l; echo "got $l"; {}; echo oops >&2; exit 7"#,
            read_back()
        )),
        stdin: true,
        tty: false,
        size: None,
    };
    let workload = wref(app, SERVER);
    let ctx = fx.ctx();
    let call = fx.adapter.exec(&ctx, &workload, &request);
    if !declared {
        answered(
            "exec (exec is not declared)",
            call.await,
            false,
            &["unsupported"],
        )?;
        notes.not_declared(Capability::Exec, "answered `unsupported` as required");
        return Ok(());
    }
    let mut session = fx
        .declared(Capability::Exec, &format!("exec in `{SERVER}`"), call)
        .await?;
    let mut stdin = session
        .stdin()
        .await
        .map_err(|e| failed("the session's stdin", &e))?
        .ok_or_else(|| fail("the session has no stdin though it was asked for"))?;
    let mut stdout = session
        .stdout()
        .await
        .map_err(|e| failed("the session's stdout", &e))?
        .ok_or_else(|| fail("the session has no stdout"))?;
    let mut stderr = session
        .stderr()
        .await
        .map_err(|e| failed("the session's stderr", &e))?
        .ok_or_else(|| fail("the session has no stderr though it has no terminal"))?;
    stdin
        .write_all(b"conformance\n")
        .await
        .map_err(|e| fail(format!("writing the session's stdin failed: {e}")))?;
    let out = read_all(fx, "the session's stdout", &mut stdout).await?;
    let err = read_all(fx, "the session's stderr", &mut stderr).await?;
    let code = session
        .wait(&fx.ctx())
        .await
        .map_err(|e| failed("waiting for the session", &e))?;
    drop(stdin);
    ensure!(
        out.starts_with("got conformance\n"),
        "the session's stdout was {out:?}, not \"got conformance\\n\" and the workload's file"
    );
    ensure!(
        err.contains("oops"),
        "the session's stderr was {err:?}, without what the command wrote there"
    );
    ensure!(code == 7, "the session exited {code}, not 7");
    ran_in_the_workload(
        fx,
        Capability::Exec,
        &format!("exec in `{SERVER}`"),
        "got conformance\n",
        &out,
    )
}

/// The size `C-EXEC-02` gives the terminal while its program runs.
const RESIZED: TerminalSize = TerminalSize {
    cols: 123,
    rows: 45,
};

/// `C-EXEC-02` (contract 0.2.0, exec declared): a program on a terminal
/// prints its size, waits for a line, then prints it again; core resizes
/// the terminal between the two, while the program runs, and the program
/// sees the new size. (A terminal given no size is 0x0, where busybox's
/// `stty size` prints nothing; the size reaches the terminal apart from
/// stdin, so the program waits up to 5 s for it.)
pub(crate) async fn resize(fx: &Fixture<'_>, app: &str, notes: &mut Notes) -> Check {
    if let Some(why) = fx.simulated() {
        return Err(super::fixture::skip(format!(
            "a simulated runtime gives a command no terminal ({why})"
        )));
    }
    let want = format!("{} {}", RESIZED.rows, RESIZED.cols);
    let request = ExecRequest {
        command: sh(&format!(
            r#"echo "before: $(stty size 2>/dev/null)"; read go; for i in $(seq 50); do s=$(stty size 2>/dev/null); [ "$s" = "{want}" ] && break; sleep 0.1; done; echo "after: $s""#
        )),
        stdin: true,
        tty: true,
        size: None,
    };
    let what = format!("exec on a terminal in `{SERVER}`");
    let ctx = fx.ctx();
    let mut session = fx
        .adapter
        .exec(&ctx, &wref(app, SERVER), &request)
        .await
        .map_err(|e| failed(&what, &e))?;
    let mut stdin = session
        .stdin()
        .await
        .map_err(|e| failed("the session's stdin", &e))?
        .ok_or_else(|| fail("the session has no stdin though it was asked for"))?;
    let mut stdout = session
        .stdout()
        .await
        .map_err(|e| failed("the session's stdout", &e))?
        .ok_or_else(|| fail("the session has no output"))?;
    let mut seen = Vec::new();
    while !seen.contains(&b'\n') {
        let next = tokio::time::timeout(fx.options.settle_timeout, stdout.next_chunk()).await;
        match next {
            Ok(Some(Ok(chunk))) => seen.extend_from_slice(&chunk),
            Ok(None) => return Err(fail(format!("{what} ended before its first line"))),
            Ok(Some(Err(e))) => return Err(fail(format!("reading {what} failed: {e}"))),
            Err(_) => return Err(fail(format!("{what} printed no first line"))),
        }
    }
    session
        .resize(RESIZED)
        .await
        .map_err(|e| failed(&format!("resizing the terminal of {what}"), &e))?;
    stdin
        .write_all(b"go\n")
        .await
        .map_err(|e| fail(format!("writing the session's stdin failed: {e}")))?;
    let rest = read_all(fx, "the terminal's output", &mut stdout).await?;
    let code = session
        .wait(&fx.ctx())
        .await
        .map_err(|e| failed(&format!("waiting for {what}"), &e))?;
    drop(stdin);
    let out = String::from_utf8_lossy(&seen).into_owned() + &rest;
    ensure!(
        out.contains(&format!("after: {want}")),
        "the program did not see the terminal resized to {}x{} while it ran: it printed {out:?}",
        RESIZED.cols,
        RESIZED.rows
    );
    ensure!(code == 0, "{what} exited {code}, not 0");
    notes.push(format!(
        "the program saw its terminal resized to {}x{} while it ran",
        RESIZED.cols, RESIZED.rows
    ));
    Ok(())
}

/// Runs a failing command, then a succeeding one.
pub(crate) async fn run(fx: &Fixture<'_>, app: &str, declared: bool, notes: &mut Notes) -> Check {
    let workload = wref(app, SERVER);
    let failing = RunRequest {
        command: sh("echo out; echo err >&2; exit 4"),
        env: vec![],
    };
    if !declared {
        let (r, _) = run_collect(fx, &workload, &failing).await;
        answered("run (run is not declared)", r, false, &["unsupported"])?;
        notes.not_declared(Capability::Run, "answered `unsupported` as required");
        return Ok(());
    }
    let before = fx.refusals();
    let (r, out) = run_collect(fx, &workload, &failing).await;
    fx.held_to(Capability::Run, "run of a command exiting 4", before, &r)?;
    match r {
        Err(CallError::Adapter(AdapterError::CommandFailed(f))) => {
            ensure!(
                f.exit_code == 4,
                "run of a command exiting 4 reported exit code {}",
                f.exit_code
            );
            ensure!(
                f.stderr.contains("err"),
                "run of a failing command kept stderr {:?}, without what it wrote there",
                f.stderr
            );
        }
        Err(e) => {
            return Err(failed(
                "run of a command exiting 4 (expected command-failed)",
                &e,
            ));
        }
        Ok(_) => return Err(fail("run of a command exiting 4 reported success")),
    }
    let out = out?;
    ensure!(
        out == "out\n",
        "run of a failing command wrote {out:?} to stdout, not \"out\\n\""
    );

    let fine = RunRequest {
        command: sh(&format!("echo fine; {}", read_back())),
        env: vec![],
    };
    let what = "run of `echo fine` and the workload's file";
    let before = fx.refusals();
    let (r, out) = run_collect(fx, &workload, &fine).await;
    fx.held_to(Capability::Run, what, before, &r)?;
    r.map_err(|e| failed(what, &e))?;
    let out = out?;
    ensure!(out.starts_with("fine\n"), "{what} wrote {out:?}");
    ran_in_the_workload(fx, Capability::Run, what, "fine\n", &out)
}
