//! The command line, named as in the Prometheus exporters' conventions.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use figment::value::Value;

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
#[derive(Debug, Clone, Default, Parser)]
#[command(name = "reputation-exporter", version = VERSION, about, after_help = AFTER_HELP)]
pub struct Cli {
    /// The flags `backfill` takes too.
    #[command(flatten)]
    pub common: Common,
    /// Address to listen on for the metrics endpoint; repeat it to listen on several (e.g. an
    /// IPv4 and an IPv6 address) [default: 0.0.0.0:9525].
    #[arg(long = "web.listen-address", value_name = "ADDR")]
    pub listen_address: Vec<String>,
    /// Serve on the sockets systemd passes (socket activation, LISTEN_FDS) instead of
    /// --web.listen-address.
    #[arg(long = "web.systemd-socket")]
    pub systemd_socket: bool,
    /// Path under which the metrics are exposed [default: /metrics].
    #[arg(long = "web.telemetry-path", value_name = "PATH")]
    pub telemetry_path: Option<String>,
    /// Web configuration file (exporter-toolkit format): TLS, mutual TLS, basic auth, headers.
    #[arg(long = "web.config.file", value_name = "FILE")]
    pub web_config_file: Option<String>,
    /// Directory of the state a restart starts from (the lists and reports last fetched)
    /// [default: $STATE_DIRECTORY, /var/lib/reputation-exporter or ~/.local/state/reputation-exporter,
    /// the first that can be written].
    #[arg(long = "state.path", value_name = "DIR")]
    pub state_path: Option<String>,
    /// Poll once, print the exposition to stdout, exit 0 when every endpoint answered.
    #[arg(long)]
    pub once: bool,
    /// Load and validate the configuration, print what is wrong or `ok`, and exit.
    #[arg(long = "config.check")]
    pub config_check: bool,
    /// What to do instead of serving.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The flags of both the exporter and `backfill` (not of `simulate`, which reads no
/// configuration): given before `backfill`, they are passed on to it.
#[derive(Debug, Clone, Default, Args)]
pub struct Common {
    /// TOML configuration file.
    #[arg(long = "config.file", value_name = "FILE")]
    pub config_file: Option<PathBuf>,
    /// Log level: error, warn, info, debug or trace [default: info].
    #[arg(long = "log.level", value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Log format: logfmt or json [default: logfmt].
    #[arg(long = "log.format", value_name = "FORMAT")]
    pub log_format: Option<String>,
    /// Serve the built-in simulated API on loopback and export it; no account needed.
    #[arg(long)]
    pub demo: bool,
    /// With several accounts: the account `--once` and `backfill` work on.
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
}

impl Common {
    /// These flags as they are written on a command line, to pass them on.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = Vec::new();
        let mut pass = |flag: &str, value: Option<&std::ffi::OsStr>| {
            if let Some(value) = value {
                args.extend([flag.into(), value.to_owned()]);
            }
        };
        pass(
            "--config.file",
            self.config_file.as_deref().map(AsRef::as_ref),
        );
        pass("--log.level", self.log_level.as_deref().map(AsRef::as_ref));
        pass(
            "--log.format",
            self.log_format.as_deref().map(AsRef::as_ref),
        );
        pass("--target", self.target.as_deref().map(AsRef::as_ref));
        if self.demo {
            args.push("--demo".into());
        }
        args
    }
}

/// The configuration keys that flags set, each with its flag, in the order of
/// [`Cli::flag_values`]. Flags are the last layer, over the file and the environment.
pub const FLAGS: [(&str, &str); 7] = [
    ("web.listen_address", "--web.listen-address"),
    ("web.systemd_socket", "--web.systemd-socket"),
    ("web.telemetry_path", "--web.telemetry-path"),
    ("web.config_file", "--web.config.file"),
    ("state.path", "--state.path"),
    ("log.level", "--log.level"),
    ("log.format", "--log.format"),
];

impl Cli {
    /// The command line of this process.
    pub fn from_args() -> Cli {
        use clap::Parser as _;
        Cli::parse()
    }

    /// The value given to each flag of [`FLAGS`], in its order.
    pub fn flag_values(&self) -> [Option<Value>; 7] {
        let text = |value: &Option<String>| value.as_deref().map(Value::from);
        [
            (!self.listen_address.is_empty()).then(|| Value::from(self.listen_address.clone())),
            self.systemd_socket.then(|| Value::from(true)),
            text(&self.telemetry_path),
            text(&self.web_config_file),
            text(&self.state_path),
            text(&self.common.log_level),
            text(&self.common.log_format),
        ]
    }
}

/// What the exporter can do besides serving.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Write the asset reports' history as OpenMetrics for `promtool tsdb
    /// create-blocks-from openmetrics`, or send it to a remote-write receiver, so Prometheus
    /// has months of data on day one: runs reputation-exporter-backfill (installed beside this
    /// binary, or on the PATH) with the flags given; `backfill --help` lists them.
    #[command(disable_help_flag = true)]
    Backfill {
        /// `backfill`'s flags, passed on as given.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "FLAGS"
        )]
        args: Vec<OsString>,
    },
    /// Serve the simulated API on its own (what --demo polls), to try a configuration or the
    /// README's "Run it for real" without an account: prints its base URL and serves until
    /// stopped. Its token is demo-token.
    Simulate(SimulateArgs),
}

/// `simulate`'s flags.
#[derive(Debug, Clone, Args)]
pub struct SimulateArgs {
    /// How many assets it monitors: four in five IP addresses, the rest domains.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub assets: usize,
    /// Address to listen on.
    #[arg(
        long = "listen-address",
        value_name = "ADDR",
        default_value = "127.0.0.1:0"
    )]
    pub listen_address: String,
    /// How long each asset report takes to answer, e.g. 50ms.
    #[arg(long = "report-latency", value_name = "DURATION", default_value = "0s")]
    pub report_latency: String,
}
