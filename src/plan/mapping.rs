//! Mapping: how a task's output columns are produced from one file.
//!
//! [`Mapping::resolve`] matches every output field against the file's Arrow schema (by field
//! id, name mapping or name, level by level through structs, lists and maps; see
//! [`crate::task`]), choosing the Parquet leaves to read, and prepares a [`Build`] per column
//! that turns the decoded (pruned) file column into the output column: children renamed,
//! reordered, missing ones null, primitives cast, shredded Parquet VARIANT columns unshredded
//! when the output field is an unshredded variant ([`unshreds`]). Constants, nulls, the row
//! index and the file path are produced per batch. Filters and row filters are resolved
//! through the same matching ([`Mapping::filter_target`]).
//!
//! Runs on the decode pool (footer time and per batch). Invariants: the leaves of each root
//! are exactly what the builds read; every error names the file and the output column; a
//! built column has exactly the output field's type, so batches always have the scan's
//! schema.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, GenericListArray, Int64Array, MapArray, RunArray, StructArray,
    UInt32Array,
};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, Int16Type, Int32Type, Int64Type};

use crate::error::{Error, ErrorKind, Result};
use crate::expr::Value;
use crate::task::{ColumnSource, FileColumn, NameMapping, FIELD_ID_KEY};

/// The matching rules of one task.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rules {
    pub name_mapping: Option<Arc<NameMapping>>,
    pub strict_ids: bool,
    pub positional_ids: bool,
}

/// The field id of an Arrow field (its `PARQUET:field_id` metadata).
pub(crate) fn field_id(f: &Field) -> Option<i32> {
    f.metadata().get(FIELD_ID_KEY)?.trim().parse().ok()
}

/// Parquet leaves under a field of parquet's Arrow schema (one per primitive).
pub(crate) fn leaf_count(dt: &DataType) -> usize {
    match dt {
        DataType::Struct(fs) => fs.iter().map(|f| leaf_count(f.data_type())).sum(),
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::ListView(f)
        | DataType::LargeListView(f) => leaf_count(f.data_type()),
        DataType::Map(f, _) => leaf_count(f.data_type()),
        _ => 1,
    }
}

/// First leaf index of each field of `fields`, counting from `base`.
fn leaf_starts(fields: &Fields, base: usize) -> Vec<usize> {
    let mut at = base;
    fields
        .iter()
        .map(|f| {
            let s = at;
            at += leaf_count(f.data_type());
            s
        })
        .collect()
}

/// Find the file field that `out` (with field id `id`, one of `siblings`) matches among
/// `file`, following `rules`; `top`: top-level (positional ids apply).
fn find(
    out: &Field,
    id: Option<i32>,
    siblings: &[Option<i32>],
    file: &Fields,
    top: bool,
    rules: &Rules,
) -> Option<usize> {
    let file_has_ids = file.iter().any(|f| field_id(f).is_some());
    if let Some(id) = id {
        if file_has_ids {
            if let Some(i) = file.iter().position(|f| field_id(f) == Some(id)) {
                return Some(i);
            }
            if rules.strict_ids {
                return None;
            }
        } else {
            if let Some(m) = &rules.name_mapping {
                // The mapping is authoritative for files without ids.
                let names = m.names.get(&id)?;
                return file
                    .iter()
                    .position(|f| names.iter().any(|n| n == f.name()));
            }
            if rules.positional_ids && top {
                let i = usize::try_from(id).ok()?.checked_sub(1)?;
                return (i < file.len()).then_some(i);
            }
        }
    }
    // By name, never taking a field whose id belongs to another output field.
    file.iter().position(|f| {
        f.name() == out.name()
            && !(field_id(f).is_some_and(|fid| Some(fid) != id && siblings.contains(&Some(fid))))
    })
}

/// How a decoded file column becomes an output column.
#[derive(Debug, Clone)]
pub(crate) enum Build {
    /// Already the output type.
    Same,
    /// Cast to the output type.
    Cast(DataType),
    /// Rebuild a struct: per output child, the decoded child it comes from (or null).
    Struct {
        fields: Fields,
        children: Vec<Option<(usize, Build)>>,
    },
    /// Rebuild a list (`large`: 64-bit offsets) around its rebuilt items.
    List {
        field: FieldRef,
        large: bool,
        item: Box<Build>,
    },
    /// Rebuild a map around its rebuilt entries (a struct of key and value).
    Map {
        field: FieldRef,
        sorted: bool,
        entries: Box<Build>,
    },
    /// Take child `child` of a struct (with the struct's nulls), then build it.
    Extract { child: usize, then: Box<Build> },
    /// Parquet INTERVAL, decoded as its 12 bytes (`FixedSizeBinary(12)`: months, days and
    /// milliseconds, little-endian u32s), as `Interval(MonthDayNano)`.
    Interval,
    /// A 128-bit integer decoded as its 16 little-endian bytes, as `Decimal128(38, 0)`.
    Int128,
    /// A shredded variant (a struct of `metadata`, `value` and `typed_value`) unshredded by
    /// parquet's `unshred_variant`, then given these output fields (by name: `metadata` and
    /// `value`, cast to their output types).
    Unshred(Fields),
}

/// Whether `f` is tagged with Arrow's Parquet variant extension type (`arrow.parquet.variant`).
fn is_variant(f: &Field) -> bool {
    f.has_valid_extension_type::<parquet::variant::VariantType>()
}

/// Whether file field `file` read as output field `out` is unshredded: `out` is a variant
/// (Arrow's `arrow.parquet.variant` extension type) without a `typed_value` field and `file` a
/// struct with one (a shredded Parquet VARIANT group, per the Parquet variant shredding spec).
/// Every leaf of `file` is then read and its values rebuilt in the `value` binary.
fn unshreds(out: &Field, file: &Field) -> bool {
    is_variant(out)
        && matches!((out.data_type(), file.data_type()),
            (DataType::Struct(of), DataType::Struct(ff))
                if of.find("typed_value").is_none() && ff.find("typed_value").is_some())
}

/// A shredded variant column unshredded into the output `fields`.
fn unshred(
    a: &ArrayRef,
    fields: &Fields,
) -> std::result::Result<ArrayRef, arrow::error::ArrowError> {
    use parquet::variant::{unshred_variant, VariantArray};
    let plain = unshred_variant(&VariantArray::try_new(a.as_ref())?)?.into_inner();
    let columns = fields
        .iter()
        .map(|f| match plain.column_by_name(f.name()) {
            Some(c) if c.data_type() == f.data_type() => Ok(Arc::clone(c)),
            Some(c) => cast_with_options(c, f.data_type(), &cast_options()),
            None => Ok(arrow::array::new_null_array(f.data_type(), plain.len())),
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(Arc::new(StructArray::try_new_with_length(
        fields.clone(),
        columns,
        plain.nulls().cloned(),
        plain.len(),
    )?))
}

fn cast_options() -> CastOptions<'static> {
    CastOptions {
        safe: false,
        ..Default::default()
    }
}

/// A (large) list column with `item` applied to its values.
fn list<O: arrow::array::OffsetSizeTrait>(
    a: &ArrayRef,
    field: &FieldRef,
    item: &Build,
) -> std::result::Result<ArrayRef, arrow::error::ArrowError> {
    let l = a.as_list::<O>();
    let values = item.apply(l.values())?;
    Ok(Arc::new(GenericListArray::<O>::try_new(
        Arc::clone(field),
        l.offsets().clone(),
        values,
        l.nulls().cloned(),
    )?))
}

/// Parquet INTERVAL values (`FixedSizeBinary(12)`) as Arrow's `Interval(MonthDayNano)`.
fn interval_month_day_nano(
    a: &ArrayRef,
) -> std::result::Result<arrow::array::IntervalMonthDayNanoArray, arrow::error::ArrowError> {
    use arrow::datatypes::IntervalMonthDayNano;
    let b = a
        .as_any()
        .downcast_ref::<arrow::array::FixedSizeBinaryArray>()
        .filter(|b| b.value_length() == 12)
        .ok_or_else(|| {
            arrow::error::ArrowError::InvalidArgumentError(format!(
                "an INTERVAL column decoded as {}, not FixedSizeBinary(12)",
                a.data_type()
            ))
        })?;
    let u32_at = |v: &[u8], i: usize| u32::from_le_bytes([v[i], v[i + 1], v[i + 2], v[i + 3]]);
    let values: Vec<IntervalMonthDayNano> = (0..b.len())
        .map(|i| {
            let v = b.value(i);
            IntervalMonthDayNano::new(
                u32_at(v, 0) as i32,
                u32_at(v, 4) as i32,
                i64::from(u32_at(v, 8)) * 1_000_000,
            )
        })
        .collect();
    Ok(arrow::array::IntervalMonthDayNanoArray::new(
        values.into(),
        b.nulls().cloned(),
    ))
}

/// 128-bit little-endian integers (`FixedSizeBinary(16)`) as `Decimal128(38, 0)`.
fn int128_decimal(
    a: &ArrayRef,
) -> std::result::Result<arrow::array::Decimal128Array, arrow::error::ArrowError> {
    let b = a
        .as_any()
        .downcast_ref::<arrow::array::FixedSizeBinaryArray>()
        .filter(|b| b.value_length() == 16)
        .ok_or_else(|| {
            arrow::error::ArrowError::InvalidArgumentError(format!(
                "a 128-bit integer column decoded as {}, not FixedSizeBinary(16)",
                a.data_type()
            ))
        })?;
    let values: Vec<i128> = (0..b.len())
        .map(|i| {
            let mut le = [0u8; 16];
            le.copy_from_slice(b.value(i));
            i128::from_le_bytes(le)
        })
        .collect();
    arrow::array::Decimal128Array::new(values.into(), b.nulls().cloned())
        .with_precision_and_scale(38, 0)
}

impl Build {
    /// Apply to a decoded column.
    pub fn apply(&self, a: &ArrayRef) -> std::result::Result<ArrayRef, arrow::error::ArrowError> {
        Ok(match self {
            Build::Same => Arc::clone(a),
            Build::Cast(t) => cast_with_options(a, t, &cast_options())?,
            Build::Struct { fields, children } => {
                let s = a.as_struct();
                let cols = fields
                    .iter()
                    .zip(children)
                    .map(|(f, c)| match c {
                        Some((i, b)) => b.apply(s.column(*i)),
                        None => Ok(arrow::array::new_null_array(f.data_type(), s.len())),
                    })
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                Arc::new(StructArray::try_new_with_length(
                    fields.clone(),
                    cols,
                    s.nulls().cloned(),
                    s.len(),
                )?)
            }
            Build::List { field, large, item } => match large {
                true => list::<i64>(a, field, item)?,
                false => list::<i32>(a, field, item)?,
            },
            Build::Map {
                field,
                sorted,
                entries,
            } => {
                let m = a.as_map();
                let e: ArrayRef = Arc::new(m.entries().clone());
                let e = entries.apply(&e)?;
                Arc::new(MapArray::try_new(
                    Arc::clone(field),
                    m.offsets().clone(),
                    e.as_struct().clone(),
                    m.nulls().cloned(),
                    *sorted,
                )?)
            }
            Build::Interval => Arc::new(interval_month_day_nano(a)?),
            Build::Int128 => Arc::new(int128_decimal(a)?),
            Build::Unshred(fields) => unshred(a, fields)?,
            Build::Extract { child, then } => {
                let s = a.as_struct();
                let c = s.column(*child);
                let nulls = arrow::buffer::NullBuffer::union(s.nulls(), c.logical_nulls().as_ref());
                let c = arrow::array::make_array(c.to_data().into_builder().nulls(nulls).build()?);
                then.apply(&c)?
            }
        })
    }
}

/// Where an output column comes from in one file.
#[derive(Debug, Clone)]
pub(crate) enum OutCol {
    /// From file root `root` (a file column index), through `path` (the struct children's
    /// names of an explicit path source), then `build` (set once the decoded schema is known).
    File {
        root: usize,
        path: Vec<String>,
        build: Build,
    },
    /// One value (a one-element array of the output type, or of a run-end encoded type's
    /// values), repeated.
    Const(ArrayRef),
    /// Null in every row.
    Null,
    /// The row's position in the file.
    RowIndex,
}

/// A task's columns resolved against one file.
#[derive(Debug, Clone)]
pub(crate) struct Mapping {
    /// Output fields, in order.
    pub fields: Fields,
    pub columns: Vec<OutCol>,
    /// File roots read, ascending, each with its leaves (ascending).
    pub roots: Vec<(usize, Vec<usize>)>,
    rules: Rules,
}

/// Context for errors: the file and the column.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, column: &str, why: impl std::fmt::Display) -> Error {
        Error::new(
            ErrorKind::SchemaMismatch,
            format!("output column {column:?}: {why}"),
        )
        .with_path(self.file)
    }
}

/// A one-element array holding `v` as `ty` (for a run-end encoded type, as its values' type).
pub(crate) fn typed_value(v: &Value, ty: &DataType, column: &str) -> Result<ArrayRef> {
    match ty {
        DataType::RunEndEncoded(_, values) => v.to_typed(values.data_type(), column),
        _ => v.to_typed(ty, column),
    }
}

/// `value` (one element) repeated `n` times as `ty`.
pub(crate) fn repeat(
    value: &ArrayRef,
    ty: &DataType,
    n: usize,
) -> std::result::Result<ArrayRef, arrow::error::ArrowError> {
    if let DataType::RunEndEncoded(ends, _) = ty {
        if n == 0 {
            return Ok(arrow::array::new_empty_array(ty));
        }
        let values = value.slice(0, 1);
        return Ok(match ends.data_type() {
            DataType::Int16 => Arc::new(RunArray::<Int16Type>::try_new(
                &vec![i16::try_from(n).map_err(|_| too_long(n))?].into(),
                &values,
            )?),
            DataType::Int32 => Arc::new(RunArray::<Int32Type>::try_new(
                &vec![i32::try_from(n).map_err(|_| too_long(n))?].into(),
                &values,
            )?),
            _ => Arc::new(RunArray::<Int64Type>::try_new(
                &vec![n as i64].into(),
                &values,
            )?),
        });
    }
    let idx = UInt32Array::from(vec![0u32; n]);
    arrow::compute::take(value.as_ref(), &idx, None)
}

fn too_long(n: usize) -> arrow::error::ArrowError {
    arrow::error::ArrowError::InvalidArgumentError(format!("{n} rows do not fit the run ends"))
}

/// What resolving a task's output columns against one file shares: the file's schema and
/// the first leaf of each of its roots, the output fields' ids, the rules, where errors
/// point.
struct Resolver<'a> {
    file: &'a arrow::datatypes::Schema,
    starts: Vec<usize>,
    ids: Vec<Option<i32>>,
    rules: &'a Rules,
    ctx: Ctx<'a>,
    location: &'a str,
}

impl Resolver<'_> {
    /// Output field `i` (`out`), produced by `source`; the file leaves it reads are added to
    /// `leaves` (by root).
    fn column(
        &self,
        i: usize,
        out: &Field,
        source: &ColumnSource,
        leaves: &mut [Vec<usize>],
    ) -> Result<OutCol> {
        let (name, ctx) = (out.name(), &self.ctx);
        Ok(match source {
            ColumnSource::Constant(v) => OutCol::Const(
                typed_value(v, out.data_type(), name)
                    .map_err(|e| ctx.err(name, format!("constant {v}: {}", e.message())))?,
            ),
            ColumnSource::FilePath => {
                let v = Value::Str(self.location.to_string());
                OutCol::Const(
                    typed_value(&v, out.data_type(), name)
                        .map_err(|e| ctx.err(name, e.message()))?,
                )
            }
            ColumnSource::Null => OutCol::Null,
            ColumnSource::RowIndex => {
                if !arrow::compute::can_cast_types(&DataType::Int64, out.data_type()) {
                    return Err(ctx.err(name, "a row index must have an integer type"));
                }
                OutCol::RowIndex
            }
            ColumnSource::File(fc) => self.file_column(i, out, fc, leaves)?,
        })
    }

    /// Output field `i` read from the file: found by `fc`'s path, else by field id or name;
    /// when the file lacks it, `fc`'s default or nulls.
    fn file_column(
        &self,
        i: usize,
        out: &Field,
        fc: &FileColumn,
        leaves: &mut [Vec<usize>],
    ) -> Result<OutCol> {
        let fields = self.file.fields();
        let found = match &fc.path {
            Some(path) => find_path(fields, path),
            None => {
                find(out, self.ids[i], &self.ids, fields, true, self.rules).map(|r| (r, Vec::new()))
            }
        };
        let Some((root, chain)) = found else {
            let name = out.name();
            return Ok(match &fc.default {
                Some(v) => OutCol::Const(
                    typed_value(v, out.data_type(), name)
                        .map_err(|e| self.ctx.err(name, format!("default {v}: {}", e.message())))?,
                ),
                None => OutCol::Null,
            });
        };
        let mut f = self.file.field(root);
        let mut start = self.starts[root];
        let mut path = Vec::with_capacity(chain.len());
        for &c in &chain {
            let DataType::Struct(fs) = f.data_type() else {
                unreachable!("find_path walks structs")
            };
            start = leaf_starts(fs, start)[c];
            f = &fs[c];
            path.push(f.name().clone());
        }
        select(out, f, start, self.rules, &mut leaves[root], &self.ctx)?;
        Ok(OutCol::File {
            root,
            path,
            build: Build::Same,
        })
    }
}

impl Mapping {
    /// Match `fields` (produced by `sources`, or all [`ColumnSource::file`]) against the file
    /// whose Parquet-derived Arrow schema is `file`; `location` is the task's location (for
    /// [`ColumnSource::FilePath`] and errors).
    pub fn resolve(
        fields: &Fields,
        sources: Option<&[ColumnSource]>,
        rules: Rules,
        file: &arrow::datatypes::Schema,
        location: &str,
    ) -> Result<Mapping> {
        let ctx = Ctx { file: location };
        if let Some(s) = sources {
            if s.len() != fields.len() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "the task gives {} column sources for a schema of {} fields",
                        s.len(),
                        fields.len()
                    ),
                )
                .with_path(location));
            }
        }
        let ids: Vec<Option<i32>> = fields
            .iter()
            .enumerate()
            .map(|(i, f)| match sources.map(|s| &s[i]) {
                Some(ColumnSource::File(FileColumn {
                    field_id: Some(id), ..
                })) => Some(*id),
                Some(ColumnSource::File(_)) | None => field_id(f),
                _ => None,
            })
            .collect();
        let resolver = Resolver {
            file,
            starts: leaf_starts(file.fields(), 0),
            ids,
            rules: &rules,
            ctx,
            location,
        };
        let default = ColumnSource::file();
        let mut leaves: Vec<Vec<usize>> = vec![Vec::new(); file.fields().len()];
        let mut columns = Vec::with_capacity(fields.len());
        for (i, out) in fields.iter().enumerate() {
            let source = sources.map_or(&default, |s| &s[i]);
            let col = resolver.column(i, out, source, &mut leaves)?;
            if matches!(col, OutCol::Null) && !out.is_nullable() {
                return Err(ctx.err(
                    out.name(),
                    "the file has no such column and the field is not nullable",
                ));
            }
            columns.push(col);
        }
        let roots = leaves
            .into_iter()
            .enumerate()
            .filter(|(_, l)| !l.is_empty())
            .map(|(r, mut l)| {
                l.sort_unstable();
                l.dedup();
                (r, l)
            })
            .collect();
        Ok(Mapping {
            fields: fields.clone(),
            columns,
            roots,
            rules,
        })
    }

    /// The mapping of plain files with these output `columns` (file roots as parquet reads
    /// them, partition constants, the row index), reading the leaves `roots`.
    pub fn plain(fields: Fields, columns: Vec<OutCol>, roots: Vec<(usize, Vec<usize>)>) -> Mapping {
        Mapping {
            fields,
            columns,
            roots,
            rules: Rules::default(),
        }
    }

    /// Every leaf read, ascending.
    pub fn leaves(&self) -> Vec<usize> {
        self.roots
            .iter()
            .flat_map(|(_, l)| l.iter().copied())
            .collect()
    }

    /// Prepare the builds against the decoded columns: `decoded(root)` is the field parquet's
    /// reader returns for file root `root` when it reads (at least) [`Mapping::leaves`]
    /// (pruned to the leaves read).
    pub fn prepare(
        &mut self,
        decoded: &dyn Fn(usize) -> Option<FieldRef>,
        location: &str,
    ) -> Result<()> {
        let ctx = Ctx { file: location };
        for (i, col) in self.columns.iter_mut().enumerate() {
            if let OutCol::File { root, path, build } = col {
                let out = &self.fields[i];
                let dec_root = decoded(*root)
                    .ok_or_else(|| ctx.err(out.name(), "the file's column was not decoded"))?;
                let mut dec: &Field = &dec_root;
                let mut chain = Vec::new();
                for want in path.iter() {
                    // Explicit paths are matched by name; the decoded struct keeps only the
                    // children read, so find the child again by name.
                    let DataType::Struct(fs) = dec.data_type() else {
                        return Err(ctx.err(out.name(), "path does not lead through structs"));
                    };
                    let c = fs
                        .iter()
                        .position(|f| f.name() == want)
                        .ok_or_else(|| ctx.err(out.name(), "path child not decoded"))?;
                    chain.push(c);
                    dec = &fs[c];
                }
                let mut b = build_for(out, dec, &self.rules, &ctx)?;
                for c in chain.into_iter().rev() {
                    b = Build::Extract {
                        child: c,
                        then: Box::new(b),
                    };
                }
                *build = b;
            }
        }
        Ok(())
    }

    /// Where the filter column `name` (an output column, or a dotted path into an output
    /// struct column) comes from in this file.
    pub fn filter_target(
        &self,
        name: &str,
        file: &arrow::datatypes::Schema,
        location: &str,
    ) -> Result<FilterTarget> {
        let bad = |why: &str| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("cannot filter on column {name:?}: {why}"),
            )
            .with_path(location)
        };
        let (top, out_chain) = self.output_leaf(name, &bad)?;
        let out = out_chain[out_chain.len() - 1];
        let out_type = out.data_type().clone();
        match &self.columns[top] {
            OutCol::RowIndex => Err(bad("filters on the row index column are not supported")),
            OutCol::Null => Ok(FilterTarget::Const(arrow::array::new_null_array(
                &out_type, 1,
            ))),
            OutCol::Const(v) => {
                if out_chain.len() == 1 {
                    Ok(FilterTarget::Const(Arc::clone(v)))
                } else {
                    Err(bad("not a struct field"))
                }
            }
            OutCol::File { root, path, .. } => {
                let Some((leaf, file_path, f)) =
                    self.file_leaf(file, *root, path, &out_chain, &bad)?
                else {
                    return Ok(FilterTarget::Const(arrow::array::new_null_array(
                        &out_type, 1,
                    )));
                };
                if leaf_count(f.data_type()) != 1 || matches!(f.data_type(), DataType::Struct(_)) {
                    return Err(bad("the file's column is not primitive"));
                }
                if !arrow::compute::can_cast_types(f.data_type(), &out_type) {
                    return Err(bad(&format!(
                        "the file's type {} cannot be read as {out_type}",
                        f.data_type()
                    )));
                }
                Ok(FilterTarget::File {
                    leaf,
                    file_path,
                    file_type: f.data_type().clone(),
                    out_type,
                })
            }
        }
    }

    /// The top-level output column a filter's column `name` is in (itself, or the first
    /// part of a dotted path into structs), and the output fields from that column down to
    /// the one `name` names, which must be primitive.
    fn output_leaf<'s>(
        &'s self,
        name: &str,
        bad: &dyn Fn(&str) -> Error,
    ) -> Result<(usize, Vec<&'s Field>)> {
        let (top, rest): (usize, Vec<&str>) =
            match self.fields.iter().position(|f| f.name() == name) {
                Some(i) => (i, Vec::new()),
                None => {
                    let mut parts = name.split('.');
                    let first = parts.next().unwrap_or_default();
                    let i = self
                        .fields
                        .iter()
                        .position(|f| f.name() == first)
                        .ok_or_else(|| {
                            let names: Vec<_> = self.fields.iter().map(|f| f.name()).collect();
                            bad(&format!("no such column; columns are {names:?}"))
                        })?;
                    (i, parts.collect())
                }
            };
        // The output leaf's type, walking the output structs.
        let mut out: &Field = &self.fields[top];
        let mut out_chain: Vec<&Field> = vec![out];
        for p in &rest {
            out = match out.data_type() {
                DataType::Struct(fs) => fs
                    .iter()
                    .find(|f| f.name() == p)
                    .ok_or_else(|| bad("field not found"))?,
                _ => return Err(bad("not a struct field")),
            };
            out_chain.push(out);
        }
        if matches!(
            out.data_type(),
            DataType::Struct(_)
                | DataType::List(_)
                | DataType::LargeList(_)
                | DataType::Map(..)
                | DataType::FixedSizeList(..)
        ) {
            return Err(bad("it is not a primitive column (name a field inside it)"));
        }
        Ok((top, out_chain))
    }

    /// The file leaf a filter column reads: from file root `root` down the output column's
    /// `path` into it, then down `out_chain` (the output fields from the top-level column to
    /// the filter's leaf) matched as [`Mapping::resolve`] matches children; its leaf index,
    /// its path of names in the file and its field. `None`: the file lacks a struct child the
    /// chain names (the column is null in this file).
    fn file_leaf<'f>(
        &self,
        file: &'f arrow::datatypes::Schema,
        root: usize,
        path: &[String],
        out_chain: &[&Field],
        bad: &dyn Fn(&str) -> Error,
    ) -> Result<Option<(usize, Vec<String>, &'f Field)>> {
        let starts = leaf_starts(file.fields(), 0);
        let mut f: &Field = file.field(root);
        let mut leaf = starts[root];
        let mut file_path = vec![f.name().clone()];
        for want in path {
            let DataType::Struct(fs) = f.data_type() else {
                return Err(bad("not a struct field"));
            };
            let c = fs
                .iter()
                .position(|x| x.name() == want)
                .ok_or_else(|| bad("field not found"))?;
            leaf = leaf_starts(fs, leaf)[c];
            f = &fs[c];
            file_path.push(f.name().clone());
        }
        for (depth, o) in out_chain.iter().enumerate().skip(1) {
            let DataType::Struct(fs) = f.data_type() else {
                return Err(bad("the file's column is not a struct"));
            };
            let DataType::Struct(siblings) = out_chain[depth - 1].data_type() else {
                unreachable!("the chain walks output structs")
            };
            let ids: Vec<Option<i32>> = siblings.iter().map(|s| field_id(s)).collect();
            let Some(c) = find(o, field_id(o), &ids, fs, false, &self.rules) else {
                return Ok(None);
            };
            leaf = leaf_starts(fs, leaf)[c];
            f = &fs[c];
            file_path.push(f.name().clone());
        }
        Ok(Some((leaf, file_path, f)))
    }

    /// The output columns of one batch of row group `rg` of file `name`: `decoded` holds the
    /// roots read (in [`Mapping::roots`] order), `rows` its length, `positions` the rows' file
    /// positions (needed only with a row index column). A file value its output type cannot
    /// hold (an int64 beyond an int32 output) is a `SchemaMismatch` naming the column.
    pub fn apply(
        &self,
        decoded: &[ArrayRef],
        rows: usize,
        positions: impl FnOnce() -> ArrayRef,
        (name, rg): (&str, usize),
    ) -> Result<Vec<ArrayRef>> {
        let mut positions = Some(positions);
        self.fields
            .iter()
            .zip(&self.columns)
            .map(|(f, c)| match c {
                OutCol::File { root, build, .. } => {
                    let k = self
                        .roots
                        .iter()
                        .position(|(r, _)| r == root)
                        .expect("root read");
                    build.apply(&decoded[k]).map_err(|e| match e {
                        arrow::error::ArrowError::CastError(m) => Error::new(
                            ErrorKind::SchemaMismatch,
                            format!(
                                "column {:?}: a value of the file does not fit the column's type \
                                 {}: {m}",
                                f.name(),
                                f.data_type()
                            ),
                        )
                        .with_path(name)
                        .with_row_group(rg),
                        e => Error::decoding(e, name, rg),
                    })
                }
                OutCol::Const(v) => {
                    repeat(v, f.data_type(), rows).map_err(|e| Error::decoding(e, name, rg))
                }
                OutCol::Null => Ok(arrow::array::new_null_array(f.data_type(), rows)),
                OutCol::RowIndex => {
                    let p = positions.take().map_or_else(
                        || Arc::new(Int64Array::from(Vec::<i64>::new())) as ArrayRef,
                        |p| p(),
                    );
                    if p.data_type() == f.data_type() {
                        Ok(p)
                    } else {
                        cast_with_options(&p, f.data_type(), &cast_options())
                            .map_err(|e| Error::decoding(e, name, rg))
                    }
                }
            })
            .collect()
    }

    /// Whether any output column is the row index.
    pub fn has_row_index(&self) -> bool {
        self.columns.iter().any(|c| matches!(c, OutCol::RowIndex))
    }
}

/// Where a filter column's values come from in one file.
#[derive(Debug, Clone)]
pub(crate) enum FilterTarget {
    /// A primitive file column: its leaf, its names from the root, its type in the file, and
    /// the output type it is read as.
    File {
        leaf: usize,
        file_path: Vec<String>,
        file_type: DataType,
        out_type: DataType,
    },
    /// The same value in every row of the file (a one-element array, possibly null).
    Const(ArrayRef),
}

/// Find a name path among `fields`: the root index and the struct child indices below it.
fn find_path(fields: &Fields, path: &[String]) -> Option<(usize, Vec<usize>)> {
    let (first, rest) = path.split_first()?;
    let root = fields.iter().position(|f| f.name() == first)?;
    let mut f: &Field = &fields[root];
    let mut chain = Vec::new();
    for p in rest {
        let DataType::Struct(fs) = f.data_type() else {
            return None;
        };
        let c = fs.iter().position(|x| x.name() == p)?;
        chain.push(c);
        f = &fs[c];
    }
    Some((root, chain))
}

/// The sort of nested type, for matching.
fn list_item(dt: &DataType) -> Option<(&FieldRef, bool)> {
    match dt {
        DataType::List(f) => Some((f, false)),
        DataType::LargeList(f) => Some((f, true)),
        _ => None,
    }
}

/// Pass 1: choose the leaves of file field `file` (whose first leaf is `start`) that output
/// field `out` needs.
fn select(
    out: &Field,
    file: &Field,
    start: usize,
    rules: &Rules,
    leaves: &mut Vec<usize>,
    ctx: &Ctx,
) -> Result<()> {
    if unshreds(out, file) {
        leaves.extend(start..start + leaf_count(file.data_type()));
        return Ok(());
    }
    match (out.data_type(), file.data_type()) {
        (DataType::Struct(of), DataType::Struct(ff)) => {
            let starts = leaf_starts(ff, start);
            let ids: Vec<Option<i32>> = of.iter().map(|f| field_id(f)).collect();
            let mut any = false;
            for (o, id) in of.iter().zip(&ids) {
                match find(o, *id, &ids, ff, false, rules) {
                    Some(i) => {
                        select(o, &ff[i], starts[i], rules, leaves, ctx)?;
                        any = true;
                    }
                    None if !o.is_nullable() => {
                        return Err(ctx.err(
                            out.name(),
                            format!(
                                "field {:?} is missing from the file and is not nullable",
                                o.name()
                            ),
                        ))
                    }
                    None => {}
                }
            }
            if !any && leaf_count(file.data_type()) > 0 {
                // Read one leaf, for the struct's own nulls and length.
                leaves.push(start);
            }
            Ok(())
        }
        (o, f) => {
            if let (Some((oi, _)), Some((fi, _))) = (list_item(o), list_item(f)) {
                return select(oi, fi, start, rules, leaves, ctx);
            }
            if let (DataType::Map(oe, _), DataType::Map(fe, _)) = (o, f) {
                return select_positional(oe, fe, start, rules, leaves, ctx);
            }
            let nested = |t: &DataType| {
                matches!(
                    t,
                    DataType::Struct(_)
                        | DataType::List(_)
                        | DataType::LargeList(_)
                        | DataType::Map(..)
                        | DataType::FixedSizeList(..)
                )
            };
            if (nested(o) || nested(f)) && !arrow::compute::can_cast_types(f, o) {
                return Err(ctx.err(
                    out.name(),
                    format!("the file's type {f} cannot be read as {o}"),
                ));
            }
            leaves.extend(start..start + leaf_count(f));
            Ok(())
        }
    }
}

/// Pass 1 for a map's entries: key and value matched by position.
fn select_positional(
    out: &Field,
    file: &Field,
    start: usize,
    rules: &Rules,
    leaves: &mut Vec<usize>,
    ctx: &Ctx,
) -> Result<()> {
    match (out.data_type(), file.data_type()) {
        (DataType::Struct(of), DataType::Struct(ff)) if of.len() == ff.len() => {
            let starts = leaf_starts(ff, start);
            for (i, o) in of.iter().enumerate() {
                select(o, &ff[i], starts[i], rules, leaves, ctx)?;
            }
            Ok(())
        }
        _ => select(out, file, start, rules, leaves, ctx),
    }
}

/// Pass 2: the build from decoded field `dec` (pruned to the leaves read) to `out`.
fn build_for(out: &Field, dec: &Field, rules: &Rules, ctx: &Ctx) -> Result<Build> {
    if out.data_type() == dec.data_type() {
        return Ok(Build::Same);
    }
    if unshreds(out, dec) {
        let DataType::Struct(fields) = out.data_type() else {
            unreachable!("a variant is a struct")
        };
        return Ok(Build::Unshred(fields.clone()));
    }
    match (out.data_type(), dec.data_type()) {
        (DataType::Struct(of), DataType::Struct(df)) => {
            let ids: Vec<Option<i32>> = of.iter().map(|f| field_id(f)).collect();
            let mut children = Vec::with_capacity(of.len());
            for (o, id) in of.iter().zip(&ids) {
                children.push(match find(o, *id, &ids, df, false, rules) {
                    Some(i) => Some((i, build_for(o, &df[i], rules, ctx)?)),
                    None => None,
                });
            }
            Ok(Build::Struct {
                fields: of.clone(),
                children,
            })
        }
        (o, d) => {
            if let (Some((oi, ol)), Some((di, dl))) = (list_item(o), list_item(d)) {
                if ol == dl {
                    return Ok(Build::List {
                        field: Arc::clone(oi),
                        large: ol,
                        item: Box::new(build_for(oi, di, rules, ctx)?),
                    });
                }
            }
            if let (DataType::Map(oe, sorted), DataType::Map(de, _)) = (o, d) {
                if let (DataType::Struct(of), DataType::Struct(df)) =
                    (oe.data_type(), de.data_type())
                {
                    if of.len() == df.len() {
                        let children = of
                            .iter()
                            .zip(df.iter())
                            .enumerate()
                            .map(|(i, (o, d))| Ok(Some((i, build_for(o, d, rules, ctx)?))))
                            .collect::<Result<Vec<_>>>()?;
                        return Ok(Build::Map {
                            field: Arc::clone(oe),
                            sorted: *sorted,
                            entries: Box::new(Build::Struct {
                                fields: of.clone(),
                                children,
                            }),
                        });
                    }
                }
            }
            if arrow::compute::can_cast_types(d, o) {
                Ok(Build::Cast(o.clone()))
            } else {
                Err(ctx.err(
                    out.name(),
                    format!("the file's type {d} cannot be read as {o}"),
                ))
            }
        }
    }
}
