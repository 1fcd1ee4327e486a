use std::io::Read as _;

use reputation_simulate::List;
use serde_json::{Value, json};

use crate::helpers::{Options, PROMETHEUS_ACCEPT, reference_parse, spawn_app_with, up};

/// A label value with every character the formats escape, and some that they must not.
const NASTY: &str = "mx \"quoted\" back\\slash\nnew line ✉ bücher.example";

async fn app_with_nasty_labels() -> crate::helpers::TestApp {
    let upstream = reputation_simulate::SimulatedApi::new(4, 3);
    let mut ips = upstream.items(List::Ip);
    ips[0]["hosts"] = json!([NASTY]);
    ips[1]["ip"] = json!("2001:db8::1");
    upstream.set_items(List::Ip, ips);
    let mut domains = upstream.items(List::Domain);
    domains[0]["domain"] = json!("ünïcödé.example");
    upstream.set_items(List::Domain, domains);
    let app = spawn_app_with(Options {
        upstream,
        ..Options::default()
    })
    .await;
    app.metrics_when("the first poll", up).await;
    app
}

fn family<'a>(families: &'a Value, name: &str) -> &'a Value {
    families
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("family {name} missing"))
}

/// The `hostname` label values of the host name family, named `family_name` in this format.
fn hostnames(families: &Value, family_name: &str) -> Vec<String> {
    family(families, family_name)["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["labels"]["hostname"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn openmetrics_output_is_accepted_by_the_strict_reference_parser() {
    let app = app_with_nasty_labels().await;
    let response = app
        .get_with("/metrics", &[("accept", PROMETHEUS_ACCEPT)])
        .await;
    assert_eq!(
        response.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let body = response.text().await.unwrap();
    assert!(body.ends_with("# EOF\n"));

    let families = reference_parse(&body, "openmetrics");
    assert!(hostnames(&families, "reputation_asset_hostname").contains(&NASTY.to_owned()));
    assert_eq!(family(&families, "reputation_asset")["type"], "info");
    assert_eq!(
        family(&families, "reputation_snds_reputation")["type"],
        "stateset"
    );
    assert_eq!(
        family(&families, "reputation_api_requests")["type"],
        "counter"
    );
    let assets: Vec<&str> = family(&families, "reputation_asset")["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["labels"]["asset"].as_str().unwrap())
        .collect();
    assert!(assets.contains(&"ünïcödé.example"));
    assert!(assets.contains(&"2001:db8::1"));
    let score = family(&families, "reputation_senderscore")["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["labels"]["asset"] == "192.0.2.1")
        .unwrap()["value"]
        .as_f64()
        .unwrap();
    let served = app.upstream.items(List::Ip)[0]["senderscore"]
        .as_f64()
        .unwrap();
    assert_eq!(score, served);
}

#[tokio::test]
async fn text_output_is_read_back_exactly_by_the_0_0_4_reference_parser() {
    let app = app_with_nasty_labels().await;
    let response = app.get("/metrics").await;
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let body = response.text().await.unwrap();
    assert!(!body.contains("# EOF"));
    assert!(body.contains("# TYPE reputation_api_requests_total counter\n"));
    assert!(body.contains("# TYPE reputation_asset_info gauge\n"));
    assert!(body.contains("# TYPE reputation_snds_reputation gauge\n"));

    let families = reference_parse(&body, "text");
    assert!(hostnames(&families, "reputation_asset_hostname_info").contains(&NASTY.to_owned()));
}

#[tokio::test]
async fn gzip_is_served_when_the_client_accepts_it() {
    let app = app_with_nasty_labels().await;
    let response = app
        .get_with("/metrics", &[("accept-encoding", "gzip")])
        .await;
    assert_eq!(response.headers()["content-encoding"], "gzip");
    let compressed = response.bytes().await.unwrap();
    let mut body = String::new();
    flate2::read::GzDecoder::new(&compressed[..])
        .read_to_string(&mut body)
        .unwrap();
    assert!(body.contains(r#"reputation_asset_info{kind="ip",asset="192.0.2.1"} 1"#));
    assert!(body.contains("reputation_up 1\n"));
}
