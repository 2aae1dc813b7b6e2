//! Checks of sizes that a file *claims*, made before parquet allocates from them.
//!
//! parquet trusts counts and lengths read from a file: a thrift list that claims 2³¹
//! elements becomes `Vec::with_capacity(2³¹)` (an abort when the allocation fails), a schema
//! element that claims a million children or a million levels of nesting overflows the stack,
//! a page header that claims 2 GiB uncompressed allocates (and for LZ4 and Snappy zero-fills)
//! 2 GiB before the decompressor finds out. So before parquet sees them:
//!
//! - **Footer metadata** and **page indexes** are walked once with a minimal Thrift
//!   compact-protocol reader ([`thrift`]), which also checks that every field has the type
//!   parquet's decoders read it as (they go by field id, whatever the type sent).
//! - **Counts** of the decoded footer agree with each other: a row group's rows with its
//!   column chunks' values ([`counts`]).
//! - **Page headers** of every column chunk a decoder is about to read are checked against the
//!   chunk and the scan's page limit ([`pages`]), and a dictionary-encoded data page must have
//!   a dictionary page before it (parquet's decoders panic otherwise).
//! - **The Arrow schema hint** (`ARROW:schema`) is walked before parquet converts it, refusing
//!   what arrow-ipc's conversion would panic on ([`ipc`]).
//!
//! A leaf: it imports only `io::chunk` (the fetched bytes) and the error type. Invariant: these
//! walks read only bytes already fetched and allocate nothing proportional to a claimed size;
//! they reject, never repair.

pub(crate) mod counts;
pub(crate) mod ipc;
pub(crate) mod nested;
pub(crate) mod pages;
pub(crate) mod thrift;

pub(crate) use pages::{check_row_group, page_limit};
