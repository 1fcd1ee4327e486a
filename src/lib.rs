//! A Prometheus exporter for e-mail sending reputation.
//!
//! It polls the reputation monitoring API and serves every monitored IP address and domain as
//! labelled metrics. The modules, each importing only modules listed before it:
//!
//! - [`vocabulary`]: endpoint, kind, how a request failed ([`vocabulary::Failure`]) and the
//!   `code` label it counts under, SNDS colour, the secret, durations.
//! - [`logging`]: logfmt and JSON lines.
//! - [`health`]: what an account's pollers know of its API (each endpoint's state, failing
//!   streaks, the token's verdict); decisions read it, the health metrics are rendered from it.
//! - [`telemetry`]: the exporter's own metrics, on `prometheus-client`.
//! - [`upstream`]: the API client (token, timeouts, body cap, retries) and the JSON it returns.
//! - [`model`]: assets and their report data, mapped from the JSON by the value rules of
//!   docs/upstream.md.
//! - [`exposition`]: the per-asset metric families, OpenMetrics 1.0 and Prometheus text 0.0.4
//!   writers, and gzip.
//! - [`blacklists`]: what the project knows of each blacklist (names, removal page, policy),
//!   built in and extended by the configuration.
//! - [`events`]: what is news (a listing younger than 12 hours), decided from the API's own
//!   data and served with an identity every replica and restart agrees on: the API check.
//! - [`snapshot`]: what a scrape serves: each list rendered once, and the assembled body.
//! - [`disk`]: the state store: each account's lists and reports kept on local disk, so that a
//!   restart serves them at once and fetches only what is due.
//! - [`latest`]: the latest good data in memory, and the snapshot swapped in on every change.
//! - [`poll`]: the list poll loop and the asset report loop; what each result does to the
//!   latest data.
//! - [`config`]: flags, TOML file and environment, layered into typed settings and validated
//!   into the [`config::Config`] that builds the rest.
//! - [`accounts`]: each account's client, pollers and latest data, built from its configuration and
//!   running until dropped; the set of them, kept across reloads; `resolve(target)`.
//! - [`server`]: `/metrics`, `/probe`, the landing page, health, readiness, `/-/reload`,
//!   served by `exporter_web::serve`.
//! - [`app`]: the exporter built from a `Config`, reloaded with a new one, and run on a
//!   listener until shutdown.
//!
//! Beside it in the workspace: `exporter-web` (the web surface: sockets, TLS, basic auth, the
//! rate limit; and the `task` and `file_watch` helpers every module may use),
//! `reputation-simulate` (the simulated API of `--demo` and `simulate`) and
//! `reputation-backfill` (the `backfill` command, its own binary).
//!
//! The data is polled, not collected at scrape time: the upstream is a slow, rate-limited
//! third-party API whose values change daily, so a scrape answers from the latest snapshot and
//! never waits on it.

#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod accounts;
pub mod app;
pub mod blacklists;
pub mod config;
pub mod disk;
pub mod events;
pub mod exposition;
pub mod health;
pub mod latest;
pub mod logging;
pub mod model;
pub mod poll;
pub mod server;
pub mod snapshot;
pub mod telemetry;
pub mod upstream;
pub mod vocabulary;
