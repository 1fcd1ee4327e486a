//! A list decoded item by item as its body arrives: each item kept or skipped and counted,
//! and the list refused when its unusable items prevail.

use std::collections::{BTreeMap, HashSet};

use serde_json::value::RawValue;

use super::{DecodeError, ListItem};
use crate::upstream::json_array::ArraySplitter;
use crate::vocabulary::{Field, Kind};

/// A list endpoint's answer, item by item.
#[derive(Debug)]
pub struct DecodedList<T = NamedItem> {
    /// The valid items, first occurrence of each name only, in the order sent.
    pub items: Vec<T>,
    /// Items that were skipped: counted, the first few kept with their reason.
    pub rejected: Rejected,
    /// Number of items dropped because their name had been seen before.
    pub duplicates: usize,
}

impl<T> DecodedList<T> {
    /// Why the list must not be taken as the fleet, if it must not: some items are unusable
    /// and they outnumber the usable ones (all of them, or 5,000,000 beside one), so the
    /// answer says more about a broken API than about the fleet.
    pub fn refusal(&self) -> Option<DecodeError> {
        refusal(&self.rejected, self.items.len())
    }
}

/// [`DecodedList::refusal`] for a list with `usable` usable items.
pub fn refusal(rejected: &Rejected, usable: usize) -> Option<DecodeError> {
    if rejected.count == 0 || rejected.count <= usable {
        return None;
    }
    let first = rejected.first.first().map_or(String::new(), |first| {
        format!(" (the first: {} at {})", first.message, first.path)
    });
    let message = if usable == 0 {
        format!("none of the {} items can be used{first}", rejected.count)
    } else {
        format!(
            "{} of the {} items cannot be used, more than can{first}; the list is not taken \
             as the fleet",
            rejected.count,
            rejected.count + usable
        )
    };
    Some(DecodeError {
        path: "$".into(),
        message,
    })
}

/// The unusable items of a list: memory stays proportional to what is kept, whatever their
/// number.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// How many items were unusable.
    pub count: usize,
    /// The first few, with their reason, for the log.
    pub first: Vec<DecodeError>,
    /// How many failed on each field (the `field` label of
    /// `reputation_unrecognized_values_total`; `item` for an element that is no item at all).
    pub by_field: BTreeMap<Field, u64>,
}

impl Rejected {
    /// Reasons kept for the log.
    pub const KEPT: usize = 5;

    fn push(&mut self, field: Field, error: DecodeError) {
        self.count += 1;
        *self.by_field.entry(field).or_default() += 1;
        if self.first.len() < Self::KEPT {
            self.first.push(error);
        }
    }

    /// An element that is no item at all (`field="item"`); its reason is made only when kept.
    fn push_with(&mut self, error: impl FnOnce() -> DecodeError) {
        self.count += 1;
        *self.by_field.entry(Field::Item).or_default() += 1;
        if self.first.len() < Self::KEPT {
            self.first.push(error());
        }
    }
}

/// A JSON value for a log line: its first 40 characters.
fn shortened(json: &str) -> String {
    match json.char_indices().nth(40) {
        Some((end, _)) => format!("{}...", &json[..end]),
        None => json.to_owned(),
    }
}

/// The list item field an error inside an item is in (`$[3].senderscore_change.last_check`:
/// `senderscore_change`), as serde_path_to_error found it; `item` when it is at the element
/// itself or at no known field.
fn item_field(path: &serde_path_to_error::Path) -> Field {
    match path.iter().next() {
        Some(serde_path_to_error::Segment::Map { key }) => {
            Field::of_item_key(key).unwrap_or(Field::Item)
        }
        _ => Field::Item,
    }
}

/// A list item with its name taken out of `ip` or `domain`.
#[derive(Debug, Clone)]
pub struct NamedItem {
    /// The asset's name, as the API spells it.
    pub name: String,
    /// Everything else.
    pub item: ListItem,
}

/// Decodes `ip-list` or `domain-list` (the list of `kind`) from a whole body: [`ListDecoder`]
/// fed at once.
pub fn decode_list_with<T>(
    bytes: &[u8],
    kind: Kind,
    convert: impl FnMut(NamedItem) -> T,
) -> Result<DecodedList<T>, DecodeError> {
    let mut decoder = ListDecoder::new(kind, convert);
    decoder.feed(bytes)?;
    decoder.finish()
}

/// Decodes `ip-list` or `domain-list` as its bytes arrive and hands each usable item to
/// `convert` as soon as it is decoded, so that neither the body nor the decoded items are ever
/// all alive at once: only the element being read is buffered.
///
/// The body must be a JSON array; anything else (or JSON that is not valid) fails the whole
/// poll. Each element then decodes on its own, so one bad element costs only itself: invalid
/// items are counted (the first few kept), and later duplicates of a name dropped.
pub struct ListDecoder<F, T> {
    splitter: ArraySplitter,
    items: ListSeed<F, T>,
    /// Names seen so far: sized by the usable items as they come, never by the element count.
    seen: HashSet<String>,
}

/// What a [`ListDecoder`] turns each usable item into: any `FnMut(NamedItem) -> T`, or a
/// value of its own that the decoder hands back at the end ([`ListDecoder::finish_with`]).
pub trait Convert<T> {
    /// One usable item, as soon as it is decoded.
    fn convert(&mut self, item: NamedItem) -> T;
}

impl<T, F: FnMut(NamedItem) -> T> Convert<T> for F {
    fn convert(&mut self, item: NamedItem) -> T {
        self(item)
    }
}

impl<F, T> ListDecoder<F, T>
where
    F: Convert<T>,
{
    /// A decoder of the list of `kind`, whose names are in `ip` or `domain`.
    pub fn new(kind: Kind, convert: F) -> Self {
        ListDecoder {
            splitter: ArraySplitter::default(),
            items: ListSeed {
                kind,
                convert,
                out: DecodedList {
                    items: Vec::new(),
                    rejected: Rejected::default(),
                    duplicates: 0,
                },
            },
            seen: HashSet::new(),
        }
    }

    /// Reads the next bytes of the body; an error fails the whole list.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        let (items, seen) = (&mut self.items, &mut self.seen);
        self.splitter.feed(chunk, &mut |index, bytes| {
            // The element's own syntax: JSON that is not valid fails the list, as a body that
            // is not JSON would.
            let element: &RawValue = serde_json::from_slice(bytes).map_err(|e| DecodeError {
                path: format!("$[{index}]"),
                message: e.to_string(),
            })?;
            items.item(index, element, seen);
            Ok(())
        })
    }

    /// The body has ended: the list, unless it was cut short.
    pub fn finish(self) -> Result<DecodedList<T>, DecodeError> {
        self.finish_with().map(|(list, _)| list)
    }

    /// As [`ListDecoder::finish`], with the converter back.
    pub fn finish_with(self) -> Result<(DecodedList<T>, F), DecodeError> {
        self.splitter.finish()?;
        Ok((self.items.out, self.items.convert))
    }
}

/// What [`ListDecoder`] makes of each element.
struct ListSeed<F, T> {
    /// The list: its items' names are in `ip` or `domain`.
    kind: Kind,
    convert: F,
    out: DecodedList<T>,
}

impl<F, T> ListSeed<F, T>
where
    F: Convert<T>,
{
    fn item(&mut self, index: usize, element: &RawValue, seen: &mut HashSet<String>) {
        if !element.get().starts_with('{') {
            // No object at all (a raw value's text has no leading space): nothing to decode.
            self.out.rejected.push_with(|| DecodeError {
                path: format!("$[{index}]"),
                message: format!("not an object: `{}`", shortened(element.get())),
            });
            return;
        }
        let mut item = match serde_json::from_str::<ListItem>(element.get()) {
            Ok(item) => item,
            Err(_) => {
                // Decode again, slowly, only to say where the problem is.
                let prefix = format!("$[{index}]");
                let mut de = serde_json::Deserializer::from_str(element.get());
                let (field, error) = match serde_path_to_error::deserialize::<_, ListItem>(&mut de)
                {
                    Err(e) => (item_field(e.path()), DecodeError::from_serde(&prefix, e)),
                    Ok(_) => (
                        Field::Item,
                        DecodeError {
                            path: prefix,
                            message: "invalid item".into(),
                        },
                    ),
                };
                self.out.rejected.push(field, error);
                return;
            }
        };
        let name_field = self.kind.name_field();
        let name = match self.kind {
            Kind::Ip => item.ip.take(),
            Kind::Domain => item.domain.take(),
        };
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            let key = name_field.label();
            self.out.rejected.push(
                name_field,
                DecodeError {
                    path: format!("$[{index}].{key}"),
                    message: format!("missing or empty `{key}`"),
                },
            );
            return;
        };
        if !seen.insert(name.clone()) {
            self.out.duplicates += 1;
            return;
        }
        self.out
            .items
            .push(self.convert.convert(NamedItem { name, item }));
    }
}
