//! Decode: everything that runs on the rayon pool once a slot's bytes are fetched.
//!
//! - [`stage`]: the filter stage of late materialization (decode the filter's columns,
//!   evaluate exactly, return the rows to deliver).
//! - [`part`]: a part's decoder ([`PartDecoder`](part::PartDecoder)) over the fetched bytes:
//!   parquet's reader (through [`pages`]) or the [`direct`] reader, parking when the consumer
//!   is behind.
//! - [`assemble`]: a slot's part batches joined and mapped to the output batch.
//! - [`dict_filter`]: the filter stage on dictionary indices when every filter column is
//!   dictionary-encoded (each predicate evaluated once per dictionary entry).
//! - [`dictionary`]: a flat column chunk read as its dictionary and the rows' indices, with
//!   [`rle`] decoding the indices.
//! - [`direct`]: a part's flat columns read with a row selection, only the selected rows
//!   decoded, straight into the output arrays; parquet's reader takes over on anything else.
//! - [`flat`]: flat columns and their data pages split into levels and values, as both
//!   readers above parse them.
//! - [`positions`]: the row-index column.
//! - [`scratch`]: row buffers (positions, dictionary indices) a decode thread reuses.
//! - [`byte_pages`]: PLAIN byte-array pages checked before parquet's reader may skip in them
//!   (its skip does not check their lengths).
//! - [`pages`]: pages decompressed into pooled buffers ([`crate::pool`]; snappy pages by
//!   [`snappy`]), decoded by parquet's decoders (parts, the filter stage's row path) or walked
//!   by the direct reader.
//!
//! Imports `footer` (`FileMeta`), `plan` (what a file's slots share), `io::chunk`, `validate`
//! and `flow`; never the driver or the reader. Invariant: a rayon task never blocks: it decodes at most its
//! allowance ahead of the consumer and then parks and returns.

pub(crate) mod assemble;
pub(crate) mod bound;
pub(crate) mod byte_pages;
pub(crate) mod dict_filter;
pub(crate) mod dictionary;
pub(crate) mod direct;
pub(crate) mod dispatch;
pub(crate) mod flat;
pub(crate) mod pages;
pub(crate) mod part;
pub(crate) mod positions;
pub(crate) mod retype;
pub(crate) mod rle;
pub(crate) mod scratch;
pub(crate) mod snappy;
pub(crate) mod stage;
pub(crate) mod stage_io;
#[cfg(test)]
pub(crate) mod testing;

use std::sync::{Arc, OnceLock};

use arrow::datatypes::SchemaRef;

use crate::decode::bound::BatchLimit;
use crate::flow::event::Outbox;
use crate::flow::Flow;
use crate::footer::FileMeta;
use crate::metrics::Metrics;
use crate::validate::pages::PageChecks;

/// What the decode tasks of one scan share.
#[derive(Debug)]
pub(crate) struct DecodeCtx {
    pub pool: Arc<rayon::ThreadPool>,
    pub outbox: Outbox,
    pub flow: Arc<Flow>,
    pub batch_size: usize,
    /// The most uncompressed bytes one page may claim (`validate::page_limit`).
    pub page_limit: u64,
    /// Verify pages' CRC-32s (`ScanBuilder::verify_checksums`).
    pub verify_checksums: bool,
    /// The most decoded bytes of one part's batch ([`crate::flow::budget::batch_bytes`]).
    pub batch_bytes: u64,
    /// The schema of delivered batches (after the tasks' transforms), once known.
    pub output: OnceLock<SchemaRef>,
}

/// "column \"a\"" or "columns \"a\", \"b.c\"": the leaves of `meta`'s file a decoder reads,
/// for its errors (parquet's name none).
pub(crate) fn columns_named(meta: &FileMeta, leaves: &[usize]) -> String {
    let descr = meta.reader.parquet_schema();
    let names: Vec<String> = leaves
        .iter()
        .filter(|&&l| l < descr.num_columns())
        .map(|&l| format!("{:?}", descr.column(l).path().string()))
        .collect();
    match names.len() {
        1 => format!("column {}", names[0]),
        _ => format!("columns {}", names.join(", ")),
    }
}

impl DecodeCtx {
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.flow.metrics
    }

    /// What one batch of a part may hold: the batch size, the batch byte limit, and no value
    /// larger than the page limit.
    pub fn batch_limit(&self) -> BatchLimit {
        BatchLimit {
            rows: self.batch_size,
            bytes: self.batch_bytes,
            largest_value: self.page_limit,
        }
    }

    /// What the page headers of a row group about to be decoded are checked against.
    pub fn checks(&self) -> PageChecks {
        PageChecks {
            limit: self.page_limit,
            batch_size: self.batch_size,
            verify_checksums: self.verify_checksums,
        }
    }
}
