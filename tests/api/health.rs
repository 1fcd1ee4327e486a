use crate::helpers::{DEADLINE, Options, eventually, spawn_app_with, up};

#[tokio::test]
async fn healthy_answers_200_at_once() {
    let app = spawn_app_with(Options {
        start_polling: false,
        ..Options::default()
    })
    .await;
    let response = app.get("/-/healthy").await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn ready_is_503_before_the_first_poll_and_200_after() {
    let mut app = spawn_app_with(Options {
        start_polling: false,
        ..Options::default()
    })
    .await;
    assert_eq!(app.get("/-/ready").await.status(), 503);
    let body = app.metrics().await;
    assert!(body.contains("reputation_up 0\n"), "{body}");
    assert!(body.contains("reputation_assets{kind=\"ip\"} 0\n"));

    app.start_polling();
    eventually("ready after the first poll", || async {
        app.get("/-/ready").await.status() == 200
    })
    .await;
}

#[tokio::test]
async fn the_landing_page_lists_assets_worst_first_with_names_escaped() {
    use reputation_simulate::List;
    let app = spawn_app_with(Options {
        start_polling: false,
        ..Options::default()
    })
    .await;
    app.upstream.set_items(
        List::Domain,
        vec![
            serde_json::json!({"domain": "<b>bad</b>.example", "senderscore": 20, "blacklisted": 3}),
            serde_json::json!({"domain": "good.example", "senderscore": 99, "blacklisted": 0}),
        ],
    );
    let mut app = app;
    app.start_polling();
    app.metrics_when("the first poll", up).await;
    let page = app.get("/").await.text().await.unwrap();
    assert!(page.contains("href=\"/metrics\""));
    assert!(page.contains("&lt;b&gt;bad&lt;/b&gt;.example"));
    assert!(!page.contains("<b>bad</b>"));
    let bad = page.find("&lt;b&gt;bad").unwrap();
    let good = page.find("good.example").unwrap();
    assert!(bad < good, "worst first");
}

/// That the connection waits while the first is open is checked without a clock in
/// `server::listener`; here, that the server serves it once the first closes.
#[tokio::test]
async fn a_connection_beyond_the_bound_is_served_once_the_first_closes() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let app = spawn_app_with(Options {
        start_polling: false,
        max_connections: 1,
        ..Options::default()
    })
    .await;
    // One keep-alive connection, served once, then left open.
    let mut open = tokio::net::TcpStream::connect(app.address).await.unwrap();
    open.write_all(b"GET /-/healthy HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    while !String::from_utf8_lossy(&answer).contains("Healthy.") {
        let mut chunk = [0; 512];
        let n = open.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the first connection was closed");
        answer.extend_from_slice(&chunk[..n]);
    }

    // The second request is on its way (polled first) when the first connection closes.
    let close = async {
        tokio::task::yield_now().await;
        drop(open);
    };
    let (served, ()) = tokio::time::timeout(DEADLINE, async {
        tokio::join!(app.get("/-/healthy"), close)
    })
    .await
    .expect("served once the first connection closed");
    assert_eq!(served.status(), 200);
}

#[tokio::test]
async fn the_landing_page_summarises_the_fleet_colours_trouble_and_says_why_an_endpoint_failed() {
    use reputation_simulate::List;
    use serde_json::json;
    let upstream = reputation_simulate::SimulatedApi::new(0, 0);
    upstream.set_items(
        List::Ip,
        vec![
            json!({"ip": "192.0.2.1", "senderscore": 50, "blacklisted": 2, "snds_reputation": "red"}),
            json!({"ip": "192.0.2.2", "senderscore": 95, "blacklisted": 0, "snds_reputation": "green"}),
        ],
    );
    upstream.set_report(
        "192.0.2.1",
        json!({"blacklist_history": [
            {"date": "1st Nov 2026 09:00am", "status": "Listed", "blacklist": "Spam<haus>"}
        ]}),
    );
    upstream.set_outage("/api/v1/domain-list", Some(503));
    let app = spawn_app_with(Options {
        upstream,
        configure: Box::new(|s| {
            s.asset_reports.enabled = true;
            s.asset_reports.interval = crate::helpers::duration("300ms");
            s.backoff.max_elapsed = crate::helpers::duration("200ms");
            s.backoff.initial_delay = crate::helpers::duration("50ms");
        }),
        ..Options::default()
    })
    .await;
    app.metrics_when("the listing and the failed domain list", |b| {
        b.contains(
            r#"reputation_blacklist_listed{kind="ip",asset="192.0.2.1",blacklist="Spam<haus>"} 1"#,
        ) && crate::helpers::sample(
            b,
            r#"reputation_api_requests_total{endpoint="domain-list",code="503"}"#,
        )
        .is_some()
            && crate::helpers::sample(b, "reputation_poll_duration_seconds").is_some()
    })
    .await;
    let page = app.get("/").await.text().await.unwrap();
    assert!(
        page.contains(
            "2 assets (2 IP addresses, 0 domains): <b>1</b> listed on a blacklist, <b>1</b> with \
             SNDS red, <b>1</b> with a Sender Score below 70."
        ),
        "{page}"
    );
    assert!(page.contains(r#"<td class="num bad">50</td><td class="num bad">2</td><td class="bad">red</td><td>Spam&lt;haus&gt;</td>"#), "{page}");
    assert!(page.contains(r#"<td class="num good">95</td><td class="num good">0</td><td class="good">green</td><td></td>"#), "{page}");
    assert!(
        page.contains(r#"<td>domain-list</td><td class="bad">failed: HTTP 503</td>"#),
        "{page}"
    );
    assert!(page.contains(r#"<a href="/-/ready">/-/ready</a>"#));
    assert!(page.contains(r#"<a href="/-/healthy">/-/healthy</a>"#));
    assert!(!page.contains("<script"));
    assert!(!page.contains("Demo mode"), "not a demo");
    // It stays current by itself, and says what to do next with the address the browser used.
    assert!(
        page.contains(r#"<meta http-equiv="refresh" content="30">"#),
        "{page}"
    );
    let scrape = format!(
        "<pre>scrape_configs:\n  - job_name: reputation\n    metrics_path: /metrics\n    \
         static_configs:\n      - targets: [\"{}\"]\n        labels:\n          account: main</pre>",
        app.address
    );
    assert!(page.contains(&scrape), "{page}");
    assert!(page.contains("This page refreshes every 30s."), "{page}");
}
