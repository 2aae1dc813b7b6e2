//! Bloom filters: which bytes to fetch for the `=` and `IN` leaves of a filter
//! ([`bloom_ranges`]), and whether the fetched filters rule a row group out ([`bloom_verdict`]).
//! A `LIKE` without wildcards (`s LIKE 'abc'`, escapes resolved) is an `=` leaf here too.

use std::ops::Range;

use arrow::array::AsArray;
use arrow::datatypes::DataType;
use parquet::bloom_filter::Sbbf;

use crate::expr::{CmpOp, Expr, LikePrefix, LikeRest, Value};
use crate::footer::FileMeta;
use crate::plan::prune::filter::{BloomKind, FileFilter, FilterColumn};
use crate::plan::prune::stats::judge;
use crate::plan::prune::Verdict;

/// Bloom filter byte ranges, by column name.
pub(crate) type BloomRanges = Vec<(String, Range<u64>)>;

/// Byte ranges of the bloom filters that could exclude row group `rg` (`=`/`IN` leaves on
/// columns with a bloom filter of known length).
pub(crate) fn bloom_ranges(filter: &FileFilter, meta: &FileMeta, rg: usize) -> BloomRanges {
    let mut out: BloomRanges = Vec::new();
    let rgm = meta.reader.metadata().row_group(rg);
    let mut visit = |e: &Expr| {
        let column = match e {
            Expr::Compare {
                column,
                op: CmpOp::Eq,
                ..
            } => column,
            Expr::InList {
                column,
                negated: false,
                ..
            } => column,
            like @ Expr::Like { column, .. } if like_equals(like).is_some() => column,
            _ => return,
        };
        let col = filter.column(column);
        if col.bloom.is_none() || out.iter().any(|(c, _)| c == column) {
            return;
        }
        let cc = rgm.column(col.leaf);
        if let (Some(off), Some(len)) = (cc.bloom_filter_offset(), cc.bloom_filter_length()) {
            if off >= 0 && len > 0 && (off as u64).saturating_add(len as u64) <= meta.data_end {
                out.push((column.clone(), off as u64..off as u64 + len as u64));
            }
        }
    };
    walk_leaves(&filter.expr, &mut visit);
    out
}

/// The string a `LIKE` leaf equals: its pattern without wildcards, escapes resolved
/// (`NOT LIKE` and `ILIKE` are not equalities).
fn like_equals(e: &Expr) -> Option<Value> {
    match e {
        Expr::Like {
            pattern,
            negated: false,
            case_insensitive: false,
            ..
        } => {
            let p = LikePrefix::of(pattern);
            (p.rest == LikeRest::Nothing).then_some(Value::Str(p.prefix))
        }
        _ => None,
    }
}

fn walk_leaves<'a>(e: &'a Expr, f: &mut impl FnMut(&'a Expr)) {
    match e {
        Expr::And(a, b) | Expr::Or(a, b) => {
            walk_leaves(a, f);
            walk_leaves(b, f);
        }
        Expr::Not(a) => walk_leaves(a, f),
        Expr::Literal(_) => {}
        leaf => f(leaf),
    }
}

/// Judge a row group from its bloom filters (`blooms`: column name and filter bytes):
/// `None` when an `=`/`IN` (or a `LIKE` without wildcards) that the filter needs finds none
/// of its values.
pub(crate) fn bloom_verdict(filter: &FileFilter, blooms: &[(String, bytes::Bytes)]) -> Verdict {
    let sbbfs: Vec<(&str, Sbbf)> = blooms
        .iter()
        .filter_map(|(c, b)| Sbbf::from_bytes(b).ok().map(|s| (c.as_str(), s)))
        .collect();
    let absent = |col: &FilterColumn, v: &Value| -> bool {
        let Some((_, sbbf)) = sbbfs.iter().find(|(c, _)| *c == col.name) else {
            return false;
        };
        let Some(kind) = col.bloom else { return false };
        // Hashed as the file stores it: a value the file's type cannot hold may still be
        // absent, but "maybe present" is always safe.
        let Ok(typed) = v.to_typed(&col.file_type, &col.name) else {
            return false;
        };
        // Any conversion that fails means "maybe present": never prune on doubt.
        let as_type = |ty: DataType| arrow::compute::cast(&typed, &ty).ok();
        let present = match kind {
            BloomKind::I32 => as_type(DataType::Int32).and_then(|x| {
                let a = x.as_primitive_opt::<arrow::datatypes::Int32Type>()?;
                Some(sbbf.check(&a.value(0)))
            }),
            BloomKind::I64 => as_type(DataType::Int64).and_then(|x| {
                let a = x.as_primitive_opt::<arrow::datatypes::Int64Type>()?;
                Some(sbbf.check(&a.value(0)))
            }),
            BloomKind::Bytes => as_type(DataType::Utf8)
                .and_then(|x| Some(sbbf.check(x.as_string_opt::<i32>()?.value(0)))),
        }
        .unwrap_or(true);
        !present
    };
    let mut leaf = |e: &Expr| -> Vec<Verdict> {
        let v = match e {
            Expr::Compare {
                column,
                op: CmpOp::Eq,
                value,
            } => {
                if absent(filter.column(column), value) {
                    Verdict::None
                } else {
                    Verdict::Some
                }
            }
            Expr::InList {
                column,
                values,
                negated: false,
            } => {
                let col = filter.column(column);
                if values.iter().all(|v| absent(col, v)) {
                    Verdict::None
                } else {
                    Verdict::Some
                }
            }
            Expr::Like { column, .. } => match like_equals(e) {
                Some(v) if absent(filter.column(column), &v) => Verdict::None,
                _ => Verdict::Some,
            },
            _ => Verdict::Some,
        };
        vec![v]
    };
    judge(&filter.expr, 1, &mut leaf)[0]
}

/// The row groups of `blooms` (each with its bloom filters' byte ranges, fetched into
/// `chunk`) that a bloom filter rules out under `filter`. Bytes that were not fetched rule
/// nothing out.
pub(crate) fn excluded_row_groups(
    filter: &FileFilter,
    chunk: &crate::io::chunk::SparseChunk,
    blooms: Vec<(usize, BloomRanges)>,
) -> Vec<usize> {
    use parquet::file::reader::ChunkReader;
    let mut out = Vec::new();
    for (rg, cols) in blooms {
        let bytes: Vec<(String, bytes::Bytes)> = cols
            .into_iter()
            .filter_map(|(c, r)| {
                chunk
                    .get_bytes(r.start, (r.end - r.start) as usize)
                    .ok()
                    .map(|b| (c, b))
            })
            .collect();
        if bloom_verdict(filter, &bytes) == Verdict::None {
            out.push(rg);
        }
    }
    out
}
