use reputation_simulate::List;
use serde_json::json;

use crate::helpers::{Options, sample, spawn_app, spawn_app_with, up};

fn ip(name: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut item = json!({
        "ip": name, "hosts": [], "senderscore": 80, "senderscore_prev": 82,
        "senderscore_change": {"last_check": -2}, "blacklisted": 0,
        "blacklisted_change": {"last_check": 0}, "snds_blocked": null,
        "snds_blocked_change": {"last_check": null}, "snds_reputation": null,
        "snds_reputation_change": {"last_check": null}
    });
    item.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    item
}

#[tokio::test]
async fn metrics_show_the_values_the_api_sent() {
    let app = spawn_app_with(Options {
        start_polling: false,
        ..Options::default()
    })
    .await;
    app.upstream.set_items(
        List::Ip,
        vec![
            ip(
                "192.0.2.10",
                json!({"hosts": ["mx1.example.com", "mx2.example.com"], "senderscore": 87,
                       "senderscore_prev": 90, "senderscore_change": {"last_check": -3},
                       "blacklisted": 2, "blacklisted_change": {"last_check": 1},
                       "snds_blocked": "Yes", "snds_reputation": "RED"}),
            ),
            ip(
                "192.0.2.11",
                json!({"senderscore": -1, "senderscore_prev": -1, "snds_blocked": false,
                       "snds_reputation": 2, "snds_blocked_change": {"last_check": 1}}),
            ),
            ip(
                "192.0.2.12",
                json!({"snds_blocked": "perhaps", "owner": "unknown field"}),
            ),
        ],
    );
    app.upstream.set_items(
        List::Domain,
        vec![
            json!({"domain": "example.org", "ips": ["192.0.2.10", "192.0.2.11"],
                    "senderscore": null, "senderscore_prev": null,
                    "senderscore_change": {"last_check": null}, "blacklisted": 1,
                    "blacklisted_change": {"last_check": 1}, "snds_blocked": null,
                    "snds_blocked_change": {"last_check": null}, "snds_reputation": "green",
                    "snds_reputation_change": {"last_check": null}}),
        ],
    );
    let mut app = app;
    app.start_polling();
    let body = app.metrics_when("the first poll", up).await;

    let ip10 = r#"{kind="ip",asset="192.0.2.10"}"#;
    let ip11 = r#"{kind="ip",asset="192.0.2.11"}"#;
    let domain = r#"{kind="domain",asset="example.org"}"#;
    let value = |name: &str, labels: &str| sample(&body, &format!("{name}{labels}"));

    assert_eq!(value("reputation_asset_info", ip10), Some(1.0));
    assert_eq!(value("reputation_asset_info", domain), Some(1.0));
    assert_eq!(value("reputation_senderscore", ip10), Some(87.0));
    assert_eq!(value("reputation_senderscore_previous", ip10), Some(90.0));
    assert_eq!(value("reputation_senderscore_change", ip10), Some(-3.0));
    assert_eq!(value("reputation_blacklistings", ip10), Some(2.0));
    assert_eq!(value("reputation_blacklistings_change", ip10), Some(1.0));
    assert_eq!(value("reputation_snds_blocked", ip10), Some(1.0));
    assert_eq!(
        value(
            "reputation_snds_reputation",
            r#"{kind="ip",asset="192.0.2.10",reputation_snds_reputation="red"}"#
        ),
        Some(1.0)
    );
    assert_eq!(
        value(
            "reputation_snds_reputation",
            r#"{kind="ip",asset="192.0.2.10",reputation_snds_reputation="green"}"#
        ),
        Some(0.0)
    );
    assert_eq!(
        value(
            "reputation_asset_hostname_info",
            r#"{kind="ip",asset="192.0.2.10",hostname="mx2.example.com"}"#
        ),
        Some(1.0)
    );

    // -1 means no score: no sample at all, not a zero.
    assert_eq!(value("reputation_senderscore", ip11), None);
    assert_eq!(value("reputation_senderscore_previous", ip11), None);
    assert_eq!(value("reputation_snds_blocked", ip11), Some(0.0));
    assert_eq!(value("reputation_snds_blocked_change", ip11), Some(1.0));
    // A number in snds_reputation is not taken for a colour.
    assert_eq!(value("reputation_snds_reputation_value", ip11), Some(2.0));
    assert!(!body.contains(r#"reputation_snds_reputation{kind="ip",asset="192.0.2.11""#));

    assert_eq!(value("reputation_senderscore", domain), None);
    assert_eq!(value("reputation_blacklistings", domain), Some(1.0));
    assert_eq!(value("reputation_domain_ips", domain), Some(2.0));
    assert_eq!(
        value(
            "reputation_snds_reputation",
            r#"{kind="domain",asset="example.org",reputation_snds_reputation="green"}"#
        ),
        Some(1.0)
    );

    // An unmappable string is counted and gives no sample; the rest of the item is kept.
    assert_eq!(
        value(
            "reputation_snds_blocked",
            r#"{kind="ip",asset="192.0.2.12"}"#
        ),
        None
    );
    assert_eq!(
        value(
            "reputation_senderscore",
            r#"{kind="ip",asset="192.0.2.12"}"#
        ),
        Some(80.0)
    );
    assert!(
        value(
            "reputation_unrecognized_values_total",
            r#"{field="snds_blocked"}"#
        ) >= Some(1.0)
    );

    assert_eq!(value("reputation_assets", r#"{kind="ip"}"#), Some(3.0));
    assert_eq!(value("reputation_assets", r#"{kind="domain"}"#), Some(1.0));
    assert_eq!(
        value("reputation_api_up", r#"{endpoint="ip-list"}"#),
        Some(1.0)
    );
    assert_eq!(value("reputation_system_ok", ""), Some(1.0));
    assert_eq!(value("reputation_api_auth_ok", ""), Some(1.0));
    assert_eq!(
        value(
            "reputation_account_info",
            r#"{user_id="4242",project_id="7"}"#
        ),
        Some(1.0)
    );
    assert!(
        value(
            "reputation_api_requests_total",
            r#"{endpoint="ip-list",code="200"}"#
        ) >= Some(1.0)
    );
    assert!(body.contains("reputation_exporter_build_info{version=\""));
    // Personal data from /api/v1/user is never exported.
    assert!(!body.contains("demo@example.com") && !body.contains("Demo User"));
}

#[tokio::test]
async fn an_asset_removed_upstream_disappears_from_metrics() {
    let app = spawn_app().await;
    let gone = "192.0.2.2";
    let series = format!(r#"reputation_asset_info{{kind="ip",asset="{gone}"}}"#);
    app.metrics_when("the asset to be served", |b| b.contains(&series))
        .await;

    app.upstream.remove_asset(gone);

    let body = app
        .metrics_when("the asset to vanish", |b| !b.contains(&series))
        .await;
    assert!(!body.contains(&format!("asset=\"{gone}\"")));
    assert_eq!(sample(&body, r#"reputation_assets{kind="ip"}"#), Some(2.0));
    assert_eq!(
        sample(
            &body,
            r#"reputation_asset_info{kind="ip",asset="192.0.2.1"}"#
        ),
        Some(1.0)
    );
}

#[tokio::test]
async fn a_duplicated_asset_gives_one_series() {
    let upstream = reputation_simulate::SimulatedApi::new(0, 0);
    upstream.set_items(
        List::Ip,
        vec![
            ip("192.0.2.1", json!({})),
            ip("192.0.2.1", json!({"senderscore": 5})),
        ],
    );
    let app = spawn_app_with(Options {
        upstream,
        ..Options::default()
    })
    .await;
    let body = app.metrics_when("the first poll", up).await;
    let lines = body
        .lines()
        .filter(|l| l.starts_with(r#"reputation_senderscore{kind="ip",asset="192.0.2.1"}"#))
        .collect::<Vec<_>>();
    assert_eq!(
        lines,
        [r#"reputation_senderscore{kind="ip",asset="192.0.2.1"} 80"#],
        "{body}"
    );
}

#[tokio::test]
async fn a_failing_list_keeps_its_last_values_while_the_other_list_refreshes() {
    let app = spawn_app().await;
    app.metrics_when("the first poll", up).await;
    app.upstream.set_outage("/api/v1/ip-list", Some(500));
    app.upstream.remove_asset("mail1.example.net");
    let body = app
        .metrics_when("the domain removal and the ip-list failure", |b| {
            !b.contains("mail1.example.net") && sample(b, "reputation_up") == Some(0.0)
        })
        .await;
    assert_eq!(sample(&body, r#"reputation_assets{kind="ip"}"#), Some(3.0));
    assert_eq!(
        sample(&body, r#"reputation_api_up{endpoint="ip-list"}"#),
        Some(0.0)
    );
    assert_eq!(
        sample(&body, r#"reputation_api_up{endpoint="domain-list"}"#),
        Some(1.0)
    );
}

#[tokio::test]
async fn values_older_than_max_age_are_dropped() {
    let app = spawn_app_with(Options {
        max_age: "1s",
        ..Options::default()
    })
    .await;
    app.metrics_when("the first poll", up).await;
    for path in ["/api/v1/ip-list", "/api/v1/domain-list"] {
        app.upstream.set_outage(path, Some(503));
    }
    let body = app
        .metrics_when("the assets to expire", |b| {
            !b.contains("reputation_asset_info{")
        })
        .await;
    assert_eq!(sample(&body, r#"reputation_assets{kind="ip"}"#), Some(0.0));
    assert_eq!(sample(&body, "reputation_up"), Some(0.0));
    assert!(
        sample(
            &body,
            r#"reputation_last_success_timestamp_seconds{endpoint="ip-list"}"#
        )
        .is_some()
    );
}
