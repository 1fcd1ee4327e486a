//! `reputation-exporter`: parse the flags, load the configuration, start logging, run.

use std::process::ExitCode;

use clap::Parser as _;
use reputation_exporter::config::{Cli, Config};

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
