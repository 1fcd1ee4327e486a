use super::*;

fn entry(name: &str, policy: Policy) -> Entry {
    Entry {
        name: name.into(),
        spellings: Vec::new(),
        zones: Vec::new(),
        removal: String::new(),
        policy,
        expires_after: None,
        paid_express: false,
        gone_since: None,
        advice: String::new(),
        sources: Vec::new(),
    }
}

#[test]
fn every_built_in_entry_has_its_advice_a_source_and_a_removal_page_unless_gone() {
    let table = Blacklists::builtin();
    assert!(table.entries().len() >= 25, "{}", table.entries().len());
    for entry in table.entries() {
        assert!(!entry.advice.is_empty(), "{}: no advice", entry.name);
        assert!(!entry.sources.is_empty(), "{}: no source", entry.name);
        assert!(
            entry.sources.iter().all(|s| s.starts_with("http")),
            "{}: {:?}",
            entry.name,
            entry.sources
        );
        assert_eq!(
            entry.removal.is_empty(),
            entry.policy == Policy::Gone,
            "{}: removal {:?}",
            entry.name,
            entry.removal
        );
        assert_eq!(
            entry.gone_since.is_some(),
            entry.policy == Policy::Gone,
            "{}",
            entry.name
        );
    }
}

#[test]
fn no_name_is_written_twice_in_the_built_in_table() {
    let table = Blacklists::builtin();
    let mut seen = std::collections::HashSet::new();
    for entry in table.entries() {
        for name in entry.names() {
            assert!(
                seen.insert(name.to_lowercase()),
                "`{name}` is written twice"
            );
        }
    }
}

#[test]
fn a_list_is_found_by_its_name_a_spelling_or_a_zone_whatever_the_case() {
    let table = Blacklists::builtin();
    for name in [
        "Barracuda BRBL",
        "BARRACUDA",
        "barracuda reputation block list",
        "B.BarracudaCentral.org",
        " Barracuda ",
    ] {
        let found = table.lookup(name).map(|e| e.name.as_str());
        assert_eq!(found, Some("Barracuda BRBL"), "{name}");
    }
    assert_eq!(
        table.lookup("uceprotectl1").map(|e| e.name.as_str()),
        Some("UCEPROTECT Level 1")
    );
    assert_eq!(
        table.lookup("SORBS DUHL").map(|e| e.policy),
        Some(Policy::Gone)
    );
    assert_eq!(table.lookup("Nightwatch RBL"), None);
}

#[test]
fn the_policy_is_said_in_words_with_its_delay_and_any_paid_removal() {
    let table = Blacklists::builtin();
    let summary = |name: &str| table.lookup(name).unwrap().summary();
    assert_eq!(
        summary("SpamCop"),
        "Expires by itself 24 hours after the last report; do not ask."
    );
    assert_eq!(
        summary("UCEPROTECTL1"),
        "Expires by itself 7 days after the last report; do not ask. Paid express removal \
         exists; never needed."
    );
    assert_eq!(
        summary("Backscatterer"),
        "Expires by itself 4 weeks after the last report; do not ask. Paid express removal \
         exists; never needed."
    );
    assert_eq!(
        summary("SBL"),
        "Only the network's owner or provider can ask."
    );
    assert_eq!(
        summary("sorbs"),
        "Gone since 2024-06-05: the listing is stale; no page."
    );
    assert_eq!(in_words("1h").as_deref(), Some("1 hour"));
    assert_eq!(in_words("12x"), None);
    assert_eq!(in_words("h"), None);
}

#[test]
fn the_removal_page_takes_the_asset_where_the_list_takes_it() {
    let table = Blacklists::builtin();
    assert_eq!(
        table.said("Barracuda").removal_for("192.0.2.1"),
        "https://www.barracudacentral.org/rbl/removal-request/192.0.2.1"
    );
    assert_eq!(
        table.said("ivmSIP").removal_for("192.0.2.1"),
        "https://www.invaluement.com/removal/"
    );
}

#[test]
fn the_configuration_adds_lists_and_replaces_one_by_any_of_its_names() {
    let mut spamcop = entry("SCBL", Policy::Request);
    spamcop.removal = "https://example.net/ask/{asset}".into();
    spamcop.spellings = vec!["Cop".into()];
    let mut house = entry("House RBL", Policy::SelfService);
    house.spellings = vec!["rbl.example.net".into(), "Barracuda".into()];
    let table = Blacklists::with(vec![spamcop, house]).unwrap();
    let builtin = Blacklists::builtin();
    assert_eq!(table.entries().len(), builtin.entries().len() + 1);
    // SpamCop's built-in entry is gone whole: its other spellings are unknown now.
    assert_eq!(table.lookup("cop").map(|e| e.policy), Some(Policy::Request));
    assert_eq!(
        table.lookup("SCBL").map(|e| e.policy),
        Some(Policy::Request)
    );
    assert_eq!(table.lookup("SpamCop"), None);
    // A spelling the configuration gives its own entry is its own.
    assert_eq!(
        table.lookup("RBL.example.net").map(|e| e.name.as_str()),
        Some("House RBL")
    );
    assert_eq!(
        table.lookup("barracuda").map(|e| e.name.as_str()),
        Some("House RBL")
    );
    assert_eq!(
        table.lookup("BRBL").map(|e| e.name.as_str()),
        Some("Barracuda BRBL")
    );
}

#[test]
fn an_entry_that_cannot_be_right_is_refused_naming_the_list() {
    let mut bad_url = entry("House RBL", Policy::Request);
    bad_url.removal = "rbl.example.net/remove".into();
    assert_eq!(
        Blacklists::with(vec![bad_url]).unwrap_err(),
        "`House RBL`: removal `rbl.example.net/remove` is not an http(s) URL"
    );
    let mut bad_delay = entry("House RBL", Policy::Expires);
    bad_delay.expires_after = Some("a day".into());
    assert!(
        Blacklists::with(vec![bad_delay])
            .unwrap_err()
            .starts_with("`House RBL`: expires_after `a day` is not a number")
    );
    let twice = vec![
        entry("House RBL", Policy::Request),
        entry("house rbl", Policy::Request),
    ];
    assert_eq!(
        Blacklists::with(twice).unwrap_err(),
        "two entries are named `house rbl`"
    );
    assert!(
        Blacklists::with(vec![entry("House RBL", Policy::Unknown)])
            .unwrap_err()
            .contains("policy `unknown` is what the exporter says")
    );
    assert!(
        Blacklists::with(vec![entry(" ", Policy::Request)])
            .unwrap_err()
            .contains("no name")
    );
}

#[test]
fn the_info_series_names_each_list_as_spelled_and_says_when_it_is_unknown() {
    let table = Blacklists::builtin();
    let mut out = String::new();
    table.encode_info(["SPAMCOP", "Nightwatch \"RBL\""], &mut out);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], "# TYPE reputation_blacklist info");
    assert_eq!(
        lines[2],
        "reputation_blacklist_info{blacklist=\"SPAMCOP\",list=\"SpamCop\",policy=\"expires\",\
         summary=\"Expires by itself 24 hours after the last report; do not ask.\",\
         removal=\"https://www.spamcop.net/bl.shtml?{asset}\",advice=\"Ends by itself 24 hours \
         after the last spam report; SpamCop asks not to request early removal. Stop what draws \
         the reports and wait.\"} 1"
    );
    assert_eq!(
        lines[3],
        "reputation_blacklist_info{blacklist=\"Nightwatch \\\"RBL\\\"\",list=\"\",\
         policy=\"unknown\",summary=\"reputation-exporter knows nothing of this list: look it \
         up by name before acting.\",removal=\"\",advice=\"\"} 1"
    );
    assert_eq!(lines.len(), 4);
}

#[test]
fn the_runbook_holds_the_table_as_generated() {
    const BEGIN: &str = "<!-- The table below is generated from src/blacklists/known.toml -->\n";
    const END: &str = "<!-- end of the generated table -->";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/runbook.md");
    let runbook = std::fs::read_to_string(&path).unwrap();
    let start = runbook
        .find(BEGIN)
        .expect("the runbook marks the table's start")
        + BEGIN.len();
    let end = start
        + runbook[start..]
            .find(END)
            .expect("the runbook marks the table's end");
    let table = Blacklists::builtin().markdown();
    if runbook[start..end] != table {
        if std::env::var_os("REPUTATION_WRITE_DOCS").is_some() {
            let written = format!("{}{table}{}", &runbook[..start], &runbook[end..]);
            std::fs::write(&path, written).unwrap();
        }
        panic!(
            "docs/runbook.md's blacklist table differs from src/blacklists/known.toml; write it \
             with REPUTATION_WRITE_DOCS=1 cargo test --lib the_runbook_holds_the_table"
        );
    }
}
