//! `reputation-exporter`: parse the flags, load the configuration, start logging, and run what
//! the command line asks for: serve until SIGINT or SIGTERM (reloading on SIGHUP), `--once` or
//! `simulate`; `backfill` runs its own binary. Everything it runs lives in the library.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use reputation_exporter::app::{self, App};
use reputation_exporter::config::cli::Command;
use reputation_exporter::config::{Cli, Config};
use reputation_exporter::server;

/// jemalloc instead of the system allocator: every poll allocates and frees about a body's
/// worth of memory on several threads; glibc's per-thread arenas keep most of it resident and
/// grow poll after poll, jemalloc returns it (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::from_args();
    match run(&cli) {
        Ok(code) => code,
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

/// Runs what the command line asks for; the exit code says whether it all went through.
fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let runtime = || tokio::runtime::Runtime::new().context("cannot start the async runtime");
    match &cli.command {
        Some(Command::Simulate(args)) => {
            runtime()?.block_on(app::simulate(args, app::shutdown_signal()))?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Backfill { args }) => return Ok(app::backfill(&cli.common, args)?),
        None => {}
    }
    let config = Config::load(cli)?;
    if cli.config_check {
        for warning in &config.warnings {
            eprintln!("warning: {warning}");
        }
        println!("ok");
        return Ok(ExitCode::SUCCESS);
    }
    // Taken while this is the only thread: reading them clears LISTEN_FDS from the environment.
    let passed = match !cli.once && config.web.systemd_socket {
        true => Some(server::Passed::take()?),
        false => None,
    };
    let runtime = runtime()?;
    reputation_exporter::logging::init(config.log.level, config.log.format);
    let done = if cli.once {
        let target = cli.common.target.as_deref();
        runtime.block_on(app::once(config, target, &mut std::io::stdout()))?
    } else {
        runtime.block_on(serve(config, cli, passed))?;
        true
    };
    Ok(if done {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Binds the listen addresses (or takes the sockets systemd `passed`) and serves until SIGINT
/// or SIGTERM, reloading on SIGHUP.
async fn serve(config: Config, cli: &Cli, passed: Option<server::Passed>) -> anyhow::Result<()> {
    // Once, at start, as Go exporters do: the connection bound follows the file limit.
    server::raise_open_file_limit();
    let sockets = match passed {
        Some(passed) => server::Sockets::passed(passed)?,
        None => server::Sockets::bind(&config.web.listen_addresses).await?,
    };
    let source = cli.clone();
    let app = App::build(&config)
        .await?
        .reloading_from(Arc::new(move || Config::load(&source)));
    app::reload_on_hangup(app.reloads());
    app.serve(sockets, app::shutdown_signal()).await?;
    Ok(())
}
