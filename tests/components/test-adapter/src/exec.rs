//! The echo session `exec` opens.

use pando_adapter_sdk::ExecSession;
use pando_adapter_sdk::io;
use pando_adapter_sdk::types::{Error, ExecRequest, InputStream, OutputStream};

/// The host caps pipes at 1 MiB: ask for all of it.
const PIPE: u64 = 1024 * 1024;

/// Reads all of stdin, writes it back to stdout on `wait`.
pub struct Echo {
    /// The end the host writes into, until taken.
    stdin_writer: Option<OutputStream>,
    stdin_reader: InputStream,
    /// The end the host reads, until taken.
    stdout_reader: Option<InputStream>,
    stdout_writer: Option<OutputStream>,
    stderr: Option<InputStream>,
    upper: bool,
    /// Command `["hang"]`: `wait` never returns and stdout never ends.
    hang: bool,
    /// Command `["panic"]`: `wait` panics.
    panic: bool,
    exit_code: i32,
}

impl Echo {
    pub fn open(request: &ExecRequest) -> Echo {
        let (stdin_writer, stdin_reader) = io::pipe(PIPE);
        let (stdout_writer, stdout_reader) = io::pipe(PIPE);
        let command: Vec<&str> = request.command.iter().map(String::as_str).collect();
        Echo {
            // Without stdin the writer is dropped now, so the reader is at
            // its end and `wait` echoes nothing.
            stdin_writer: request.stdin.then_some(stdin_writer),
            stdin_reader,
            stdout_reader: Some(stdout_reader),
            stdout_writer: Some(stdout_writer),
            stderr: (!request.tty).then(|| io::from_bytes(b"")),
            upper: command == ["upper"],
            hang: command == ["hang"],
            panic: command == ["panic"],
            exit_code: if command == ["exit7"] { 7 } else { 0 },
        }
    }
}

impl ExecSession for Echo {
    fn stdin(&mut self) -> Option<OutputStream> {
        self.stdin_writer.take()
    }

    fn stdout(&mut self) -> Option<InputStream> {
        self.stdout_reader.take()
    }

    fn stderr(&mut self) -> Option<InputStream> {
        self.stderr.take()
    }

    fn resize(&mut self, _size: pando_adapter_sdk::types::TerminalSize) -> Result<(), Error> {
        Ok(())
    }

    fn wait(&mut self) -> Result<i32, Error> {
        if self.hang {
            crate::hang::forever();
        }
        if self.panic {
            panic!("test adapter asked to panic in an exec session's wait");
        }
        let mut bytes = io::read_to_end(&self.stdin_reader, 64 * 1024 * 1024)?;
        if self.upper {
            bytes.make_ascii_uppercase();
        }
        if let Some(stdout) = self.stdout_writer.take() {
            io::write_all(&stdout, &bytes)?;
            // Dropping the output end ends the host's stdout stream.
        }
        Ok(self.exit_code)
    }
}
