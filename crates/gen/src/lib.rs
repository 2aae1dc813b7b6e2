//! A deterministic synthetic dataset: a TPC-H `lineitem`-like table, written as Parquet.
//!
//! Used to create benchmark and test datasets of any size (`rayquet gen`) without downloading
//! anything. The table has the 16 `lineitem` columns plus four columns exercising nested and
//! nullable types (see [`schema`]).
//!
//! Invariants:
//! - **Deterministic.** Every value is a pure function of `(seed, file, row)`: each row draws
//!   from its own splitmix64 stream seeded from those three numbers. [`batch`] therefore returns
//!   the same rows however a file is cut into batches, and [`generate`] writes byte-identical
//!   files for the same [`GenOptions`] (with the same parquet version).
//! - **Sorted keys.** `l_orderkey` ascends across the whole dataset: file `f` holds order keys in
//!   `[f·2³² + 1, (f+1)·2³²)`, ascending within the file. Rows come in orders of 1 to 7 lines,
//!   numbered by `l_linenumber` from 1.
//! - **Exact layout.** File `i` is named `part-{i:05}.parquet` and has exactly
//!   [`GenOptions::row_groups`] row groups of exactly [`GenOptions::rows_per_row_group`] rows.
//! - **Encodings.** The low-cardinality string columns are dictionary-encoded by the writer;
//!   `l_comment` is written PLAIN (dictionary disabled).

use std::fmt;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use arrow::array::{
    ArrayRef, Date32Array, Decimal128Array, Float32Array, Float64Array, Int16Array, Int32Array,
    Int64Array, ListArray, RecordBatch, StringArray, StructArray, TimestampMicrosecondArray,
};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use rayon::prelude::*;

/// Most rows built and written at once by [`generate`], to keep memory small.
const CHUNK_ROWS: usize = 64 * 1024;

/// Page compression codec of generated files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Compression {
    /// Uncompressed.
    None,
    /// Snappy.
    #[default]
    Snappy,
    /// Zstandard at its default level.
    Zstd,
    /// LZ4 raw (parquet's `LZ4_RAW`, not the deprecated framed `LZ4`).
    Lz4,
    /// Gzip at its default level.
    Gzip,
}

impl Compression {
    /// The lower-case name accepted by [`FromStr`]: `none`, `snappy`, `zstd`, `lz4` or `gzip`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Snappy => "snappy",
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
            Compression::Gzip => "gzip",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Compression {
    type Err = String;

    /// Parse `none`, `snappy`, `zstd`, `lz4` or `gzip` (case-insensitive).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "none" | "uncompressed" => Ok(Compression::None),
            "snappy" => Ok(Compression::Snappy),
            "zstd" => Ok(Compression::Zstd),
            "lz4" | "lz4_raw" => Ok(Compression::Lz4),
            "gzip" => Ok(Compression::Gzip),
            _ => Err(format!(
                "unknown compression {s:?} (expected none, snappy, zstd, lz4 or gzip)"
            )),
        }
    }
}

impl From<Compression> for parquet::basic::Compression {
    fn from(c: Compression) -> Self {
        use parquet::basic::{Compression as C, GzipLevel, ZstdLevel};
        match c {
            Compression::None => C::UNCOMPRESSED,
            Compression::Snappy => C::SNAPPY,
            Compression::Zstd => C::ZSTD(ZstdLevel::default()),
            Compression::Lz4 => C::LZ4_RAW,
            Compression::Gzip => C::GZIP(GzipLevel::default()),
        }
    }
}

/// What [`generate`] writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenOptions {
    /// Number of files.
    pub files: usize,
    /// Row groups per file.
    pub row_groups: usize,
    /// Rows per row group (at least 1).
    pub rows_per_row_group: usize,
    /// Page compression.
    pub compression: Compression,
    /// Seed of the pseudo-random values; the same seed gives the same data.
    pub seed: u64,
}

impl Default for GenOptions {
    /// 4 files × 4 row groups × 100 000 rows, snappy, seed 0.
    fn default() -> Self {
        GenOptions {
            files: 4,
            row_groups: 4,
            rows_per_row_group: 100_000,
            compression: Compression::Snappy,
            seed: 0,
        }
    }
}

impl GenOptions {
    /// Rows in each file: `row_groups × rows_per_row_group`.
    pub fn rows_per_file(&self) -> u64 {
        self.row_groups as u64 * self.rows_per_row_group as u64
    }

    /// Rows in the whole dataset: `files × row_groups × rows_per_row_group`.
    pub fn total_rows(&self) -> u64 {
        self.files as u64 * self.rows_per_file()
    }
}

/// The name of file `index` of a generated dataset: `part-00000.parquet`, ...
pub fn file_name(index: usize) -> String {
    format!("part-{index:05}.parquet")
}

/// The Arrow schema of the generated table (20 columns).
///
/// The `lineitem` columns, in TPC-H order, then `l_discount_f` (Float64, ~5% nulls), `l_ts`
/// (Timestamp µs, no time zone), `l_tags` (`List<Utf8>`, 0–3 items, ~8% null lists) and `l_dims`
/// (Struct{w: Float32, h: Int16}, ~3% null structs, ~7% null `h`). Nullable `lineitem` columns:
/// `l_suppkey` (~3% nulls), `l_tax` (~4%), `l_commitdate` (~5%), `l_shipinstruct` (~6%) and
/// `l_comment` (~10%).
pub fn schema() -> SchemaRef {
    static SCHEMA: OnceLock<SchemaRef> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            let money = DataType::Decimal128(15, 2);
            Arc::new(Schema::new(vec![
                Field::new("l_orderkey", DataType::Int64, false),
                Field::new("l_partkey", DataType::Int64, false),
                Field::new("l_suppkey", DataType::Int32, true),
                Field::new("l_linenumber", DataType::Int32, false),
                Field::new("l_quantity", money.clone(), false),
                Field::new("l_extendedprice", money.clone(), false),
                Field::new("l_discount", money.clone(), false),
                Field::new("l_tax", money, true),
                Field::new("l_returnflag", DataType::Utf8, false),
                Field::new("l_linestatus", DataType::Utf8, false),
                Field::new("l_shipdate", DataType::Date32, false),
                Field::new("l_commitdate", DataType::Date32, true),
                Field::new("l_receiptdate", DataType::Date32, false),
                Field::new("l_shipinstruct", DataType::Utf8, true),
                Field::new("l_shipmode", DataType::Utf8, false),
                Field::new("l_comment", DataType::Utf8, true),
                Field::new("l_discount_f", DataType::Float64, true),
                Field::new(
                    "l_ts",
                    DataType::Timestamp(TimeUnit::Microsecond, None),
                    false,
                ),
                Field::new("l_tags", DataType::new_list(DataType::Utf8, true), true),
                Field::new("l_dims", DataType::Struct(dims_fields()), true),
            ]))
        })
        .clone()
}

fn dims_fields() -> Fields {
    Fields::from(vec![
        Field::new("w", DataType::Float32, false),
        Field::new("h", DataType::Int16, true),
    ])
}

/// The Parquet writer settings [`generate`] uses for `compression` and `rows_per_row_group`
/// (at least 1).
pub fn writer_properties(compression: Compression, rows_per_row_group: usize) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(compression.into())
        .set_max_row_group_row_count(Some(rows_per_row_group.max(1)))
        .set_column_dictionary_enabled(ColumnPath::from("l_comment"), false)
        .build()
}

/// Write the dataset described by `opts` into `dir` (created if missing), one file per
/// [`GenOptions::files`], named by [`file_name`], and return their paths in order.
///
/// Files are written in parallel on the rayon pool, each in chunks of at most 64Ki rows.
/// Existing files of the same names are overwritten.
pub fn generate(dir: &Path, opts: &GenOptions) -> std::io::Result<Vec<PathBuf>> {
    if opts.rows_per_row_group == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "rows per row group must be at least 1",
        ));
    }
    std::fs::create_dir_all(dir)?;
    (0..opts.files)
        .into_par_iter()
        .map(|i| {
            let path = dir.join(file_name(i));
            write_file(&path, i, opts)?;
            Ok(path)
        })
        .collect()
}

fn write_file(path: &Path, file: usize, opts: &GenOptions) -> std::io::Result<()> {
    let props = writer_properties(opts.compression, opts.rows_per_row_group);
    let out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut writer = ArrowWriter::try_new(out, schema(), Some(props)).map_err(io_err)?;
    let total = opts.rows_per_file();
    let mut row = 0u64;
    while row < total {
        let n = (total - row).min(CHUNK_ROWS as u64) as usize;
        writer
            .write(&batch(file, row, n, opts.seed))
            .map_err(io_err)?;
        row += n as u64;
    }
    let mut out = writer.into_inner().map_err(io_err)?;
    std::io::Write::flush(&mut out)?;
    Ok(())
}

fn io_err(e: parquet::errors::ParquetError) -> std::io::Error {
    std::io::Error::other(e)
}

// ---------------------------------------------------------------------------------------------
// Values

const SHIPINSTRUCT: [&str; 4] = [
    "DELIVER IN PERSON",
    "COLLECT COD",
    "NONE",
    "TAKE BACK RETURN",
];
const SHIPMODE: [&str; 7] = ["AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"];
const TAGS: [&str; 8] = [
    "fragile", "bulk", "priority", "gift", "hazmat", "cold", "oversize", "insured",
];
#[rustfmt::skip]
const WORDS: [&str; 48] = [
    "furiously", "quickly", "carefully", "blithely", "slyly", "boldly", "ironic", "final",
    "regular", "express", "special", "pending", "unusual", "even", "silent", "bold", "packages",
    "requests", "accounts", "deposits", "foxes", "ideas", "theodolites", "pinto", "beans",
    "instructions", "dependencies", "excuses", "platelets", "asymptotes", "courts", "dolphins",
    "sleep", "wake", "are", "haggle", "nag", "use", "boost", "affix", "detect", "integrate",
    "cajole", "among", "above", "against", "along", "across",
];

/// 1992-01-01 as days since the Unix epoch.
const START_DATE: i32 = 8035;
/// Order dates fall in `[START_DATE, START_DATE + ORDER_DAYS)` (up to 1998-08-02, as TPC-H).
const ORDER_DAYS: u64 = 2406;
/// 1995-06-17 as days since the Unix epoch: TPC-H's "current date".
const CURRENT_DATE: i32 = 9298;
const MICROS_PER_DAY: i64 = 86_400_000_000;

/// splitmix64's output function: a good 64-bit mixer.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// A splitmix64 stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        mix64(self.0)
    }

    /// Uniform in `[0, n)` (n > 0), by multiply-high.
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `[lo, hi]`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }

    /// True with probability `percent`%.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len() as u64) as usize]
    }
}

/// The key all values of `file` derive from.
fn file_key(seed: u64, file: usize) -> u64 {
    mix64(mix64(seed ^ 0x5241_5951_5545_5421).wrapping_add((file as u64).wrapping_mul(GOLDEN)))
}

/// A string column under construction.
struct StrCol {
    offsets: Vec<i32>,
    values: Vec<u8>,
    valid: Vec<bool>,
}

impl StrCol {
    fn new(rows: usize, bytes: usize) -> Self {
        let mut offsets = Vec::with_capacity(rows + 1);
        offsets.push(0);
        StrCol {
            offsets,
            values: Vec::with_capacity(bytes),
            valid: Vec::with_capacity(rows),
        }
    }

    fn push(&mut self, s: Option<&str>) {
        if let Some(s) = s {
            self.values.extend_from_slice(s.as_bytes());
        }
        self.offsets.push(self.values.len() as i32);
        self.valid.push(s.is_some());
    }

    fn finish(self) -> StringArray {
        // Checked construction; cheap next to generating the values (all ASCII).
        StringArray::new(
            OffsetBuffer::new(ScalarBuffer::from(self.offsets)),
            self.values.into(),
            nulls(self.valid),
        )
    }
}

/// A validity bitmap, or `None` when every value is valid.
fn nulls(valid: Vec<bool>) -> Option<NullBuffer> {
    let n = NullBuffer::from(valid);
    (n.null_count() > 0).then_some(n)
}

/// The `rows` rows of file `file` starting at row `first_row` (0-based within the file), for
/// `seed`. Pure: the same arguments always give the same batch, and consecutive calls give the
/// same rows as one larger call.
pub fn batch(file: usize, first_row: u64, rows: usize, seed: u64) -> RecordBatch {
    let fkey = file_key(seed, file);
    let key_base = (file as i64) << 32;

    let mut orderkey = Vec::with_capacity(rows);
    let mut partkey = Vec::with_capacity(rows);
    let mut suppkey = Vec::with_capacity(rows);
    let mut suppkey_valid = Vec::with_capacity(rows);
    let mut linenumber = Vec::with_capacity(rows);
    let mut quantity = Vec::with_capacity(rows);
    let mut extprice = Vec::with_capacity(rows);
    let mut discount = Vec::with_capacity(rows);
    let mut tax = Vec::with_capacity(rows);
    let mut tax_valid = Vec::with_capacity(rows);
    let mut returnflag = StrCol::new(rows, rows);
    let mut linestatus = StrCol::new(rows, rows);
    let mut shipdate = Vec::with_capacity(rows);
    let mut commitdate = Vec::with_capacity(rows);
    let mut commit_valid = Vec::with_capacity(rows);
    let mut receiptdate = Vec::with_capacity(rows);
    let mut shipinstruct = StrCol::new(rows, rows * 12);
    let mut shipmode = StrCol::new(rows, rows * 5);
    let mut comment = StrCol::new(rows, rows * 26);
    let mut discount_f = Vec::with_capacity(rows);
    let mut discount_f_valid = Vec::with_capacity(rows);
    let mut ts = Vec::with_capacity(rows);
    let mut tag_offsets: Vec<i32> = Vec::with_capacity(rows + 1);
    tag_offsets.push(0);
    let mut tags_valid = Vec::with_capacity(rows);
    let mut tag_items = StrCol::new(rows * 3 / 2, rows * 8);
    let mut dims_w = Vec::with_capacity(rows);
    let mut dims_h = Vec::with_capacity(rows);
    let mut dims_h_valid = Vec::with_capacity(rows);
    let mut dims_valid = Vec::with_capacity(rows);
    let mut text = String::with_capacity(64);

    for row in first_row..first_row + rows as u64 {
        // Orders: each block of 8 rows holds two orders, split at a point in 1..=7.
        let block = row / 8;
        let split = 1 + mix64(fkey ^ block.wrapping_mul(0xD6E8_FEB8_6659_FD93)) % 7;
        let pos = row % 8;
        let second = pos >= split;
        let okey = key_base + (block * 2 + second as u64) as i64 + 1;
        let line = if second { pos - split } else { pos } + 1;
        let odate =
            START_DATE + (mix64(fkey ^ (okey as u64).wrapping_mul(GOLDEN)) % ORDER_DAYS) as i32;

        let mut r = Rng(mix64(fkey ^ row.wrapping_mul(0xA24B_AED4_963E_E407)));

        orderkey.push(okey);
        linenumber.push(line as i32);
        let pk = r.range(1, 2_000_000);
        partkey.push(pk);
        suppkey.push(r.range(1, 100_000) as i32);
        suppkey_valid.push(!r.chance(3));

        // Money in cents (scale 2).
        let qty = r.range(1, 50);
        let retail_cents = 90_000 + (pk / 10) % 20_001 + 100 * (pk % 1_000);
        let disc = r.range(0, 10);
        quantity.push(qty as i128 * 100);
        extprice.push(qty as i128 * retail_cents as i128);
        discount.push(disc as i128);
        tax.push(r.range(0, 8) as i128);
        tax_valid.push(!r.chance(4));

        let ship = odate + r.range(1, 121) as i32;
        let commit = odate + r.range(30, 90) as i32;
        let receipt = ship + r.range(1, 30) as i32;
        shipdate.push(ship);
        commitdate.push(commit);
        commit_valid.push(!r.chance(5));
        receiptdate.push(receipt);
        let flag = if receipt <= CURRENT_DATE {
            if r.chance(50) {
                "R"
            } else {
                "A"
            }
        } else {
            "N"
        };
        returnflag.push(Some(flag));
        linestatus.push(Some(if ship > CURRENT_DATE { "O" } else { "F" }));

        let instruct = r.pick(&SHIPINSTRUCT);
        shipinstruct.push((!r.chance(6)).then_some(instruct));
        shipmode.push(Some(r.pick(&SHIPMODE)));

        // A comment of 10 to 40 characters of random words.
        let len = r.range(10, 40) as usize;
        text.clear();
        while text.len() < len {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(r.pick(&WORDS));
        }
        text.truncate(len);
        if text.ends_with(' ') {
            text.pop();
            text.push('s');
        }
        comment.push((!r.chance(10)).then_some(text.as_str()));

        discount_f.push(disc as f64 / 100.0);
        discount_f_valid.push(!r.chance(5));
        ts.push(ship as i64 * MICROS_PER_DAY + r.below(MICROS_PER_DAY as u64) as i64);

        let ntags = r.below(4);
        let tags_null = r.chance(8);
        if !tags_null {
            for _ in 0..ntags {
                tag_items.push(Some(r.pick(&TAGS)));
            }
        }
        tag_offsets.push(tag_items.valid.len() as i32);
        tags_valid.push(!tags_null);

        let dims_null = r.chance(3);
        let w = (r.below(100_000) as f32 + 100.0) / 1000.0;
        let h = r.range(1, 500) as i16;
        let h_null = r.chance(7);
        dims_valid.push(!dims_null);
        dims_w.push(if dims_null { 0.0 } else { w });
        dims_h.push(if dims_null { 0 } else { h });
        dims_h_valid.push(!dims_null && !h_null);
    }

    let money = |v: Vec<i128>, valid: Option<Vec<bool>>| -> ArrayRef {
        Arc::new(
            Decimal128Array::new(ScalarBuffer::from(v), valid.and_then(nulls))
                .with_precision_and_scale(15, 2)
                .expect("valid decimal type"),
        )
    };
    let tags = ListArray::new(
        Arc::new(Field::new_list_field(DataType::Utf8, true)),
        OffsetBuffer::new(ScalarBuffer::from(tag_offsets)),
        Arc::new(tag_items.finish()),
        nulls(tags_valid),
    );
    let dims = StructArray::new(
        dims_fields(),
        vec![
            Arc::new(Float32Array::from(dims_w)),
            Arc::new(Int16Array::new(
                ScalarBuffer::from(dims_h),
                nulls(dims_h_valid),
            )),
        ],
        nulls(dims_valid),
    );
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(orderkey)),
        Arc::new(Int64Array::from(partkey)),
        Arc::new(Int32Array::new(
            ScalarBuffer::from(suppkey),
            nulls(suppkey_valid),
        )),
        Arc::new(Int32Array::from(linenumber)),
        money(quantity, None),
        money(extprice, None),
        money(discount, None),
        money(tax, Some(tax_valid)),
        Arc::new(returnflag.finish()),
        Arc::new(linestatus.finish()),
        Arc::new(Date32Array::from(shipdate)),
        Arc::new(Date32Array::new(
            ScalarBuffer::from(commitdate),
            nulls(commit_valid),
        )),
        Arc::new(Date32Array::from(receiptdate)),
        Arc::new(shipinstruct.finish()),
        Arc::new(shipmode.finish()),
        Arc::new(comment.finish()),
        Arc::new(Float64Array::new(
            ScalarBuffer::from(discount_f),
            nulls(discount_f_valid),
        )),
        Arc::new(TimestampMicrosecondArray::from(ts)),
        Arc::new(tags),
        Arc::new(dims),
    ];
    RecordBatch::try_new(schema(), columns).expect("generated columns match the schema")
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::compute::concat_batches;
    use arrow::datatypes::Int64Type;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    fn small(compression: Compression) -> GenOptions {
        GenOptions {
            files: 3,
            row_groups: 3,
            rows_per_row_group: 1_000,
            compression,
            seed: 7,
        }
    }

    #[test]
    fn compression_parses() {
        for c in [
            Compression::None,
            Compression::Snappy,
            Compression::Zstd,
            Compression::Lz4,
            Compression::Gzip,
        ] {
            assert_eq!(c.name().parse::<Compression>(), Ok(c));
            assert_eq!(c.to_string().to_uppercase().parse::<Compression>(), Ok(c));
        }
        assert!("brotli".parse::<Compression>().is_err());
        assert_eq!(
            parquet::basic::Compression::from(Compression::Lz4),
            parquet::basic::Compression::LZ4_RAW
        );
    }

    #[test]
    fn batch_is_pure_and_chunk_independent() {
        let whole = batch(2, 100, 1_000, 42);
        assert_eq!(whole, batch(2, 100, 1_000, 42));
        assert_eq!(whole.schema(), schema());
        let parts = [batch(2, 100, 333, 42), batch(2, 433, 667, 42)];
        assert_eq!(whole, concat_batches(&schema(), &parts).unwrap());
        assert_ne!(whole, batch(2, 100, 1_000, 43), "seed changes data");
        assert_ne!(whole, batch(3, 100, 1_000, 42), "file changes data");
        assert_eq!(batch(0, 0, 0, 0).num_rows(), 0);
    }

    #[test]
    fn values_look_like_lineitem() {
        let b = batch(1, 0, 20_000, 0);
        let keys = b.column(0).as_primitive::<Int64Type>();
        assert!(keys.values().windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(keys.value(0), (1 << 32) + 1);
        let lines = b.column(3).as_primitive::<arrow::datatypes::Int32Type>();
        assert!(lines.values().iter().all(|&l| (1..=7).contains(&l)));
        for (i, f) in schema().fields().iter().enumerate() {
            let nulls = b.column(i).null_count();
            if f.is_nullable() {
                let pct = nulls as f64 * 100.0 / b.num_rows() as f64;
                assert!((2.0..=12.0).contains(&pct), "{}: {pct}% nulls", f.name());
            } else {
                assert_eq!(nulls, 0, "{}", f.name());
            }
        }
        let comments = b.column(15).as_string::<i32>();
        for s in comments.iter().flatten() {
            assert!((10..=40).contains(&s.len()), "{s:?}");
        }
        let modes = b.column(14).as_string::<i32>();
        let distinct: std::collections::BTreeSet<_> = modes.iter().flatten().collect();
        assert_eq!(distinct.into_iter().collect::<Vec<_>>(), SHIPMODE);
    }

    #[test]
    fn generate_is_deterministic_with_exact_row_groups() {
        for compression in [Compression::Snappy, Compression::Lz4] {
            let opts = small(compression);
            let a = tempfile::tempdir().unwrap();
            let b = tempfile::tempdir().unwrap();
            let pa = generate(a.path(), &opts).unwrap();
            let pb = generate(b.path(), &opts).unwrap();
            assert_eq!(pa.len(), 3);
            let mut last_key = i64::MIN;
            for (i, (x, y)) in pa.iter().zip(&pb).enumerate() {
                assert_eq!(x.file_name().unwrap().to_str().unwrap(), file_name(i));
                assert_eq!(std::fs::read(x).unwrap(), std::fs::read(y).unwrap());

                let reader = SerializedFileReader::new(File::open(x).unwrap()).unwrap();
                let meta = reader.metadata();
                assert_eq!(meta.num_row_groups(), 3);
                for rg in meta.row_groups() {
                    assert_eq!(rg.num_rows(), 1_000);
                    assert_eq!(rg.column(0).compression(), compression.into());
                }

                let read = ParquetRecordBatchReaderBuilder::try_new(File::open(x).unwrap())
                    .unwrap()
                    .build()
                    .unwrap()
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap();
                let read = concat_batches(&schema(), &read).unwrap();
                assert_eq!(read, batch(i, 0, 3_000, 7));
                let keys = read.column(0).as_primitive::<Int64Type>();
                assert!(keys.value(0) > last_key);
                last_key = keys.value(keys.len() - 1);
            }
        }
    }

    #[test]
    fn comment_is_plain_and_flags_are_dictionary() {
        use parquet::basic::Encoding;
        let dir = tempfile::tempdir().unwrap();
        let paths = generate(dir.path(), &small(Compression::None)).unwrap();
        let reader = SerializedFileReader::new(File::open(&paths[0]).unwrap()).unwrap();
        let rg = reader.metadata().row_group(0);
        let col = |name: &str| {
            rg.columns()
                .iter()
                .find(|c| c.column_path().string() == name)
                .unwrap()
        };
        assert!(!col("l_comment")
            .encodings()
            .any(|e| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY)));
        assert!(col("l_returnflag")
            .encodings()
            .any(|e| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY)));
    }

    #[test]
    fn zero_rows_per_row_group_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let opts = GenOptions {
            rows_per_row_group: 0,
            ..GenOptions::default()
        };
        assert!(generate(dir.path(), &opts).is_err());
    }
}
