//! Words every part of the exporter shares: which endpoint, which kind of asset, how a request
//! failed ([`Failure`], the one kind the pollers, the log, the landing page and the `code`
//! label go by; an API error becomes one in `FetchError::failure`), the SNDS colours, the secret token, and how a duration is written. A leaf: it imports
//! nothing of the crate.

use std::fmt;
use std::time::Duration;

/// How often the API checks an asset, at the longest (an hour): what its change fields say is
/// at most that old, and a list or a report that lags the other has caught up by then.
pub const API_CHECK_INTERVAL: Duration = Duration::from_secs(3600);

/// The API endpoints, named as the `endpoint` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Endpoint {
    /// `/api/v1/user`.
    User,
    /// `/api/v1/system-check`.
    SystemCheck,
    /// `/api/v1/ip-list`.
    IpList,
    /// `/api/v1/domain-list`.
    DomainList,
    /// `/api/v1/asset/{asset}`.
    Asset,
}

impl Endpoint {
    /// The endpoints of the list poll loop.
    pub const POLLED: [Endpoint; 4] = [
        Endpoint::User,
        Endpoint::SystemCheck,
        Endpoint::IpList,
        Endpoint::DomainList,
    ];

    /// Every endpoint, in label order of the exposition.
    pub const ALL: [Endpoint; 5] = [
        Endpoint::User,
        Endpoint::SystemCheck,
        Endpoint::IpList,
        Endpoint::DomainList,
        Endpoint::Asset,
    ];

    /// The `endpoint` label value.
    pub fn label(self) -> &'static str {
        match self {
            Endpoint::User => "user",
            Endpoint::SystemCheck => "system-check",
            Endpoint::IpList => "ip-list",
            Endpoint::DomainList => "domain-list",
            Endpoint::Asset => "asset",
        }
    }

    /// Path below the base address (the asset report's is followed by the asset).
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::User => "/api/v1/user",
            Endpoint::SystemCheck => "/api/v1/system-check",
            Endpoint::IpList => "/api/v1/ip-list",
            Endpoint::DomainList => "/api/v1/domain-list",
            Endpoint::Asset => "/api/v1/asset/",
        }
    }

    /// The list endpoint of one kind of asset.
    pub fn list(kind: Kind) -> Endpoint {
        match kind {
            Kind::Ip => Endpoint::IpList,
            Kind::Domain => Endpoint::DomainList,
        }
    }
}

/// Whether an asset is an IP address or a domain: the `kind` label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// From `ip-list`.
    #[default]
    Ip,
    /// From `domain-list`.
    Domain,
}

impl Kind {
    /// Both kinds, in exposition order.
    pub const ALL: [Kind; 2] = [Kind::Ip, Kind::Domain];

    /// The `kind` label value.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Ip => "ip",
            Kind::Domain => "domain",
        }
    }

    /// The field of a list item that holds the asset's name.
    pub fn name_field(self) -> Field {
        match self {
            Kind::Ip => Field::Ip,
            Kind::Domain => Field::Domain,
        }
    }
}

/// SNDS reputation colour: the states of the `reputation_snds_reputation` stateset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SndsColour {
    /// Mail from the address is mostly accepted by Outlook.com.
    Green,
    /// Some of its mail is filtered as spam.
    Yellow,
    /// Most of its mail is filtered or refused.
    Red,
}

impl SndsColour {
    /// Every state, in exposition order.
    pub const ALL: [SndsColour; 3] = [SndsColour::Green, SndsColour::Yellow, SndsColour::Red];

    /// The state's label value.
    pub fn label(self) -> &'static str {
        match self {
            SndsColour::Green => "green",
            SndsColour::Yellow => "yellow",
            SndsColour::Red => "red",
        }
    }
}

/// The kind of failure of a request: what a streak compares, what the landing page and the
/// round summaries show, and the `code` label it is counted under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Failure {
    /// 401 or 403: the token is rejected.
    Rejected(u16),
    /// Another status than 200.
    Status(u16),
    /// No answer within `api.timeout`.
    Timeout,
    /// Nothing listens at the API's address.
    Refused,
    /// No connection for another reason (name resolution, TLS, a reset).
    Connect,
    /// A redirect to another origin, not followed.
    Redirect,
    /// A body larger than `api.max_body_bytes`.
    TooLarge,
    /// A body that is not what the endpoint returns.
    Decode,
    /// The list arrived but could not be rendered.
    Rendering,
    /// An asset whose name cannot be one path segment.
    NotRequestable,
}

impl Failure {
    /// The `code` label of `reputation_api_requests_total` for a request that failed so.
    pub fn code(self) -> Code {
        match self {
            Failure::Rejected(status) | Failure::Status(status) => Code::Status(status),
            Failure::Timeout => Code::Timeout,
            Failure::Refused | Failure::Connect | Failure::NotRequestable => Code::Connect,
            Failure::Redirect => Code::Redirect,
            Failure::TooLarge | Failure::Decode | Failure::Rendering => Code::Decode,
        }
    }

    /// Whether the endpoint answered at all (and so said whether it accepts the token).
    pub fn answered(self) -> bool {
        matches!(
            self,
            Failure::Rejected(_) | Failure::Status(_) | Failure::TooLarge | Failure::Decode
        )
    }
}

/// The kind of failure in a few words: `HTTP 503`, `connection refused`, `bad body`.
impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Rejected(status) => write!(f, "token rejected (HTTP {status})"),
            Failure::Status(status) => write!(f, "HTTP {status}"),
            Failure::Timeout => f.write_str("timeout"),
            Failure::Refused => f.write_str("connection refused"),
            Failure::Connect => f.write_str("cannot connect"),
            Failure::Redirect => f.write_str("redirect to another origin"),
            Failure::TooLarge => f.write_str("body too large"),
            Failure::Decode => f.write_str("bad body"),
            Failure::Rendering => f.write_str("rendering failed"),
            Failure::NotRequestable => f.write_str("name not requestable"),
        }
    }
}

/// How one upstream request ended: the `code` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Code {
    /// The HTTP status the API answered.
    Status(u16),
    /// No answer within `api.timeout`.
    Timeout,
    /// No connection (refused, DNS, TLS).
    Connect,
    /// An answer whose body could not be read or used.
    Decode,
    /// A redirect to another origin, not followed.
    Redirect,
}

impl Code {
    /// The `code` label value.
    pub fn label(self) -> String {
        match self {
            Code::Status(status) => status.to_string(),
            Code::Timeout => "timeout".into(),
            Code::Connect => "connect".into(),
            Code::Decode => "decode".into(),
            Code::Redirect => "redirect".into(),
        }
    }
}

/// An API field whose values may not be mapped: the `field` label of
/// `reputation_unrecognized_values_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// A list item's `ip`.
    Ip,
    /// A list item's `domain`.
    Domain,
    /// An address's `hosts`.
    Hosts,
    /// A domain's `ips`.
    Ips,
    /// `senderscore`.
    Senderscore,
    /// `senderscore_prev`.
    SenderscorePrev,
    /// `senderscore_change`.
    SenderscoreChange,
    /// `blacklisted`.
    Blacklisted,
    /// `blacklisted_change`.
    BlacklistedChange,
    /// `snds_blocked`.
    SndsBlocked,
    /// `snds_blocked_change`.
    SndsBlockedChange,
    /// `snds_reputation`.
    SndsReputation,
    /// `snds_reputation_change`.
    SndsReputationChange,
    /// A list element that is not an item at all, or fails on no field of its own.
    Item,
    /// A report's `tags`.
    Tags,
    /// The date of a report's `blacklist_history` entry.
    BlacklistHistoryDate,
    /// The date of a report's `senderscore_history` entry.
    SenderscoreHistoryDate,
    /// A report's `blacklisted_history` entry: its date or its value.
    BlacklistedHistory,
}

impl Field {
    /// Every field, in the order of the label values.
    pub const ALL: [Field; 18] = [
        Field::Ip,
        Field::Domain,
        Field::Hosts,
        Field::Ips,
        Field::Senderscore,
        Field::SenderscorePrev,
        Field::SenderscoreChange,
        Field::Blacklisted,
        Field::BlacklistedChange,
        Field::SndsBlocked,
        Field::SndsBlockedChange,
        Field::SndsReputation,
        Field::SndsReputationChange,
        Field::Item,
        Field::Tags,
        Field::BlacklistHistoryDate,
        Field::SenderscoreHistoryDate,
        Field::BlacklistedHistory,
    ];

    /// The `field` label value: the API's name of the field.
    pub fn label(self) -> &'static str {
        match self {
            Field::Ip => "ip",
            Field::Domain => "domain",
            Field::Hosts => "hosts",
            Field::Ips => "ips",
            Field::Senderscore => "senderscore",
            Field::SenderscorePrev => "senderscore_prev",
            Field::SenderscoreChange => "senderscore_change",
            Field::Blacklisted => "blacklisted",
            Field::BlacklistedChange => "blacklisted_change",
            Field::SndsBlocked => "snds_blocked",
            Field::SndsBlockedChange => "snds_blocked_change",
            Field::SndsReputation => "snds_reputation",
            Field::SndsReputationChange => "snds_reputation_change",
            Field::Item => "item",
            Field::Tags => "tags",
            Field::BlacklistHistoryDate => "blacklist_history.date",
            Field::SenderscoreHistoryDate => "senderscore_history.date",
            Field::BlacklistedHistory => "blacklisted_history",
        }
    }

    /// The list item field of the JSON key `key`, if it is one of them.
    pub fn of_item_key(key: &str) -> Option<Field> {
        Field::ALL[..13].iter().copied().find(|f| f.label() == key)
    }
}

/// A value the exporter could not map to a sample.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unrecognized {
    /// The API field: the `field` label of the counter.
    pub field: Field,
    /// The value as seen (strings shortened), for the log line.
    pub value: String,
    /// How many values this stands for (many dropped host names are one line in the log).
    pub count: u64,
}

impl Unrecognized {
    /// One value of `field` that could not be used.
    pub fn new(field: Field, value: impl Into<String>) -> Self {
        Unrecognized {
            field,
            value: value.into(),
            count: 1,
        }
    }
}

/// A string that must never be shown: its `Debug` prints `<redacted>`, and it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself, for the one place that needs it: the request header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// FNV-1a, 64 bits: stable across platforms and releases, so that replicas agree on the
/// split of `asset_reports.replica` and scrapers on the shards of `metrics.shards`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_more(0xcbf2_9ce4_8422_2325, bytes)
}

/// FNV-1a of what `hash` was computed over followed by `bytes`.
fn fnv1a_more(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The shard of `metrics.shards` = `shards` that serves the asset `name` of `kind`: FNV-1a
/// (64 bits) of `KIND/NAME` (`ip/192.0.2.1`, `domain/example.com`) modulo `shards`. Every series
/// of one asset is in its shard; the rule never changes between versions.
pub fn shard_of(kind: Kind, name: &str, shards: usize) -> usize {
    // Hashed piece by piece: no key is built per asset.
    let hash = fnv1a_more(fnv1a(kind.label().as_bytes()), b"/");
    // usize is at most 64 bits on every supported platform.
    (fnv1a_more(hash, name.as_bytes()) % shards.max(1) as u64) as usize
}

/// Why a written duration is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a duration at all.
    #[error("`{0}` is not a duration; {DURATION_HINT}")]
    NotADuration(String),
    /// Months or years, which have no fixed length.
    #[error("`{0}`: months and years have no fixed length; {DURATION_HINT}")]
    Calendar(String),
    /// A negative duration.
    #[error("`{0}` is negative; {DURATION_HINT}")]
    Negative(String),
}

/// How a duration is written, for messages.
const DURATION_HINT: &str = "write e.g. 500ms, 30s, 5m, 1h or 90d";

/// A duration as the configuration and the flags write it: `500ms`, `30s`, `5m`, `1h`, `90d`
/// (a day is 24 hours), also `1h 30m` or `2 days`. Jiff's friendly format, so that one crate
/// reads every time the exporter is given.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, DurationError> {
    let text = text.trim();
    let span: jiff::Span = text
        .parse()
        .map_err(|_| DurationError::NotADuration(text.to_owned()))?;
    let length = span
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .map_err(|_| DurationError::Calendar(text.to_owned()))?;
    std::time::Duration::try_from(length).map_err(|_| DurationError::Negative(text.to_owned()))
}

/// A duration as people say it, to the second: `4m 12s`, `1h 30m`.
pub fn spoken_duration(duration: std::time::Duration) -> String {
    let seconds =
        jiff::SignedDuration::from_secs(i64::try_from(duration.as_secs()).unwrap_or(i64::MAX));
    format!("{seconds:#}")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Values computed by an independent implementation (Python), which a user's tooling can
    /// reproduce: the shards must never move between versions.
    #[test]
    fn the_shard_of_an_asset_is_fnv1a_of_kind_slash_name_modulo_the_shards() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"ip/192.0.2.1"), 0x7ae0_3667_34b8_0dec);
        assert_eq!(fnv1a(b"domain/example.com"), 0x768b_e5ef_0627_b23f);
        for (kind, name, shards) in [
            (Kind::Ip, "192.0.2.1", [0, 4, 12]),
            (Kind::Domain, "example.com", [3, 7, 15]),
            (Kind::Ip, "2001:db8::1", [3, 3, 11]),
            (Kind::Domain, "mail.example.org", [1, 1, 1]),
        ] {
            let got = [4, 8, 16].map(|shards| shard_of(kind, name, shards));
            assert_eq!(got, shards, "{name}");
            assert_eq!(shard_of(kind, name, 1), 0);
        }
    }

    #[test]
    fn durations_are_read_as_the_configuration_writes_them() {
        let read = |text| {
            parse_duration(text)
                .map(|d| d.as_millis())
                .map_err(|e| e.to_string())
        };
        assert_eq!(read("500ms"), Ok(500));
        assert_eq!(read(" 5m "), Ok(300_000));
        assert_eq!(read("1h 30m"), Ok(5_400_000));
        assert_eq!(read("90d"), Ok(90 * 86_400_000));
        assert_eq!(read("2 days"), Ok(2 * 86_400_000));
        assert_eq!(read("0s"), Ok(0));
        assert_eq!(
            read("soon"),
            Err("`soon` is not a duration; write e.g. 500ms, 30s, 5m, 1h or 90d".into())
        );
        assert!(
            read("10")
                .unwrap_err()
                .starts_with("`10` is not a duration")
        );
        assert!(read("-5m").unwrap_err().starts_with("`-5m` is negative"));
        assert!(
            read("1y")
                .unwrap_err()
                .contains("months and years have no fixed length")
        );
    }

    #[test]
    fn durations_are_spoken_to_the_second() {
        assert_eq!(spoken_duration(Duration::from_secs(252)), "4m 12s");
        assert_eq!(spoken_duration(Duration::from_secs(5400)), "1h 30m");
        assert_eq!(spoken_duration(Duration::from_millis(1500)), "1s");
        assert_eq!(spoken_duration(Duration::ZERO), "0s");
    }

    #[test]
    fn failures_read_as_a_few_words_and_count_under_their_code() {
        assert_eq!(
            Failure::Rejected(401).to_string(),
            "token rejected (HTTP 401)"
        );
        assert_eq!(Failure::Refused.to_string(), "connection refused");
        assert_eq!(Failure::Status(429).code(), Code::Status(429));
        assert_eq!(Failure::Refused.code(), Code::Connect);
        assert_eq!(Failure::TooLarge.code(), Code::Decode);
    }
}
