use crate::helpers::{DEADLINE, Options, spawn_app_with, up};

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
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while app.get("/-/ready").await.status() != 200 {
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_landing_page_lists_assets_worst_first_with_names_escaped() {
    use reputation_exporter::vocabulary::Kind;
    let app = spawn_app_with(Options {
        start_polling: false,
        ..Options::default()
    })
    .await;
    app.upstream.set_items(
        Kind::Domain,
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

#[tokio::test]
async fn connections_beyond_the_bound_wait_until_one_closes() {
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

    let waiting =
        tokio::time::timeout(std::time::Duration::from_millis(300), app.get("/-/healthy")).await;
    assert!(
        waiting.is_err(),
        "a second connection was served beside the first"
    );

    drop(open);
    let served = tokio::time::timeout(DEADLINE, app.get("/-/healthy"))
        .await
        .expect("served once the first connection closed");
    assert_eq!(served.status(), 200);
}
