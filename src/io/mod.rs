//! IO: byte ranges of objects become GET requests ([`fetch`]), on the tokio runtime only, and
//! the fetched pieces a [`SparseChunk`](chunk::SparseChunk) that the decoders (parquet's
//! reader, rayquet's own) read as if it were the whole file ([`chunk`]).
//!
//! Imports only `input` (which store a file is in). Nothing here decodes.

pub(crate) mod chunk;
pub(crate) mod fetch;
