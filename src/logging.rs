//! Log output: logfmt-like text or JSON on stderr, at the configured level.

/// Line format of the logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// `key=value` pairs, as the Prometheus tools write them.
    Logfmt,
    /// One JSON object a line.
    Json,
}

/// Installs the global subscriber; call once, before anything logs.
pub fn init(level: tracing::Level, format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false)
        // A closed stderr must not turn a log line into a crash.
        .log_internal_errors(false);
    match format {
        LogFormat::Logfmt => builder.with_ansi(false).init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}
