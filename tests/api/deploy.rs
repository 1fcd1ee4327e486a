//! The shipped dashboard, rules and docs/metrics.md name the metrics the exporter really emits.

use std::collections::BTreeSet;
use std::path::Path;

use reputation_exporter::events;
use reputation_exporter::exposition::assets::{self, AssetFamily};
use reputation_simulate::SimulatedApi;

use crate::helpers::{Options, spawn_app_with};

/// A full exposition (text 0.0.4): lists, reports, exporter and process metrics.
async fn full_exposition() -> String {
    let app = spawn_app_with(Options {
        upstream: SimulatedApi::new(6, 3),
        configure: Box::new(|s| {
            s.asset_reports.enabled = true;
            s.asset_reports.interval = crate::helpers::duration("300ms");
        }),
        ..Options::default()
    })
    .await;
    app.metrics_when("every family to have samples", |b| {
        [
            "reputation_asset_tag_info{",
            "reputation_last_success_timestamp_seconds{endpoint=\"asset\"",
        ]
        .iter()
        .all(|s| b.contains(s))
    })
    .await
}

/// The family names of a full exposition, as its `# TYPE` lines give them.
async fn emitted_families() -> BTreeSet<String> {
    full_exposition()
        .await
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect()
}

/// Every metric name in a full exposition: sample names and family names.
async fn emitted_names() -> BTreeSet<String> {
    let body = full_exposition().await;
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap().to_owned())
        .chain(
            // Families declared without a sample in this run (no retries happened, ...).
            body.lines()
                .filter_map(|l| l.strip_prefix("# TYPE "))
                .map(|l| l.split(' ').next().unwrap().to_owned()),
        )
        .collect()
}

/// The `reputation_*` and `process_*` names a text (PromQL, YAML, JSON) refers to, leaving out
/// recording rule names (`level:metric:operations`), which Prometheus itself makes.
fn referenced_names(text: &str) -> BTreeSet<String> {
    let recorded = regex::Regex::new(r"\b[a-z_]+:[a-z_]+:[a-z_]+\b").unwrap();
    let text = recorded.replace_all(text, "");
    let name = regex::Regex::new(r"\b(?:reputation|process)_[a-z_]+\b").unwrap();
    name.find_iter(&text)
        .map(|m| m.as_str().to_owned())
        .collect()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The first column of each row of the table under `heading` in a Markdown page.
fn markdown_table(page: &str, heading: &str) -> Vec<String> {
    page.lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|row| {
            row.split('|')
                .nth(1)
                .unwrap()
                .trim()
                .trim_matches('`')
                .to_owned()
        })
        .collect()
}

/// The event families ([`reputation_exporter::events`]), served beside the per-asset ones, each
/// with its labels as the events table of docs/metrics.md writes them.
const EVENT_FAMILIES: [(&str, &str); 4] = [
    (events::LISTING_EVENT, "kind,asset,blacklist,check"),
    (events::UNNAMED_EVENT, "kind,asset"),
    (events::DROP_EVENT, "kind,asset,from,to"),
    (events::BLOCK_EVENT, "kind,asset"),
];

/// A family as the report table of docs/metrics.md writes it: `name{kind,asset,label}`.
fn with_labels(family: &AssetFamily) -> String {
    let labels: Vec<&str> = ["kind", "asset"].into_iter().chain(family.label).collect();
    format!("{}{{{}}}", family.family.name, labels.join(","))
}

#[tokio::test]
async fn the_documented_metric_tables_are_the_families_written() {
    let page = read("docs/metrics.md");
    let list = markdown_table(&page, "## Per asset");
    let expected: Vec<&str> = assets::list_families().map(|f| f.family.name).collect();
    assert_eq!(
        list, expected,
        "the per-asset table of docs/metrics.md, in exposition order"
    );
    // The list table leaves out kind and asset (every row has them); a family's own label is
    // named in its row.
    for family in assets::list_families() {
        if let Some(label) = family.label {
            let row = page
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", family.family.name)))
                .unwrap();
            assert!(
                row.contains(&format!("`{label}`")),
                "{row} does not name `{label}`"
            );
        }
    }
    let reports = markdown_table(
        &page,
        "## Per asset, from asset reports (the listed assets by default; every asset with `asset_reports.enabled`)",
    );
    let expected: Vec<String> = assets::report_families().map(with_labels).collect();
    assert_eq!(
        reports, expected,
        "the report table of docs/metrics.md, with labels"
    );

    // The exporter's own families: every one in the table, nothing else (the process_*
    // families have one row for all).
    let own: BTreeSet<String> = markdown_table(&page, "## The exporter and the API")
        .iter()
        .map(|row| row.split('{').next().unwrap().to_owned())
        .filter(|name| name.starts_with("reputation_"))
        .collect();
    let per_asset: BTreeSet<&str> = assets::FAMILIES.iter().map(|f| f.family.name).collect();
    let emitted: BTreeSet<String> = emitted_families().await;
    let own_emitted: BTreeSet<String> = (emitted.iter())
        .filter(|name| name.starts_with("reputation_") && !per_asset.contains(name.as_str()))
        .filter(|name| !EVENT_FAMILIES.iter().any(|(event, _)| event == name))
        .cloned()
        .collect();
    assert_eq!(
        own, own_emitted,
        "the table of the exporter's own metrics in docs/metrics.md"
    );

    // The events: every family in its table, with its labels, and served.
    let events = markdown_table(&page, "## Events");
    let expected: Vec<String> = EVENT_FAMILIES
        .iter()
        .map(|(name, labels)| format!("{name}{{{labels}}}"))
        .collect();
    assert_eq!(events, expected, "the events table of docs/metrics.md");
    for (name, _) in EVENT_FAMILIES {
        assert!(emitted.contains(name), "{name} is not served");
    }
}

#[tokio::test]
async fn the_dashboard_and_the_rules_use_only_emitted_metric_names() {
    let emitted = emitted_names().await;
    assert!(emitted.contains("reputation_blacklist_listed"));
    assert!(emitted.contains("process_resident_memory_bytes"));

    let dashboard: serde_json::Value =
        serde_json::from_str(&read("deploy/grafana/dashboard.json")).unwrap();
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            exprs.push(target["expr"].as_str().unwrap().to_owned());
        }
    }
    for variable in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(query) = variable["query"]["query"].as_str() {
            exprs.push(query.to_owned());
        }
    }
    for annotation in dashboard["annotations"]["list"].as_array().unwrap() {
        exprs.push(annotation["expr"].as_str().unwrap().to_owned());
    }
    assert!(exprs.len() >= 20, "the dashboard has its queries");

    let sources = [
        ("deploy/grafana/dashboard.json", exprs.join("\n")),
        (
            "deploy/prometheus/alerts.yml",
            read("deploy/prometheus/alerts.yml"),
        ),
        (
            "deploy/prometheus/rules.yml",
            read("deploy/prometheus/rules.yml"),
        ),
    ];
    for (file, text) in sources {
        let unknown: Vec<_> = referenced_names(&text)
            .into_iter()
            .filter(|n| !emitted.contains(n))
            .collect();
        assert!(
            unknown.is_empty(),
            "{file} names metrics the exporter does not emit: {unknown:?}"
        );
    }
}

#[test]
fn every_recording_rule_the_dashboard_and_the_alerts_read_is_recorded_by_the_shipped_rules() {
    let rules = read("deploy/prometheus/rules.yml");
    let recorded: BTreeSet<String> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("record: "))
        .map(|name| name.trim_matches('"').to_owned())
        .collect();
    assert!(recorded.len() >= 8, "{recorded:?}");
    let name = regex::Regex::new(r"\b[a-z_]+:reputation_[a-z_]+:[a-z0-9_]+\b").unwrap();
    for file in [
        "deploy/grafana/dashboard.json",
        "deploy/prometheus/alerts.yml",
    ] {
        let text = read(file);
        let read_names: BTreeSet<&str> = name.find_iter(&text).map(|m| m.as_str()).collect();
        assert!(!read_names.is_empty(), "{file} reads no recording rule");
        let unknown: Vec<_> = read_names
            .iter()
            .filter(|n| !recorded.contains(**n))
            .collect();
        assert!(
            unknown.is_empty(),
            "{file} reads rules nobody records: {unknown:?}"
        );
    }
}

#[test]
fn the_dashboard_opens_on_the_recording_rules_and_asks_for_a_handful_of_assets_at_most() {
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("deploy/grafana/dashboard.json")).unwrap();
    let recorded = regex::Regex::new(r"\b[a-z_]+:reputation_[a-z_]+:[a-z0-9_]+\b").unwrap();
    let per_asset = regex::Regex::new(r"\breputation_[a-z_]+\{").unwrap();
    let mut row = String::new();
    let (mut fleet, mut asset) = (0, 0);
    for panel in dashboard["panels"].as_array().unwrap() {
        if panel["type"] == "row" {
            row = panel["title"].as_str().unwrap().to_owned();
            continue;
        }
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap();
            let title = panel["title"].as_str().unwrap();
            if row.starts_with("Fleet") {
                // The first screen reads the recording rules only (a few series per account),
                // or the shards' own count of shards (one series per shard, which the global
                // view holds too).
                let without_shards = expr.replace("reputation_exporter_shards{", "");
                assert!(
                    recorded.is_match(expr) || without_shards != expr,
                    "{title}: {expr}"
                );
                assert!(
                    !per_asset.is_match(&without_shards),
                    "{title} reads per-asset series: {expr}"
                );
                fleet += 1;
            } else if row.starts_with("Asset") {
                assert!(expr.contains(r#"asset=~"$asset""#), "{title}: {expr}");
                asset += 1;
            }
        }
    }
    assert!(
        fleet >= 12 && asset >= 8,
        "{fleet} fleet and {asset} asset queries"
    );
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let picker = variables.iter().find(|v| v["name"] == "asset").unwrap();
    assert_eq!(
        picker["includeAll"], false,
        "no asset picker defaults to every asset"
    );
    let definition = picker["definition"].as_str().unwrap();
    assert!(
        definition.starts_with("query_result(topk(1000, "),
        "{picker}"
    );
    // Per-asset series only once there is a search, the rules' worst assets only without one,
    // each gated by its first matcher.
    let selectors = regex::Regex::new(r"([a-z_:]+)\{").unwrap();
    let mut gated = 0;
    for selector in selectors.captures_iter(definition) {
        let gate = if recorded.is_match(&selector[1]) {
            r#"picker_search=~"${search}", "#
        } else {
            r#"picker_search!~"${search}", "#
        };
        let matchers = &definition[selector.get(0).unwrap().end()..];
        assert!(matchers.starts_with(gate), "{}{matchers}", &selector[0]);
        gated += 1;
    }
    assert!(gated >= 4, "{definition}");
    for variable in variables.iter().filter(|v| v["name"] != "asset") {
        if let Some(definition) = variable["definition"].as_str() {
            assert!(
                !per_asset.is_match(definition),
                "{} lists per-asset series: {definition}",
                variable["name"]
            );
        }
    }
}

#[test]
fn the_dashboard_is_a_grafana_dashboard_with_the_expected_variables() {
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("deploy/grafana/dashboard.json")).unwrap();
    assert!(
        dashboard["schemaVersion"].as_u64().unwrap() >= 36,
        "Grafana 10 or later"
    );
    let variables: Vec<&str> = dashboard["templating"]["list"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    for expected in ["datasource", "job", "account", "kind", "asset"] {
        assert!(variables.contains(&expected), "{expected} variable missing");
    }
    let mut ids = BTreeSet::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        assert!(
            ids.insert(panel["id"].as_u64().unwrap()),
            "panel ids are unique"
        );
        for key in ["x", "y", "w", "h"] {
            assert!(panel["gridPos"][key].is_u64(), "{panel}");
        }
        if panel["type"] != "row" {
            assert_eq!(panel["datasource"]["uid"], "${datasource}");
        }
    }
}

/// Every query of the dashboard, with its panel's title and whether it is an instant query.
fn dashboard_queries() -> Vec<(String, bool, String)> {
    let dashboard: serde_json::Value =
        serde_json::from_str(&read("deploy/grafana/dashboard.json")).unwrap();
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            queries.push((
                panel["title"].as_str().unwrap().to_owned(),
                target["instant"].as_bool().unwrap_or(false),
                target["expr"].as_str().unwrap().to_owned(),
            ));
        }
    }
    queries
}

#[test]
fn trend_panels_look_back_a_day_and_current_state_panels_do_not() {
    let queries = dashboard_queries();
    // The families with daily history (backfill) or that a scrape gap should not break.
    let trended = [
        "reputation_senderscore{",
        "reputation_senderscore_previous{",
        "reputation_blacklistings{",
        "reputation_blacklist_listed{",
        "reputation_snds_reputation{",
    ];
    let mut trends = 0;
    for (title, instant, expr) in &queries {
        if *instant {
            assert!(
                !expr.contains("last_over_time"),
                "{title}: a current-state panel must not keep a vanished asset: {expr}"
            );
            continue;
        }
        for family in trended {
            for (at, _) in expr.match_indices(family) {
                trends += 1;
                let before = &expr[..at];
                assert!(
                    before.ends_with("last_over_time("),
                    "{title}: {family}...}} is not under last_over_time: {expr}"
                );
                let after = &expr[at..];
                let close = after.find('}').unwrap();
                assert!(
                    after[close..].starts_with("}[26h])"),
                    "{title}: {family}...}} does not look back 26h: {expr}"
                );
            }
        }
    }
    assert!(trends >= 6, "the trend panels were found: {trends}");
}

#[test]
fn every_alert_links_its_own_heading_of_the_shipped_runbook() {
    let alerts = read("deploy/prometheus/alerts.yml");
    let runbook = read("docs/runbook.md");
    let mut alert = None;
    let mut linked = 0;
    // The generated YAML quotes every string.
    let unquoted = |value: &str| value.trim_matches('"').to_owned();
    for line in alerts.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix("- alert: ") {
            alert = Some(unquoted(name));
        }
        if let Some(url) = line.strip_prefix("runbook_url: ").map(unquoted) {
            let name = alert.as_deref().expect("a runbook_url inside an alert");
            let (page, anchor) = url.split_once('#').expect("an anchor");
            assert!(page.ends_with("/docs/runbook.md"), "{name}: {url}");
            assert_eq!(anchor, name.to_lowercase(), "{name}: {url}");
            assert!(
                runbook.lines().any(|l| l == format!("## {name}")),
                "docs/runbook.md has no section `## {name}`"
            );
            linked += 1;
        }
    }
    let alerts_count = alerts.matches("- alert: ").count();
    assert_eq!(linked, alerts_count, "every alert has a runbook_url");
    assert!(linked >= 12, "{linked} alerts");
}

/// GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[test]
fn every_link_between_the_readme_and_the_docs_reaches_a_file_and_its_heading() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for link in text.split("](").skip(1) {
            let target = link.split(')').next().unwrap();
            if target.starts_with("http") || target.starts_with("mailto:") {
                continue;
            }
            let (path, heading) = target.split_once('#').unwrap_or((target, ""));
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            assert!(file.exists(), "{}: {target} does not exist", page.display());
            if !heading.is_empty() {
                let headings = std::fs::read_to_string(&file).unwrap();
                let found = headings
                    .lines()
                    .filter(|l| l.starts_with('#'))
                    .filter_map(|l| l.trim_start_matches('#').strip_prefix(' '))
                    .any(|h| anchor(h) == heading);
                assert!(found, "{}: no heading #{heading} in {path}", page.display());
            }
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} links found");
}

/// The recording rules' results each file of a fleet's global view takes: every one (the pages
/// read the exporter's event series, which stay on the servers).
#[test]
fn a_global_view_takes_every_recording_rules_result() {
    let rules = read("deploy/prometheus/rules.yml");
    let mut group = String::new();
    let mut records: Vec<(String, String)> = Vec::new();
    for line in rules.lines().map(str::trim) {
        if let Some(name) = line.trim_start_matches("- ").strip_prefix("name: ") {
            group = name.trim_matches('"').to_owned();
        }
        if let Some(record) = line.strip_prefix("record: ") {
            records.push((group.clone(), record.trim_matches('"').to_owned()));
        }
    }
    assert!(records.len() >= 10, "{records:?}");
    let federate = read("deploy/prometheus/fleet/federate.yml");
    let federated = federate
        .split("{__name__=~\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    let remote = read("deploy/prometheus/fleet/remote-write.yml");
    let written = remote
        .split("regex: 'reputation;(")
        .nth(1)
        .and_then(|rest| rest.split("|up|").next())
        .unwrap();
    for (file, pattern) in [("federate.yml", federated), ("remote-write.yml", written)] {
        let taken = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
        for (group, record) in &records {
            assert!(taken.is_match(record), "{file} and {record} of {group}");
        }
    }
}
