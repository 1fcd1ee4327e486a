//! Property tests over random upstream JSON: whatever the API sends, decoding, conversion and
//! both encoders never panic, and what they write is a valid exposition whose label values
//! read back as the strings the API sent.

use std::collections::BTreeSet;
use std::sync::Arc;

use proptest::prelude::*;
use reputation_exporter::exposition::Format;
use reputation_exporter::model::{Asset, AssetSet};
use reputation_exporter::snapshot::{ListPart, Snapshot};
use reputation_exporter::upstream::{date, dto};
use reputation_exporter::vocabulary::Kind;
use serde_json::{Value, json};

/// Strings with the characters the encoders must escape, and some they must not touch.
fn text() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-zA-Z0-9 .:/_\\-\"\\\\\n\té✉]{0,12}").unwrap()
}

/// Any JSON value, small.
fn loose() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(Value::from),
        prop_oneof![
            Just("Yes".to_owned()),
            Just("NOT BLOCKED".to_owned()),
            Just("green".to_owned()),
            Just("Red".to_owned()),
            text()
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            proptest::collection::btree_map("[a-z_]{1,6}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn item(name_field: &'static str) -> impl Strategy<Value = Value> {
    (
        text(),
        proptest::collection::vec(text(), 0..3),
        prop_oneof![loose(), (-1i64..=100).prop_map(Value::from)],
        loose(),
        loose(),
        loose(),
        loose(),
    )
        .prop_map(
            move |(name, hosts, score, blacklisted, blocked, colour, change)| {
                json!({
                    name_field: name,
                    "hosts": hosts,
                    "ips": change.clone(),
                    "senderscore": score,
                    "senderscore_prev": 70,
                    "senderscore_change": {"last_check": change.clone()},
                    "blacklisted": blacklisted,
                    "blacklisted_change": {"last_check": change.clone()},
                    "snds_blocked": blocked,
                    "snds_blocked_change": {"last_check": change},
                    "snds_reputation": colour,
                    "snds_reputation_change": {"last_check": null},
                })
            },
        )
}

/// The snapshot the poller builds from these lists, and the assets it must show (a snapshot
/// keeps only their names). A list is refused exactly when its unusable items outnumber its
/// usable ones; a refused list gives no part (the poller keeps the previous one, here none)
/// and none of its assets.
fn snapshot(ips: &[Value], domains: &[Value]) -> Result<(Snapshot, Vec<Asset>), TestCaseError> {
    let mut assets = Vec::new();
    let mut list = |items: &[Value], kind| -> Result<_, TestCaseError> {
        let body = serde_json::to_vec(items).unwrap();
        let decoded = AssetSet::decode(&body, kind, 64)
            .map_err(|e| TestCaseError::fail(format!("a JSON array must decode: {e}")))?;
        let (usable, unusable) = (decoded.set.assets.len(), decoded.rejected.count);
        prop_assert_eq!(unusable, items.len() - usable - decoded.duplicates);
        match decoded.refusal() {
            Some(refused) => {
                prop_assert!(unusable > usable, "refused with {usable} usable: {refused}");
                Ok(None)
            }
            None => {
                prop_assert!(unusable <= usable, "{unusable} unusable beside {usable}");
                assets.extend(decoded.set.assets.iter().cloned());
                Ok(Some(Arc::new(ListPart::new(kind, decoded.set))))
            }
        }
    };
    let ips = list(ips, Kind::Ip)?;
    let domains = list(domains, Kind::Domain)?;
    Ok((
        Snapshot::build(ips, domains, None, &Default::default(), true, 1),
        assets,
    ))
}

/// Reads one sample line strictly; returns its label values, unescaped.
fn parse_sample(line: &str) -> Result<Vec<String>, String> {
    let name_end = line.find(['{', ' ']).ok_or("no value")?;
    let name = &line[..name_end];
    let valid_name = name.chars().enumerate().all(|(i, c)| {
        c.is_ascii_alphabetic() || c == '_' || c == ':' || (i > 0 && c.is_ascii_digit())
    });
    if name.is_empty() || !valid_name {
        return Err(format!("bad metric name {name:?}"));
    }
    let mut rest = &line[name_end..];
    let mut values = Vec::new();
    if let Some(labels) = rest.strip_prefix('{') {
        let mut chars = labels.char_indices().peekable();
        loop {
            let start = chars.peek().ok_or("unterminated labels")?.0;
            let eq = labels[start..].find("=\"").ok_or("no =\"")? + start;
            let key = &labels[start..eq];
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("bad label name {key:?}"));
            }
            while chars.peek().is_some_and(|(i, _)| *i <= eq + 1) {
                chars.next();
            }
            let mut value = String::new();
            loop {
                match chars.next().ok_or("unterminated value")?.1 {
                    '"' => break,
                    '\n' => return Err("raw newline".into()),
                    '\\' => match chars.next().ok_or("dangling escape")?.1 {
                        '\\' => value.push('\\'),
                        '"' => value.push('"'),
                        'n' => value.push('\n'),
                        other => return Err(format!("bad escape \\{other}")),
                    },
                    c => value.push(c),
                }
            }
            values.push(value);
            match chars.next().ok_or("unterminated labels")? {
                (_, ',') => continue,
                (i, '}') => {
                    rest = &labels[i + 1..];
                    break;
                }
                (_, other) => return Err(format!("unexpected {other:?} after a label")),
            }
        }
    }
    let value = rest.strip_prefix(' ').ok_or("no space before the value")?;
    if !(matches!(value, "+Inf" | "-Inf" | "NaN") || value.parse::<f64>().is_ok()) {
        return Err(format!("bad value {value:?}"));
    }
    Ok(values)
}

/// Checks a whole exposition line by line; returns every label value seen.
fn check(body: &str, format: Format) -> Result<BTreeSet<String>, String> {
    let mut values = BTreeSet::new();
    let lines: Vec<&str> = body.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if *line == "# EOF" {
            if format != Format::OpenMetrics || i + 1 != lines.len() {
                return Err("misplaced # EOF".into());
            }
        } else if line.starts_with("# HELP ") || line.starts_with("# TYPE ") {
        } else {
            values.extend(parse_sample(line).map_err(|e| format!("{e} in {line:?}"))?);
        }
    }
    if format == Format::OpenMetrics && lines.last() != Some(&"# EOF") {
        return Err("no # EOF".into());
    }
    Ok(values)
}

fn expose(snapshot: &Snapshot, format: Format) -> String {
    let mut body = snapshot.rendered.to_vec(format);
    if format == Format::OpenMetrics {
        body.extend_from_slice(b"# EOF\n");
    }
    String::from_utf8(body).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_upstream_json_gives_valid_expositions_in_both_formats(
        ips in proptest::collection::vec(item("ip"), 0..8),
        domains in proptest::collection::vec(item("domain"), 0..4),
    ) {
        let (snapshot, assets) = snapshot(&ips, &domains)?;
        for format in Format::ALL {
            let body = expose(&snapshot, format);
            let values = check(&body, format).map_err(TestCaseError::fail)?;
            for asset in &assets {
                prop_assert!(values.contains(&asset.name), "{:?} did not read back", asset.name);
                for host in &asset.hostnames {
                    prop_assert!(values.contains(host), "{:?} did not read back", host);
                }
            }
        }
    }

    #[test]
    fn the_date_parser_never_panics(text in "\\PC{0,40}") {
        let _ = date::parse(&text, &jiff::tz::TimeZone::UTC);
    }

    #[test]
    fn any_list_body_decodes_or_fails_cleanly(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = dto::decode_list_with(&body, Kind::Ip, |item| item);
    }

    /// A list is decoded as its bytes arrive: however the body is cut into chunks (as the
    /// network delivers it), the result is the one the whole body gives, items, rejections
    /// and errors alike.
    #[test]
    fn a_list_decodes_the_same_whatever_the_chunks(
        items in proptest::collection::vec(prop_oneof![item("ip"), loose()], 0..6),
        cuts in proptest::collection::vec(1usize..40, 1..20),
        damage in proptest::option::of((0usize..400, any::<u8>())),
    ) {
        let mut body = serde_json::to_vec_pretty(&Value::from(items)).unwrap();
        if let Some((at, byte)) = damage {
            let at = at % (body.len() + 1);
            body.insert(at, byte);
        }
        let summary = |list: Result<dto::DecodedList, dto::DecodeError>| match list {
            Ok(list) => Ok((
                list.items.iter().map(|i| i.name.clone()).collect::<Vec<_>>(),
                list.rejected,
                list.duplicates,
            )),
            Err(e) => Err(e.path),
        };
        let whole = summary(dto::decode_list_with(&body, Kind::Ip, |item| item));
        // serde_json, reading the whole body as an array of raw values, agrees on whether it
        // is a JSON array at all.
        let array = serde_json::from_slice::<Vec<Box<serde_json::value::RawValue>>>(&body);
        prop_assert_eq!(whole.is_ok(), array.is_ok(), "{:?}", array.err());
        let mut decoder = dto::ListDecoder::new(Kind::Ip, |item| item);
        let mut rest = body.as_slice();
        let mut cut = cuts.iter().cycle();
        let mut failed = None;
        while !rest.is_empty() && failed.is_none() {
            let (chunk, later) = rest.split_at((*cut.next().unwrap()).min(rest.len()));
            failed = decoder.feed(chunk).err();
            rest = later;
        }
        let chunked = summary(match failed {
            Some(e) => Err(e),
            None => decoder.finish(),
        });
        prop_assert_eq!(chunked, whole);
    }
}

/// The same generator, checked once by the reference parsers of Python's prometheus_client.
#[test]
fn random_expositions_pass_the_reference_parsers() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = (
        proptest::collection::vec(item("ip"), 1..10),
        proptest::collection::vec(item("domain"), 0..5),
    );
    let mut ips = Vec::new();
    let mut domains = Vec::new();
    for _ in 0..20 {
        let (i, d) = strategy.new_tree(&mut runner).unwrap().current();
        ips.extend(i);
        domains.extend(d);
    }
    // The usable items only, so that neither list is refused and the exposition is large.
    let usable = |items: Vec<Value>, kind| -> Vec<Value> {
        items
            .into_iter()
            .filter(|item| {
                let body = serde_json::to_vec(&[item]).unwrap();
                AssetSet::decode(&body, kind, 64).is_ok_and(|d| d.set.assets.len() == 1)
            })
            .collect()
    };
    let (ips, domains) = (usable(ips, Kind::Ip), usable(domains, Kind::Domain));
    let (snapshot, _) = snapshot(&ips, &domains).expect("lists of usable items are taken");
    assert!(snapshot.total() > 10, "{} assets", snapshot.total());
    for (format, name) in [(Format::OpenMetrics, "openmetrics"), (Format::Text, "text")] {
        crate::helpers::reference_parse(&expose(&snapshot, format), name);
    }
}
