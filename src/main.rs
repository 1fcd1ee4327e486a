//! `reputation-exporter`: parse the flags, load the configuration, start logging, run.

use std::process::ExitCode;

use clap::Parser as _;
use reputation_exporter::config::{Cli, Config};

/// jemalloc instead of the system allocator: every poll allocates and frees about a body's
/// worth of memory on several threads; glibc's per-thread arenas keep most of it resident and
/// grow poll after poll, jemalloc returns it (see docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::load(&cli) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if cli.config_check {
        println!("ok");
        return ExitCode::SUCCESS;
    }
    reputation_exporter::logging::init(config.log);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(reputation_exporter::run(config, cli.once)) {
        Ok(code) => code,
        Err(e) => {
            tracing::error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}
