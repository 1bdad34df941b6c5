//! `pando:runtime/log`: the guest's log records, into the host's `tracing`
//! with the adapter's identity.

use crate::bindings::v0_1::pando::runtime::log::{Host, Level};
use crate::state::HostState;

/// Records the host keeps of one message, so a chatty adapter costs bounded
/// memory per record.
pub(crate) const MAX_MESSAGE: usize = 16 << 10;
pub(crate) const MAX_FIELDS: usize = 32;
pub(crate) const MAX_KEY: usize = 256;
pub(crate) const MAX_VALUE: usize = 4 << 10;

fn tracing_level(level: Level) -> tracing::Level {
    match level {
        Level::Trace => tracing::Level::TRACE,
        Level::Debug => tracing::Level::DEBUG,
        Level::Info => tracing::Level::INFO,
        Level::Warn => tracing::Level::WARN,
        Level::Error => tracing::Level::ERROR,
    }
}

pub(crate) fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Host for HostState {
    async fn enabled(&mut self, level: Level) -> wasmtime::Result<bool> {
        Ok(match tracing_level(level) {
            tracing::Level::TRACE => {
                tracing::enabled!(target: "pando_host::guest", tracing::Level::TRACE)
            }
            tracing::Level::DEBUG => {
                tracing::enabled!(target: "pando_host::guest", tracing::Level::DEBUG)
            }
            tracing::Level::INFO => {
                tracing::enabled!(target: "pando_host::guest", tracing::Level::INFO)
            }
            tracing::Level::WARN => {
                tracing::enabled!(target: "pando_host::guest", tracing::Level::WARN)
            }
            _ => tracing::enabled!(target: "pando_host::guest", tracing::Level::ERROR),
        })
    }

    async fn log(
        &mut self,
        level: Level,
        message: String,
        fields: Vec<(String, String)>,
    ) -> wasmtime::Result<()> {
        let adapter = self.identity.name.as_str();
        let message = clip(&message, MAX_MESSAGE);
        let fields: Vec<String> = fields
            .iter()
            .take(MAX_FIELDS)
            .map(|(k, v)| format!("{}={}", clip(k, MAX_KEY), clip(v, MAX_VALUE)))
            .collect();
        let fields = fields.join(" ");
        macro_rules! emit {
            ($lvl:expr) => {
                tracing::event!(target: "pando_host::guest", $lvl, adapter, fields = %fields, "{message}")
            };
        }
        match tracing_level(level) {
            tracing::Level::TRACE => emit!(tracing::Level::TRACE),
            tracing::Level::DEBUG => emit!(tracing::Level::DEBUG),
            tracing::Level::INFO => emit!(tracing::Level::INFO),
            tracing::Level::WARN => emit!(tracing::Level::WARN),
            _ => emit!(tracing::Level::ERROR),
        }
        Ok(())
    }
}
