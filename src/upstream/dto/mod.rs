//! The JSON the API returns, as Rust types, and the decoding rules of the failure policy.
//!
//! Fields whose type the API description leaves open (the snds values, a domain's `ips`, the
//! change values) decode into [`Loose`], which accepts any JSON; fields it defines are typed, so a
//! wrong type there makes the item invalid. A list decodes item by item: an invalid item is
//! skipped and reported, the rest is kept. Unknown fields are ignored everywhere.

use std::fmt;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

mod list;

pub use list::{Convert, DecodedList, ListDecoder, NamedItem, Rejected, decode_list_with, refusal};

/// A JSON value of a field whose type the API does not define.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Loose {
    /// `null`, or the field is missing.
    #[default]
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// Any JSON number.
    Number(f64),
    /// A string, kept as sent.
    Text(String),
    /// An array; only its length is kept.
    Array(usize),
    /// An object; its content is not used.
    Object,
}

impl Loose {
    /// The JSON type's name, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Loose::Null => "null",
            Loose::Bool(_) => "boolean",
            Loose::Number(_) => "number",
            Loose::Text(_) => "string",
            Loose::Array(_) => "array",
            Loose::Object => "object",
        }
    }
}

impl<'de> Deserialize<'de> for Loose {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LooseVisitor;
        impl<'de> Visitor<'de> for LooseVisitor {
            type Value = Loose;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Loose, E> {
                Ok(Loose::Null)
            }
            fn visit_none<E>(self) -> Result<Loose, E> {
                Ok(Loose::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Loose, D::Error> {
                Loose::deserialize(d)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Loose, E> {
                Ok(Loose::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Loose, E> {
                Ok(Loose::Number(v as f64))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Loose, E> {
                Ok(Loose::Number(v as f64))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Loose, E> {
                Ok(Loose::Number(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Loose, E> {
                Ok(Loose::Text(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Loose, E> {
                Ok(Loose::Text(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Loose, A::Error> {
                let mut len = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    len += 1;
                }
                Ok(Loose::Array(len))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Loose, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Loose::Object)
            }
        }
        deserializer.deserialize_any(LooseVisitor)
    }
}

/// The change object: `{"last_check": ...}`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Change {
    /// Change seen at the last check; a number for senderscore and blacklisted, open otherwise.
    #[serde(default)]
    pub last_check: Loose,
}

/// `GET /api/v1/user`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct User {
    /// User identifier.
    pub id: Id,
    /// Project of the user.
    pub project_id: Id,
}

/// An identifier the API sends as an integer; a string is taken as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Id(pub String);

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(i64),
            Uint(u64),
            Text(String),
        }
        Ok(Id(match Raw::deserialize(deserializer)? {
            Raw::Int(v) => v.to_string(),
            Raw::Uint(v) => v.to_string(),
            Raw::Text(v) => v,
        }))
    }
}

/// `GET /api/v1/system-check`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct SystemStatus {
    /// `ok` when the service is operational.
    pub status: String,
    /// Human-readable text.
    #[serde(default)]
    pub message: Option<String>,
}

/// One element of `ip-list` or `domain-list`; the two share every field but the name.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct ListItem {
    /// The address (ip-list).
    #[serde(default)]
    pub ip: Option<String>,
    /// The domain (domain-list).
    #[serde(default)]
    pub domain: Option<String>,
    /// Host names of an address.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub hosts: Vec<String>,
    /// Addresses of a domain; shape not defined by the API.
    #[serde(default)]
    pub ips: Loose,
    /// Current Sender Score; -1 means no score.
    #[serde(default)]
    pub senderscore: Option<f64>,
    /// Previous Sender Score.
    #[serde(default)]
    pub senderscore_prev: Option<f64>,
    /// Sender Score change at the last check.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub senderscore_change: Change,
    /// Number of blacklists listing the asset (the API also calls it a flag).
    #[serde(default)]
    pub blacklisted: Loose,
    /// Blacklisting change at the last check.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub blacklisted_change: Change,
    /// SNDS blocked state; type not defined by the API.
    #[serde(default)]
    pub snds_blocked: Loose,
    /// SNDS blocked change.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub snds_blocked_change: Change,
    /// SNDS reputation colour; type not defined by the API.
    #[serde(default)]
    pub snds_reputation: Loose,
    /// SNDS reputation change.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub snds_reputation_change: Change,
}

/// `GET /api/v1/asset/{asset}`: the parts the exporter uses (everything else is ignored).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct AssetReport {
    /// Tags attached to the asset.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub tags: Vec<String>,
    /// Sender Score history: the newest date for the live metrics, every entry for backfill.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub senderscore_history: Vec<ScoreEntry>,
    /// Blacklisting count history, for backfill.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub blacklisted_history: Vec<CountEntry>,
    /// Listing events, in any order.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub blacklist_history: Vec<BlacklistEvent>,
    /// Number of blacklists listing the asset, as the list says it: what the list poll
    /// compares to know whether this report is behind.
    #[serde(default)]
    pub blacklisted: Loose,
    /// Blacklisting change at the last check, likewise.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub blacklisted_change: Change,
}

/// One entry of `senderscore_history`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct ScoreEntry {
    /// The score, a number written as text (`"82"`); `-1` means no score.
    #[serde(default)]
    pub value: Loose,
    /// When the score was computed, in the API's date format.
    #[serde(default)]
    pub date: Option<String>,
}

/// One entry of `blacklisted_history`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct CountEntry {
    /// How many blacklists listed the asset.
    #[serde(default)]
    pub value: Loose,
    /// When, in the API's date format.
    #[serde(default)]
    pub date: Option<String>,
}

/// One entry of `blacklist_history`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct BlacklistEvent {
    /// When, in the API's date format.
    pub date: String,
    /// The listing status; `Listed` means listed, anything else not.
    pub status: String,
    /// Name of the blacklist.
    pub blacklist: String,
}

fn null_as_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Why a body could not be used at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at JSON path {path})")]
pub struct DecodeError {
    /// Where the problem is, e.g. `$` or `$[3].senderscore`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl DecodeError {
    fn from_serde(prefix: &str, error: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let inner = error.path().to_string();
        let path = if inner == "." || inner.is_empty() {
            prefix.to_owned()
        } else if inner.starts_with('[') {
            format!("{prefix}{inner}")
        } else {
            format!("{prefix}.{inner}")
        };
        DecodeError {
            path,
            message: error.into_inner().to_string(),
        }
    }
}

/// Decodes a whole JSON document into `T`, naming the JSON path of a problem.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value =
        serde_path_to_error::deserialize(&mut de).map_err(|e| DecodeError::from_serde("$", e))?;
    de.end().map_err(|e| DecodeError {
        path: "$".into(),
        message: e.to_string(),
    })?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use crate::vocabulary::{Field, Kind};

    const IP_ITEM: &str = r#"{
        "ip": "192.0.2.10",
        "hosts": ["mx1.example.com", "mail.example.com"],
        "senderscore": 87,
        "senderscore_prev": 90,
        "senderscore_change": {"last_check": -3},
        "blacklisted": 2,
        "blacklisted_change": {"last_check": 1},
        "snds_blocked": null,
        "snds_blocked_change": {"last_check": null},
        "snds_reputation": null,
        "snds_reputation_change": {"last_check": null}
    }"#;

    /// The list as the pollers take it: items as decoded, refused when unusable ones prevail.
    fn decode_list(bytes: &[u8], kind: Kind) -> Result<DecodedList, DecodeError> {
        let list = decode_list_with(bytes, kind, |item| item)?;
        match list.refusal() {
            Some(refused) => Err(refused),
            None => Ok(list),
        }
    }

    #[test]
    fn an_ip_item_of_the_documented_shape_decodes_field_by_field() {
        let list = decode_list(format!("[{IP_ITEM}]").as_bytes(), Kind::Ip).unwrap();
        assert_eq!(list.items.len(), 1);
        let NamedItem { name, item } = &list.items[0];
        assert_eq!(name, "192.0.2.10");
        assert_eq!(item.hosts, ["mx1.example.com", "mail.example.com"]);
        assert_eq!(item.senderscore, Some(87.0));
        assert_eq!(item.senderscore_prev, Some(90.0));
        assert_eq!(item.senderscore_change.last_check, Loose::Number(-3.0));
        assert_eq!(item.blacklisted, Loose::Number(2.0));
        assert_eq!(item.blacklisted_change.last_check, Loose::Number(1.0));
        assert_eq!(item.snds_blocked, Loose::Null);
        assert_eq!(item.snds_reputation_change.last_check, Loose::Null);
        assert_eq!(list.rejected, Rejected::default());
    }

    #[test]
    fn a_domain_item_with_nulls_and_minus_one_decodes() {
        let body = r#"[{
            "domain": "example.org", "ips": null, "senderscore": null, "senderscore_prev": -1,
            "senderscore_change": {"last_check": null}, "blacklisted": 0,
            "blacklisted_change": {"last_check": 0}, "snds_blocked": null,
            "snds_blocked_change": {"last_check": null}, "snds_reputation": null,
            "snds_reputation_change": {"last_check": null}
        }]"#;
        let list = decode_list(body.as_bytes(), Kind::Domain).unwrap();
        let item = &list.items[0].item;
        assert_eq!(list.items[0].name, "example.org");
        assert_eq!(item.senderscore, None);
        assert_eq!(item.senderscore_prev, Some(-1.0));
        assert_eq!(item.ips, Loose::Null);
        assert_eq!(item.blacklisted, Loose::Number(0.0));
    }

    #[test]
    fn snds_fields_of_any_json_type_decode_without_failing() {
        let body = r#"[
            {"ip": "a", "snds_blocked": "Yes", "snds_reputation": "GREEN",
             "snds_blocked_change": {"last_check": true}},
            {"ip": "b", "snds_blocked": false, "snds_reputation": 2,
             "snds_reputation_change": {"last_check": "up"}},
            {"ip": "c", "snds_blocked": [1, 2], "snds_reputation": {"x": 1}}
        ]"#;
        let list = decode_list(body.as_bytes(), Kind::Ip).unwrap();
        let items: Vec<_> = list.items.iter().map(|n| &n.item).collect();
        assert_eq!(items[0].snds_blocked, Loose::Text("Yes".into()));
        assert_eq!(items[0].snds_reputation, Loose::Text("GREEN".into()));
        assert_eq!(items[0].snds_blocked_change.last_check, Loose::Bool(true));
        assert_eq!(items[1].snds_blocked, Loose::Bool(false));
        assert_eq!(items[1].snds_reputation, Loose::Number(2.0));
        assert_eq!(
            items[1].snds_reputation_change.last_check,
            Loose::Text("up".into())
        );
        assert_eq!(items[2].snds_blocked, Loose::Array(2));
        assert_eq!(items[2].snds_reputation, Loose::Object);
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let body =
            r#"[{"ip": "192.0.2.1", "senderscore": 70, "owner": {"team": "x"}, "new": [1]}]"#;
        let list = decode_list(body.as_bytes(), Kind::Ip).unwrap();
        assert_eq!(list.items[0].item.senderscore, Some(70.0));
    }

    #[test]
    fn a_duplicated_asset_is_kept_once_with_its_first_values() {
        let body =
            r#"[{"ip": "192.0.2.1", "senderscore": 70}, {"ip": "192.0.2.1", "senderscore": 10}]"#;
        let list = decode_list(body.as_bytes(), Kind::Ip).unwrap();
        assert_eq!(list.items.len(), 1);
        assert_eq!(list.items[0].item.senderscore, Some(70.0));
        assert_eq!(list.duplicates, 1);
    }

    #[test]
    fn a_wrong_type_in_a_defined_field_rejects_only_that_item_and_names_the_path() {
        let body = r#"[{"ip": "192.0.2.1", "senderscore": 70}, {"ip": "192.0.2.2", "senderscore": "high"}]"#;
        let list = decode_list(body.as_bytes(), Kind::Ip).unwrap();
        assert_eq!(list.items.len(), 1);
        assert_eq!(list.rejected.count, 1);
        assert_eq!(list.rejected.first[0].path, "$[1].senderscore");
        assert!(list.rejected.first[0].message.contains("invalid type"));
        assert_eq!(
            list.rejected.by_field,
            BTreeMap::from([(Field::Senderscore, 1)])
        );
    }

    #[test]
    fn an_item_without_its_name_is_rejected() {
        let list = decode_list(br#"[{"senderscore": 70}, {"ip": "192.0.2.1"}]"#, Kind::Ip).unwrap();
        assert_eq!(list.items.len(), 1);
        assert_eq!(list.rejected.first[0].path, "$[0].ip");
        assert_eq!(list.rejected.by_field, BTreeMap::from([(Field::Ip, 1)]));
    }

    #[test]
    fn a_non_empty_list_of_which_nothing_can_be_used_fails_the_whole_list() {
        for body in [
            &br#"[[[[1]]], "192.0.2.1", 3, null]"#[..],
            br#"[{"senderscore": 70}]"#,
        ] {
            let error = decode_list(body, Kind::Ip).unwrap_err();
            assert_eq!(error.path, "$");
            assert!(error.message.starts_with("none of the "), "{error}");
        }
        let empty = decode_list(b"[]", Kind::Ip).unwrap();
        assert!(empty.items.is_empty() && empty.rejected.count == 0);
    }

    #[test]
    fn a_list_whose_unusable_items_outnumber_the_usable_ones_is_refused_and_a_tie_is_not() {
        let refused = decode_list(br#"[{"ip": "192.0.2.1"}, 1, 2]"#, Kind::Ip).unwrap_err();
        assert_eq!(
            refused.message,
            "2 of the 3 items cannot be used, more than can (the first: not an object: `1` at \
             $[1]); the list is not taken as the fleet"
        );
        let tie = decode_list(br#"[{"ip": "192.0.2.1"}, 1]"#, Kind::Ip).unwrap();
        assert_eq!((tie.items.len(), tie.rejected.count), (1, 1));
    }

    #[test]
    fn unusable_items_keep_only_a_count_and_the_first_few_reasons() {
        let mut body = String::from(r#"[{"ip": "192.0.2.1"}"#);
        for i in 0..200_000 {
            body.push_str(if i % 2 == 0 { ",7" } else { r#",{"ip": 5}"# });
        }
        body.push(']');
        let list = decode_list_with(body.as_bytes(), Kind::Ip, |item| item).unwrap();
        assert_eq!(list.items.len(), 1);
        assert_eq!(list.rejected.count, 200_000);
        assert_eq!(list.rejected.first.len(), Rejected::KEPT);
        assert_eq!(
            list.rejected.by_field,
            BTreeMap::from([(Field::Ip, 100_000), (Field::Item, 100_000)])
        );
        assert!(list.refusal().is_some());
        assert!(
            list.items.capacity() < 16,
            "sized by what is kept, not by the element count"
        );
    }

    #[test]
    fn a_rejected_item_is_counted_under_the_field_it_failed_on() {
        let field = |item: &str| {
            let body = format!(r#"[{{"ip": "192.0.2.1"}}, {{"ip": "192.0.2.2"}}, {item}]"#);
            let list = decode_list(body.as_bytes(), Kind::Ip).unwrap();
            let fields: Vec<Field> = list.rejected.by_field.into_keys().collect();
            fields
        };
        assert_eq!(
            field(r#"{"ip": "a", "senderscore": "x"}"#),
            [Field::Senderscore]
        );
        assert_eq!(field(r#"{"ip": "a", "hosts": ["x", 1]}"#), [Field::Hosts]);
        assert_eq!(
            field(r#"{"ip": "a", "senderscore_change": 5}"#),
            [Field::SenderscoreChange]
        );
        assert_eq!(field("7"), [Field::Item]);
        assert_eq!(field(r#"{"ip": 5}"#), [Field::Ip]);
    }

    #[test]
    fn a_body_that_is_not_an_array_fails_the_whole_list() {
        let error = decode_list(br#"{"error": "nope"}"#, Kind::Ip).unwrap_err();
        assert_eq!(error.path, "$");
        let error = decode_list(br#"[{"ip": "a"}"#, Kind::Ip).unwrap_err();
        assert!(error.message.contains("EOF"), "{error}");
    }

    #[test]
    fn an_asset_report_decodes_the_parts_in_use_and_ignores_the_rest() {
        let body = br#"{
            "value": "192.0.2.1", "tags": ["team-mail", "pool:bulk"], "hostname": ["mx.example.com"],
            "senderscore": 80, "senderscore_prev": 82, "senderscore_change": {"last_check": -2},
            "senderscore_history": [{"value": "80", "date": "21st Nov 2026 02:15pm"}],
            "blacklisted": 1, "blacklisted_prev": 0, "blacklisted_change": {"last_check": 1},
            "blacklisted_history": [{"value": 1, "date": "21st Nov 2026 02:15pm"}],
            "blacklist_history": [
                {"date": "20th Nov 2026 08:00am", "status": "Listed", "blacklist": "Spamhaus SBL"}
            ],
            "snds_blocked": null, "snds_blocked_change": {"last_check": null},
            "snds_reputation": null, "snds_reputation_change": {"last_check": null},
            "snds_data": [], "hostname_history": [], "administrative_notes": []
        }"#;
        let report: AssetReport = decode(body).unwrap();
        assert_eq!(report.tags, ["team-mail", "pool:bulk"]);
        assert_eq!(
            report.senderscore_history[0].date.as_deref(),
            Some("21st Nov 2026 02:15pm")
        );
        assert_eq!(report.blacklist_history[0].blacklist, "Spamhaus SBL");
        assert_eq!(report.blacklist_history[0].status, "Listed");
    }

    #[test]
    fn user_and_system_status_decode() {
        let user: User =
            decode(br#"{"id": 42, "name": "N", "email": "n@example.com", "project_id": 7}"#)
                .unwrap();
        assert_eq!(user.id, Id("42".into()));
        assert_eq!(user.project_id, Id("7".into()));
        let status: SystemStatus = decode(br#"{"status": "ok", "message": "fine"}"#).unwrap();
        assert_eq!(status.status, "ok");
        assert_eq!(status.message.as_deref(), Some("fine"));
    }
}
