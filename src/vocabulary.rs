//! Words every part of the exporter shares: which endpoint, which kind of asset, how a request
//! ended, the SNDS colours, and the secret token. A leaf: it imports nothing of the crate.

use std::fmt;

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
    pub fn name_field(self) -> &'static str {
        self.label()
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

/// A value the exporter could not map to a sample.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Unrecognized {
    /// The API field, e.g. `snds_blocked`: the `field` label of the counter.
    pub field: &'static str,
    /// The value as seen (strings shortened), for the log line.
    pub value: String,
    /// How many values this stands for (many dropped host names are one line in the log).
    pub count: u64,
}

impl Unrecognized {
    /// One value of `field` that could not be used.
    pub fn new(field: &'static str, value: impl Into<String>) -> Self {
        Unrecognized {
            field,
            value: value.into(),
            count: 1,
        }
    }

    /// Every `field` label value: the list item fields, `item` for a list element that is not
    /// an item at all, and the report dates.
    pub const FIELDS: [&'static str; 17] = [
        "ip",
        "domain",
        "hosts",
        "ips",
        "senderscore",
        "senderscore_prev",
        "senderscore_change",
        "blacklisted",
        "blacklisted_change",
        "snds_blocked",
        "snds_blocked_change",
        "snds_reputation",
        "snds_reputation_change",
        "item",
        "tags",
        "blacklist_history.date",
        "senderscore_history.date",
    ];
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
