//! Plan: everything decided about a file between its footer and its first byte of data, on
//! the decode pool, without IO.
//!
//! - [`file`]: a task's file opened ([`FileRun`](file::FileRun)): columns mapped, filter
//!   resolved and judged, selections built.
//! - [`mapping`]: output columns ↔ file columns (field id, name mapping, name; nested), casts,
//!   constants.
//! - [`project`]: the projection of a plain scan and its schema check.
//! - [`prune`]: what statistics, the page index and bloom filters prove about a filter.
//! - [`selection`]: the rows of each row group a task reads (byte range, row groups, deletes,
//!   the caller's selection).
//! - [`union`]: one schema for plain files that differ (union by name), and each file mapped
//!   to it.
//! - [`slots`]: row groups → slots → parts, and the byte ranges each needs.
//!
//! Imports `footer` (the parsed metadata), `io::chunk` and the leaf modules; never the driver,
//! the decoders or the reader.

pub(crate) mod file;
pub(crate) mod mapping;
pub(crate) mod project;
pub(crate) mod prune;
pub(crate) mod selection;
pub(crate) mod slots;
pub(crate) mod union;
