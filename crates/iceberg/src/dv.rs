//! Deletion vectors (Iceberg format v3): the deleted positions of one data file, as a
//! `deletion-vector-v1` blob in a Puffin file, which usually holds the vectors of many data
//! files (one Puffin file per commit).
//!
//! A manifest entry of position-delete content with `file_format = PUFFIN` names the Puffin
//! file, the data file (`referenced_data_file`), and the blob's place (`content_offset`,
//! `content_size_in_bytes`): the Puffin footer is never read. A blob is
//!
//! ```text
//! u32 BE   length of magic + vector
//! 4 bytes  magic D1 D3 39 64
//! vector   Roaring "portable" 64-bit: u64 LE count, then per 32-bit bitmap (keys ascending)
//!          u32 LE key and a portable 32-bit Roaring bitmap
//! u32 BE   CRC-32 of magic + vector
//! ```
//!
//! [`Vectors`] loads them for one scan: the vectors the scan will need are registered
//! ([`Registry::want`]): by a local scan without a filter, every live vector of the snapshot
//! once the delete manifests are read (every data file is read, so every vector is needed);
//! otherwise (a filter may prune data files; a worker sees only its units) each task's when
//! the task is made. The first task of a Puffin file to load asks for every vector of that
//! file registered so far, read as coalesced byte ranges (one request for the usual layout)
//! and parsed on the decode pool; tasks share the results. So a Puffin file is read once per
//! unfiltered local scan, never a blob twice, and only blobs the scan registered.
//!
//! Invariant: a vector is used only when its length prefix, magic, CRC, Roaring structure,
//! cardinality (the manifest's record count) and bounds (positions below the data file's row
//! count) all check; otherwise the scan fails with `CorruptTable` naming the Puffin file.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::future::{BoxFuture, FutureExt, Shared};
use iceberg::io::FileIO;
use serde::{Deserialize, Serialize};

use rayquet::task::{LoadContext, RoaringTreemap};
use rayquet::{Error, ErrorKind, Result};

/// The blob magic of `deletion-vector-v1`.
const MAGIC: [u8; 4] = [0xD1, 0xD3, 0x39, 0x64];

/// Ranges closer than this are read as one.
const COALESCE_GAP: u64 = 1 << 20;

/// Where a data file's deletion vector is: serializable, part of a [`crate::TaskUnit`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DeletionVector {
    /// The Puffin file holding it (a URL or path as the manifest names it).
    pub path: String,
    /// Where its blob starts in the Puffin file (`content_offset`).
    pub offset: u64,
    /// The blob's length (`content_size_in_bytes`).
    pub length: u64,
    /// How many positions it deletes (the manifest entry's `record_count`).
    pub cardinality: u64,
}

impl DeletionVector {
    fn key(&self) -> (u64, u64) {
        (self.offset, self.length)
    }
}

fn corrupt(dv: &DeletionVector, why: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::CorruptTable,
        format!(
            "damaged deletion vector at bytes {}..{}: {why}",
            dv.offset,
            dv.offset.saturating_add(dv.length)
        ),
    )
    .with_path(dv.path.clone())
}

/// Parse and check a `deletion-vector-v1` blob (see the module docs).
pub(crate) fn parse(blob: &[u8], dv: &DeletionVector) -> Result<RoaringTreemap> {
    let bad = |why: &str| corrupt(dv, why);
    if blob.len() < 12 {
        return Err(bad("shorter than its length, magic and checksum"));
    }
    let n = blob.len();
    let declared = u32::from_be_bytes(blob[..4].try_into().expect("4 bytes")) as usize;
    if declared != n - 8 {
        return Err(corrupt(
            dv,
            format!(
                "its length prefix says {declared} bytes of magic and vector, the blob holds {}",
                n - 8
            ),
        ));
    }
    if blob[4..8] != MAGIC {
        return Err(bad("bad magic (not a deletion-vector-v1 blob)"));
    }
    let crc = u32::from_be_bytes(blob[n - 4..].try_into().expect("4 bytes"));
    if crc32fast::hash(&blob[4..n - 4]) != crc {
        return Err(bad("CRC-32 mismatch"));
    }
    let mut rest = &blob[8..n - 4];
    let count = take_u64(&mut rest).ok_or_else(|| bad("no bitmap count"))?;
    // The 32-bit bitmaps are taken as they are (their runs stay runs), their cardinalities
    // summed from their containers: no position is expanded, so a vector of 2^34 positions
    // costs what its bytes do. (A key is at least 4 bytes: `count` is bounded by the blob.)
    let mut bitmaps = Vec::new();
    let mut positions = 0u64;
    let mut last: Option<u32> = None;
    for _ in 0..count {
        let key = take_u32(&mut rest).ok_or_else(|| bad("the vector ends inside a key"))?;
        if last.is_some_and(|l| key <= l) {
            return Err(bad("32-bit bitmap keys not in ascending order"));
        }
        last = Some(key);
        let bitmap = roaring::RoaringBitmap::deserialize_from(&mut rest)
            .map_err(|e| corrupt(dv, format!("a 32-bit Roaring bitmap: {e}")))?;
        positions += bitmap.len();
        bitmaps.push((key, bitmap));
    }
    if !rest.is_empty() {
        return Err(corrupt(
            dv,
            format!("{} bytes after the vector's bitmaps", rest.len()),
        ));
    }
    if positions != dv.cardinality {
        return Err(corrupt(
            dv,
            format!(
                "it deletes {positions} positions, its manifest entry says {}",
                dv.cardinality
            ),
        ));
    }
    Ok(RoaringTreemap::from_bitmaps(bitmaps))
}

fn take_u64(b: &mut &[u8]) -> Option<u64> {
    let (head, rest) = b.split_first_chunk::<8>()?;
    *b = rest;
    Some(u64::from_le_bytes(*head))
}

fn take_u32(b: &mut &[u8]) -> Option<u32> {
    let (head, rest) = b.split_first_chunk::<4>()?;
    *b = rest;
    Some(u32::from_le_bytes(*head))
}

type Load = Shared<BoxFuture<'static, Result<Arc<RoaringTreemap>>>>;

/// The vectors of one Puffin file in a scan.
#[derive(Default)]
struct PuffinFile {
    /// Vectors tasks registered and that are not loading yet.
    wanted: BTreeSet<(u64, u64, u64)>,
    /// Vectors loading or loaded, by (offset, length).
    loads: HashMap<(u64, u64), Load>,
}

/// The vectors of a scan's Puffin files: wanted (registered by the planner or as tasks are
/// made) and loading or loaded. Shared by the planning side of a local scan and its reading
/// side ([`Vectors`]).
#[derive(Default, Clone)]
pub(crate) struct Registry(Arc<Mutex<HashMap<String, PuffinFile>>>);

impl Registry {
    /// The scan will need `dv`: read it with the other vectors of its Puffin file.
    pub fn want(&self, dv: &DeletionVector) {
        let mut files = self.0.lock().expect("vectors lock");
        let f = files.entry(dv.path.clone()).or_default();
        if !f.loads.contains_key(&dv.key()) {
            f.wanted.insert((dv.offset, dv.length, dv.cardinality));
        }
    }
}

/// The deletion vectors of one scan (see the module docs).
pub(crate) struct Vectors {
    file_io: FileIO,
    files: Registry,
}

impl Vectors {
    pub fn new(file_io: FileIO, files: Registry) -> Self {
        Vectors { file_io, files }
    }

    /// A task will need `dv`: read it with the other vectors of its Puffin file.
    pub fn want(&self, dv: &DeletionVector) {
        self.files.want(dv);
    }

    /// The positions `dv` deletes, checked against a data file of `rows` rows (when known).
    pub fn load(
        &self,
        dv: &DeletionVector,
        rows: Option<u64>,
        ctx: &LoadContext,
    ) -> BoxFuture<'static, Result<Arc<RoaringTreemap>>> {
        let load = {
            let mut files = self.files.0.lock().expect("vectors lock");
            let f = files.entry(dv.path.clone()).or_default();
            match f.loads.get(&dv.key()) {
                Some(l) => l.clone(),
                None => {
                    f.wanted.insert((dv.offset, dv.length, dv.cardinality));
                    let batch: Vec<DeletionVector> = std::mem::take(&mut f.wanted)
                        .into_iter()
                        .map(|(offset, length, cardinality)| DeletionVector {
                            path: dv.path.clone(),
                            offset,
                            length,
                            cardinality,
                        })
                        .collect();
                    let all = read_batch(self.file_io.clone(), batch.clone(), ctx.clone())
                        .boxed()
                        .shared();
                    for (i, v) in batch.iter().enumerate() {
                        let all = all.clone();
                        let one = async move {
                            let vectors = all.await?;
                            vectors[i].clone()
                        };
                        f.loads.insert(v.key(), one.boxed().shared());
                    }
                    f.loads[&dv.key()].clone()
                }
            }
        };
        let dv = dv.clone();
        async move {
            let v = load.await?;
            if let (Some(rows), Some(max)) = (rows, v.max()) {
                if max >= rows {
                    return Err(corrupt(
                        &dv,
                        format!("it deletes position {max} of a data file of {rows} rows"),
                    ));
                }
            }
            Ok(v)
        }
        .boxed()
    }
}

type Batch = Arc<Vec<Result<Arc<RoaringTreemap>>>>;

/// Read the blobs of `batch` (one Puffin file) as coalesced ranges, and parse each on the
/// decode pool.
async fn read_batch(io: FileIO, batch: Vec<DeletionVector>, ctx: LoadContext) -> Result<Batch> {
    let path = batch[0].path.clone();
    let read_err = |e: iceberg::Error| {
        Error::new(
            ErrorKind::Io,
            format!("reading deletion vectors from a Puffin file: {e}"),
        )
        .with_path(path.clone())
    };
    // Coalesce the ranges (sorted by offset).
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for dv in &batch {
        let end = dv
            .offset
            .checked_add(dv.length)
            .ok_or_else(|| corrupt(dv, "offset + length overflows"))?;
        match spans.last_mut() {
            Some((_, e)) if dv.offset <= e.saturating_add(COALESCE_GAP) => *e = (*e).max(end),
            _ => spans.push((dv.offset, end)),
        }
    }
    let reader = io
        .new_input(&path)
        .map_err(read_err)?
        .reader()
        .await
        .map_err(read_err)?;
    let reader = &reader;
    let reads = spans.iter().map(|&(s, e)| async move {
        let b = reader.read(s..e).await?;
        Ok::<(u64, Bytes), iceberg::Error>((s, b))
    });
    let read: Vec<(u64, Bytes)> = futures::future::try_join_all(reads)
        .await
        .map_err(read_err)?;
    let vectors = ctx
        .spawn_cpu(move || {
            let out = batch
                .iter()
                .map(|dv| {
                    let (s, bytes) = read
                        .iter()
                        .rev()
                        .find(|(s, _)| *s <= dv.offset)
                        .expect("a span holds every vector");
                    let at = (dv.offset - s) as usize;
                    let blob = bytes.get(at..at + dv.length as usize).ok_or_else(|| {
                        corrupt(dv, "the Puffin file ends before the vector's bytes")
                    })?;
                    parse(blob, dv).map(Arc::new)
                })
                .collect();
            Ok(out)
        })
        .await?;
    Ok(Arc::new(vectors))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Positions as a `deletion-vector-v1` blob (the writer side of [`parse`]).
    fn serialize(positions: &RoaringTreemap) -> Vec<u8> {
        let mut body = MAGIC.to_vec();
        positions
            .serialize_into(&mut body)
            .expect("writing to a Vec cannot fail");
        let mut out = Vec::with_capacity(body.len() + 8);
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(&body);
        out.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
        out
    }

    fn dv(cardinality: u64) -> DeletionVector {
        DeletionVector {
            path: "p.puffin".into(),
            offset: 4,
            length: 0,
            cardinality,
        }
    }

    #[test]
    fn round_trip_and_damage() {
        let positions: RoaringTreemap = [0u64, 5, 7, 1 << 33, (1 << 33) + 2].into_iter().collect();
        let blob = serialize(&positions);
        assert_eq!(parse(&blob, &dv(5)).unwrap(), positions);
        // The manifest's cardinality must match.
        let e = parse(&blob, &dv(4)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CorruptTable);
        // Bad magic, CRC, length.
        for (at, what) in [(4, "magic"), (12, "CRC"), (0, "length")] {
            let mut b = blob.clone();
            b[at] ^= 0x40;
            let e = parse(&b, &dv(5)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::CorruptTable);
            assert!(e.to_string().contains(what), "{what}: {e}");
            assert!(e.to_string().contains("p.puffin"), "{e}");
        }
        assert!(parse(&blob[..10], &dv(5)).is_err());
        // Keys out of order (a valid CRC over a bad vector).
        let mut body = MAGIC.to_vec();
        body.extend_from_slice(&2u64.to_le_bytes());
        for key in [3u32, 1] {
            body.extend_from_slice(&key.to_le_bytes());
            roaring::RoaringBitmap::from_iter([1u32])
                .serialize_into(&mut body)
                .unwrap();
        }
        let mut b = (body.len() as u32).to_be_bytes().to_vec();
        b.extend_from_slice(&body);
        b.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
        let e = parse(&b, &dv(2)).unwrap_err();
        assert!(e.to_string().contains("ascending"), "{e}");
    }
}
