//! The landing page: what an operator opens first. Plain, escaped HTML without scripts.

use std::fmt::Write as _;

use axum::extract::State;
use axum::response::Html;

use super::AppState;
use crate::snapshot::WORST_KEPT;
use crate::telemetry::unix_now;

/// Assets listed on the landing page; the rest are in `/metrics`.
const LANDING_ROWS: usize = WORST_KEPT;

pub(super) async fn landing(State(state): State<AppState>) -> Html<String> {
    let snapshot = state.snapshots.borrow().clone();
    let mut page = String::with_capacity(16 * 1024);
    let version = env!("CARGO_PKG_VERSION");
    let path = escape(&state.telemetry_path);
    let _ = write!(
        page,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Reputation Exporter</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:2px 8px;text-align:left}}</style></head><body>\
         <h1>Reputation Exporter</h1><p>Version {version}. Metrics: <a href=\"{path}\">{path}</a>\
         </p><h2>Upstream API</h2><table><tr><th>endpoint</th><th>last poll</th>\
         <th>last success</th></tr>"
    );
    let now = unix_now();
    for health in state.telemetry.health() {
        let age = health
            .last_success
            .map_or("never".to_owned(), |t| format!("{:.0} s ago", now - t));
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{age}</td></tr>",
            health.endpoint.label(),
            if health.up { "ok" } else { "failed" },
        );
    }
    let total = snapshot.total();
    let _ = write!(
        page,
        "</table><h2>Assets, worst first</h2><p>{total} assets.</p><table><tr><th>kind</th>\
         <th>asset</th><th>sender score</th><th>blacklistings</th><th>SNDS</th></tr>"
    );
    for asset in snapshot.worst(LANDING_ROWS) {
        let show = |v: Option<f64>| v.map_or("–".to_owned(), |v| v.to_string());
        let snds = asset.snds_reputation.map_or("–", |c| c.label());
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{snds}</td></tr>",
            asset.kind.label(),
            escape(&asset.name),
            show(asset.senderscore),
            show(asset.blacklistings),
        );
    }
    if total > LANDING_ROWS {
        let _ = write!(
            page,
            "<tr><td colspan=\"5\">and {} more in {path}</td></tr>",
            total - LANDING_ROWS
        );
    }
    page.push_str("</table></body></html>\n");
    Html(page)
}

/// Escapes text for HTML element content and attribute values.
fn escape(text: &str) -> String {
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
