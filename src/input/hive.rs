//! Hive-style partitions of a plain dataset: `year=2024/cat=a/part-0.parquet` under a listed
//! directory or prefix gives every row of that file the columns `year` and `cat`, as
//! pyarrow, DuckDB, polars and Spark write and read them.
//!
//! Invariants: only the directories *below* a listed root count (the root's own path never
//! does, nor a file's name); every file of a partitioned scan has the same keys in the same
//! order, or the scan fails naming the file that differs; a value is percent-decoded, and
//! `__HIVE_DEFAULT_PARTITION__` is null. Discovery makes no request: it reads the paths that
//! listing returned.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, StringArray};
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::{DataType, Field, Fields, SchemaRef};

use crate::error::{Error, ErrorKind, Result};

/// The value Hive, Spark and pyarrow write for a null partition value.
pub const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// How a plain scan finds partition columns in the paths of the files it lists
/// ([`Scan::partitioning`](crate::Scan::partitioning)).
///
/// ```no_run
/// # fn main() -> rayquet::Result<()> {
/// use rayquet::{Partitioning, Scan, ScanBuilder, col};
/// // /data/events/year=2024/country=NZ/part-0.parquet ...
/// let reader = Scan::new("/data/events/")?
///     .filter(col("year").eq(2024))          // files of other years are never opened
///     .build()?;
/// assert!(reader.schema().field_with_name("country").is_ok());
/// // Or give the partition columns' types, or turn discovery off:
/// # use std::sync::Arc;
/// # use rayquet::reexports::arrow::datatypes::{DataType, Field, Schema};
/// let schema = Arc::new(Schema::new(vec![
///     Field::new("year", DataType::Int64, true),
///     Field::new("country", DataType::Utf8, true),
/// ]));
/// let typed = Scan::new("/data/events/")?.partitioning(Partitioning::Schema(schema));
/// let plain = Scan::new("/data/events/")?.partitioning(Partitioning::Off);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub enum Partitioning {
    /// Discover Hive partitions (the default): when the files listed under a directory or
    /// prefix lie in `name=value` directories, each such `name` becomes a column, last in
    /// the schema, typed from its values: `Int32` when every value is a 32-bit integer,
    /// `Int64` when every value is a 64-bit one, `Date32` when every value is a
    /// `YYYY-MM-DD` date, `Utf8` otherwise (pyarrow types integers as `Int32` and anything
    /// else as strings; DuckDB and polars also find dates and 64-bit integers).
    #[default]
    Infer,
    /// Read the files as they are: `name=value` directories give no columns.
    Off,
    /// These partition columns, in path order, with these types (each value is cast from its
    /// text; a value that does not convert fails the scan).
    Schema(SchemaRef),
}

/// Whether a directory segment is `name=value` (a non-empty name).
fn key_value(segment: &str) -> Option<(&str, &str)> {
    let (k, v) = segment.split_once('=')?;
    (!k.is_empty()).then_some((k, v))
}

/// `s` percent-decoded (`%3A` → `:`), as pyarrow's default `segment_encoding="uri"` does.
fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// The `name=value` pairs of a file's directories below its listed root (`rel`: the file's
/// path relative to the root, `/`-separated, its name last), decoded.
pub(crate) fn pairs(rel: &str) -> Vec<(String, String)> {
    let mut dirs: Vec<&str> = rel.split('/').filter(|s| !s.is_empty()).collect();
    dirs.pop(); // the file's own name
    dirs.into_iter()
        .filter_map(key_value)
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

/// Partition columns found for a scan's files.
#[derive(Debug, Clone)]
pub(crate) struct Hive {
    /// The partition columns, nullable, in path order.
    pub fields: Fields,
    /// Per file, one one-element array per column, of the column's type.
    pub values: Vec<Arc<[ArrayRef]>>,
    /// Per file, each column's value as the path spells it, decoded (`None`: null).
    pub texts: Vec<Vec<Option<String>>>,
}

/// The partition columns of files whose paths below their listed roots are `rels` (`None`:
/// a file named directly, not listed), shown as `names` in errors.
pub(crate) fn discover(
    partitioning: &Partitioning,
    rels: &[Option<String>],
    names: &[Arc<str>],
) -> Result<Option<Hive>> {
    if matches!(partitioning, Partitioning::Off) || rels.is_empty() {
        return Ok(None);
    }
    let found: Vec<Vec<(String, String)>> = rels
        .iter()
        .map(|r| r.as_deref().map(pairs).unwrap_or_default())
        .collect();
    let given = match partitioning {
        Partitioning::Schema(s) => Some(s),
        _ => None,
    };
    if given.is_none() && found.iter().all(Vec::is_empty) {
        return Ok(None);
    }
    let keys = |f: &[(String, String)]| f.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    let expected: Vec<String> = match given {
        Some(s) => s.fields().iter().map(|f| f.name().clone()).collect(),
        None => keys(&found[0]),
    };
    for (i, f) in found.iter().enumerate() {
        if keys(f) != expected {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "Hive partitions: this file's directories give the keys {:?}, the scan's \
                     are {expected:?} (every file must lie in the same name=value \
                     directories; Partitioning::Off reads the files without partition columns)",
                    keys(f)
                ),
            )
            .with_path(&*names[i]));
        }
    }
    let types: Vec<DataType> = match given {
        Some(s) => s.fields().iter().map(|f| f.data_type().clone()).collect(),
        None => (0..expected.len())
            .map(|k| infer(found.iter().map(|f| f[k].1.as_str())))
            .collect(),
    };
    let fields: Fields = expected
        .iter()
        .zip(&types)
        .map(|(k, t)| Field::new(k, t.clone(), true))
        .collect();
    let values = found
        .iter()
        .zip(names)
        .map(|(f, name)| {
            f.iter()
                .zip(&types)
                .map(|((k, v), t)| typed(k, v, t).map_err(|e| e.with_path(&**name)))
                .collect::<Result<Vec<_>>>()
                .map(Arc::from)
        })
        .collect::<Result<Vec<_>>>()?;
    let texts = found
        .iter()
        .map(|f| {
            f.iter()
                .map(|(_, v)| (v != HIVE_NULL).then(|| v.clone()))
                .collect()
        })
        .collect();
    Ok(Some(Hive {
        fields,
        values,
        texts,
    }))
}

/// The type of a partition column from its values' texts.
fn infer<'a>(values: impl Iterator<Item = &'a str> + Clone) -> DataType {
    let present = values.filter(|v| *v != HIVE_NULL);
    let all = |ok: &dyn Fn(&str) -> bool| present.clone().all(ok);
    if present.clone().next().is_none() {
        return DataType::Utf8;
    }
    // Integers as Rust parses them, without a sign-less `+` or leading spaces: `007` is 7 in
    // pyarrow too.
    let int = |v: &str| !v.starts_with('+') && !v.contains(char::is_whitespace);
    if all(&|v| int(v) && v.parse::<i32>().is_ok()) {
        DataType::Int32
    } else if all(&|v| int(v) && v.parse::<i64>().is_ok()) {
        DataType::Int64
    } else if all(&is_date) {
        DataType::Date32
    } else {
        DataType::Utf8
    }
}

/// `YYYY-MM-DD`, a real day.
fn is_date(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && typed("", v, &DataType::Date32).is_ok_and(|a| a.is_valid(0))
}

/// The value `v` of key `k` as a one-element array of type `t`.
fn typed(k: &str, v: &str, t: &DataType) -> Result<ArrayRef> {
    if v == HIVE_NULL {
        return Ok(new_null_array(t, 1));
    }
    let text: ArrayRef = Arc::new(StringArray::from(vec![v]));
    let opts = CastOptions {
        safe: false,
        ..Default::default()
    };
    cast_with_options(&text, t, &opts).map_err(|e| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("Hive partition {k}={v:?} is not a {t}: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::AsArray;
    use arrow::datatypes::{Date32Type, Int32Type, Int64Type};

    fn names(n: usize) -> Vec<Arc<str>> {
        (0..n).map(|i| format!("f{i}").into()).collect()
    }

    #[test]
    fn pairs_are_directories_below_the_root_decoded() {
        assert_eq!(
            pairs("year=2024/s=a%3Ab/plain/x=/part-0.parquet"),
            vec![
                ("year".into(), "2024".into()),
                ("s".into(), "a:b".into()),
                ("x".into(), "".into())
            ]
        );
        // A file's own name is no partition; `=v` has no name.
        assert!(pairs("k=v.parquet").is_empty());
        assert!(pairs("=v/f.parquet").is_empty());
    }

    #[test]
    fn types_follow_the_values() {
        let rels = [
            Some("a=1/b=5000000000/d=2024-01-02/s=x/n=__HIVE_DEFAULT_PARTITION__/f.parquet"),
            Some("a=2/b=1/d=2024-02-29/s=7/n=__HIVE_DEFAULT_PARTITION__/f.parquet"),
        ]
        .map(|r| r.map(String::from));
        let h = discover(&Partitioning::Infer, &rels, &names(2))
            .unwrap()
            .unwrap();
        let types: Vec<_> = h.fields.iter().map(|f| f.data_type().clone()).collect();
        assert_eq!(
            types,
            [
                DataType::Int32,
                DataType::Int64,
                DataType::Date32,
                DataType::Utf8,
                DataType::Utf8
            ]
        );
        assert_eq!(h.values[1][0].as_primitive::<Int32Type>().value(0), 2);
        assert_eq!(
            h.values[0][1].as_primitive::<Int64Type>().value(0),
            5_000_000_000
        );
        assert_eq!(
            h.values[1][2].as_primitive::<Date32Type>().value(0),
            19782 // 2024-02-29
        );
        assert_eq!(h.values[1][3].as_string::<i32>().value(0), "7");
        assert!(h.values[0][4].is_null(0));
        // Not a real day: a string.
        let rels = [Some("d=2024-02-30/f.parquet".to_string())];
        let h = discover(&Partitioning::Infer, &rels, &names(1))
            .unwrap()
            .unwrap();
        assert_eq!(h.fields[0].data_type(), &DataType::Utf8);
    }

    #[test]
    fn differing_keys_fail_naming_the_file_and_off_finds_nothing() {
        let rels = [
            Some("a=1/f.parquet".to_string()),
            Some("b=1/f.parquet".to_string()),
        ];
        let e = discover(&Partitioning::Infer, &rels, &names(2)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert_eq!(e.path(), Some("f1"));
        // A file named directly has no partition: mixed with partitioned ones, an error.
        let rels = [Some("a=1/f.parquet".to_string()), None];
        assert!(discover(&Partitioning::Infer, &rels, &names(2)).is_err());
        assert!(discover(&Partitioning::Off, &rels, &names(2))
            .unwrap()
            .is_none());
        // Nothing partitioned: no columns.
        let rels = [Some("x/f.parquet".to_string()), None];
        assert!(discover(&Partitioning::Infer, &rels, &names(2))
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_given_schema_types_the_values() {
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![Field::new(
            "a",
            DataType::Int64,
            true,
        )]));
        let rels = [Some("a=9/f.parquet".to_string())];
        let h = discover(&Partitioning::Schema(schema.clone()), &rels, &names(1))
            .unwrap()
            .unwrap();
        assert_eq!(h.values[0][0].as_primitive::<Int64Type>().value(0), 9);
        let rels = [Some("a=x/f.parquet".to_string())];
        let e = discover(&Partitioning::Schema(schema), &rels, &names(1)).unwrap_err();
        assert_eq!(e.path(), Some("f0"));
    }
}
