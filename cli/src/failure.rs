//! How a command fails, and the exit code and message each failure gets.

use pando_host::{CallError, LoadError};

/// Exit code for usage and input errors (clap uses it too).
pub const EXIT_INPUT: u8 = 2;
/// Exit code for a failed call.
pub const EXIT_CALL: u8 = 1;

/// Why a command did not succeed.
#[derive(Debug)]
pub enum Failure {
    /// The command line or an input file is wrong (exit 2).
    Input(anyhow::Error),
    /// The adapter could not be loaded.
    Load(LoadError),
    /// The call failed (exit 1).
    Call(CallError),
    /// Something else failed on our side: writing output, a file (exit 1).
    Other(anyhow::Error),
    /// Already reported (a command's own exit code, from `run` or `exec`).
    Exit(u8),
}

/// A command's result.
pub type Outcome<T = ()> = Result<T, Failure>;

impl From<CallError> for Failure {
    fn from(e: CallError) -> Self {
        Failure::Call(e)
    }
}

impl From<LoadError> for Failure {
    fn from(e: LoadError) -> Self {
        Failure::Load(e)
    }
}

impl Failure {
    /// An input error with a message.
    pub fn input(message: impl std::fmt::Display) -> Self {
        Failure::Input(anyhow::anyhow!("{message}"))
    }

    /// A failure on our side, with what we were doing.
    pub fn other(context: &str, e: impl std::fmt::Display) -> Self {
        Failure::Other(anyhow::anyhow!("{context}: {e}"))
    }

    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            Failure::Input(_) => EXIT_INPUT,
            Failure::Load(e) => match e {
                LoadError::Engine(_) | LoadError::Instantiate { .. } => EXIT_CALL,
                _ => EXIT_INPUT,
            },
            Failure::Call(_) | Failure::Other(_) => EXIT_CALL,
            Failure::Exit(code) => *code,
        }
    }

    /// A short machine-readable name, as in `{"error": {"kind": …}}`.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Input(_) => "input",
            Failure::Load(_) => "load",
            Failure::Call(e) => e.kind(),
            Failure::Other(_) => "cli",
            Failure::Exit(_) => "exit",
        }
    }

    /// The operator's message; none when already reported.
    pub fn message(&self) -> Option<String> {
        match self {
            Failure::Input(e) | Failure::Other(e) => Some(format!("{e:#}")),
            Failure::Load(LoadError::Config { what, error }) => Some(format!(
                "{what} rejected its configuration: {}",
                call_message(error)
            )),
            Failure::Load(e) => Some(e.to_string()),
            Failure::Call(e) => Some(call_message(e)),
            Failure::Exit(_) => None,
        }
    }
}

/// A call error's message: the adapter's own words when it answered.
fn call_message(e: &CallError) -> String {
    match e.adapter_error() {
        Some(a) => grant_once(&a.message()),
        None => e.to_string(),
    }
}

/// A denial's message with its proposed grant once: the host's message
/// already ends with the rule to add, and the guest SDK appends it again as
/// ` (missing grant: RULE)`; that repetition is dropped.
pub fn grant_once(message: &str) -> String {
    const MARK: &str = " (missing grant: ";
    let mut out = message.to_string();
    while let Some(i) = out.rfind(MARK) {
        let rest = &out[i + MARK.len()..];
        let Some(end) = rest.find(')') else {
            break;
        };
        // The rule is flow YAML and holds no `)`: the first one ends it.
        let grant = &rest[..end];
        if grant.is_empty() || !out[..i].contains(grant) {
            break;
        }
        out = format!("{}{}", &out[..i], &rest[end + 1..]);
    }
    out
}

/// An exit code for a process's exit status: 0–255 as is, anything else 1.
pub fn exit_status_code(code: i32) -> u8 {
    u8::try_from(code).unwrap_or(EXIT_CALL)
}

#[cfg(test)]
mod tests {
    use super::grant_once;

    #[test]
    fn a_proposed_grant_is_printed_once() {
        let rule = r#"- {verbs: [get], resources: [pods], namespaces: ["pando-*"], except: ["pando-system"]}"#;
        let twice = format!(
            "apply: get pods denied: no grant rule allows it; to allow it, add to \
             `kubernetes.rules`: {rule} (missing grant: {rule})"
        );
        let once = grant_once(&twice);
        assert_eq!(once.matches(rule).count(), 1, "{once}");
        assert!(once.ends_with(rule), "{once}");
        // A grant named only in the suffix stays.
        let only = format!("forbidden (missing grant: {rule})");
        assert_eq!(grant_once(&only), only);
    }
}
