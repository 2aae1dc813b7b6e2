//! What a scan node is, as every process that reads its units rebuilds it: [`Plan`] (what
//! the scan reads) and [`ScanSpec`] (the plan with the node's limit, schema and ordering).
//! Serializable, with no credentials: the codec sends it to workers, which rebuild the node
//! with their own options.

use datafusion::arrow::datatypes::Schema;
use rayquet::Expr;
use serde::{Deserialize, Serialize};

use crate::order::SortKey;

/// What a scan reads, as every process that reads its units rebuilds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Plan {
    /// Parquet files: columns by name from `read` (the projection, then the columns only the
    /// filter needs); the first `delivered` are delivered.
    Parquet {
        read: Schema,
        delivered: usize,
        filter: Option<Expr>,
    },
    /// An Iceberg scan (columns and filter inside).
    Iceberg(rayquet_iceberg::ScanPlan),
    /// A Delta scan (columns and filter inside).
    Delta(Box<rayquet_delta::ScanPlan>),
}

/// A scan node's description: serializable, no credentials.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ScanSpec {
    /// The table's name (for display and errors).
    pub table: String,
    pub plan: Plan,
    /// Rows wanted at least (each partition stops after that many).
    pub limit: Option<usize>,
    /// Deliver row counts only (an empty projection).
    pub rows_only: bool,
    /// Never scan on the coordinator.
    pub require_remote: bool,
    /// The delivered schema.
    pub schema: Schema,
    /// The order every partition delivers its rows in (empty: none), by the delivered
    /// schema's columns ([`crate::order`]); the units are then read in the order dealt.
    #[serde(default)]
    pub ordering: Vec<SortKey>,
}
