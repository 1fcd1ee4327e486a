//! The command line, named as in the Prometheus exporters' conventions.

use std::path::PathBuf;

use clap::Parser;

/// What `--version` prints: the version, the git revision and the compiler, as
/// `reputation_exporter_build_info` says them.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (revision ",
    env!("BUILD_GIT_REVISION"),
    ", built with ",
    env!("BUILD_RUSTC_VERSION"),
    ")"
);

/// The last line of `--help`.
const AFTER_HELP: &str = "Every configuration key can also be set in the environment as \
     REPUTATION_EXPORTER_<SECTION>__<KEY> (e.g. REPUTATION_EXPORTER_API__TOKEN_FILE); \
     config/reputation-exporter.toml documents every key with its default.";

/// Command-line flags, named as in the Prometheus exporters' conventions.
#[derive(Debug, Default, Parser)]
#[command(name = "reputation-exporter", version = VERSION, about, after_help = AFTER_HELP)]
pub struct Cli {
    /// TOML configuration file.
    #[arg(long = "config.file", value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Address to listen on for the metrics endpoint [default: 0.0.0.0:9525].
    #[arg(long = "web.listen-address", value_name = "ADDR")]
    pub listen_address: Option<String>,
    /// Path under which the metrics are exposed [default: /metrics].
    #[arg(long = "web.telemetry-path", value_name = "PATH")]
    pub telemetry_path: Option<String>,
    /// Web configuration file (exporter-toolkit format): TLS, mutual TLS, basic auth, headers.
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<String>,
    /// Log level: error, warn, info, debug or trace [default: info].
    #[arg(long = "log.level", value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Log format: logfmt or json [default: logfmt].
    #[arg(long = "log.format", value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Poll once, print the exposition to stdout, exit 0 when every endpoint answered.
    #[arg(long)]
    pub once: bool,
    /// Serve the built-in simulated API on loopback and export it; no account needed.
    #[arg(long)]
    pub demo: bool,
    /// Load and validate the configuration, print what is wrong or `ok`, and exit.
    #[arg(long = "config.check")]
    pub config_check: bool,
}
