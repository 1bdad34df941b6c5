//! Logging into the host's `tracing`, tagged there with the adapter's
//! identity and the call.
//!
//! A message is formatted as `format!` formats it, after fields
//! `key = value` (each value's `ToString`), which may end with `,` or `;`:
//! the crate's docs show each form ("Logging"). This file is the same in
//! both SDK lines (`pando-adapter-sdk`, `pando-adapter-sdk-v02`).
//!
//! Each macro asks the host whether the level is [`enabled`] before it
//! formats anything, so a disabled `trace!` costs one host call.

use crate::bindings::pando::runtime::log as host;
pub use crate::bindings::pando::runtime::log::Level;

/// Whether a record at `level` would be kept.
pub fn enabled(level: Level) -> bool {
    host::enabled(level)
}

/// Write one record with structured `fields`, unconditionally.
pub fn log(level: Level, message: &str, fields: &[(String, String)]) {
    host::log(level, message, fields);
}

/// Write one record if `level` is enabled, building the message only then.
pub fn log_with(level: Level, message: impl FnOnce() -> String) {
    if enabled(level) {
        log(level, &message(), &[]);
    }
}

/// Log at `level`: `log_at!(level, [key = value, …] "format", args…)`.
/// The level-named macros ([`info!`](crate::info) …) are the usual way.
#[macro_export]
macro_rules! log_at {
    ($level:expr, $($key:ident = $value:expr),+ ; $($fmt:tt)+) => {
        $crate::log_at!($level, $($key = $value,)+ $($fmt)+)
    };
    ($level:expr, $($key:ident = $value:expr,)* $fmt:literal $($args:tt)*) => {{
        let level: $crate::log::Level = $level;
        if $crate::log::enabled(level) {
            $crate::log::log(
                level,
                &::std::format!($fmt $($args)*),
                &[$((
                    ::std::string::String::from(::std::stringify!($key)),
                    ::std::string::ToString::to_string(&$value),
                )),*],
            );
        }
    }};
}

/// Log at `trace`: `trace!([key = value, …] "format", args…)`.
#[macro_export]
macro_rules! trace {
    ($($t:tt)+) => { $crate::log_at!($crate::log::Level::Trace, $($t)+) };
}

/// Log at `debug`: `debug!([key = value, …] "format", args…)`.
#[macro_export]
macro_rules! debug {
    ($($t:tt)+) => { $crate::log_at!($crate::log::Level::Debug, $($t)+) };
}

/// Log at `info`: `info!([key = value, …] "format", args…)`.
#[macro_export]
macro_rules! info {
    ($($t:tt)+) => { $crate::log_at!($crate::log::Level::Info, $($t)+) };
}

/// Log at `warn`: `warn!([key = value, …] "format", args…)`.
#[macro_export]
macro_rules! warn {
    ($($t:tt)+) => { $crate::log_at!($crate::log::Level::Warn, $($t)+) };
}

/// Log at `error`: `error!([key = value, …] "format", args…)`.
#[macro_export]
macro_rules! error {
    ($($t:tt)+) => { $crate::log_at!($crate::log::Level::Error, $($t)+) };
}
