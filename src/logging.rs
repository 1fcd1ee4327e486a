//! Log output: logfmt-like text or JSON on stderr, at the configured level.

use crate::config::{LogConfig, LogFormat};

/// Installs the global subscriber; call once, before anything logs.
pub fn init(config: LogConfig) {
    let builder = tracing_subscriber::fmt()
        .with_max_level(config.level)
        .with_writer(std::io::stderr)
        .with_target(false)
        // A closed stderr must not turn a log line into a crash.
        .log_internal_errors(false);
    match config.format {
        LogFormat::Logfmt => builder.with_ansi(false).init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}
