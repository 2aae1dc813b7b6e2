//! Fuzzing entry points (feature `fuzzing`, off by default, hidden from the documentation):
//! one safe function per `cargo fuzz` target of `fuzz/`, each feeding its input to one of
//! rayquet's own decoders or validators, comparing the result with an independent reference
//! and panicking on a mismatch. The same functions serve libFuzzer (`fuzz/fuzz_targets/`, built
//! with AddressSanitizer) and the replay tests of every committed corpus and past finding
//! (`crates/fuzz-replay`, stable, in the README's test command), so a finding stays fixed.
//!
//! | target | what runs | reference |
//! | --- | --- | --- |
//! | [`snappy`] | `decode::snappy::decompress_into` | the `snap` crate: same bytes, or both refuse |
//! | [`rle`] | `decode::rle::decode` and `Cursor` (next, skip, skip_sum) | a bit-by-bit decoder written here from the format's description |
//! | [`validate`] | the thrift walkers, `validate::pages` and the pooled page reader of one column chunk | parquet's metadata decoder and schema conversion: what the walkers accept must not crash them |
//! | [`direct`] | the direct reader on one column chunk of a file, with a scattered row selection, then every row | parquet's reader with the same selection (or none): the same batches, or a clean error |
//! | [`task`] | a file task decoded from JSON as a worker receives it (row groups, byte range, deletes, size, column sources), read against a 300-row file | parquet's reader, less the row groups and deleted rows the task's documentation says it leaves out |
//! | [`scan`] | a whole scan of a file, then with a filter on one of its columns (dictionary filter, filter stage, page index, bloom filters, batch byte bounds) | parquet's reader, the filter evaluated on its batches with arrow's kernels: the same rows, or an error naming the file |
//!
//! The dispatched decoders ([`crate::decode::dispatch`]) run with each copy the CPU has
//! (portable, and x86-64-v3 where detected; chosen for the calling thread), so the
//! references check both.
//!
//! A panic inside parquet or arrow (a crate from the registry) is caught, as scans catch it,
//! and is not a finding; a panic in rayquet's own code is. [`seeds`] extracts small seeds for
//! every target from a Parquet file (`fuzz/seeds.sh`).
//!
//! The feature adds only this module (and the `snap` crate, which parquet already builds): it
//! changes nothing in what scans do, so builds that unify it in (the workspace's tests) run the
//! same decoders as production.

use std::sync::Arc;

use arrow::array::{Array, RecordBatch};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use parquet::arrow::ProjectionMask;
use parquet::basic::{Compression, Repetition, Type as PhysicalType};
use parquet::column::page::Page;
use parquet::file::metadata::{
    ColumnChunkMetaData, FileMetaData, ParquetMetaData, ParquetMetaDataReader, RowGroupMetaData,
};
use parquet::schema::types::{SchemaDescriptor, Type};

use crate::decode::bound::BatchLimit;
use crate::decode::dispatch::{self, Kernels};
use crate::decode::{direct as direct_reader, flat, pages, rle as hybrid, snappy as snappy_codec};
use crate::io::chunk::SparseChunk;
use crate::validate::pages::PageChecks;
use crate::validate::thrift;

mod task;
pub use task::{task, task_compared, task_seeds};

/// Run `f` as scans run decoders (a panic caught); `Err(message)` for a panic inside a crate
/// from the registry (parquet, arrow: becomes an `ErrorKind::Panic` error in a scan); a panic
/// in rayquet's own code is a finding, so it panics again.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Result<T, String> {
    match crate::panic::catch(f) {
        Ok(v) => Ok(v),
        Err(msg) if msg.contains("/registry/src/") => Err(msg),
        Err(msg) => panic!("{what}: rayquet panicked: {msg}"),
    }
}

/// A tiny deterministic generator for the choices a target derives from one input byte.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

// ---------------------------------------------------------------------------------------------
// snappy

/// Snappy: `data[0]` chooses the spare bytes after the output (bits 0-1: 0, 7, [`DST_SLOP`],
/// 200) and how many bytes more than the stream declares the page claims (bits 2-7); the rest
/// is the stream. rayquet's decoder and the `snap` crate must give the same bytes, or both
/// refuse. The input and output are exact allocations, so AddressSanitizer sees any read or
/// write past them.
///
/// [`DST_SLOP`]: crate::decode::snappy::DST_SLOP
pub fn snappy(data: &[u8]) {
    let Some((&ctrl, stream)) = data.split_first() else {
        return;
    };
    let slack = [0, 7, snappy_codec::DST_SLOP, 200][usize::from(ctrl & 3)];
    let declared = snap::raw::decompress_len(stream).unwrap_or(0);
    // At most 1 MiB: a larger claim is refused by both without decoding.
    let want = declared.min(1 << 20) + usize::from(ctrl >> 2);
    let src = stream.to_vec();
    let mut theirs_buf = vec![0u8; want];
    let theirs = snap::raw::Decoder::new()
        .decompress(&src, &mut theirs_buf)
        .ok()
        .map(|n| &theirs_buf[..n]);
    for kernels in compared_kernels() {
        let mut ours_buf = vec![0xA5u8; want + slack];
        let ours = dispatch::on_thread(kernels, || {
            snappy_codec::decompress_into(&src, &mut ours_buf, want)
        });
        snappy_agree(theirs, ours, &ours_buf, (want, slack), kernels);
    }
}

/// The kernels every check runs rayquet's decoders with: both copies where the CPU has
/// x86-64-v3 ([`crate::decode::dispatch`]), else the portable one.
fn compared_kernels() -> Vec<Kernels> {
    if dispatch::both() {
        vec![Kernels::Portable, Kernels::V3]
    } else {
        vec![Kernels::Portable]
    }
}

fn snappy_agree(
    theirs: Option<&[u8]>,
    ours: Result<usize, snappy_codec::SnappyError>,
    ours_buf: &[u8],
    (want, slack): (usize, usize),
    kernels: Kernels,
) {
    match (theirs, &ours) {
        (Some(t), Ok(n)) => assert!(
            *n == t.len() && ours_buf[..*n] == *t,
            "snappy: {n} bytes differ from snap's {}",
            t.len()
        ),
        (None, Err(_)) => {}
        (t, o) => panic!(
            "snappy: snap {} and rayquet {o:?} disagree (want {want}, slack {slack}, \
             {kernels:?})",
            if t.is_some() { "decodes" } else { "refuses" }
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// RLE / bit-packing hybrid

/// The values of a hybrid stream of width `bw` (at most 32), read value by value from the
/// format's description, until `max` values or the first that cannot be read (a truncated
/// header, run value or bit-packed value, a header over 5 bytes, a run value wider than `bw`).
fn rle_reference(buf: &[u8], bw: usize, max: usize) -> Vec<u32> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while out.len() < max {
        let mut header = 0u64;
        let mut ended = false;
        for i in 0..5 {
            let Some(&b) = buf.get(at) else { return out };
            at += 1;
            header |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                ended = true;
                break;
            }
        }
        if !ended {
            return out;
        }
        if header & 1 == 0 {
            let width = bw.div_ceil(8);
            let Some(bytes) = buf.get(at..at + width) else {
                return out;
            };
            at += width;
            let v = bytes
                .iter()
                .rev()
                .fold(0u64, |v, &b| (v << 8) | u64::from(b));
            if v >> bw != 0 {
                return out;
            }
            let count = (header >> 1).min((max - out.len()) as u64) as usize;
            out.extend(std::iter::repeat_n(v as u32, count));
        } else {
            let values = (header >> 1) * 8;
            for j in 0..values {
                if out.len() == max {
                    return out;
                }
                let first = at as u64 * 8 + j * bw as u64;
                if first + bw as u64 > buf.len() as u64 * 8 {
                    return out;
                }
                let mut v = 0u32;
                for k in 0..bw as u64 {
                    let bit = first + k;
                    if buf[(bit / 8) as usize] >> (bit % 8) & 1 == 1 {
                        v |= 1 << k;
                    }
                }
                out.push(v);
            }
            at += (values * bw as u64 / 8) as usize;
        }
    }
    out
}

/// RLE / bit-packing hybrid streams: `data[0]` is the bit width (0-33), `data[1..3]` the
/// number of values to decode (at most 4096), `data[3]` seeds a script of cursor moves; the
/// rest is the stream. `rle::decode` and a `Cursor` following the script (`next`, `skip`, and
/// `skip_sum` at width 1) must agree with [`rle_reference`]: the same values where the
/// reference reads them, an error where it cannot (the cursor may step over values it cannot
/// read, then fails on the next it reads).
pub fn rle(data: &[u8]) {
    if data.len() < 4 {
        return;
    }
    let bw = data[0] % 34;
    let n = usize::from(u16::from_le_bytes([data[1], data[2]])) % 4097;
    let mut mix = Mix(u64::from(data[3]) | (data.len() as u64) << 8);
    let buf = data[4..].to_vec();
    let mut out = vec![7u32];
    let decoded = hybrid::decode(&buf, bw, n, &mut out);
    // The other copies of the dispatched decoder give the same values, or the same error.
    for kernels in compared_kernels() {
        let mut again = vec![7u32];
        let d = dispatch::on_thread(kernels, || hybrid::decode(&buf, bw, n, &mut again));
        assert!(
            d == decoded && (d.is_err() || again == out),
            "rle: decode with {kernels:?} differs"
        );
    }
    let cursor = hybrid::Cursor::new(bw);
    if bw > 32 {
        assert!(decoded.is_err() && cursor.is_err(), "rle: bit width {bw}");
        return;
    }
    let bw = usize::from(bw);
    // The script: up to 64 moves of up to 300 values each.
    let script: Vec<(u64, usize)> = (0..mix.below(64) + 1)
        .map(|_| (mix.below(3), mix.below(300) as usize))
        .collect();
    let reach = script.iter().map(|(_, k)| k + 1).sum::<usize>();
    let want = rle_reference(&buf, bw, n.max(reach));
    match decoded {
        Ok(()) => {
            assert!(
                want.len() >= n,
                "rle: decode read {n} values, the reference {}",
                want.len()
            );
            assert!(
                out[0] == 7 && out[1..] == want[..n],
                "rle: decode's values differ"
            );
        }
        Err(e) => assert!(
            want.len() < n,
            "rle: decode refused ({e}) {n} readable values"
        ),
    }
    follow_script(
        cursor.expect("width at most 32"),
        &buf,
        &want,
        script,
        bw == 1,
    );
}

/// Move cursor `c` over `buf` by `script` (0: read a value; 1: skip and count ones, for bit
/// width 1 only (`bits_1`); else skip), checking every move against the reference's values
/// `want`. A refusal ends the script and must come past them.
fn follow_script(
    mut c: hybrid::Cursor,
    buf: &[u8],
    want: &[u32],
    script: Vec<(u64, usize)>,
    bits_1: bool,
) {
    let avail = want.len();
    let mut i = 0usize;
    for (op, k) in script {
        match op {
            0 => match c.next(buf) {
                Ok(v) => {
                    assert!(i < avail, "rle: cursor read value {i} of {avail}");
                    assert_eq!(v, want[i], "rle: cursor value {i}");
                    i += 1;
                }
                Err(e) => {
                    assert!(i >= avail, "rle: cursor refused value {i} of {avail}: {e}");
                    return;
                }
            },
            1 if bits_1 => match c.skip_sum(k, buf) {
                Ok(ones) => {
                    // Nothing to read for no values (even past the readable ones).
                    assert!(
                        k == 0 || i + k <= avail,
                        "rle: skip_sum past {avail} from {i}"
                    );
                    if k == 0 {
                        assert_eq!(ones, 0, "rle: skip_sum of none");
                        continue;
                    }
                    let expect = want[i..i + k].iter().filter(|&&v| v == 1).count();
                    assert_eq!(ones, expect, "rle: skip_sum of {k} from {i}");
                    i += k;
                }
                Err(e) => {
                    assert!(
                        i + k > avail,
                        "rle: skip_sum refused {k} from {i} of {avail}: {e}"
                    );
                    return;
                }
            },
            _ => match c.skip(k, buf) {
                Ok(()) => i += k,
                Err(e) => {
                    assert!(
                        i + k > avail,
                        "rle: skip refused {k} from {i} of {avail}: {e}"
                    );
                    return;
                }
            },
        }
    }
}

// ---------------------------------------------------------------------------------------------
// validators

/// The validators: `data[0] % 3` chooses what the rest is.
///
/// - 0: a `FileMetaData` (thrift): when `validate::thrift::file_metadata` accepts it, parquet's
///   decoder, the `ARROW:schema` check and the Arrow schema conversion run on it as a scan runs
///   them (their panics caught; run with `-malloc_limit_mb` so an allocation from a claimed
///   count is a crash).
/// - 1: a page header: `page_header` and `thrift_struct` must agree on its length, inside
///   the bytes.
/// - 2: one column chunk (`data[1]`: physical type, `data[2]`: codec, `data[3..5]`: rows, then
///   the chunk's bytes): `validate::pages` checks its headers, then rayquet's pooled page reader
///   (snappy, zstd, LZ4 into pooled buffers) reads every page. No panic in rayquet's code, no
///   allocation beyond the page limit.
pub fn validate(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => {
            if thrift::file_metadata(rest).is_err() {
                return;
            }
            let _ = guarded("metadata", || {
                let md = ParquetMetaDataReader::decode_metadata(rest).ok()?;
                crate::validate::ipc::arrow_schema(&md).ok()?;
                parquet::arrow::arrow_reader::ArrowReaderMetadata::try_new(
                    Arc::new(md),
                    Default::default(),
                )
                .ok()
            });
        }
        1 => {
            if let Ok(h) = thrift::page_header(rest) {
                assert!(
                    h.len <= rest.len(),
                    "page header of {} in {}",
                    h.len,
                    rest.len()
                );
                assert_eq!(thrift::thrift_struct(rest), Ok(h.len), "page header length");
            }
        }
        _ => column_chunk(rest),
    }
}

/// Physical types and codecs [`validate`] and [`seeds`] number.
const PHYSICAL: [PhysicalType; 6] = [
    PhysicalType::INT32,
    PhysicalType::INT64,
    PhysicalType::BYTE_ARRAY,
    PhysicalType::DOUBLE,
    PhysicalType::BOOLEAN,
    PhysicalType::FLOAT,
];
fn codecs() -> [Compression; 4] {
    [
        Compression::UNCOMPRESSED,
        Compression::SNAPPY,
        Compression::LZ4_RAW,
        Compression::ZSTD(Default::default()),
    ]
}

fn column_chunk(data: &[u8]) {
    if data.len() < 4 {
        return;
    }
    let physical = PHYSICAL[usize::from(data[0]) % PHYSICAL.len()];
    let codec = codecs()[usize::from(data[1] >> 4) % 4];
    let nullable = data[1] & 1 == 1;
    let rows = i64::from(u16::from_le_bytes([data[2], data[3]]));
    let chunk_bytes = &data[4..];
    let Ok(md) = one_column_file(physical, nullable, codec, rows, chunk_bytes.len()) else {
        return;
    };
    let mut chunk = SparseChunk::new(chunk_bytes.len() as u64);
    chunk.insert(0, Bytes::copy_from_slice(chunk_bytes));
    // A small page limit, so that a claimed size over it is refused, not allocated.
    let limit = 4 << 20;
    let Ok(sizes) = crate::validate::check_row_group(
        (&md, "fuzz"),
        0,
        &[0],
        &chunk,
        PageChecks::new(limit, 64),
    ) else {
        return;
    };
    let md = Arc::new(md);
    let _ = guarded("page reader", || {
        let Ok(mut reader) = pages::leaf_pages(&md, 0, 0, &chunk, sizes.into_iter().next()) else {
            return;
        };
        for _ in 0..10_000 {
            match reader.get_next_page() {
                Ok(Some(Page::DictionaryPage { buf, .. })) => {
                    assert!(buf.len() as u64 <= limit, "a page over the limit")
                }
                Ok(Some(page)) => {
                    assert!(page.buffer().len() as u64 <= limit, "a page over the limit");
                    let _ = flat::split(&page, nullable);
                }
                _ => return,
            }
        }
    });
}

/// The metadata of a file of one row group of `rows` rows with one top-level column of
/// `physical` type, whose chunk of `len` bytes starts at offset 0.
fn one_column_file(
    physical: PhysicalType,
    nullable: bool,
    codec: Compression,
    rows: i64,
    len: usize,
) -> parquet::errors::Result<ParquetMetaData> {
    let repetition = if nullable {
        Repetition::OPTIONAL
    } else {
        Repetition::REQUIRED
    };
    let leaf = Type::primitive_type_builder("c", physical)
        .with_repetition(repetition)
        .build()?;
    let root = Type::group_type_builder("schema")
        .with_fields(vec![Arc::new(leaf)])
        .build()?;
    let schema = Arc::new(SchemaDescriptor::new(Arc::new(root)));
    let col = ColumnChunkMetaData::builder(schema.column(0))
        .set_compression(codec)
        .set_data_page_offset(0)
        .set_total_compressed_size(len as i64)
        .set_total_uncompressed_size(len as i64 * 4)
        .set_num_values(rows)
        .build()?;
    let group = RowGroupMetaData::builder(Arc::clone(&schema))
        .set_num_rows(rows)
        .set_column_metadata(vec![col])
        .build()?;
    let file = FileMetaData::new(1, rows, None, None, schema, None);
    Ok(ParquetMetaData::new(file, vec![group]))
}

// ---------------------------------------------------------------------------------------------
// the direct reader

/// The direct reader on one column chunk: `data[0]` picks the leaf, `data[1]` the row group,
/// `data[2]` the rows selected (density and pattern), `data[3]` the batch size (bits 0-1) and
/// string views (bit 2); the rest is a Parquet file. The footer is read as scans read it
/// (checked thrift, page index), the chunk's page headers checked, its bytes given as the only
/// fetched piece (an exact allocation); when the direct reader takes the chunk (a flat column
/// it reads, a scattered selection; then most rows and every row, where it reads those), its
/// batches (each validated with `validate_full`) must equal parquet's reader's with the same
/// metadata, selection and batch size whenever parquet reads them; rayquet may refuse more (a
/// clean error), never read otherwise.
pub fn direct(data: &[u8]) {
    if data.len() < 4 + 12 {
        return;
    }
    let (ctrl, file) = data.split_at(4);
    let file = Bytes::copy_from_slice(file);
    let size = file.len() as u64;
    let tail = &file[file.len() - 8..];
    if &tail[4..] != b"PAR1" {
        return;
    }
    let len = u32::from_le_bytes(tail[..4].try_into().expect("4 bytes")) as u64;
    let Some(meta_start) = (size - 8).checked_sub(len) else {
        return;
    };
    let views = ctrl[3] & 4 != 0;
    let store: Arc<dyn object_store::ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let name: Arc<str> = Arc::from("fuzz.parquet");
    let f = crate::input::FileRef {
        store,
        path: object_store::path::Path::from("fuzz.parquet"),
        size: Some(size),
        name,
        version: None,
    };
    let metadata = file.slice(meta_start as usize..(size - 8) as usize);
    let Ok(Ok(meta)) = guarded("footer", || {
        crate::footer::meta::decode_footer(f, size, metadata, (Bytes::new(), 0), views)
    }) else {
        return;
    };
    let mut whole = SparseChunk::new(size);
    whole.insert(0, file.clone());
    let meta = crate::footer::meta::with_page_index(meta, &whole);
    let reader_meta = meta.reader.clone();
    let md = reader_meta.metadata();
    if md.num_row_groups() == 0 {
        return;
    }
    let rg = usize::from(ctrl[1]) % md.num_row_groups();
    let group = md.row_group(rg);
    if group.num_columns() == 0 {
        return;
    }
    let rows = usize::try_from(group.num_rows()).unwrap_or(0);
    if rows == 0 || rows > 1 << 20 {
        return;
    }
    let selection = scattered_selection(rows, ctrl[2]);
    let kept = inverted(&selection);
    let batch = [1, 7, 100, 1024][usize::from(ctrl[3] & 3)];
    // The scattered selection, its inverse (most rows kept) and every row (the direct reader
    // reads those of columns without nulls), each with every copy of the dispatched kernels.
    for kernels in compared_kernels() {
        for sel in [Some(&selection), Some(&kept), None] {
            dispatch::on_thread(kernels, || {
                direct_compare((&meta, &file), rg, ctrl[0], sel, batch);
            });
        }
    }
}

/// [`direct`]'s comparison of row group `rg`, the rows of `selection` (`None`: every row), of
/// the first leaf from `first` on that the direct reader takes.
fn direct_compare(
    (meta, file): (&crate::footer::meta::FileMeta, &Bytes),
    rg: usize,
    first: u8,
    selection: Option<&RowSelection>,
    batch: usize,
) {
    let reader_meta = meta.reader.clone();
    let group = reader_meta.metadata().row_group(rg);
    // The first leaf from `first` on that the direct reader takes.
    let n = group.num_columns();
    let Some((leaf, ours)) = (0..n).find_map(|i| {
        let leaf = (usize::from(first) + i) % n;
        direct_chunk(meta, file, rg, leaf, selection, batch).map(|r| (leaf, r))
    }) else {
        return;
    };
    let Ok(ours) = ours else { return };
    for b in &ours {
        assert!(
            b.num_rows() <= batch,
            "direct: a batch of {} rows",
            b.num_rows()
        );
        for c in b.columns() {
            if let Err(e) = c.to_data().validate_full() {
                panic!("direct: an invalid {} array: {e}", c.data_type());
            }
        }
    }
    let theirs = guarded("parquet's reader", || {
        let mask = ProjectionMask::leaves(reader_meta.parquet_schema(), [leaf]);
        let b =
            ParquetRecordBatchReaderBuilder::new_with_metadata(file.clone(), reader_meta.clone())
                .with_row_groups(vec![rg])
                .with_projection(mask)
                .with_batch_size(batch);
        match selection {
            Some(sel) => b.with_row_selection(sel.clone()),
            None => b,
        }
        .build()
        .ok()?
        .collect::<Result<Vec<_>, _>>()
        .ok()
    });
    let Ok(Some(theirs)) = theirs else { return };
    DIRECT_COMPARED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let sizes = |b: &[RecordBatch]| b.iter().map(|b| b.num_rows()).collect::<Vec<_>>();
    assert_eq!(
        sizes(&ours),
        sizes(&theirs),
        "direct: batch sizes (row group {rg} of {} rows, leaf {leaf}, {} rows selected)",
        group.num_rows(),
        selection.map_or(-1, |s| s.row_count() as i64)
    );
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(a.schema().fields(), b.schema().fields(), "direct: schema");
        for (x, y) in a.columns().iter().zip(b.columns()) {
            assert!(
                x.to_data() == y.to_data(),
                "direct: batch {i} differs from parquet's:\n{x:?}\n{y:?}"
            );
        }
    }
}

/// Column chunk `leaf` of row group `rg` read by the direct reader with `selection`, its
/// bytes the only fetched piece (an exact allocation), its page headers checked first; `None`
/// when the chunk lies outside the file's data, its pages are refused, or the direct reader
/// does not take it.
fn direct_chunk(
    meta: &crate::footer::meta::FileMeta,
    file: &Bytes,
    rg: usize,
    leaf: usize,
    selection: Option<&RowSelection>,
    batch: usize,
) -> Option<Result<Vec<RecordBatch>, arrow::error::ArrowError>> {
    let md = meta.reader.metadata();
    let col = md.row_group(rg).column(leaf);
    let start = col
        .dictionary_page_offset()
        .unwrap_or(col.data_page_offset());
    let len = col.compressed_size();
    if start < 0 || len < 0 || (start as u64).saturating_add(len as u64) > meta.data_end {
        return None;
    }
    let (start, end) = (start as usize, (start + len) as usize);
    let mut chunk = SparseChunk::new(file.len() as u64);
    chunk.insert(start as u64, Bytes::copy_from_slice(&file[start..end]));
    let limit = 16 << 20;
    let sizes = crate::validate::check_row_group(
        (md.as_ref(), "fuzz.parquet"),
        rg,
        &[leaf],
        &chunk,
        PageChecks::new(limit, batch),
    )
    .ok()?;
    let ours = guarded("direct reader", || {
        let leaves = pages::Leaves {
            leaves: &[leaf],
            sizes,
        };
        // The selection worked out as a filter stage does for its slot's parts.
        let prepared = selection.map(|s| {
            let summary = direct_reader::Summary::of(s);
            direct_reader::Prepared::new(&meta.reader, rg, &[vec![leaf]], (s, summary))
        });
        let sel = direct_reader::PartRows {
            selection: selection.cloned().map(Arc::new),
            page_level: false,
            prepared: prepared.map(Arc::new),
        };
        match direct_reader::open(
            &meta.reader,
            rg,
            leaves,
            chunk,
            sel,
            BatchLimit::rows(batch),
        ) {
            Ok(direct_reader::RowGroupReader::Direct(r)) => {
                Some(r.collect::<Result<Vec<RecordBatch>, _>>())
            }
            // Not with one leaf; compared like the direct reader's if it were.
            Ok(direct_reader::RowGroupReader::Split(r)) => {
                Some(r.collect::<Result<Vec<RecordBatch>, _>>())
            }
            // Not the direct reader's: nothing to compare.
            Ok(direct_reader::RowGroupReader::Parquet(_)) => None,
            Err(e) => Some(Err(e.into())),
        }
    });
    // A panic in parquet's reader (after a fallback): an error, as in a scan.
    ours.unwrap_or_else(|e| Some(Err(arrow::error::ArrowError::ExternalError(e.into()))))
}

static DIRECT_COMPARED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many [`direct`] calls in this process compared the direct reader's batches with
/// parquet's (the others stopped earlier: a footer or chunk refused, a column or selection the
/// direct reader does not take, parquet's reader failing).
pub fn direct_compared() -> usize {
    DIRECT_COMPARED.load(std::sync::atomic::Ordering::Relaxed)
}

/// A selection of a `rows`-row row group the direct reader reads (short runs, at most half
/// the rows): runs of 1-8 rows after skips of 1-2k rows, k = 2-256 (`ctrl`'s low bits), each
/// run no longer than the skip before it.
fn scattered_selection(rows: usize, ctrl: u8) -> RowSelection {
    let k = [2, 4, 16, 256][usize::from(ctrl & 3)];
    let mut mix = Mix(u64::from(ctrl) ^ rows as u64);
    let mut selectors = Vec::new();
    let mut at = 0;
    while at < rows {
        let skip = (mix.below(2 * k) as usize + 1).min(rows - at);
        selectors.push(RowSelector::skip(skip));
        at += skip;
        if at < rows {
            // At most as many rows as were skipped: at most half the rows selected.
            let take = (mix.below(8) as usize + 1).min(skip).min(rows - at);
            selectors.push(RowSelector::select(take));
            at += take;
        }
    }
    selectors.into()
}

/// Whether the footer metadata at the end of `file` (`<metadata><u32 length>PAR1`) passes
/// rayquet's Thrift checks (what rayquet checks before parquet decodes a footer).
fn footer_sound(file: &[u8]) -> bool {
    let Some(end) = file.len().checked_sub(8) else {
        return false;
    };
    let (len, magic) = file[end..].split_at(4);
    let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
    match end.checked_sub(len) {
        Some(start) if magic == b"PAR1" => thrift::file_metadata(&file[start..end]).is_ok(),
        _ => false,
    }
}

/// The rows `selection` skips, selected (and the other way round).
fn inverted(selection: &RowSelection) -> RowSelection {
    let flipped: Vec<RowSelector> = selection
        .iter()
        .map(|s| RowSelector {
            row_count: s.row_count,
            skip: !s.skip,
        })
        .collect();
    flipped.into()
}

// ---------------------------------------------------------------------------------------------
// a whole scan, with a filter

/// A whole scan of a file, with and without a filter: `data[0]` picks the filter's column,
/// `data[1]` its operator (`=`, `!=`, `<`, `<=`, `>`, `>=`, `IS NULL`, `IS NOT NULL`, `IN`,
/// `LIKE`), `data[2..4]` the row whose value is its literal (a value the file holds, so that
/// dictionary filters, page indexes and bloom filters find it), `data[4]` the batch size
/// (bits 0-1), string views (bit 2) and checksums verified (bit 3); the rest is a Parquet file,
/// read from an in-memory store with a 4 MiB budget. Every scan must end with rows or an error
/// naming the file, without a panic in rayquet's own code; where parquet's reader reads the
/// file, the rows must be its rows, and the filtered rows those its rows keep under the filter
/// (evaluated with arrow's kernels on parquet's batches: what the dictionary filter, the filter
/// stage, page and bloom pruning decide must agree with it).
pub fn scan(data: &[u8]) {
    if data.len() < 5 + 12 {
        return;
    }
    let (ctrl, file) = data.split_at(5);
    let file = Bytes::copy_from_slice(file);
    let batch = [1, 7, 100, 1024][usize::from(ctrl[4] & 3)];
    let views = ctrl[4] & 4 != 0;
    let checksums = ctrl[4] & 8 == 0;
    let how = How {
        batch,
        views,
        checksums,
    };
    // Small files are compared (both readers' rows held); others only scanned to their end.
    // Parquet's metadata reader sizes vectors by the counts a footer claims: it reads only a
    // footer rayquet's Thrift checks passed (a 197-byte file made it ask for 5 GB).
    let small = footer_sound(&file)
        && guarded("parquet's metadata", || {
            ParquetMetaDataReader::new()
                .parse_and_finish(&file)
                .is_ok_and(|md| {
                    let rows: i64 = md.row_groups().iter().map(|g| g.num_rows()).sum();
                    let bytes: i64 = md.row_groups().iter().map(|g| g.total_byte_size()).sum();
                    (0..=1 << 20).contains(&rows) && (0..=16 << 20).contains(&bytes)
                })
        })
        .unwrap_or(false);
    if !small {
        drain(&file, None, how);
        return;
    }
    // rayquet first: the reference runs only on a file rayquet found sound (parquet's reader
    // trusts the sizes a file claims).
    let Ok(ours) = scan_file(&file, None, how) else {
        return;
    };
    let theirs = guarded("parquet's reader", || {
        ParquetRecordBatchReaderBuilder::try_new(file.clone())
            .ok()?
            .with_batch_size(1024)
            .build()
            .ok()?
            .collect::<Result<Vec<_>, _>>()
            .ok()
    })
    .ok()
    .flatten();
    let Some(theirs) = theirs else { return };
    same_rows("scan", &ours, &theirs);
    let Some(filter) = fuzz_filter(&theirs, [ctrl[0], ctrl[1], ctrl[2], ctrl[3]]) else {
        return;
    };
    let Ok((ours, pruned)) = scan_filtered(&file, filter.clone(), how) else {
        return;
    };
    // The reference: parquet's rows the filter keeps (a null verdict drops the row).
    let kept: Vec<RecordBatch> = theirs
        .iter()
        .map(|b| {
            let keep = filter
                .evaluate(b)
                .expect("the filter was built from this schema");
            let keep = match keep.null_count() {
                0 => keep,
                _ => arrow::compute::prep_null_mask_filter(&keep),
            };
            arrow::compute::filter_record_batch(b, &keep).expect("filter")
        })
        .collect();
    let what = format!("scan with filter {filter}");
    if pruned {
        // Statistics, bloom filters and page indexes are the file's claims, which a mutation
        // may have made false (none carries a checksum): what they pruned is gone, as in any
        // reader that trusts them. The rest must be the reference's rows, in order.
        subsequence(&what, &ours, &kept);
    } else {
        same_rows(&what, &ours, &kept);
    }
    SCAN_COMPARED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

static SCAN_COMPARED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many [`scan`] calls in this process compared a filtered scan with parquet's rows.
pub fn scan_compared() -> usize {
    SCAN_COMPARED.load(std::sync::atomic::Ordering::Relaxed)
}

/// How [`scan`] reads a file: rows per batch, strings as views, page checksums verified.
#[derive(Debug, Clone, Copy)]
struct How {
    batch: usize,
    views: bool,
    checksums: bool,
}

/// A scan of a large `file` to its end, its batches dropped as they come (the checks of
/// [`scan_file`] on its error).
fn drain(file: &Bytes, filter: Option<crate::Expr>, how: How) {
    let _ = scan_reader(file, filter, how).and_then(|r| {
        for b in r {
            b.map_err(crate::Error::from).map_err(checked)?;
        }
        Ok(())
    });
}

/// A scan of `file` as one object of an in-memory store, with `filter`, in batches of `batch`
/// rows (and string views, checksums verified as asked); its batches, or its error, which must
/// name the file ([`checked`]).
fn scan_file(
    file: &Bytes,
    filter: Option<crate::Expr>,
    how: How,
) -> Result<Vec<RecordBatch>, crate::Error> {
    scan_reader(file, filter, how)
        .and_then(|r| r.collect::<Result<Vec<_>, _>>().map_err(crate::Error::from))
        .map_err(checked)
}

/// [`scan_file`] with `filter`, and whether the file's statistics, bloom filters or page
/// index pruned anything.
fn scan_filtered(
    file: &Bytes,
    filter: crate::Expr,
    how: How,
) -> Result<(Vec<RecordBatch>, bool), crate::Error> {
    let reader = scan_reader(file, Some(filter), how)?;
    let metrics = reader.metrics();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(crate::Error::from)
        .map_err(checked)?;
    let m = metrics.snapshot();
    let pruned = m.row_groups_pruned + m.bloom_pruned + m.pages_pruned > 0;
    Ok((batches, pruned))
}

/// The rows of `ours` are rows of `theirs`, in the same order (some of `theirs` may be
/// missing), compared in `theirs`' types.
fn subsequence(what: &str, ours: &[RecordBatch], theirs: &[RecordBatch]) {
    let Some(t) = theirs.first() else {
        assert!(
            ours.iter().all(|b| b.num_rows() == 0),
            "{what}: rows from nothing"
        );
        return;
    };
    let schema = t.schema();
    let cast = |b: &RecordBatch| -> Option<Vec<arrow::array::ArrayRef>> {
        b.columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| arrow::compute::cast(c, f.data_type()).ok())
            .collect()
    };
    let fields = schema
        .fields()
        .iter()
        .map(|f| arrow::row::SortField::new(f.data_type().clone()))
        .collect();
    let Ok(converter) = arrow::row::RowConverter::new(fields) else {
        return;
    };
    let rows_of = |batches: &[RecordBatch]| -> Option<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for b in batches {
            let rows = converter.convert_columns(&cast(b)?).ok()?;
            out.extend(rows.iter().map(|r| r.as_ref().to_vec()));
        }
        Some(out)
    };
    let (Some(ours), Some(theirs)) = (rows_of(ours), rows_of(theirs)) else {
        return;
    };
    let mut t = theirs.iter();
    for (i, r) in ours.iter().enumerate() {
        assert!(
            t.any(|x| x == r),
            "{what}: row {i} is not one of parquet's rows the filter keeps, in order"
        );
    }
}

/// The reader of [`scan_file`]'s scan; an error building it is [`checked`].
fn scan_reader(
    file: &Bytes,
    filter: Option<crate::Expr>,
    How {
        batch,
        views,
        checksums,
    }: How,
) -> Result<crate::ScanReader, crate::Error> {
    use crate::ScanBuilder;
    use object_store::ObjectStoreExt;
    let store: Arc<dyn object_store::ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let path = object_store::path::Path::from("fuzz.parquet");
    futures::executor::block_on(store.put(&path, file.clone().into())).expect("in-memory put");
    let mut scan = crate::Scan::from_store(store, [path])
        .memory_budget(4 << 20)
        .batch_size(batch)
        .string_views(views)
        .verify_checksums(checksums);
    if let Some(f) = filter {
        scan = scan.filter(f);
    }
    scan.build().map_err(checked)
}

/// A scan's error `e`, checked: it names the file, and a caught panic is not in rayquet's own
/// code.
fn checked(e: crate::Error) -> crate::Error {
    assert!(
        e.path().is_some_and(|p| p.contains("fuzz.parquet")),
        "scan: the error does not name the file: {e}"
    );
    if e.kind() == crate::ErrorKind::Panic {
        let msg = e.to_string();
        assert!(
            msg.contains("/registry/src/") || msg.contains("/rustc/"),
            "scan: a panic in rayquet's own code: {e}"
        );
    }
    e
}

/// `ours` (a scan's batches) hold the rows of `theirs` (parquet's), whatever the batch sizes
/// and string types.
fn same_rows(what: &str, ours: &[RecordBatch], theirs: &[RecordBatch]) {
    for b in ours {
        for c in b.columns() {
            if let Err(e) = c.to_data().validate_full() {
                panic!("{what}: an invalid {} array: {e}", c.data_type());
            }
        }
    }
    let rows = |b: &[RecordBatch]| b.iter().map(|b| b.num_rows()).sum::<usize>();
    assert_eq!(rows(ours), rows(theirs), "{what}: rows");
    let (Some(o), Some(t)) = (ours.first(), theirs.first()) else {
        return;
    };
    let (schema, ts) = (t.schema(), o.schema());
    if schema.fields().len() != ts.fields().len() {
        return;
    }
    // String views and other read types: compared in parquet's types where they cast.
    let cast = |b: &RecordBatch| -> Option<RecordBatch> {
        let cols = b
            .columns()
            .iter()
            .zip(schema.fields())
            .map(|(c, f)| arrow::compute::cast(c, f.data_type()).ok())
            .collect::<Option<Vec<_>>>()?;
        RecordBatch::try_new(Arc::clone(&schema), cols).ok()
    };
    let Some(ours) = ours.iter().map(cast).collect::<Option<Vec<_>>>() else {
        return;
    };
    let a = arrow::compute::concat_batches(&schema, &ours).expect("concat");
    let b = arrow::compute::concat_batches(&schema, theirs).expect("concat");
    assert!(a == b, "{what}: rows differ from parquet's reader");
}

/// A filter on a top-level column of `batches` (parquet's reader's), from `ctrl` (see
/// [`scan`]): `None` when the file has no such column or value.
fn fuzz_filter(batches: &[RecordBatch], ctrl: [u8; 4]) -> Option<crate::Expr> {
    use arrow::datatypes::DataType as D;
    let first = batches.first()?;
    let schema = first.schema();
    let candidates: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| {
            matches!(
                schema.field(i).data_type(),
                D::Boolean
                    | D::Int8
                    | D::Int16
                    | D::Int32
                    | D::Int64
                    | D::UInt8
                    | D::UInt16
                    | D::UInt32
                    | D::Float32
                    | D::Float64
                    | D::Utf8
                    | D::LargeUtf8
                    | D::Utf8View
            )
        })
        .collect();
    let i = *candidates.get(usize::from(ctrl[0]) % candidates.len().max(1))?;
    let name = schema.field(i).name().clone();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let mut row = usize::from(u16::from_le_bytes([ctrl[2], ctrl[3]])) % rows.max(1);
    let value = batches.iter().find_map(|b| {
        if row >= b.num_rows() {
            row -= b.num_rows();
            return None;
        }
        Some(value_at(b.column(i), row))
    })?;
    let c = crate::col(name);
    Some(match (ctrl[1] % 10, value) {
        (6, _) => c.is_null(),
        (7, _) => c.is_not_null(),
        (_, None) => c.is_null(),
        (0, Some(v)) => c.eq(v),
        (1, Some(v)) => c.not_eq(v),
        (2, Some(v)) => c.lt(v),
        (3, Some(v)) => c.lt_eq(v),
        (4, Some(v)) => c.gt(v),
        (5, Some(v)) => c.gt_eq(v),
        (8, Some(v)) => c.in_list([v, crate::expr::Value::Int(0)]),
        (_, Some(crate::expr::Value::Str(s))) => {
            let prefix: String = s.chars().take(2).collect();
            c.like(format!("{prefix}%"))
        }
        (_, Some(v)) => c.eq(v),
    })
}

/// The value at `row` of `a` as a filter literal (`None` for a null).
fn value_at(a: &arrow::array::ArrayRef, row: usize) -> Option<crate::expr::Value> {
    use arrow::array::AsArray;
    use arrow::datatypes::{DataType as D, Float64Type, Int64Type};
    if a.is_null(row) {
        return None;
    }
    Some(match a.data_type() {
        D::Boolean => crate::expr::Value::Bool(a.as_boolean().value(row)),
        D::Float32 | D::Float64 => {
            let f = arrow::compute::cast(&a.slice(row, 1), &D::Float64).ok()?;
            crate::expr::Value::Float(f.as_primitive::<Float64Type>().value(0))
        }
        D::Utf8 | D::LargeUtf8 | D::Utf8View => {
            let s = arrow::compute::cast(&a.slice(row, 1), &D::Utf8).ok()?;
            crate::expr::Value::Str(s.as_string::<i32>().value(0).to_string())
        }
        _ => {
            let i = arrow::compute::cast(&a.slice(row, 1), &D::Int64).ok()?;
            crate::expr::Value::Int(i.as_primitive::<Int64Type>().value(0))
        }
    })
}

// ---------------------------------------------------------------------------------------------
// seeds

/// Small seeds for every target from the Parquet file `bytes`: (target, input) pairs. The
/// direct reader's seeds are whole files, only for files up to `max_file` bytes; column chunks
/// up to 8 KiB, snappy pages up to 16 KiB, the first 4 KiB of level and index streams, of the
/// first two row groups (two pages of each column).
pub fn seeds(bytes: &[u8], max_file: usize) -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(reader) =
        parquet::file::reader::SerializedFileReader::new(Bytes::copy_from_slice(bytes))
    else {
        return out;
    };
    use parquet::file::reader::FileReader;
    let md = reader.metadata();
    // The footer's thrift.
    if bytes.len() >= 8 {
        let len = u32::from_le_bytes(bytes[bytes.len() - 8..bytes.len() - 4].try_into().unwrap());
        if let Some(start) = (bytes.len() - 8).checked_sub(len as usize) {
            let mut s = vec![0];
            s.extend_from_slice(&bytes[start..bytes.len() - 8]);
            out.push(("validate", s));
        }
    }
    if bytes.len() <= max_file {
        for ctrl in [[0u8, 0, 0, 6], [1, 0, 1, 1]] {
            let mut s = ctrl.to_vec();
            s.extend_from_slice(bytes);
            out.push(("direct", s));
        }
    }
    for rg in 0..md.num_row_groups().min(2) {
        let group = md.row_group(rg);
        let Ok(rgr) = reader.get_row_group(rg) else {
            continue;
        };
        for leaf in 0..group.num_columns() {
            let col = group.column(leaf);
            let start = col
                .dictionary_page_offset()
                .unwrap_or(col.data_page_offset());
            let len = col.compressed_size();
            let cd = col.column_descr();
            let Some(range) = usize::try_from(start)
                .ok()
                .zip(usize::try_from(len).ok())
                .map(|(s, l)| s..s + l)
                .filter(|r| r.end <= bytes.len())
            else {
                continue;
            };
            chunk_seeds(&bytes[range.clone()], col, group.num_rows(), &mut out);
            if col.compression() == Compression::SNAPPY {
                snappy_seeds(&bytes[range.clone()], &mut out);
            }
            // Levels and dictionary indices of decompressed data pages.
            if flat::flat(cd) {
                if let Ok(mut pages) = rgr.get_column_page_reader(leaf) {
                    level_seeds(&mut *pages, cd.max_def_level() == 1, &mut out);
                }
            }
        }
    }
    // Level and index streams: their first 4 KiB.
    for (target, s) in &mut out {
        if *target == "rle" {
            s.truncate(4 << 10);
        }
    }
    // Whole scans (last, so that the other targets' seeds keep their names): an equality on
    // the first column, a range on the second.
    if bytes.len() <= max_file {
        for ctrl in [[0u8, 0, 3, 0, 3], [1, 4, 9, 0, 6]] {
            let mut s = ctrl.to_vec();
            s.extend_from_slice(bytes);
            out.push(("scan", s));
        }
    }
    out
}

/// `validate` seeds from column chunk `chunk` (of `col`, in a row group of `rows` rows): its
/// first page header, and the whole chunk (up to 8 KiB) for the page checks.
fn chunk_seeds(
    chunk: &[u8],
    col: &ColumnChunkMetaData,
    rows: i64,
    out: &mut Vec<(&'static str, Vec<u8>)>,
) {
    let cd = col.column_descr();
    let mut h = vec![1];
    h.extend_from_slice(&chunk[..chunk.len().min(256)]);
    out.push(("validate", h));
    let physical = PHYSICAL.iter().position(|p| *p == cd.physical_type());
    let codec = codecs()
        .iter()
        .position(|c| std::mem::discriminant(c) == std::mem::discriminant(&col.compression()));
    if let (Some(p), Some(c), true) = (physical, codec, chunk.len() <= 8 << 10) {
        let nullable = u8::from(cd.max_def_level() > 0);
        let rows = (rows.clamp(0, 65535) as u16).to_le_bytes();
        let mut s = vec![2, p as u8, (c as u8) << 4 | nullable, rows[0], rows[1]];
        s.extend_from_slice(chunk);
        out.push(("validate", s));
    }
}

/// `snappy` seeds from column `chunk`: the compressed bodies of its pages (not v2 pages,
/// whose levels come first; at most 16 KiB each).
fn snappy_seeds(chunk: &[u8], out: &mut Vec<(&'static str, Vec<u8>)>) {
    let mut at = 0;
    while at < chunk.len() {
        let Ok(head) = thrift::page_header(&chunk[at..]) else {
            break;
        };
        let body = at + head.len;
        let end = body + head.compressed.max(0) as usize;
        if end > chunk.len() {
            break;
        }
        // A v2 page's levels are not compressed: its snappy stream comes after.
        if head.kind != 3 && end - body <= 16 << 10 {
            // The spare bytes of a page, nothing claimed beyond the stream.
            let mut s = vec![2u8];
            s.extend_from_slice(&chunk[body..end]);
            out.push(("snappy", s));
        }
        at = end;
    }
}

/// `rle` seeds from the first two data pages of a flat column: their definition levels and
/// dictionary indices.
fn level_seeds(
    pages: &mut dyn parquet::column::page::PageReader,
    nullable: bool,
    out: &mut Vec<(&'static str, Vec<u8>)>,
) {
    for _ in 0..2 {
        let Ok(Some(page)) = pages.get_next_page() else {
            break;
        };
        let Ok(p) = flat::split(&page, nullable) else {
            continue;
        };
        let rows = (p.rows.min(4096) as u16).to_le_bytes();
        if let Some(defs) = p.defs.clone() {
            let mut s = vec![1, rows[0], rows[1], 3];
            s.extend_from_slice(&p.buf[defs]);
            out.push(("rle", s));
        }
        let values = &p.buf[p.values.clone()];
        if matches!(
            p.encoding,
            parquet::basic::Encoding::RLE_DICTIONARY | parquet::basic::Encoding::PLAIN_DICTIONARY
        ) && !values.is_empty()
        {
            let mut s = vec![values[0], rows[0], rows[1], 5];
            s.extend_from_slice(&values[1..]);
            out.push(("rle", s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rle_reference_reads_what_decode_reads() {
        // Width 3: an RLE run of 5 sevens, then one bit-packed group of 0..8.
        let mut s = vec![5 << 1, 7, 0b11];
        let mut bits = 0u32;
        for v in 0..8u32 {
            bits |= v << (3 * v);
        }
        s.extend_from_slice(&bits.to_le_bytes()[..3]);
        let want: Vec<u32> = [7; 5].into_iter().chain(0..8).collect();
        assert_eq!(rle_reference(&s, 3, 100), want);
        let mut data = vec![3, 13, 0, 9];
        data.extend_from_slice(&s);
        rle(&data);
    }

    #[test]
    fn targets_take_any_bytes() {
        for n in 0..40u8 {
            let data: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37) ^ n).collect();
            snappy(&data);
            rle(&data);
            validate(&data);
            direct(&data);
        }
    }
}
