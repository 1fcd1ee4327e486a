//! Several accounts in one exporter: `[accounts.NAME]` and `/probe?target=NAME`.

use reputation_simulate::List;
use reputation_simulate::SimulatedApi;
use serde_json::json;

use crate::helpers::{PROMETHEUS_ACCEPT, TestApp, eventually, sample, spawn_accounts, up};

const EU_TOKEN: &str = "eu-secret-token";
const US_TOKEN: &str = "us-secret-token";

/// `eu` with 192.0.2.1 and 192.0.2.2, `us` with 198.51.100.7, each with its own token.
fn upstreams() -> (SimulatedApi, SimulatedApi) {
    let eu = SimulatedApi::new(2, 0);
    eu.set_token(EU_TOKEN);
    let us = SimulatedApi::new(0, 0);
    us.set_token(US_TOKEN);
    us.set_items(
        List::Ip,
        vec![json!({"ip": "198.51.100.7", "senderscore": 91, "blacklisted": 0})],
    );
    (eu, us)
}

async fn two_accounts(interval: &'static str) -> (TestApp, SimulatedApi, SimulatedApi) {
    let (eu, us) = upstreams();
    let app = spawn_accounts(
        vec![("eu", eu.clone(), EU_TOKEN), ("us", us.clone(), US_TOKEN)],
        interval,
        |s| s.backoff.max_elapsed = crate::helpers::duration("300ms"),
    )
    .await;
    (app, eu, us)
}

async fn probe(app: &TestApp, target: &str) -> String {
    app.get(&format!("/probe?target={target}"))
        .await
        .text()
        .await
        .unwrap()
}

async fn probe_when(app: &TestApp, target: &str, condition: impl Fn(&str) -> bool) -> String {
    let path = format!("/probe?target={target}");
    app.when(&format!("{path} to hold"), &path, condition).await
}

#[tokio::test]
async fn each_probe_shows_only_its_accounts_assets_with_the_single_account_names() {
    let (app, _, _) = two_accounts("200ms").await;
    let eu = probe_when(&app, "eu", up).await;
    let us = probe_when(&app, "us", up).await;
    assert!(eu.contains(r#"reputation_asset_info{kind="ip",asset="192.0.2.1"} 1"#));
    assert!(!eu.contains("198.51.100.7"));
    assert!(us.contains(r#"reputation_senderscore{kind="ip",asset="198.51.100.7"} 91"#));
    assert!(!us.contains("192.0.2.1"));
    assert_eq!(sample(&eu, r#"reputation_assets{kind="ip"}"#), Some(2.0));
    assert_eq!(sample(&us, r#"reputation_assets{kind="ip"}"#), Some(1.0));
    assert!(!eu.contains("process_") && !eu.contains("reputation_exporter_build_info"));

    // The same negotiation as /metrics: OpenMetrics when asked, gzip when allowed.
    let response = app
        .get_with(
            "/probe?target=us",
            &[("accept", PROMETHEUS_ACCEPT), ("accept-encoding", "gzip")],
        )
        .await;
    assert_eq!(
        response.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert_eq!(response.headers()["content-encoding"], "gzip");

    // /metrics serves the exporter's own build and process metrics, no account's.
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("reputation_exporter_build_info{"),
        "{metrics}"
    );
    assert!(!metrics.contains("reputation_asset_info"));
    assert!(!metrics.contains("reputation_up "));

    let page = app.get("/").await.text().await.unwrap();
    assert!(
        page.contains(r#"<a href="/probe?target=eu">/probe?target=eu</a>"#),
        "{page}"
    );
    assert!(page.contains(r#"<a href="/probe?target=us">/probe?target=us</a>"#));
    // The scrape configuration it suggests: each account a group with its `account` label,
    // which becomes the `target` parameter.
    let group = |name: &str| {
        format!(
            "      - targets: [\"{}\"]\n        labels:\n          account: {name}\n",
            app.address
        )
    };
    assert!(
        page.contains(&group("eu")) && page.contains(&group("us")),
        "{page}"
    );
    assert!(
        page.contains(
            "    relabel_configs:\n      - source_labels: [account]\n        target_label: \
             __param_target</pre>"
        ),
        "{page}"
    );
}

#[tokio::test]
async fn a_missing_or_unknown_target_is_a_400_and_asks_nothing_upstream() {
    let (app, eu, us) = two_accounts("1h").await;
    probe_when(&app, "eu", up).await;
    probe_when(&app, "us", up).await;
    let before = (
        eu.requests("/api/v1/ip-list"),
        us.requests("/api/v1/ip-list"),
    );
    let missing = app.get("/probe").await;
    assert_eq!(missing.status(), 400);
    assert_eq!(
        missing.text().await.unwrap(),
        "missing target: /probe?target=NAME, NAME one of eu, us\n"
    );
    let unknown = app.get("/probe?target=asia").await;
    assert_eq!(unknown.status(), 400);
    assert_eq!(
        unknown.text().await.unwrap(),
        "unknown target `asia`: one of eu, us\n"
    );
    assert_eq!(
        (
            eu.requests("/api/v1/ip-list"),
            us.requests("/api/v1/ip-list")
        ),
        before
    );
}

#[tokio::test]
async fn a_rejected_token_on_one_account_leaves_the_other_up_and_no_token_crosses() {
    let (app, eu, us) = two_accounts("200ms").await;
    probe_when(&app, "us", up).await;
    us.set_token("rotated-elsewhere");
    let us_body = probe_when(&app, "us", |b| {
        sample(b, "reputation_api_auth_ok") == Some(0.0)
            && sample(
                b,
                r#"reputation_api_requests_total{endpoint="ip-list",code="401"}"#,
            ) >= Some(3.0)
    })
    .await;
    assert_eq!(sample(&us_body, "reputation_up"), Some(0.0));
    let eu_body = probe_when(&app, "eu", |b| {
        sample(
            b,
            r#"reputation_api_requests_total{endpoint="ip-list",code="200"}"#,
        ) >= Some(3.0)
    })
    .await;
    assert_eq!(sample(&eu_body, "reputation_api_auth_ok"), Some(1.0));
    assert_eq!(sample(&eu_body, "reputation_up"), Some(1.0));
    assert_eq!(eu.authorizations(), [format!("Bearer {EU_TOKEN}")]);
    assert_eq!(us.authorizations(), [format!("Bearer {US_TOKEN}")]);
}

#[tokio::test]
async fn ready_waits_for_every_accounts_first_poll_even_one_that_fails() {
    let (eu, us) = upstreams();
    us.hold();
    for path in [
        "/api/v1/ip-list",
        "/api/v1/domain-list",
        "/api/v1/system-check",
    ] {
        us.set_outage(path, Some(503));
    }
    let app = spawn_accounts(
        vec![("eu", eu, EU_TOKEN), ("us", us.clone(), US_TOKEN)],
        "1h",
        |s| {
            s.backoff.initial_delay = crate::helpers::duration("50ms");
            s.backoff.max_elapsed = crate::helpers::duration("300ms");
        },
    )
    .await;
    probe_when(&app, "eu", up).await;
    assert_eq!(
        app.get("/-/ready").await.status(),
        503,
        "us has not answered"
    );
    us.release();
    eventually("readiness", || async {
        app.get("/-/ready").await.status() == 200
    })
    .await;
    let us_body = probe(&app, "us").await;
    assert_eq!(sample(&us_body, "reputation_up"), Some(0.0));
}

#[tokio::test(flavor = "multi_thread")]
async fn once_with_a_target_prints_that_account_and_without_one_says_what_to_give() {
    let (eu, us) = upstreams();
    let (eu_url, us_url) = (eu.spawn().await.unwrap(), us.spawn().await.unwrap());
    let run = move |target: Option<&'static str>| {
        let (eu_url, us_url) = (eu_url.clone(), us_url.clone());
        tokio::task::spawn_blocking(move || {
            let mut command = crate::helpers::exporter();
            command
                .arg("--once")
                .env("REPUTATION_EXPORTER_ACCOUNTS__EU__BASE_URL", eu_url)
                .env("REPUTATION_EXPORTER_ACCOUNTS__EU__TOKEN", EU_TOKEN)
                .env("REPUTATION_EXPORTER_ACCOUNTS__US__BASE_URL", us_url)
                .env("REPUTATION_EXPORTER_ACCOUNTS__US__TOKEN", US_TOKEN);
            if let Some(target) = target {
                command.args(["--target", target]);
            }
            command.output().unwrap()
        })
    };
    let stdout = crate::helpers::succeeded(run(Some("us")).await.unwrap());
    assert!(stdout.contains(r#"reputation_asset_info{kind="ip",asset="198.51.100.7"} 1"#));
    assert!(!stdout.contains("192.0.2.1"));
    assert_eq!(
        eu.requests("/api/v1/ip-list"),
        0,
        "the other account was not asked"
    );

    let neither = run(None).await.unwrap();
    assert_eq!(neither.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&neither.stderr);
    assert!(
        stderr.contains("several accounts are configured: give --target NAME, one of eu, us"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_landing_page_says_why_an_account_has_no_data_and_links_each_accounts_assets() {
    let (eu, us) = upstreams();
    for list in ["/api/v1/ip-list", "/api/v1/domain-list"] {
        us.set_outage(list, Some(503));
    }
    let app = spawn_accounts(
        vec![("eu", eu, EU_TOKEN), ("us", us, US_TOKEN)],
        "5m",
        |s| {
            s.backoff.initial_delay = crate::helpers::duration("10ms");
            s.backoff.max_delay = crate::helpers::duration("20ms");
            s.backoff.max_elapsed = crate::helpers::duration("100ms");
        },
    )
    .await;
    // Both first polls have ended once the exporter is ready.
    eventually("readiness", || async {
        app.get("/-/ready").await.status() == 200
    })
    .await;
    let page = app.get("/").await.text().await.unwrap();
    let row = |name: &str| {
        let start = page
            .find(&format!("<tr><td><a href=\"/?account={name}\">{name}</a>"))
            .unwrap_or_else(|| panic!("no row for {name}: {page}"));
        page[start..start + page[start..].find("</tr>").unwrap()].to_owned()
    };
    let us_row = row("us");
    assert!(
        us_row.contains(
            "<td colspan=\"4\" class=\"warn\">no data yet: ip-list: HTTP 503; domain-list: HTTP \
             503</td>"
        ),
        "{us_row}"
    );
    assert!(
        !us_row.contains("num good"),
        "no green zeros for an account without data"
    );
    let eu_row = row("eu");
    assert!(eu_row.contains("<td class=\"num\">2</td>"), "{eu_row}");
    assert!(page.contains("The lists are polled every 5m."), "{page}");
    // The next poll is due in a little under 5 minutes for both.
    assert_eq!(page.matches("<td class=\"num\">4m ").count(), 2, "{page}");
    assert!(page.contains("class=\"legend\">Colours: Sender Score"));

    let eu_page = app.get("/?account=eu").await.text().await.unwrap();
    assert!(eu_page.contains("<h2>Account eu</h2>"), "{eu_page}");
    assert!(eu_page.contains("<td>192.0.2.1</td>") && eu_page.contains("<td>192.0.2.2</td>"));
    assert!(!eu_page.contains("198.51.100.7"), "only its own assets");
    assert!(eu_page.contains("the next poll is due in 4m "), "{eu_page}");
    let us_page = app.get("/?account=us").await.text().await.unwrap();
    assert!(
        us_page.contains("no data yet: ip-list: HTTP 503"),
        "{us_page}"
    );
    assert!(!us_page.contains("Assets, worst first"));
    // The same answer as /probe?target=asia: 400, naming the accounts there are.
    let unknown = app.get("/?account=asia").await;
    assert_eq!(unknown.status(), 400);
    let page = unknown.text().await.unwrap();
    assert!(
        page.contains("no account named <code>asia</code> (unknown target `asia`: one of eu, us)"),
        "{page}"
    );
}
