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
use crate::vocabulary::{Secret, parse_duration};

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
    parse: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let written = text(deserializer)?;
    parse(&written).map_err(de::Error::custom)
}

/// `500ms`, `30s`, `5m`, `1h` ([`parse_duration`]); never zero.
pub fn duration<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    parsed(deserializer, |value| {
        let parsed = parse_duration(value)?;
        if parsed.is_zero() {
            return Err("must be longer than zero".into());
        }
        Ok(parsed)
    })
}

/// A string kept exactly as written, whatever it looks like.
pub fn string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    text(deserializer)
}

/// The token: kept exactly as written and never shown in a message.
pub fn secret<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Secret>, D::Error> {
    text(deserializer)
        .map(|token| Some(Secret::new(token)))
        .map_err(|_| de::Error::custom("must be a string"))
}

/// A file path.
pub fn path<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<PathBuf>, D::Error> {
    parsed(deserializer, |value| {
        let value = value.trim();
        Ok((!value.is_empty()).then(|| PathBuf::from(value)))
    })
}

/// An http(s) base address without query, fragment or credentials.
pub fn base_url<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<reqwest::Url>, D::Error> {
    parsed(deserializer, |value| {
        let value = value.trim();
        // `api.example.com` (or `api.example.com:8443`, which parses with a scheme of its own)
        // was meant with https:// before it.
        if !value.contains("://") {
            return Err(format!(
                "`{value}` has no scheme; write https://{value} (or http:// for a plain HTTP API)"
            ));
        }
        let url = reqwest::Url::parse(value).map_err(|e| format!("`{value}` is not a URL: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(format!("`{value}` is not an http(s) URL"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(format!(
                "`{value}` has a query or fragment; give the base address only"
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("holds credentials; put the token in api.token_file instead".into());
        }
        Ok(Some(url))
    })
}

/// One address and port; `:9525` is the Prometheus tools' way of saying every interface.
fn address(value: &str) -> Result<SocketAddr, String> {
    let value = value.trim();
    let full = match value.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => value.to_owned(),
    };
    full.parse().map_err(|_| {
        format!("`{value}` is not an address and port such as 0.0.0.0:9525 or [::1]:9525")
    })
}

/// The addresses to listen on: a list (the file, or the flag given several times), or one
/// string; in either, commas separate several (the environment's way of writing a list). At
/// least one, none twice (port 0, a free port chosen at each bind, may be).
pub fn listen_addresses<'de, D: Deserializer<'de>>(
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
            return Err(de::Error::custom(format!("`{parsed}` is given twice")));
        }
        addresses.push(parsed);
    }
    if addresses.is_empty() {
        return Err(de::Error::custom(
            "no address given; write one such as 0.0.0.0:9525",
        ));
    }
    Ok(addresses)
}

/// A regular expression on asset names.
pub fn regex<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<regex::Regex>, D::Error> {
    parsed(deserializer, |value| {
        regex::Regex::new(value)
            .map(Some)
            .map_err(|e| format!("`{value}` is not a regular expression: {e}"))
    })
}

/// An IANA time zone.
pub fn timezone<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<jiff::tz::TimeZone, D::Error> {
    parsed(deserializer, |value| {
        jiff::tz::TimeZone::get(value.trim()).map_err(|e| {
            format!("`{value}` is not an IANA time zone such as UTC or Europe/Berlin: {e}")
        })
    })
}

/// A log level.
pub fn level<'de, D: Deserializer<'de>>(deserializer: D) -> Result<tracing::Level, D::Error> {
    parsed(deserializer, |value| {
        tracing::Level::from_str(value.trim())
            .map_err(|_| format!("`{value}` is not one of error, warn, info, debug, trace"))
    })
}

/// A log format.
pub fn log_format<'de, D: Deserializer<'de>>(deserializer: D) -> Result<LogFormat, D::Error> {
    parsed(deserializer, |value| match value.trim() {
        "logfmt" => Ok(LogFormat::Logfmt),
        "json" => Ok(LogFormat::Json),
        other => Err(format!("`{other}` is not one of logfmt, json")),
    })
}

/// Anything with a `FromStr` whose message says what is wrong (`N/M` shards).
pub fn from_str<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr<Err = String>,
{
    parsed(deserializer, |value| value.parse())
}

/// A value read from its written form, with the words for a wrong one.
pub trait Written: Sized {
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

/// Most slices `metrics.shards` may ask for: a slice of a million-asset fleet at 1,024 is about
/// a thousand assets, far below what one target can serve.
pub const MAX_SHARDS: usize = 1024;

/// `metrics.shards`: a whole number from 1 to [`MAX_SHARDS`], checked where it is read so that
/// the message says where it was written.
pub fn shards<'de, D: Deserializer<'de>>(deserializer: D) -> Result<usize, D::Error> {
    parsed(deserializer, |value| match value.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_SHARDS).contains(&n) => Ok(n),
        _ => Err(format!("`{value}` is not from 1 to {MAX_SHARDS}")),
    })
}

/// A typed value (a TOML boolean or number), or its textual form (as environment variables give
/// it): `yes` for a boolean is refused as "`yes` is not true or false".
pub fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Written,
{
    parsed(deserializer, |value| {
        T::from_written(value.trim()).ok_or_else(|| format!("`{value}` is not {}", T::EXPECTED))
    })
}
