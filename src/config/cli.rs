//! The command line, named as in the Prometheus exporters' conventions.

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
/// configuration): given before `backfill` or after it, they mean the same.
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
    /// These flags, each replaced by `later`'s where `later` gives it.
    fn then(self, later: Common) -> Common {
        Common {
            config_file: later.config_file.or(self.config_file),
            log_level: later.log_level.or(self.log_level),
            log_format: later.log_format.or(self.log_format),
            demo: self.demo || later.demo,
            target: later.target.or(self.target),
        }
    }
}

/// The configuration keys that flags set, each with its flag, in the order of
/// [`Cli::flag_values`]. Flags are the last layer, over the file and the environment.
pub const FLAGS: [(&str, &str); 6] = [
    ("web.listen_address", "--web.listen-address"),
    ("web.systemd_socket", "--web.systemd-socket"),
    ("web.telemetry_path", "--web.telemetry-path"),
    ("web.config_file", "--web.config.file"),
    ("log.level", "--log.level"),
    ("log.format", "--log.format"),
];

impl Cli {
    /// The command line of this process; `backfill`'s own [`Common`] flags count as if given
    /// before it.
    pub fn from_args() -> Cli {
        use clap::Parser as _;
        let mut cli = Cli::parse();
        if let Some(Command::Backfill(args)) = &mut cli.command {
            let given = std::mem::take(&mut args.common);
            cli.common = std::mem::take(&mut cli.common).then(given);
        }
        cli
    }

    /// The value given to each flag of [`FLAGS`], in its order.
    pub fn flag_values(&self) -> [Option<Value>; 6] {
        let text = |value: &Option<String>| value.as_deref().map(Value::from);
        [
            (!self.listen_address.is_empty()).then(|| Value::from(self.listen_address.clone())),
            self.systemd_socket.then(|| Value::from(true)),
            text(&self.telemetry_path),
            text(&self.web_config_file),
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
    /// has months of data on day one.
    Backfill(Box<BackfillArgs>),
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

/// `backfill`'s flags.
#[derive(Debug, Clone, Args)]
pub struct BackfillArgs {
    /// The configuration, the account and the log, as for the exporter.
    #[command(flatten)]
    pub common: Common,
    /// The OpenMetrics file to write (written under another name and renamed when complete).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "url",
        conflicts_with = "url"
    )]
    pub output: Option<PathBuf>,
    /// Where to send the history instead of a file: a remote-write receiver.
    #[command(flatten)]
    pub remote_write: RemoteWriteArgs,
    /// Leave out samples older than this: a duration back from now (90d) or a date
    /// (2026-01-01) [default: all the history the API returns].
    #[arg(long, value_name = "DURATION|DATE")]
    pub since: Option<String>,
    /// A label on every series, NAME=VALUE, e.g. job=reputation (repeatable): give the job and
    /// instance Prometheus gives the live series, so history and live data are one series.
    #[arg(long = "label", value_name = "NAME=VALUE")]
    pub labels: Vec<String>,
    /// Leave out samples this recent, so the blocks do not overlap Prometheus' head block
    /// (promtool's advice); 0s keeps everything.
    #[arg(long = "skip-recent", value_name = "DURATION", default_value = "3h")]
    pub skip_recent: String,
}

/// `backfill`'s remote-write flags.
#[derive(Debug, Clone, Default, Args)]
pub struct RemoteWriteArgs {
    /// Send the history to this remote-write receiver (Prometheus remote-write 1.0) instead of
    /// writing a file, e.g. http://prometheus:9090/api/v1/write.
    #[arg(long = "remote-write", value_name = "URL")]
    pub url: Option<String>,
    /// A header on every remote-write request, 'NAME: VALUE' (repeatable), e.g.
    /// 'X-Scope-OrgID: mail' for a Mimir tenant.
    #[arg(
        long = "remote-write.header",
        value_name = "NAME: VALUE",
        requires = "url"
    )]
    pub headers: Vec<String>,
    /// A file holding the receiver's bearer token.
    #[arg(
        long = "remote-write.bearer-token-file",
        value_name = "FILE",
        requires = "url",
        conflicts_with = "basic_auth_username"
    )]
    pub bearer_token_file: Option<PathBuf>,
    /// The user name of the receiver's basic authentication.
    #[arg(
        long = "remote-write.basic-auth-username",
        value_name = "NAME",
        requires = "url",
        requires = "basic_auth_password_file"
    )]
    pub basic_auth_username: Option<String>,
    /// A file holding the password of the receiver's basic authentication.
    #[arg(
        long = "remote-write.basic-auth-password-file",
        value_name = "FILE",
        requires = "basic_auth_username"
    )]
    pub basic_auth_password_file: Option<PathBuf>,
    /// The CA certificates (PEM) that sign the receiver's certificate, instead of the system's.
    #[arg(long = "remote-write.ca-file", value_name = "FILE", requires = "url")]
    pub ca_file: Option<PathBuf>,
    /// How long one request may take.
    #[arg(
        long = "remote-write.timeout",
        value_name = "DURATION",
        default_value = "30s"
    )]
    pub timeout: String,
}
