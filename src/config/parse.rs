//! Serde helpers that read each typed setting from its written form, whichever layer it comes
//! from: the TOML file gives strings, numbers and booleans; the environment gives strings only.
//! Every message names what is wrong and what would be right; the key is added by the caller.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};

use crate::logging::LogFormat;
use crate::vocabulary::{DurationError, Secret, parse_duration};

/// Why a written value is not a value of its key; the caller names the key and where it was
/// written.
#[derive(Debug, thiserror::Error)]
pub(super) enum InvalidValue {
    /// Not a duration.
    #[error(transparent)]
    Duration(#[from] DurationError),
    /// A duration of zero where one is needed.
    #[error("must be longer than zero")]
    Zero,
    /// A base address written without `https://`.
    #[error("`{0}` has no scheme; write https://{0} (or http:// for a plain HTTP API)")]
    NoScheme(String),
    /// Not a URL.
    #[error("`{value}` is not a URL: {error}")]
    NotUrl {
        /// As written.
        value: String,
        /// Why.
        error: url::ParseError,
    },
    /// A URL, but not http(s) with a host.
    #[error("`{0}` is not an http(s) URL")]
    NotHttp(String),
    /// A base address with a query or fragment.
    #[error("`{0}` has a query or fragment; give the base address only")]
    QueryOrFragment(String),
    /// A base address with a user or password in it.
    #[error("holds credentials; put the token in api.token_file instead")]
    Credentials,
    /// Not an address and port.
    #[error("`{0}` is not an address and port such as 0.0.0.0:9525 or [::1]:9525")]
    NotAddress(String),
    /// An address given twice.
    #[error("`{0}` is given twice")]
    Twice(SocketAddr),
    /// No address at all.
    #[error("no address given; write one such as 0.0.0.0:9525")]
    NoAddress,
    /// Not a regular expression.
    #[error("`{value}` is not a regular expression: {error}")]
    NotRegex {
        /// As written.
        value: String,
        /// Why.
        error: regex::Error,
    },
    /// Not a time zone.
    #[error("`{value}` is not an IANA time zone such as UTC or Europe/Berlin: {error}")]
    NotTimeZone {
        /// As written.
        value: String,
        /// Why.
        error: jiff::Error,
    },
    /// Not a log level.
    #[error("`{0}` is not one of error, warn, info, debug, trace")]
    NotLevel(String),
    /// Not a log format.
    #[error("`{0}` is not one of logfmt, json")]
    NotLogFormat(String),
    /// A shard count out of range.
    #[error("`{0}` is not from 1 to {MAX_SHARDS}")]
    Shards(String),
    /// Not a value of the type (`true or false`, `a whole number`).
    #[error("`{value}` is not {expected}")]
    NotA {
        /// As written.
        value: String,
        /// What would be right.
        expected: &'static str,
    },
    /// What a `FromStr` said (`N/M` shards).
    #[error("{0}")]
    Parse(Box<dyn std::error::Error + Send + Sync>),
}

/// A string, or a number or boolean written where a string was meant.
fn text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    struct Text;
    impl Visitor<'_> for Text {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E>(self, v: &str) -> Result<String, E> {
            Ok(v.to_owned())
        }
        fn visit_i64<E>(self, v: i64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_u64<E>(self, v: u64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_f64<E>(self, v: f64) -> Result<String, E> {
            Ok(v.to_string())
        }
        fn visit_bool<E>(self, v: bool) -> Result<String, E> {
            Ok(v.to_string())
        }
    }
    deserializer.deserialize_any(Text)
}

/// Reads the written form and converts it with `parse`, whose message becomes the error.
fn parsed<'de, D, T>(
    deserializer: D,
    parse: impl FnOnce(&str) -> Result<T, InvalidValue>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let written = text(deserializer)?;
    parse(&written).map_err(de::Error::custom)
}

/// `500ms`, `30s`, `5m`, `1h` ([`parse_duration`]); never zero.
pub(super) fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    parsed(deserializer, |value| {
        let parsed = parse_duration(value)?;
        if parsed.is_zero() {
            return Err(InvalidValue::Zero);
        }
        Ok(parsed)
    })
}

/// A string kept exactly as written, whatever it looks like.
pub(super) fn string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    text(deserializer)
}

/// The token: kept exactly as written and never shown in a message.
pub(super) fn secret<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Secret>, D::Error> {
    text(deserializer)
        .map(|token| Some(Secret::new(token)))
        .map_err(|_| de::Error::custom("must be a string"))
}

/// A file path.
pub(super) fn path<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<PathBuf>, D::Error> {
    parsed(deserializer, |value| {
        let value = value.trim();
        Ok((!value.is_empty()).then(|| PathBuf::from(value)))
    })
}

/// An http(s) base address without query, fragment or credentials.
pub(super) fn base_url<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<reqwest::Url>, D::Error> {
    parsed(deserializer, |value| {
        let value = value.trim();
        // `api.example.com` (or `api.example.com:8443`, which parses with a scheme of its own)
        // was meant with https:// before it.
        if !value.contains("://") {
            return Err(InvalidValue::NoScheme(value.to_owned()));
        }
        let url = reqwest::Url::parse(value).map_err(|error| InvalidValue::NotUrl {
            value: value.to_owned(),
            error,
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(InvalidValue::NotHttp(value.to_owned()));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(InvalidValue::QueryOrFragment(value.to_owned()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(InvalidValue::Credentials);
        }
        Ok(Some(url))
    })
}

/// One address and port; `:9525` is the Prometheus tools' way of saying every interface.
fn address(value: &str) -> Result<SocketAddr, InvalidValue> {
    let value = value.trim();
    let full = match value.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => value.to_owned(),
    };
    full.parse()
        .map_err(|_| InvalidValue::NotAddress(value.to_owned()))
}

/// The addresses to listen on: a list (the file, or the flag given several times), or one
/// string; in either, commas separate several (the environment's way of writing a list). At
/// least one, none twice (port 0, a free port chosen at each bind, may be).
pub(super) fn listen_addresses<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<SocketAddr>, D::Error> {
    struct Addresses;
    impl<'de> Visitor<'de> for Addresses {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an address and port, or a list of them")
        }
        fn visit_str<E>(self, v: &str) -> Result<Vec<String>, E> {
            Ok(v.split(',').map(str::to_owned).collect())
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
            let mut written = Vec::new();
            while let Some(one) = seq.next_element::<String>()? {
                written.extend(one.split(',').map(str::to_owned));
            }
            Ok(written)
        }
    }
    let written = deserializer.deserialize_any(Addresses)?;
    let mut addresses: Vec<SocketAddr> = Vec::with_capacity(written.len());
    for one in &written {
        let parsed = address(one).map_err(de::Error::custom)?;
        if parsed.port() != 0 && addresses.contains(&parsed) {
            return Err(de::Error::custom(InvalidValue::Twice(parsed)));
        }
        addresses.push(parsed);
    }
    if addresses.is_empty() {
        return Err(de::Error::custom(InvalidValue::NoAddress));
    }
    Ok(addresses)
}

/// A regular expression on asset names.
pub(super) fn regex<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<regex::Regex>, D::Error> {
    parsed(deserializer, |value| {
        regex::Regex::new(value)
            .map(Some)
            .map_err(|error| InvalidValue::NotRegex {
                value: value.to_owned(),
                error,
            })
    })
}

/// An IANA time zone.
pub(super) fn timezone<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<jiff::tz::TimeZone, D::Error> {
    parsed(deserializer, |value| {
        jiff::tz::TimeZone::get(value.trim()).map_err(|error| InvalidValue::NotTimeZone {
            value: value.to_owned(),
            error,
        })
    })
}

/// A log level.
pub(super) fn level<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<tracing::Level, D::Error> {
    parsed(deserializer, |value| {
        tracing::Level::from_str(value.trim()).map_err(|_| InvalidValue::NotLevel(value.to_owned()))
    })
}

/// A log format.
pub(super) fn log_format<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<LogFormat, D::Error> {
    parsed(deserializer, |value| match value.trim() {
        "logfmt" => Ok(LogFormat::Logfmt),
        "json" => Ok(LogFormat::Json),
        other => Err(InvalidValue::NotLogFormat(other.to_owned())),
    })
}

/// Anything with a `FromStr` whose error says what is wrong (`N/M` shards).
pub(super) fn from_str<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err: std::error::Error + Send + Sync + 'static>,
{
    parsed(deserializer, |value| {
        value.parse().map_err(|e| InvalidValue::Parse(Box::new(e)))
    })
}

/// A value read from its written form, with the words for a wrong one.
pub(super) trait Written: Sized {
    /// What a right value looks like, after "is not".
    const EXPECTED: &'static str;
    /// The value `text` writes, if it writes one.
    fn from_written(text: &str) -> Option<Self>;
}

impl Written for bool {
    const EXPECTED: &'static str = "true or false";
    fn from_written(text: &str) -> Option<bool> {
        match text {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }
}

impl Written for u64 {
    const EXPECTED: &'static str = "a whole number";
    fn from_written(text: &str) -> Option<u64> {
        text.parse().ok()
    }
}

impl Written for usize {
    const EXPECTED: &'static str = "a whole number";
    fn from_written(text: &str) -> Option<usize> {
        text.parse().ok()
    }
}

/// Most shards `metrics.shards` may ask for: a shard of a million-asset fleet at 1,024 is about
/// a thousand assets, far below what one target can serve.
pub(super) const MAX_SHARDS: usize = 1024;

/// `metrics.shards`: a whole number from 1 to [`MAX_SHARDS`], checked where it is read so that
/// the message says where it was written.
pub(super) fn shards<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    parsed(deserializer, |value| match value.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_SHARDS).contains(&n) => Ok(n),
        _ => Err(InvalidValue::Shards(value.to_owned())),
    })
}

/// A typed value (a TOML boolean or number), or its textual form (as environment variables give
/// it): `yes` for a boolean is refused as "`yes` is not true or false".
pub(super) fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Written,
{
    parsed(deserializer, |value| {
        T::from_written(value.trim()).ok_or_else(|| InvalidValue::NotA {
            value: value.to_owned(),
            expected: T::EXPECTED,
        })
    })
}
