//! `reputation-exporter`: parse the flags, load the configuration, start logging, bind, run
//! until SIGINT or SIGTERM, reloading on SIGHUP.

use std::io::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Parser as _;
use reputation_exporter::app::App;
use reputation_exporter::backfill;
use reputation_exporter::config::cli::{Command, SimulateArgs};
use reputation_exporter::config::{Cli, Config};
use reputation_exporter::demo::SimulatedApi;
use reputation_exporter::exposition::Format;
use reputation_exporter::server::ReloadRequest;
use reputation_exporter::vocabulary::parse_duration;

/// jemalloc instead of the system allocator: every poll allocates and frees about a body's
/// worth of memory on several threads; glibc's per-thread arenas keep most of it resident and
/// grow poll after poll, jemalloc returns it (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Simulate(args)) = &cli.command {
        return simulate(args);
    }
    let config = match Config::load(&cli) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if cli.config_check {
        for warning in &config.warnings {
            eprintln!("warning: {warning}");
        }
        println!("ok");
        return ExitCode::SUCCESS;
    }
    reputation_exporter::logging::init(config.log.level, config.log.format);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(Command::Backfill(args)) = &cli.command {
        let now = jiff::Timestamp::now().as_second();
        let options = match backfill::Options::from_args(args, now) {
            Ok(options) => options,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        };
        return runtime.block_on(run_backfill(config, options, cli.target.as_deref()));
    }
    match runtime.block_on(run(config, &cli)) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Serves until a signal, or with `--once` polls once and prints the exposition.
async fn run(mut config: Config, cli: &Cli) -> anyhow::Result<ExitCode> {
    let (once, target) = (cli.once, cli.target.as_deref());
    if once {
        // One short round of retries: an unreachable API is reported in seconds.
        config.retry = config.retry.once();
        let app = App::build(&config).await?;
        let ok = app.poll_once(target).await?;
        std::io::stdout()
            .write_all(&app.exposition(target, Format::Text)?)
            .context("cannot write to stdout")?;
        if ok {
            return Ok(ExitCode::SUCCESS);
        }
        tracing::error!(
            failed = %app.failures(target).join(", "),
            "--once: not every endpoint answered"
        );
        return Ok(ExitCode::FAILURE);
    }
    let address = config.web.listen_address;
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address} (web.listen_address)"))?;
    let source_cli = cli.clone();
    let app = App::build(&config)
        .await?
        .reloading_from(Arc::new(move || Config::load(&source_cli)));
    reload_on_hangup(app.reloads());
    app.serve(listener, shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// Asks for a reload on every SIGHUP, as Prometheus and Alertmanager do; the outcome is logged
/// by the reload itself.
fn reload_on_hangup(reloads: tokio::sync::mpsc::Sender<ReloadRequest>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGHUP; reload with POST /-/reload");
                return;
            }
        };
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                tracing::info!("SIGHUP: reloading the configuration");
                let (request, outcome) = ReloadRequest::new();
                if reloads.send(request).await.is_err() {
                    return;
                }
                let _ = outcome.await;
            }
        });
    }
    #[cfg(not(unix))]
    drop(reloads);
}

/// Writes the history file and the closing summary; exit 0 only when every selected asset was
/// written.
async fn run_backfill(
    config: Config,
    options: backfill::Options,
    target: Option<&str>,
) -> ExitCode {
    match backfill::run(&config, options, target).await {
        Ok(summary) => {
            eprintln!("{}", summary.describe());
            if summary.complete() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            tracing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// `simulate`: the simulated API on its own, until SIGINT or SIGTERM.
fn simulate(args: &SimulateArgs) -> ExitCode {
    let latency = match parse_duration(&args.report_latency) {
        Ok(latency) => latency,
        Err(e) => {
            eprintln!("--report-latency {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = async {
        let ips = args.assets * 4 / 5;
        let api = SimulatedApi::new(ips, args.assets - ips);
        api.set_report_delay(latency);
        let listener = tokio::net::TcpListener::bind(&args.listen_address)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen_address))?;
        println!("http://{}", listener.local_addr()?);
        std::io::stdout().flush()?;
        axum::serve(listener, api.router())
            .with_graceful_shutdown(shutdown_signal())
            .await?;
        anyhow::Ok(())
    };
    let outcome = tokio::runtime::Runtime::new()
        .context("cannot start the async runtime")
        .and_then(|runtime| runtime.block_on(served));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
}
