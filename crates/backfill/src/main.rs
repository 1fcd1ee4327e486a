//! `reputation-exporter-backfill` (what `reputation-exporter backfill` runs): parse the flags,
//! load the exporter's configuration, start logging, write the history, say how it went.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::Parser as _;
use reputation_backfill::cli::Cli;
use reputation_backfill::{Options, run};
use reputation_exporter::config::{self, Config};

/// jemalloc, as the exporter: reports are decoded and dropped by the thousand.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    match backfill(Cli::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        // Once logging has started, the failure is a log line like every other.
        Err(e) if tracing::dispatcher::has_been_set() => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Writes the history; whether every selected asset was written.
fn backfill(cli: Cli) -> anyhow::Result<bool> {
    let exporter = config::Cli {
        common: cli.args.common.clone(),
        ..config::Cli::default()
    };
    let config = Config::load(&exporter)?;
    let now = jiff::Timestamp::now().as_second();
    let options = Options::from_args(&cli.args, now)?;
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    reputation_exporter::logging::init(config.log.level, config.log.format);
    let target = cli.args.common.target.as_deref();
    let summary = runtime.block_on(run(&config, options, target))?;
    eprintln!("{}", summary.describe());
    Ok(summary.complete())
}
