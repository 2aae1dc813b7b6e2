//! Input: what a scan reads, turned into files. URLs, local paths and the caller's stores are
//! parsed ([`location`]), given a store ([`stores`], with the retry policy of [`retry`]) and,
//! for plain scans, listed into the ordered list of files ([`list`]). Tasks name their file
//! themselves and only need a store.
//!
//! The first stage of the pipeline: it imports no other stage.

pub(crate) mod hive;
pub(crate) mod list;
pub(crate) mod location;
pub(crate) mod retry;
pub(crate) mod store_keys;
pub(crate) mod stores;

pub use hive::Partitioning;
pub use list::{Dataset, DatasetFile};
pub use location::ObjectRef;
pub(crate) use location::{FileRef, Input};
pub(crate) use stores::Stores;
