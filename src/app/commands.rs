//! The commands beside the daemon: `--once`, `simulate`, and launching `backfill`.

use std::io::Write as _;

use tokio::net::TcpListener;
use tracing::{error, warn};

use super::{App, AppError};
use crate::config::Config;
use crate::config::cli::SimulateArgs;
use crate::exposition::Format;
use crate::model::NEWEST_SHOWN;
use crate::vocabulary::parse_duration;
use reputation_simulate::SimulatedApi;

/// `--once`: polls one account once, with one short round of retries (an unreachable API is
/// reported within seconds), and writes its exposition to `out`; true when every endpoint
/// answered, and otherwise logs which did not and why, and whether a serving exporter would be
/// ready with what it got (`/-/ready`'s answer).
pub async fn once(
    config: Config,
    target: Option<&str>,
    out: &mut impl std::io::Write,
) -> Result<bool, AppError> {
    let app = App::build(&config.once()).await?;
    let account = app.account(target)?;
    let ok = account.poll_once().await;
    let process = account.name.is_none().then_some(&*app.core.process);
    let exposition = account.latest.current().exposition(
        &account.telemetry,
        account.blacklists(),
        process,
        Format::Text,
    );
    out.write_all(&exposition)
        .and_then(|()| out.flush())
        .map_err(AppError::Output)?;
    say_listings(&account);
    if !ok {
        error!(
            failed = %account.failures().join(", "),
            ready = account.readiness().words(),
            "--once: not every endpoint answered"
        );
    }
    Ok(ok)
}

/// `--once`'s view of the current listings, newest first, one log line each, saying what a
/// listing's page says: the list, since when, the owner tags, the policy in words, what to do
/// and the removal page.
fn say_listings(account: &crate::accounts::Account) {
    let snapshot = account.latest.current();
    let Some(reports) = snapshot.reports.as_deref() else {
        return;
    };
    let (listings, total) = reports.newest_listings(NEWEST_SHOWN);
    for listing in &listings {
        let said = account.blacklists().said(listing.blacklist);
        let since = jiff::Timestamp::from_second(listing.since as i64).unwrap_or_default();
        warn!(
            kind = listing.kind.label(),
            asset = listing.asset,
            blacklist = listing.blacklist,
            list = said.list,
            since = %since,
            owner = listing.report.tags.join(", "),
            policy = said.summary,
            advice = said.advice,
            removal = said.removal_for(listing.asset),
            "listed"
        );
    }
    if total > listings.len() {
        warn!(
            older = total - listings.len(),
            "more listings than shown (reputation_blacklist_listed_since_timestamp_seconds)"
        );
    }
}

/// `simulate`: the simulated API on its own, its base URL printed on stdout, until `shutdown`
/// completes.
pub async fn simulate(
    args: &SimulateArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), AppError> {
    let latency = parse_duration(&args.report_latency).map_err(AppError::ReportLatency)?;
    let ips = args.assets * 4 / 5;
    let api = SimulatedApi::new(ips, args.assets - ips);
    api.set_report_delay(latency);
    let listen = |error| AppError::Listen {
        address: args.listen_address.clone(),
        error,
    };
    let listener = TcpListener::bind(&args.listen_address)
        .await
        .map_err(listen)?;
    let address = listener.local_addr().map_err(listen)?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "http://{address}")
        .and_then(|()| stdout.flush())
        .map_err(AppError::Output)?;
    axum::serve(listener, api.router())
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(AppError::Serve)
}

/// The binary `backfill` runs: a product of its own, so that the exporter does not carry the
/// remote-write client.
pub const BACKFILL_BINARY: &str = "reputation-exporter-backfill";

/// Why `backfill` could not start.
#[derive(Debug, thiserror::Error)]
pub enum BackfillLaunchError {
    /// The backfill binary is neither beside this one nor on the PATH.
    #[error(
        "`backfill` runs {BACKFILL_BINARY}, which is neither beside this binary nor on the PATH; \
         install it (cargo install --locked --path crates/backfill in a checkout, or take it \
         from the same release or image)"
    )]
    NotInstalled,
    /// It was found but could not be started.
    #[error("cannot start {path}: {error}")]
    Start {
        /// The binary.
        path: std::path::PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
}

/// `backfill`: runs [`BACKFILL_BINARY`], found beside this binary first (the one built or
/// installed with it), then on the PATH, with the configuration flags given before `backfill`
/// and `args` after them. On Unix it replaces this process, so its exit status is the
/// command's; elsewhere the status is passed on.
pub fn backfill(
    common: &crate::config::cli::Common,
    args: &[std::ffi::OsString],
) -> Result<std::process::ExitCode, BackfillLaunchError> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(BACKFILL_BINARY)))
        .filter(|path| path.is_file());
    let on_path = || {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|dir| dir.join(BACKFILL_BINARY))
            .find(|path| path.is_file())
    };
    let path = beside
        .or_else(on_path)
        .ok_or(BackfillLaunchError::NotInstalled)?;
    let mut command = std::process::Command::new(&path);
    command.args(common.to_args()).args(args);
    let start = |error| BackfillLaunchError::Start {
        path: path.clone(),
        error,
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        Err(start(command.exec()))
    }
    #[cfg(not(unix))]
    {
        let status = command.status().map_err(start)?;
        let code = status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(1);
        Ok(std::process::ExitCode::from(code))
    }
}
