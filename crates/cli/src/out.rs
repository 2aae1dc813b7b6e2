//! `--out FILE.arrow`: batches written as an Arrow IPC file, whole or not at all.
//!
//! The file is written under a temporary name in the same directory and renamed into place
//! once finished; on an error (or when the writer is dropped unfinished) the temporary file is
//! removed, so a failed command leaves nothing behind.
//!
//! An IPC file cannot replace a dictionary once written (the format allows one dictionary per
//! column, plus deltas), while a scan's dictionary columns change from row group to row group
//! and from file to file (a polars Categorical, say). Dictionary columns are therefore written
//! as their values (`Dictionary(Int32, Utf8)` as `Utf8`, nested ones too).

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use arrow::ipc::writer::FileWriter;

use crate::CliResult;

/// An Arrow IPC file being written.
pub struct ArrowOut {
    path: PathBuf,
    tmp: PathBuf,
    schema: SchemaRef,
    writer: Option<FileWriter<BufWriter<File>>>,
}

impl ArrowOut {
    /// Start writing batches of `schema` to `path` (under a temporary name until finished).
    pub fn create(path: &Path, schema: &SchemaRef) -> CliResult<ArrowOut> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out.arrow".into());
        let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
        let file = File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        let schema = Arc::new(plain_schema(schema));
        let mut out = ArrowOut {
            path: path.to_path_buf(),
            tmp,
            schema: Arc::clone(&schema),
            writer: None,
        };
        // On an error `out` drops, removing the temporary file.
        out.writer = Some(FileWriter::try_new_buffered(file, &schema).map_err(|e| out.err(e))?);
        Ok(out)
    }

    /// Append one batch.
    pub fn write(&mut self, batch: &RecordBatch) -> CliResult<()> {
        let batch = if batch.schema() == self.schema {
            batch.clone()
        } else {
            plain_batch(batch, &self.schema).map_err(|e| self.err(e))?
        };
        let Some(w) = self.writer.as_mut() else {
            return Err(format!("{}: already finished", self.path.display()).into());
        };
        w.write(&batch).map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok(())
    }

    /// Finish the file and move it into place.
    pub fn finish(mut self) -> CliResult<()> {
        let Some(mut w) = self.writer.take() else {
            return Ok(());
        };
        w.finish()
            .and_then(|_| w.into_inner().map(drop))
            .map_err(|e| self.err(e))?;
        std::fs::rename(&self.tmp, &self.path).map_err(|e| self.err(e))?;
        Ok(())
    }

    fn err(&self, e: impl std::fmt::Display) -> String {
        format!("{}: {e}", self.path.display())
    }
}

impl Drop for ArrowOut {
    /// Unfinished: remove the temporary file (a finished one has been renamed away).
    fn drop(&mut self) {
        self.writer.take();
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// `schema` with every dictionary type replaced by its value type, at every level.
fn plain_schema(schema: &Schema) -> Schema {
    Schema::new_with_metadata(
        schema.fields().iter().map(plain_field).collect::<Fields>(),
        schema.metadata().clone(),
    )
}

fn plain_field(f: &FieldRef) -> FieldRef {
    let t = plain_type(f.data_type());
    if &t == f.data_type() {
        Arc::clone(f)
    } else {
        Arc::new(Field::clone(f).with_data_type(t))
    }
}

fn plain_type(t: &DataType) -> DataType {
    match t {
        DataType::Dictionary(_, v) => plain_type(v),
        DataType::Struct(fs) => DataType::Struct(fs.iter().map(plain_field).collect()),
        DataType::List(f) => DataType::List(plain_field(f)),
        DataType::LargeList(f) => DataType::LargeList(plain_field(f)),
        DataType::ListView(f) => DataType::ListView(plain_field(f)),
        DataType::LargeListView(f) => DataType::LargeListView(plain_field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(plain_field(f), *n),
        DataType::Map(f, sorted) => DataType::Map(plain_field(f), *sorted),
        other => other.clone(),
    }
}

/// `batch` cast to `schema` (its dictionaries decoded; arrow's cast does nested types).
fn plain_batch(batch: &RecordBatch, schema: &SchemaRef) -> arrow::error::Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| {
            if c.data_type() == f.data_type() {
                Ok(Arc::clone(c))
            } else {
                arrow::compute::cast(c, f.data_type())
            }
        })
        .collect::<arrow::error::Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(Arc::clone(schema), columns, &options)
}
