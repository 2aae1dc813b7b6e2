//! A delta-kernel `ParquetHandler` backed by rayquet.
//!
//! `read_parquet_files` reads every file it is given in one rayquet scan: concurrent
//! fetches, row groups decoded in parallel on the rayon pool, files in the given order, and
//! batches never merged across files. It keeps the trait's contract: exactly the columns of
//! the physical schema, in its order, matched by field id then name (`parquet.field.id`),
//! missing nullable columns null, the kernel's type widening (a cast), the `row_index` and
//! `_file` metadata columns, and the predicate as a pruning hint only (row groups and pages it
//! proves hold no match are skipped; the rows read are returned unfiltered). Footers are read
//! with the size the kernel gives (no HEAD request).

use std::sync::Arc;

use arrow::array::{RecordBatch, StructArray};
use arrow::datatypes::{Schema as ArrowSchema, SchemaRef as ArrowSchemaRef};
use delta_kernel::engine::arrow_conversion::TryFromArrow;
use delta_kernel::engine::arrow_data::ArrowEngineData;
use delta_kernel::engine::arrow_utils::fix_nested_null_masks;
use delta_kernel::schema::{SchemaRef, StructType};
use delta_kernel::{
    DeltaResult, DeltaResultIteratorStatic, EngineData, FileDataReadResultIterator, FileMeta,
    ParquetFooter, ParquetHandler, PredicateRef,
};
use url::Url;

use rayquet::task::{BatchTransform, ColumnSource, FileTask};
use rayquet::{Scan, ScanBuilder, ScanOptions};

/// Metadata key of a kernel metadata column's spec, as it appears on the Arrow field.
const METADATA_SPEC: &str = "delta.metadataSpec";

/// A rayquet error as a kernel error (the message keeps the file; the error is kept whole in
/// an `Arrow(ExternalError)` so that it can be had back).
pub(crate) fn to_kernel_error(e: rayquet::Error) -> delta_kernel::Error {
    delta_kernel::Error::Arrow(e.into())
}

/// The [`CorruptLog`](crate::log_check::CorruptLog) a kernel error carries, if any: inside
/// object_store's `Generic` error, which the kernel's `ObjectStore` variant holds without
/// exposing it as its `source()`.
fn corrupt_log(e: &delta_kernel::Error) -> Option<&crate::log_check::CorruptLog> {
    use delta_kernel::Error as K;
    let mut cause: Option<&(dyn std::error::Error + 'static)> = match e {
        K::Backtraced { source, .. } => return corrupt_log(source),
        K::ObjectStore(object_store::Error::Generic { source, .. }) => Some(source.as_ref()),
        e => Some(e),
    };
    while let Some(c) = cause {
        if let Some(log) = c.downcast_ref::<crate::log_check::CorruptLog>() {
            return Some(log);
        }
        cause = c.source();
    }
    None
}

/// A kernel error as a rayquet error (kept as the source): a rayquet error the kernel carried
/// comes back as it was; damaged log content is `CorruptTable`, a missing version or file
/// `NotFound`, unsupported protocol features `Unsupported`.
pub(crate) fn from_kernel_error(e: delta_kernel::Error) -> rayquet::Error {
    use delta_kernel::Error as K;
    use rayquet::ErrorKind;
    // A log file the strict check refused, however deep the kernel wrapped it.
    if let Some(log) = corrupt_log(&e) {
        return rayquet::Error::new(ErrorKind::CorruptTable, log.to_string())
            .with_path(log.path.clone())
            .with_source(e);
    }
    // The kernel wraps an error with its backtrace when backtraces are on (RUST_BACKTRACE):
    // judge the error inside.
    let mut e = e;
    while let K::Backtraced { source, .. } = e {
        e = *source;
    }
    let kind = match e {
        K::Arrow(a) => return rayquet::Error::from(a),
        // A valid type the kernel does not read (a newer or experimental Delta type, such as
        // nanosecond timestamps): not damage.
        K::Schema(ref m) if m.contains("Unsupported Delta table type") => ErrorKind::Unsupported,
        K::MissingVersion(_) | K::FileNotFound(_) | K::EmptyLog => ErrorKind::NotFound,
        K::Unsupported(_) | K::InvalidProtocol(_) | K::ChangeDataFeedUnsupported(_) => {
            ErrorKind::Unsupported
        }
        K::MalformedJson(_)
        | K::ParseError(..)
        | K::MissingMetadata
        | K::MissingProtocol
        | K::MissingMetadataAndProtocol
        | K::InvalidCheckpoint(_)
        | K::InvalidLogPath(_)
        | K::InvalidLogSegment(_)
        | K::InvalidPartitionValues(_)
        | K::DeletionVector(_)
        | K::Schema(_) => ErrorKind::CorruptTable,
        K::InvalidUrl(_) | K::InvalidTableLocation(_) => ErrorKind::InvalidArgument,
        K::Cancelled => ErrorKind::Cancelled,
        _ => ErrorKind::Io,
    };
    rayquet::Error::new(kind, e.to_string()).with_source(e)
}

/// Reads Parquet for the kernel with rayquet (see the module docs).
pub struct RayquetParquetHandler {
    /// The scans' options: the table's store (by its URL root), other stores, the runtime.
    options: ScanOptions,
    /// Writes (checkpoints) go to the default engine's handler.
    writer: Arc<dyn ParquetHandler>,
    /// Set when a checkpoint read was rewritten for nanosecond timestamps (see `nanos`):
    /// shared with the engine's log store, which then refuses writes.
    rewritten: crate::nanos::Rewritten,
}

impl std::fmt::Debug for RayquetParquetHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RayquetParquetHandler")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The Arrow schema of a kernel schema (field ids as `PARQUET:field_id`), and how each of its
/// columns is produced.
pub(crate) fn read_columns(
    schema: &StructType,
) -> DeltaResult<(ArrowSchemaRef, Vec<ColumnSource>)> {
    let arrow: ArrowSchema = crate::nanos::to_arrow(schema)?;
    let sources = arrow
        .fields()
        .iter()
        .map(
            |f| match f.metadata().get(METADATA_SPEC).map(String::as_str) {
                None => Ok(ColumnSource::file()),
                Some("row_index") => Ok(ColumnSource::RowIndex),
                Some("_file") => Ok(ColumnSource::FilePath),
                Some(other) => Err(delta_kernel::Error::generic(format!(
                    "metadata column {other:?} is not supported by the rayquet parquet reader"
                ))),
            },
        )
        .collect::<DeltaResult<Vec<_>>>()?;
    Ok((Arc::new(arrow), sources))
}

/// Complete the null masks of nested columns, which the kernel's row visitors rely on (the
/// parquet reader may leave a struct's children's masks incomplete).
pub(crate) fn fix_nulls() -> BatchTransform {
    Arc::new(|batch: RecordBatch| {
        let schema = batch.schema();
        let nested = schema.fields().iter().any(|f| f.data_type().is_nested());
        if !nested || batch.num_columns() == 0 {
            return Ok(batch);
        }
        let rows = batch.num_rows();
        let fixed = fix_nested_null_masks(StructArray::from(batch));
        let (fields, columns, _) = fixed.into_parts();
        let opts = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::new(ArrowSchema::new_with_metadata(
                fields,
                schema.metadata().clone(),
            )),
            columns,
            &opts,
        )?)
    })
}

impl RayquetParquetHandler {
    /// A handler whose scans run with `options` (their stores, runtime, budget...), writing
    /// through `writer`.
    pub fn new(options: ScanOptions, writer: Arc<dyn ParquetHandler>) -> Self {
        RayquetParquetHandler {
            options,
            writer,
            rewritten: Default::default(),
        }
    }

    /// This handler, recording its checkpoint rewrites in `rewritten`.
    pub(crate) fn with_rewritten(mut self, rewritten: crate::nanos::Rewritten) -> Self {
        self.rewritten = rewritten;
        self
    }

    /// A rayquet scan of `files` producing `physical_schema` (tasks in file order); the
    /// predicate only prunes. Configure it further (batch size, budget...) before `build`.
    pub fn scan(
        &self,
        files: &[FileMeta],
        physical_schema: &StructType,
        predicate: Option<&PredicateRef>,
    ) -> DeltaResult<Scan> {
        let (schema, sources) = read_columns(physical_schema)?;
        let mut fix = fix_nulls();
        // Checkpoints' protocol and metadata, shown to the kernel as the log's JSON files are
        // (nanosecond timestamps, see `nanos`).
        if physical_schema.field("protocol").is_some()
            || physical_schema.field("metaData").is_some()
        {
            let (nulls, rewritten) = (fix, self.rewritten.clone());
            fix = Arc::new(move |batch| {
                Ok(crate::nanos::rewrite_checkpoint(nulls(batch)?, &rewritten))
            });
        }
        let tasks: Vec<FileTask> = files
            .iter()
            .map(|f| {
                FileTask::new(f.location.to_string())
                    .size(f.size)
                    .version(version(f))
                    .columns(sources.clone())
                    .transform(Arc::clone(&fix))
            })
            .collect();
        let mut scan = Scan::from_tasks(schema.clone(), tasks).with_options(self.options.clone());
        if let Some(p) = predicate {
            if let Some(e) = super::predicate::from_kernel(p) {
                let e = only_columns_of(e, &schema);
                if e != rayquet::Expr::Literal(true) {
                    scan = scan.prune(e);
                }
            }
        }
        Ok(scan)
    }
}

/// The version of a file the kernel asks for: its last-modified time (the `add` action's
/// `modificationTime` for data files, the listing's for checkpoints), which keys the footer
/// cache together with the path and size, so repeated scans of a table share its footers.
fn version(f: &FileMeta) -> rayquet::FileVersion {
    let ms = u64::try_from(f.last_modified).unwrap_or(0);
    rayquet::FileVersion {
        e_tag: None,
        last_modified: Some(std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms)),
    }
}

/// `e` with every leaf on a column `schema` does not have replaced by TRUE (the predicate is
/// a hint: unknown references stay unknown). `e` is in negation normal form.
fn only_columns_of(e: rayquet::Expr, schema: &ArrowSchema) -> rayquet::Expr {
    use rayquet::Expr;
    let known = |c: &str| {
        schema.field_with_name(c).is_ok()
            || c.split('.')
                .next()
                .is_some_and(|first| schema.field_with_name(first).is_ok())
    };
    match e {
        Expr::And(a, b) => only_columns_of(*a, schema).and(only_columns_of(*b, schema)),
        Expr::Or(a, b) => only_columns_of(*a, schema).or(only_columns_of(*b, schema)),
        Expr::Not(_) => Expr::Literal(true),
        Expr::Literal(b) => Expr::Literal(b),
        leaf => {
            if leaf.columns().iter().all(|c| known(c)) {
                leaf
            } else {
                Expr::Literal(true)
            }
        }
    }
}

impl ParquetHandler for RayquetParquetHandler {
    fn read_parquet_files(
        &self,
        files: &[FileMeta],
        physical_schema: SchemaRef,
        predicate: Option<PredicateRef>,
    ) -> DeltaResult<FileDataReadResultIterator> {
        if files.is_empty() {
            return Ok(Box::new(std::iter::empty()));
        }
        let reader = self
            .scan(files, &physical_schema, predicate.as_ref())?
            .build()
            .map_err(to_kernel_error)?;
        Ok(Box::new(reader.map(|b| {
            b.map(|b| Box::new(ArrowEngineData::new(b)) as Box<dyn EngineData>)
                .map_err(delta_kernel::Error::Arrow)
        })))
    }

    fn write_parquet_file(
        &self,
        location: Url,
        data: DeltaResultIteratorStatic<Box<dyn EngineData>>,
    ) -> DeltaResult<()> {
        if self.rewritten.get() {
            return Err(delta_kernel::Error::unsupported(crate::nanos::NO_WRITES));
        }
        self.writer.write_parquet_file(location, data)
    }

    fn read_parquet_footer(&self, file: &FileMeta) -> DeltaResult<ParquetFooter> {
        let url = file.location.as_str();
        let (store, path) =
            rayquet::layer::store_for(&self.options, url).map_err(to_kernel_error)?;
        let md = rayquet::read_metadata(store, path, Some(file.size)).map_err(to_kernel_error)?;
        // Types from the Parquet schema itself, not an embedded Arrow schema (as the kernel's
        // own reader does).
        let arrow =
            parquet::arrow::parquet_to_arrow_schema(md.file_metadata().schema_descr(), None)
                .map_err(|e| delta_kernel::Error::generic(format!("{url}: {e}")))?;
        let schema = StructType::try_from_arrow(&arrow)?;
        Ok(ParquetFooter {
            schema: Arc::new(schema),
        })
    }
}
