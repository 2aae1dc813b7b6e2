//! Projection of a plain scan: which columns it reads, resolved against one file's schema,
//! and the check that every file of a plain scan has the first file's schema.
//!
//! Invariant: the projected schema is what parquet's own reader returns for those leaves.

use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use parquet::schema::types::SchemaDescriptor;

use crate::error::{Error, ErrorKind, Result};
use crate::footer::FileMeta;
use crate::io::chunk::SparseChunk;

/// Which columns a scan reads, resolved against one file's schema.
#[derive(Debug, Clone)]
pub(crate) struct Projection {
    /// Selected leaf columns, grouped by top-level (root) column, roots in file order.
    pub roots: Vec<(usize, Vec<usize>)>,
    /// Root column indices in output order.
    pub output: Vec<usize>,
    /// The output schema: what parquet's reader returns for this projection, columns in
    /// output order.
    pub schema: SchemaRef,
}

/// Resolve `columns` (None: all) against a file. A name matches a top-level column exactly,
/// else a dotted path prefix of leaf column paths (`a.b` selects every leaf under `a.b`).
pub(crate) fn project(meta: &FileMeta, columns: Option<&[String]>) -> Result<Projection> {
    let descr: &SchemaDescriptor = meta.reader.parquet_schema();
    let root_fields = descr.root_schema().get_fields();
    let mut leaves_of_root: Vec<Vec<usize>> = vec![Vec::new(); root_fields.len()];
    let mut output: Vec<usize> = Vec::new();
    let mut add = |root: usize, leaf: usize, output: &mut Vec<usize>| {
        if !leaves_of_root[root].contains(&leaf) {
            leaves_of_root[root].push(leaf);
        }
        if !output.contains(&root) {
            output.push(root);
        }
    };
    match columns {
        None => {
            for leaf in 0..descr.num_columns() {
                add(descr.get_column_root_idx(leaf), leaf, &mut output);
            }
        }
        Some(names) => {
            for name in names {
                let leaves = leaves_named(descr, name);
                if leaves.is_empty() {
                    let names: Vec<_> = root_fields.iter().map(|f| f.name()).collect();
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!("no column named {name:?}; columns are {names:?}"),
                    )
                    .with_path(&*meta.file.name));
                }
                for leaf in leaves {
                    add(descr.get_column_root_idx(leaf), leaf, &mut output);
                }
            }
        }
    }
    let roots: Vec<(usize, Vec<usize>)> = leaves_of_root
        .into_iter()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(r, mut l)| {
            l.sort_unstable();
            (r, l)
        })
        .collect();
    let schema = output_schema(meta, &roots, &output)?;
    Ok(Projection {
        roots,
        output,
        schema,
    })
}

/// The leaves column name `name` selects: every leaf of the top-level column of that name,
/// else every leaf whose path starts with its dotted parts.
fn leaves_named(descr: &SchemaDescriptor, name: &str) -> Vec<usize> {
    let root_fields = descr.root_schema().get_fields();
    let exact = root_fields.iter().position(|f| f.name() == name);
    let path: Vec<&str> = name.split('.').collect();
    (0..descr.num_columns())
        .filter(|&leaf| match exact {
            Some(r) => r == descr.get_column_root_idx(leaf),
            None => {
                let column = descr.column(leaf);
                let parts = column.path().parts();
                parts.len() >= path.len() && path.iter().zip(parts).all(|(a, b)| *a == b)
            }
        })
        .collect()
}

/// The projected schema: parquet's own for the leaves of `roots` (exactly what its reader
/// returns), its top-level fields in the `output` order.
fn output_schema(
    meta: &FileMeta,
    roots: &[(usize, Vec<usize>)],
    output: &[usize],
) -> Result<SchemaRef> {
    let all: Vec<usize> = roots.iter().flat_map(|(_, l)| l.iter().copied()).collect();
    let file_order = projected_schema(meta, &all)?;
    let in_file_order: Vec<usize> = roots.iter().map(|(r, _)| *r).collect();
    let fields = output
        .iter()
        .map(|r| {
            let i = in_file_order
                .iter()
                .position(|x| x == r)
                .expect("root is projected");
            file_order.fields()[i].clone()
        })
        .collect::<Vec<_>>();
    Ok(Arc::new(Schema::new_with_metadata(
        fields,
        file_order.metadata().clone(),
    )))
}

/// The Arrow schema parquet's reader produces for these leaves of `meta`'s file.
pub(crate) fn projected_schema(meta: &FileMeta, leaves: &[usize]) -> Result<SchemaRef> {
    let mask = ProjectionMask::leaves(meta.reader.parquet_schema(), leaves.iter().copied());
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(
        SparseChunk::new(meta.size),
        meta.reader.clone(),
    )
    .with_projection(mask)
    .with_row_groups(vec![])
    .build()
    .map_err(|e| Error::footer(e, &meta.file.name))?;
    Ok(arrow::record_batch::RecordBatchReader::schema(&reader))
}

/// Check that `other` produces the same output columns as the scan's schema; name both files.
pub(crate) fn check_schema(
    scan_schema: &SchemaRef,
    first: &str,
    other: &Projection,
    other_name: &str,
) -> Result<()> {
    let a = scan_schema.fields();
    let b = other.schema.fields();
    let same = a.len() == b.len()
        && a.iter().zip(b.iter()).all(|(x, y)| {
            x.name() == y.name()
                && x.data_type() == y.data_type()
                && x.is_nullable() == y.is_nullable()
        });
    if same {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::SchemaMismatch,
        format!(
            "schema differs from {first}'s: {first} has {scan_schema}, {other_name} has {} \
             (union_by_name reads files whose schemas differ as one)",
            other.schema
        ),
    )
    .with_path(other_name))
}
