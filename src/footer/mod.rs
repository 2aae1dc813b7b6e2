//! Footers: fetch the end of a file ([`fetch`], IO runtime) and parse its metadata and page
//! index into the [`FileMeta`](meta::FileMeta) every unit of the file shares ([`meta`], decode
//! pool).
//!
//! Imports `input`, `io` and `validate`; the planning and decoding stages read `FileMeta`.

pub(crate) mod fetch;
pub(crate) mod meta;

pub use fetch::read_metadata;
pub(crate) use meta::{FileMeta, Raw};
