//! Black-box tests: the exporter on a loopback port against the simulated API.

mod accounts;
mod cost;
mod day;
mod deploy;
mod events;
mod exposition;
mod faults;
mod follow;
mod fuzz;
mod health;
mod helpers;
mod hostile;
mod logs;
mod messages;
mod metrics;
mod process;
mod reload;
mod reports;
mod shards;
mod state;
mod stories;
mod structure;
