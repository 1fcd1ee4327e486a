//! `reputation-exporter-backfill`'s command line: the exporter's configuration flags, where the
//! history goes, and which of it.

use std::path::PathBuf;

use clap::{Args, Parser};
use reputation_exporter::config::cli::Common;

/// What `--version` prints.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Writes the asset reports' history as OpenMetrics for `promtool tsdb create-blocks-from
/// openmetrics`, or sends it to a remote-write receiver, so Prometheus has months of data on
/// day one. Reads the exporter's configuration (file, environment, --config.file).
#[derive(Debug, Clone, Parser)]
#[command(name = "reputation-exporter backfill", version = VERSION)]
pub struct Cli {
    /// The flags.
    #[command(flatten)]
    pub args: BackfillArgs,
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
