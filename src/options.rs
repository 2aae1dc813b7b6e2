//! The scan's options and their defaults, shared by every stage of the pipeline.

use parquet::arrow::arrow_reader::RowSelection;

use crate::expr::Expr;

/// Default rows per batch.
pub const DEFAULT_BATCH_SIZE: usize = 8192;
/// Default memory budget: bytes fetched or decoded but not yet delivered.
pub const DEFAULT_MEMORY_BUDGET: usize = 256 << 20;
/// Default limit on GET requests in flight per scan.
pub const DEFAULT_REQUESTS_IN_FLIGHT: usize = 48;
/// Default size of the suffix read that fetches a footer: the metadata and page index of most
/// files, and the last row group's data, which is then reused.
pub const DEFAULT_FOOTER_SIZE_HINT: usize = 512 << 10;
/// Default footer read of a scan that reads only part of each file (a projection, a filter or
/// a row selection): the metadata and page index, little else, since the data that a larger
/// suffix read would bring is mostly not wanted.
pub const NARROW_FOOTER_SIZE_HINT: usize = 64 << 10;
/// Files of known size up to this are read whole in one request by default (no second round
/// trip for their data), unless the scan reads only part of each file.
pub const WHOLE_FILE_BYTES: u64 = 2 << 20;
/// Default largest gap between two byte ranges that are merged into one request. Requests
/// run in parallel (up to `max_requests_in_flight`), so a gap costs bandwidth and saves little.
pub const DEFAULT_COALESCE_GAP: usize = 64 << 10;
/// Default size of the parallel requests a large range is split into.
pub const DEFAULT_REQUEST_SIZE: usize = 2 << 20;
/// Default number of footers loaded ahead of the file being scheduled.
pub const DEFAULT_FOOTERS_AHEAD: usize = 16;
/// Default number of decoded batches a row group may hold undelivered (part of its reservation).
pub const DEFAULT_DECODE_AHEAD: usize = 4;
/// Default largest IO window: compressed bytes being fetched at once.
pub const DEFAULT_PREFETCH_BYTES: usize = 128 << 20;
/// Default uncompressed size of a row group above which it is split by columns.
pub const DEFAULT_SPLIT_BYTES: usize = 1 << 20;

/// Tuning knobs of a scan, all with defaults. Set through [`Scan`]'s methods.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub columns: Option<Vec<String>>,
    pub batch_size: usize,
    pub limit: Option<usize>,
    pub ordered: bool,
    pub memory_budget: usize,
    pub requests_in_flight: usize,
    /// `None`: [`DEFAULT_FOOTER_SIZE_HINT`] (small files read whole), or
    /// [`NARROW_FOOTER_SIZE_HINT`] with a projection, filter or row selection (see
    /// `pipeline::load_footer`).
    pub footer_size_hint: Option<usize>,
    pub coalesce_gap: usize,
    pub request_size: usize,
    pub footers_ahead: usize,
    pub decode_ahead: usize,
    pub split_bytes: usize,
    pub prefetch_bytes: usize,
    pub filter: Option<Expr>,
    /// `false`: the filter only prunes row groups and pages (`Scan::prune`); rows that were
    /// read are delivered whether or not they match.
    pub filter_exact: bool,
    /// The caller's row selections, by file name or object path.
    pub selections: Vec<(String, RowSelection)>,
    pub row_index: Option<String>,
    /// Decode strings and binaries to Arrow's view types.
    pub string_views: bool,
    /// How requests to cloud stores are retried (`None`: object_store's default).
    #[cfg(feature = "cloud")]
    pub retry: Option<object_store::RetryConfig>,
    /// HTTP client options of cloud stores (timeouts, proxies...).
    #[cfg(feature = "cloud")]
    pub client_options: Option<object_store::ClientOptions>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            columns: None,
            batch_size: DEFAULT_BATCH_SIZE,
            limit: None,
            ordered: true,
            memory_budget: DEFAULT_MEMORY_BUDGET,
            requests_in_flight: DEFAULT_REQUESTS_IN_FLIGHT,
            footer_size_hint: None,
            coalesce_gap: DEFAULT_COALESCE_GAP,
            request_size: DEFAULT_REQUEST_SIZE,
            footers_ahead: DEFAULT_FOOTERS_AHEAD,
            decode_ahead: DEFAULT_DECODE_AHEAD,
            split_bytes: DEFAULT_SPLIT_BYTES,
            prefetch_bytes: DEFAULT_PREFETCH_BYTES,
            filter: None,
            filter_exact: true,
            selections: Vec::new(),
            row_index: None,
            string_views: false,
            #[cfg(feature = "cloud")]
            retry: None,
            #[cfg(feature = "cloud")]
            client_options: None,
        }
    }
}
