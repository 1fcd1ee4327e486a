//! The landing page: what an operator opens first. Plain, escaped HTML without scripts.

use std::fmt::Write as _;

use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::{Html, IntoResponse as _, Response};

use super::Shared;
use crate::accounts::{Account, Accounts};
use crate::health::unix_now;
use crate::snapshot::{LOW_SCORE, Snapshot, WORST_KEPT};
use crate::vocabulary::{Endpoint, Kind, SndsColour, spoken_duration};

/// How often the landing page reloads itself, so that its "next poll due in" and its health
/// stay current.
const REFRESH: Duration = Duration::from_secs(30);

/// Assets listed on the landing page; the rest are in `/metrics`.
const LANDING_ROWS: usize = WORST_KEPT;

/// The page's style: plain, readable, colours only where they carry meaning.
const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222}\
     table{border-collapse:collapse;margin-bottom:1em}\
     td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}\
     td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}\
     .bad{background:#f8d7da}.warn{background:#fff3cd}.good{background:#d4edda}\
     .demo{background:#fff3cd;border:1px solid #e0c060;padding:4px 8px;display:inline-block}\
     .summary{font-size:1.1em}.legend{font-size:0.9em;color:#555}\
     .legend span{padding:0 4px}";

/// `/?account=NAME`: one account's page, with several accounts.
#[derive(Debug, serde::Deserialize)]
pub(super) struct Landing {
    account: Option<String>,
}

pub(super) async fn landing(
    State(state): State<Shared>,
    Query(landing): Query<Landing>,
    headers: HeaderMap,
) -> Response {
    let accounts = state.accounts();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    match (accounts.single(), landing.account.as_deref()) {
        (Some(one), _) => Html(account_page(&state, one, host)).into_response(),
        (None, None) => Html(accounts_page(&state, &accounts, host)).into_response(),
        (None, Some(name)) => match super::account_named(&accounts, name) {
            Ok(account) => Html(account_page(&state, account, host)).into_response(),
            Err((status, reason)) => (
                status,
                Html(format!(
                    "{}<p>There is no account named <code>{}</code> ({}). \
                     <a href=\"/\">All accounts</a>.</p></body></html>\n",
                    head(),
                    escape(name),
                    escape(reason.trim_end())
                )),
            )
                .into_response(),
        },
    }
}

/// The document's start, up to and including the page title.
fn head() -> String {
    let every = REFRESH.as_secs();
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{every}\"><title>Reputation Exporter</title>\
         <style>{STYLE}</style></head><body><h1>Reputation Exporter</h1>"
    )
}

/// What to do next, under every page: scrape the exporter, add the dashboard and the alerts.
/// `host` is the address the browser used (the `Host` header), when it sent one; `accounts`
/// the names of the accounts served through `/probe`, none for the one of `/metrics`. Every
/// target carries `account`, which the shipped alerts read (a second replica is one more
/// address in the same list).
fn next_steps(state: &Shared, host: Option<&str>, accounts: &[&str]) -> String {
    let target = escape(host.unwrap_or("reputation-exporter:9525"));
    let path = escape(&state.telemetry_path);
    let scrape = if accounts.is_empty() {
        format!(
            "scrape_configs:\n  - job_name: reputation\n    metrics_path: {path}\n    \
             static_configs:\n      - targets: [\"{target}\"]\n        labels:\n          \
             account: main"
        )
    } else {
        let groups: String = accounts
            .iter()
            .map(|name| {
                format!(
                    "\n      - targets: [\"{target}\"]\n        labels:\n          account: {}",
                    escape(name)
                )
            })
            .collect();
        format!(
            "scrape_configs:\n  - job_name: reputation\n    metrics_path: /probe\n    \
             static_configs:{groups}\n    relabel_configs:\n      \
             - source_labels: [account]\n        target_label: __param_target"
        )
    };
    let readme = concat!(env!("CARGO_PKG_REPOSITORY"), "#readme");
    format!(
        "<h2 id=\"next\">Next steps</h2><p>Point Prometheus at this exporter (<code>prometheus.yml</code>):\
         </p><pre>{scrape}</pre><p>Then import the Grafana dashboard \
         (<code>deploy/grafana/dashboard.json</code>) and load the alerts and rules \
         (<code>deploy/prometheus/</code>); the <a href=\"{readme}\">README</a> says how, and \
         how to run the exporter against a real account. This page refreshes every {}.</p>",
        spoken(REFRESH.as_secs_f64())
    )
}

/// When the running configuration was applied, and how to reload it.
fn configuration(state: &Shared) -> String {
    let (applied, at) = state.process.config_state();
    let since = format!("applied {} ago", spoken(unix_now() - at));
    let refused = if applied {
        String::new()
    } else {
        " <span class=\"bad\">The last reload was refused: the log says why; the previous \
         configuration runs.</span>"
            .to_owned()
    };
    format!(
        "<p>Configuration {since}; reload it with SIGHUP or <code>POST /-/reload</code>.{refused}</p>"
    )
}

/// What the colours mean, under every table that uses them.
fn legend() -> String {
    format!(
        "<p class=\"legend\">Colours: Sender Score <span class=\"bad\">below {LOW_SCORE}</span>, \
         <span class=\"warn\">below 80</span>, <span class=\"good\">80 or more</span>; \
         blacklistings <span class=\"bad\">listed on one or more</span>, \
         <span class=\"good\">none</span>; SNDS as its colour; an endpoint or account \
         <span class=\"bad\">failed at its last poll</span>, <span class=\"warn\">not polled \
         yet</span>, <span class=\"good\">ok</span>.</p>"
    )
}

/// A duration as people say it, to the second: `4m 12s`.
fn spoken(seconds: f64) -> String {
    spoken_duration(Duration::from_secs(seconds.max(0.0) as u64))
}

/// When the lists are polled, and when next.
fn schedule(account: &Account) -> String {
    let every = spoken(account.poll_interval().as_secs_f64());
    match account.health.next_poll() {
        Some(at) => format!(
            "The lists are polled every {every}; the next poll is due in {}.",
            spoken_duration(at.saturating_duration_since(tokio::time::Instant::now()))
        ),
        None => format!("The lists are polled every {every}; the first poll is under way."),
    }
}

/// Why an account has no data yet: its failing endpoints, or its first poll still running.
fn no_data(account: &Account) -> String {
    let failing: Vec<String> = account
        .failing()
        .iter()
        .filter(|(endpoint, _)| matches!(endpoint, Endpoint::IpList | Endpoint::DomainList))
        .map(|(endpoint, why)| format!("{}: {}", endpoint.label(), escape(why)))
        .collect();
    if failing.is_empty() {
        "no data yet: the first poll has not ended".to_owned()
    } else {
        format!("no data yet: {}", failing.join("; "))
    }
}

/// One account's page: what the single-account exporter shows at `/`, and `/?account=NAME`.
fn account_page(state: &Shared, account: &Account, host: Option<&str>) -> String {
    let snapshot = account.latest.current();
    let mut page = head();
    let version = env!("CARGO_PKG_VERSION");
    let path = escape(&state.telemetry_path);
    if state.demo {
        page.push_str(
            "<p class=\"demo\">Demo mode: the data comes from the built-in simulated API, not \
             from an account. <a href=\"#next\">Next steps</a>: scrape it with Prometheus, \
             import the dashboard, run it for real.</p>",
        );
    }
    match &account.name {
        None => {
            let readiness = state.readiness(&state.accounts()).words();
            let _ = write!(
                page,
                "<p>Version {version}. Metrics: <a href=\"{path}\">{path}</a>. \
                 Readiness: {readiness} (<a href=\"/-/ready\">/-/ready</a>, \
                 <a href=\"/-/healthy\">/-/healthy</a>).</p>"
            );
        }
        Some(name) => {
            let name = escape(name);
            let _ = write!(
                page,
                "<h2>Account {name}</h2><p>Version {version}. Its metrics: \
                 <a href=\"/probe?target={name}\">/probe?target={name}</a>. \
                 <a href=\"/\">All accounts</a>.</p>"
            );
        }
    }
    let _ = write!(page, "<p>{}</p>", schedule(account));
    page.push_str(&configuration(state));

    if snapshot.ready {
        let summary = snapshot.summary();
        let _ = write!(
            page,
            "<p class=\"summary\">{} assets ({} IP addresses, {} domains): <b>{}</b> listed on \
             a blacklist, <b>{}</b> with SNDS red, <b>{}</b> with a Sender Score below \
             {LOW_SCORE}.</p>",
            summary.assets,
            snapshot.count(Kind::Ip),
            snapshot.count(Kind::Domain),
            summary.listed,
            summary.snds_red,
            summary.low_score,
        );
    } else {
        let _ = write!(page, "<p class=\"summary warn\">{}.</p>", no_data(account));
    }

    page.push_str(
        "<h2>Upstream API</h2><table><tr><th>endpoint</th><th>last poll</th>\
         <th>last tried</th><th>last success</th></tr>",
    );
    let now = unix_now();
    let ago = |t: Option<f64>| t.map_or("never".to_owned(), |t| format!("{} ago", spoken(now - t)));
    for (endpoint, health) in account.health.all() {
        let (class, state) = match (health.why(), health.up, health.last_attempt) {
            (_, _, None) => ("warn", "not polled yet".to_owned()),
            (_, Some(true), Some(_)) => ("good", "ok".to_owned()),
            (Some(why), _, Some(_)) => ("bad", format!("failed: {}", escape(&why))),
            (None, _, Some(_)) => ("bad", "failed".to_owned()),
        };
        let _ = write!(
            page,
            "<tr><td>{}</td><td class=\"{class}\">{state}</td><td class=\"num\">{}</td>\
             <td class=\"num\">{}</td></tr>",
            endpoint.label(),
            ago(health.last_attempt),
            ago(health.last_success),
        );
    }
    page.push_str("</table>");
    if snapshot.ready {
        assets_table(&mut page, &snapshot, &path);
        super::listings::section(&mut page, &snapshot, account.blacklists());
    }
    page.push_str(&legend());
    let names: Vec<&str> = account.name.as_deref().into_iter().collect();
    page.push_str(&next_steps(state, host, &names));
    page.push_str("</body></html>\n");
    page
}

/// The assets of one account, worst first.
fn assets_table(page: &mut String, snapshot: &Snapshot, path: &str) {
    let reports = snapshot.reports.as_deref();
    let _ = write!(
        page,
        "<h2>Assets, worst first</h2><table><tr><th>kind</th><th>asset</th>\
         <th class=\"num\">sender score</th><th class=\"num\">blacklistings</th><th>SNDS</th>{}\
         </tr>",
        if reports.is_some() {
            "<th>listed on</th>"
        } else {
            ""
        }
    );
    for asset in snapshot.worst(LANDING_ROWS) {
        let show = |v: Option<f64>| v.map_or("–".to_owned(), |v| v.to_string());
        let score = match asset.senderscore {
            None => "",
            Some(s) if s < LOW_SCORE => "bad",
            Some(s) if s < 80.0 => "warn",
            Some(_) => "good",
        };
        let listings = match asset.blacklistings {
            Some(n) if n > 0.0 => "bad",
            Some(_) => "good",
            None => "",
        };
        let (snds_class, snds) = match asset.snds_reputation {
            Some(SndsColour::Red) => ("bad", "red"),
            Some(SndsColour::Yellow) => ("warn", "yellow"),
            Some(SndsColour::Green) => ("good", "green"),
            None => ("", "–"),
        };
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td class=\"num {score}\">{}</td>\
             <td class=\"num {listings}\">{}</td><td class=\"{snds_class}\">{snds}</td>",
            asset.kind.label(),
            escape(&asset.name),
            show(asset.senderscore),
            show(asset.blacklistings),
        );
        if let Some(reports) = reports {
            let listed: Vec<String> = reports
                .get(asset.kind, &asset.name)
                .map(|report| {
                    report
                        .listings
                        .iter()
                        .filter(|l| l.listed)
                        .map(|l| escape(&l.blacklist))
                        .collect()
                })
                .unwrap_or_default();
            let _ = write!(page, "<td>{}</td>", listed.join(", "));
        }
        page.push_str("</tr>");
    }
    let total = snapshot.total();
    if total > LANDING_ROWS {
        let _ = write!(
            page,
            "<tr><td colspan=\"6\">and {} more in {path}</td></tr>",
            total - LANDING_ROWS
        );
    }
    page.push_str("</table>");
}

/// The page of an exporter with several accounts: each account's health, its assets in
/// trouble, when it is polled next, and the links to its page and its probe.
fn accounts_page(state: &Shared, accounts: &Accounts, host: Option<&str>) -> String {
    let mut page = head();
    let version = env!("CARGO_PKG_VERSION");
    let path = escape(&state.telemetry_path);
    let every = accounts
        .iter()
        .next()
        .map_or(String::new(), |a| spoken(a.poll_interval().as_secs_f64()));
    let _ = write!(
        page,
        "<p>Version {version}. {} accounts, each on <code>/probe?target=NAME</code>; the \
         exporter's own metrics: <a href=\"{path}\">{path}</a>. Readiness: {} \
         (<a href=\"/-/ready\">/-/ready</a>, <a href=\"/-/healthy\">/-/healthy</a>). \
         The lists are polled every {}.</p>\
         <h2>Accounts</h2><table><tr><th>account</th><th>lists</th><th>failing</th>\
         <th class=\"num\">assets</th><th class=\"num\">listed</th>\
         <th class=\"num\">SNDS red</th><th class=\"num\">score below {LOW_SCORE}</th>\
         <th class=\"num\">next poll in</th><th>metrics</th></tr>",
        accounts.len(),
        state.readiness(accounts).words(),
        every,
    );
    for account in accounts.iter() {
        let name = escape(account.name.as_deref().unwrap_or_default());
        let snapshot = account.latest.current();
        let failing: Vec<String> = account
            .failing()
            .iter()
            .map(|(endpoint, why)| format!("{}: {}", endpoint.label(), escape(why)))
            .collect();
        let (class, lists) = if account.health.up() {
            ("good", "ok")
        } else if !account.polled() {
            ("warn", "not polled yet")
        } else {
            ("bad", "failed")
        };
        let counts = if snapshot.ready {
            let summary = snapshot.summary();
            let bad = |n: usize| if n > 0 { "num bad" } else { "num good" };
            format!(
                "<td class=\"num\">{}</td><td class=\"{}\">{}</td><td class=\"{}\">{}</td>\
                 <td class=\"{}\">{}</td>",
                summary.assets,
                bad(summary.listed),
                summary.listed,
                bad(summary.snds_red),
                summary.snds_red,
                bad(summary.low_score),
                summary.low_score,
            )
        } else {
            format!("<td colspan=\"4\" class=\"warn\">{}</td>", no_data(account))
        };
        let next = account.health.next_poll().map_or("–".to_owned(), |at| {
            spoken_duration(at.saturating_duration_since(tokio::time::Instant::now()))
        });
        let _ = write!(
            page,
            "<tr><td><a href=\"/?account={name}\">{name}</a></td><td class=\"{class}\">{lists}</td>\
             <td>{}</td>{counts}<td class=\"num\">{next}</td>\
             <td><a href=\"/probe?target={name}\">/probe?target={name}</a></td></tr>",
            failing.join(", "),
        );
    }
    page.push_str("</table>");
    page.push_str(&configuration(state));
    page.push_str(&legend());
    let names: Vec<&str> = accounts.iter().filter_map(|a| a.name.as_deref()).collect();
    page.push_str(&next_steps(state, host, &names));
    page.push_str("</body></html>\n");
    page
}

/// Escapes text for HTML element content and attribute values.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_special_characters_are_escaped() {
        assert_eq!(
            escape("<script>\"x\" & 'y'</script>"),
            "&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;"
        );
    }
}
