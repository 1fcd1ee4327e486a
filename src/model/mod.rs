//! The exporter's model of the fleet: assets and their report data, mapped from the API's JSON
//! by the value rules of docs/upstream.md, independent of how they are stored or written; and
//! what a list said of each asset's values, kept to tell the next list's changes no list
//! showed ([`memory`]).

pub mod asset;
pub mod memory;
pub mod report;
pub mod shown;

pub use crate::vocabulary::Unrecognized;
pub use asset::{Asset, AssetDecoder, AssetSet, AssetSink, DecodedAssets, worst_first};
pub use memory::{ListMemory, Remembering};
pub use report::{
    Blacklisting, Blacklistings, CurrentListing, Listing, NEWEST_SHOWN, Report, Reports,
};
pub use shown::Shown;
