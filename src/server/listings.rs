//! The current listings on the landing page, newest first: for each, the asset, its owner
//! tags, the list and since when, and what the page of that listing says of the list (the
//! policy in words, what to do, the removal page), so that a person without Grafana or a pager
//! sees it too.

use std::fmt::Write as _;

use crate::blacklists::{Blacklists, Policy};
use crate::model::NEWEST_SHOWN;
use crate::snapshot::Snapshot;

use super::landing::escape;

/// The section of the current listings and of the blacklists the reports name, or nothing
/// without reports.
pub(super) fn section(page: &mut String, snapshot: &Snapshot, blacklists: &Blacklists) {
    let Some(reports) = snapshot.reports.as_deref() else {
        return;
    };
    listings(page, reports, blacklists);
    named(page, snapshot, blacklists);
}

/// Every blacklist the reports name (bounded by the lists), as a service spells it, with what
/// is known of it: a list that is gone, one nobody knows.
fn named(page: &mut String, snapshot: &Snapshot, blacklists: &Blacklists) {
    if snapshot.blacklists.is_empty() {
        return;
    }
    page.push_str(
        "<h2 id=\"blacklists\">The blacklists the reports name</h2><table><tr>\
         <th>blacklist</th><th>known as</th><th>policy</th></tr>",
    );
    for name in &snapshot.blacklists {
        let said = blacklists.said(name);
        let class = match said.policy {
            Policy::Gone => " class=\"warn\"",
            Policy::Unknown => " class=\"bad\"",
            _ => "",
        };
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td{class}>{}</td></tr>",
            escape(name),
            escape(&said.list),
            escape(&said.summary),
        );
    }
    page.push_str("</table>");
}

/// The current listings, newest first.
fn listings(page: &mut String, reports: &crate::model::Reports, blacklists: &Blacklists) {
    let (listings, total) = reports.newest_listings(NEWEST_SHOWN);
    page.push_str("<h2 id=\"listings\">Current listings, newest first</h2>");
    if listings.is_empty() {
        page.push_str("<p>No asset report names a current listing.</p>");
        return;
    }
    page.push_str(
        "<table><tr><th>asset</th><th>owner</th><th>blacklist</th><th>since (UTC)</th>\
         <th>policy</th><th>what to do</th><th>removal</th></tr>",
    );
    for listing in &listings {
        let said = blacklists.said(listing.blacklist);
        let since = jiff::Timestamp::from_second(listing.since as i64)
            .map(|t| t.strftime("%Y-%m-%d %H:%M").to_string())
            .unwrap_or_default();
        let named = match said.list.as_str() {
            "" => escape(listing.blacklist),
            list if list == listing.blacklist => escape(list),
            list => format!("{} ({})", escape(listing.blacklist), escape(list)),
        };
        let class = match said.policy {
            Policy::Gone => " class=\"warn\"",
            Policy::Unknown => " class=\"bad\"",
            _ => "",
        };
        let removal = said.removal_for(listing.asset);
        let removal = match removal.as_str() {
            "" => "–".to_owned(),
            url => format!("<a href=\"{0}\">{0}</a>", escape(url)),
        };
        let _ = write!(
            page,
            "<tr><td>{} {}</td><td>{}</td><td>{named}</td><td class=\"num\">{since}</td>\
             <td{class}>{}</td><td>{}</td><td>{removal}</td></tr>",
            listing.kind.label(),
            escape(listing.asset),
            escape(&listing.report.tags.join(", ")),
            escape(&said.summary),
            escape(&said.advice),
        );
    }
    if total > listings.len() {
        let _ = write!(
            page,
            "<tr><td colspan=\"7\">and {} older ones (reputation_blacklist_listed_since_timestamp_seconds)</td></tr>",
            total - listings.len()
        );
    }
    page.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::time::Instant;

    use super::*;
    use crate::model::{Listing, Report, Reports};
    use crate::vocabulary::Kind;

    /// A snapshot of these reports alone.
    fn of_reports(reports: Reports) -> Snapshot {
        let memory = Default::default();
        Snapshot::build(None, None, Some(Arc::new(reports)), &memory, true, 1)
    }

    fn listed(blacklist: &str, since: f64) -> Listing {
        Listing {
            blacklist: blacklist.into(),
            listed: true,
            changed: since,
            since: Some(since),
        }
    }

    #[test]
    fn the_listings_say_what_their_page_says_newest_first() {
        let mut reports = Reports::default();
        let report = |listings: Vec<Listing>| Report {
            tags: vec!["team-transactional".into()],
            listings,
            named: 1,
            ..Report::default()
        };
        let now = Instant::now();
        // 2026-11-26 10:00, 11:00 and 12:00 UTC.
        let (ten, eleven, noon) = (1_795_687_200.0, 1_795_690_800.0, 1_795_694_400.0);
        reports.set(
            Kind::Ip,
            "192.0.2.1".into(),
            report(vec![listed("BARRACUDA", eleven)]),
            now,
        );
        reports.set(
            Kind::Ip,
            "192.0.2.2".into(),
            report(vec![
                listed("Nightwatch RBL", noon),
                listed("SORBS DUHL", ten),
            ]),
            now,
        );
        let mut delisted = listed("SpamCop", noon);
        delisted.listed = false;
        delisted.since = None;
        reports.set(Kind::Ip, "192.0.2.3".into(), report(vec![delisted]), now);
        let snapshot = of_reports(reports);
        let mut page = String::new();
        section(&mut page, &snapshot, &Blacklists::builtin());
        let listed = page.split("<h2 id=\"blacklists\">").next().unwrap();
        let rows: Vec<&str> = listed.split("<tr>").skip(2).collect();
        assert_eq!(rows.len(), 3, "{page}");
        assert_eq!(
            rows[0],
            "<td>ip 192.0.2.2</td><td>team-transactional</td><td>Nightwatch RBL</td>\
             <td class=\"num\">2026-11-26 12:00</td><td class=\"bad\">reputation-exporter knows \
             nothing of this list: look it up by name before acting.</td><td></td><td>–</td></tr>"
        );
        assert_eq!(
            rows[1],
            "<td>ip 192.0.2.1</td><td>team-transactional</td><td>BARRACUDA (Barracuda BRBL)</td>\
             <td class=\"num\">2026-11-26 11:00</td><td>Removal on request, reviewed by a \
             person.</td><td>Fill in Barracuda&#39;s removal request form (address, e-mail, \
             phone, reason); it is free and reviewed by a person (within a day or two, by \
             third-party reports).</td><td><a href=\"https://www.barracudacentral.org/rbl/removal-request/192.0.2.1\">\
             https://www.barracudacentral.org/rbl/removal-request/192.0.2.1</a></td></tr>"
        );
        assert!(
            rows[2].starts_with(
                "<td>ip 192.0.2.2</td><td>team-transactional</td><td>SORBS DUHL (SORBS)</td>\
                 <td class=\"num\">2026-11-26 10:00</td><td class=\"warn\">Gone since \
                 2024-06-05: the listing is stale; no page.</td>"
            ),
            "{}",
            rows[2]
        );
        assert!(
            !listed.contains("SpamCop"),
            "a delisting is no current listing"
        );
        // Every list the reports name, with what is known of it.
        let named = page.split("<h2 id=\"blacklists\">").nth(1).unwrap();
        assert!(
            named.contains(
                "<tr><td>SORBS DUHL</td><td>SORBS</td><td class=\"warn\">Gone since \
                 2024-06-05: the listing is stale; no page.</td></tr>"
            ),
            "{named}"
        );
        assert!(named.contains("<tr><td>Nightwatch RBL</td><td></td><td class=\"bad\">"));
        assert!(named.contains("<tr><td>SpamCop</td><td>SpamCop</td><td>Expires by itself"));
    }

    #[test]
    fn past_the_rows_shown_the_older_listings_are_counted() {
        let mut reports = Reports::default();
        for i in 0..NEWEST_SHOWN + 3 {
            let report = Report {
                listings: vec![listed("SpamCop", 1_795_687_200.0 + i as f64)],
                ..Report::default()
            };
            reports.set(Kind::Ip, format!("192.0.2.{i}"), report, Instant::now());
        }
        let snapshot = of_reports(reports);
        let mut page = String::new();
        section(&mut page, &snapshot, &Blacklists::builtin());
        assert_eq!(page.matches("<td>ip 192.0.2.").count(), NEWEST_SHOWN);
        assert!(
            page.contains("<td>ip 192.0.2.27</td>"),
            "the newest is shown"
        );
        assert!(!page.contains("<td>ip 192.0.2.0</td>"), "the oldest is not");
        assert!(page.contains("and 3 older ones"), "{page}");
    }
}
