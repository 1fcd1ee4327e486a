//! `reputation-exporter backfill`, the binary `reputation-exporter-backfill`: the asset reports'
//! history written as OpenMetrics with timestamps, for `promtool tsdb create-blocks-from
//! openmetrics`, or sent to a remote-write receiver, so a new installation has months of Sender
//! Score and listings on its first day.
//!
//! The same configuration as the daemon: the API, token, retries, and `asset_reports`'
//! selection, time zone and concurrency. Both lists are fetched once to know the assets, then
//! one report per selected asset, at most `asset_reports.concurrency` at once.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod cli;
mod history;
mod output;
mod progress;
pub mod remote_write;
mod series;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio::time::Instant;
use tracing::warn;

use crate::cli::BackfillArgs;
pub use history::{History, Skipped, Window};
use output::Output;
use remote_write::{Receiver, RemoteWrite, RemoteWriteError, Sent};
use reputation_exporter::accounts::{self, AccountError, Upstreams};
use reputation_exporter::config::{AccountConfig, Config};
use reputation_exporter::health::Health;
use reputation_exporter::model::AssetSet;
use reputation_exporter::poll::{ListRead, fetch_list};
use reputation_exporter::telemetry::Telemetry;
use reputation_exporter::upstream::dto::AssetReport;
use reputation_exporter::upstream::retry::RetryPolicy;
use reputation_exporter::upstream::{Client, FetchError};
use reputation_exporter::vocabulary::{Endpoint, Kind, parse_duration};
pub use series::Written;

/// Where the history goes.
#[derive(Debug, Clone)]
pub enum Destination {
    /// An OpenMetrics file (`--output`).
    File(PathBuf),
    /// A remote-write receiver (`--remote-write`).
    RemoteWrite(Box<remote_write::Settings>),
}

/// A flag of `backfill` that cannot be used: which (with its value where that helps) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {reason}")]
pub struct FlagError {
    /// The flag as given, e.g. `--label job` or `--remote-write.timeout`.
    pub flag: String,
    /// What is wrong, and what would be right.
    pub reason: String,
}

impl FlagError {
    /// `flag` cannot be used: `reason`.
    pub(crate) fn new(flag: impl Into<String>, reason: impl ToString) -> FlagError {
        FlagError {
            flag: flag.into(),
            reason: reason.to_string(),
        }
    }
}

/// What `backfill` was asked to do, checked.
#[derive(Debug, Clone)]
pub struct Options {
    /// Where the history goes.
    pub destination: Destination,
    /// Which samples are kept.
    pub window: Window,
    /// Constant labels on every series (`--label`).
    pub labels: Vec<(String, String)>,
    /// When the backfill started, Unix seconds: the ages of the samples count from it.
    pub now: i64,
}

impl Options {
    /// Checks the flags, `now` being the current Unix time.
    pub fn from_args(args: &BackfillArgs, now: i64) -> Result<Options, FlagError> {
        let from = args
            .since
            .as_deref()
            .map(|since| since_to_time(since, now))
            .transpose()?;
        let recent =
            parse_duration(&args.skip_recent).map_err(|e| FlagError::new("--skip-recent", e))?;
        let labels = args
            .labels
            .iter()
            .map(|l| series::parse_label(l))
            .collect::<Result<_, _>>()?;
        let destination = match (
            &args.output,
            remote_write::Settings::from_args(&args.remote_write)?,
        ) {
            (Some(file), None) => Destination::File(file.clone()),
            (None, Some(receiver)) => Destination::RemoteWrite(Box::new(receiver)),
            _ => {
                return Err(FlagError::new(
                    "--output",
                    "give one of --output FILE and --remote-write URL",
                ));
            }
        };
        Ok(Options {
            destination,
            window: Window {
                from,
                to: now - i64::try_from(recent.as_secs()).unwrap_or(i64::MAX),
            },
            labels,
            now,
        })
    }
}

/// `--since`: a duration back from now (`90d`) or a date (`2026-01-01`, midnight UTC).
fn since_to_time(since: &str, now: i64) -> Result<i64, FlagError> {
    let since = since.trim();
    let flag = || format!("--since {since}");
    if let Ok(date) = since.parse::<jiff::civil::Date>() {
        let at = date
            .to_zoned(jiff::tz::TimeZone::UTC)
            .map_err(|e| FlagError::new(flag(), e))?;
        return Ok(at.timestamp().as_second());
    }
    let back = parse_duration(since).map_err(|_| {
        FlagError::new(
            flag(),
            "neither a duration such as 90d nor a date such as 2026-01-01",
        )
    })?;
    Ok(now - i64::try_from(back.as_secs()).unwrap_or(i64::MAX))
}

/// Why a backfill could not be made at all.
#[derive(Debug, thiserror::Error)]
pub enum BackfillError {
    /// The API client (or the demo's simulated API) could not be set up, or the target names
    /// no account.
    #[error(transparent)]
    Account(#[from] AccountError),
    /// A list of assets could not be fetched, so there is nothing to ask reports for.
    #[error("cannot list the assets ({endpoint}): {error}")]
    List {
        /// The list endpoint.
        endpoint: &'static str,
        /// What went wrong.
        error: FetchError,
    },
    /// The output file cannot be written.
    #[error("cannot write {path}: {error}")]
    Output {
        /// The file.
        path: String,
        /// What went wrong.
        error: std::io::Error,
    },
    /// The remote-write client cannot be set up.
    #[error(transparent)]
    Receiver(remote_write::ReceiverError),
    /// The receiver did not take the history.
    #[error(transparent)]
    RemoteWrite(#[from] RemoteWriteError),
}

/// What a backfill did, for its closing summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Assets whose history was written.
    pub written: usize,
    /// Assets the API does not know (404).
    pub not_found: Vec<String>,
    /// Assets whose report was refused (401/403).
    pub refused: Vec<String>,
    /// Assets whose report failed after retries (or otherwise).
    pub failed: Vec<String>,
    /// Samples per family and their time range.
    pub samples: Written,
    /// What the receiver took, when the history went over remote write.
    pub sent: Option<Sent>,
    /// Values that could not be used, by why.
    pub values_skipped: Skipped,
    /// Age of the oldest sample in whole days, rounded up: the retention Prometheus needs.
    pub days_back: Option<i64>,
}

/// Prometheus' retention when `--storage.tsdb.retention.time` is not given.
const DEFAULT_RETENTION_DAYS: i64 = 15;

impl Summary {
    /// Whether every selected asset was written.
    pub fn complete(&self) -> bool {
        self.not_found.is_empty() && self.refused.is_empty() && self.failed.is_empty()
    }

    /// The closing lines, for a person.
    pub fn describe(&self) -> String {
        let skipped = self.not_found.len() + self.refused.len() + self.failed.len();
        let [scores, counts, listed] = self.samples.samples;
        let range = self.samples.span.map_or("no samples".to_owned(), |(o, n)| {
            format!("from {} to {}", utc(o), utc(n))
        });
        format!(
            "assets written: {}\nassets skipped: {skipped} (404: {}, 401/403: {}, gave up after \
             retries: {})\nsamples: reputation_senderscore {scores}, reputation_blacklistings \
             {counts}, reputation_blacklist_listed {listed}\ntime range: {range}\nvalues \
             skipped: {} ({} with no value (-1), {} not a number, {} with a date that cannot be \
             read){}{}",
            self.written,
            self.not_found.len(),
            self.refused.len(),
            self.failed.len(),
            self.values_skipped.total(),
            self.values_skipped.no_value,
            self.values_skipped.not_a_number,
            self.values_skipped.unreadable_date,
            self.sent_line(),
            self.retention_hint()
        )
    }

    /// A closing line when the history went over remote write.
    fn sent_line(&self) -> String {
        self.sent.map_or_else(String::new, |sent| {
            format!(
                "\nremote write: {} samples in {} requests ({} bytes compressed), {} retries",
                sent.samples, sent.requests, sent.bytes, sent.retries
            )
        })
    }

    /// A closing line when the history reaches back further than Prometheus keeps by default.
    fn retention_hint(&self) -> String {
        match self.days_back {
            Some(days) if days > DEFAULT_RETENTION_DAYS => format!(
                "\nretention: the history reaches back {days} days and Prometheus keeps \
                 {DEFAULT_RETENTION_DAYS} by default; start it with \
                 --storage.tsdb.retention.time={days}d or more, or it deletes the older blocks"
            ),
            _ => String::new(),
        }
    }
}

fn utc(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds).map_or_else(|_| seconds.to_string(), |t| t.to_string())
}

/// Fetches the history of every selected asset and writes it to `options.output`.
pub async fn run(
    config: &Config,
    options: Options,
    target: Option<&str>,
) -> Result<Summary, BackfillError> {
    let account = config.account(target).map_err(AccountError::from)?;
    let health = Arc::new(Health::new(&[]));
    let telemetry = Arc::new(Telemetry::new(health.clone()));
    // With --demo, the simulated API serves as long as `_simulated` is held.
    let (client, _simulated) =
        accounts::connect(account, telemetry.clone(), health, &Upstreams::default()).await?;
    let mut sink = Sink::open(options.destination, options.labels, account.retry).await?;
    let schedule = &account.reports;
    let mut targets = Vec::new();
    for kind in Kind::ALL {
        let names = list(account, &client, &telemetry, kind).await?;
        targets.extend(
            names
                .into_iter()
                .filter(|name| schedule.selection.selects(name))
                .map(|name| (kind, name)),
        );
    }
    let progress = progress::Progress::start(targets.len(), sink.detail());
    let mut summary = Summary::default();
    let mut reports = futures_util::stream::iter(targets)
        .map(|(kind, name)| {
            let client = &client;
            async move {
                let report = report(client, &name, account.retry.max_elapsed).await;
                (kind, name, report)
            }
        })
        .buffer_unordered(schedule.concurrency);
    while let Some((kind, name, report)) = reports.next().await {
        progress.advance();
        match report {
            Ok(report) => {
                let history = History::of(&report, &schedule.timezone, options.window);
                summary.values_skipped += history.skipped;
                sink.write(kind, &name, &history).await?;
                summary.written += 1;
            }
            Err(error) => {
                warn!(asset = %name, error = %error, "skipped: no history written for this asset");
                match error {
                    error if error.is_not_found() => summary.not_found.push(name),
                    FetchError::Rejected(_) => summary.refused.push(name),
                    _ => summary.failed.push(name),
                }
            }
        }
    }
    drop(progress);
    (summary.samples, summary.sent) = sink.finish().await?;
    summary.days_back = summary
        .samples
        .span
        .map(|(oldest, _)| (options.now - oldest + 86_399).max(0) / 86_400);
    Ok(summary)
}

/// Where each asset's history goes as it arrives.
enum Sink {
    File { output: Output, path: PathBuf },
    RemoteWrite(RemoteWrite),
}

impl Sink {
    /// Opens the file, or reaches the receiver: before anything is fetched, so that a wrong
    /// destination is said within seconds.
    async fn open(
        destination: Destination,
        labels: Vec<(String, String)>,
        retry: RetryPolicy,
    ) -> Result<Sink, BackfillError> {
        Ok(match destination {
            Destination::File(path) => Sink::File {
                output: Output::create(&path, labels).map_err(|e| output_error(&path, e))?,
                path,
            },
            Destination::RemoteWrite(settings) => {
                let receiver = Receiver::new(*settings).map_err(BackfillError::Receiver)?;
                Sink::RemoteWrite(RemoteWrite::start(receiver, retry, labels).await?)
            }
        })
    }

    async fn write(
        &mut self,
        kind: Kind,
        name: &str,
        history: &History,
    ) -> Result<(), BackfillError> {
        match self {
            Sink::File { output, path } => output
                .write(kind, name, history)
                .map_err(|e| output_error(path, e)),
            Sink::RemoteWrite(remote) => Ok(remote.write(kind, name, history).await?),
        }
    }

    /// What the progress line says besides the assets: the receiver's progress.
    fn detail(&self) -> Option<progress::Detail> {
        match self {
            Sink::File { .. } => None,
            Sink::RemoteWrite(remote) => {
                let taken = remote.taken();
                Some(Box::new(move || taken.describe()))
            }
        }
    }

    /// Completes the file or the sending: what was written, and what the receiver took.
    async fn finish(self) -> Result<(Written, Option<Sent>), BackfillError> {
        match self {
            Sink::File { output, path } => {
                Ok((output.finish().map_err(|e| output_error(&path, e))?, None))
            }
            Sink::RemoteWrite(remote) => {
                let (written, sent) = remote.finish().await?;
                Ok((written, Some(sent)))
            }
        }
    }
}

fn output_error(path: &std::path::Path, error: std::io::Error) -> BackfillError {
    BackfillError::Output {
        path: path.display().to_string(),
        error,
    }
}

/// The asset names of one list, fetched as the poller fetches it.
async fn list(
    account: &AccountConfig,
    client: &Client,
    telemetry: &Arc<Telemetry>,
    kind: Kind,
) -> Result<Vec<String>, BackfillError> {
    let deadline = Instant::now() + account.retry.max_elapsed;
    let max_labels = account.max_labels;
    let list = ListRead {
        kind,
        max_labels,
        disk: None,
    };
    let (decoded, _) = fetch_list(
        client,
        telemetry,
        list,
        AssetSet::default,
        deadline,
        |_, _| {},
    )
    .await
    .map_err(|error| BackfillError::List {
        endpoint: Endpoint::list(kind).label(),
        error,
    })?;
    Ok(decoded.set.assets.into_iter().map(|a| a.name).collect())
}

/// One asset's report, with the daemon's retries and `Retry-After`; retrying stops at
/// `backoff.max_elapsed` (`retrying`).
async fn report(
    client: &Client,
    name: &str,
    retrying: Duration,
) -> Result<AssetReport, FetchError> {
    let deadline = Instant::now() + retrying + Duration::from_secs(1);
    client.report(name, deadline, |_, _| {}).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_names_the_retention_a_history_older_than_15_days_needs() {
        let summary = |days_back| Summary {
            days_back,
            ..Summary::default()
        };
        assert!(
            summary(Some(91)).describe().ends_with(
                "\nretention: the history reaches back 91 days and Prometheus keeps 15 by \
                 default; start it with --storage.tsdb.retention.time=91d or more, or it \
                 deletes the older blocks"
            ),
            "{}",
            summary(Some(91)).describe()
        );
        assert!(!summary(Some(15)).describe().contains("retention"));
        assert!(!summary(None).describe().contains("retention"));
    }

    #[test]
    fn since_takes_a_duration_or_a_date() {
        let now = 1_800_000_000;
        assert_eq!(since_to_time("90d", now), Ok(now - 90 * 86_400));
        assert_eq!(since_to_time("2026-11-01", now), Ok(1_793_491_200));
        assert!(since_to_time("last spring", now).is_err());
    }
}
