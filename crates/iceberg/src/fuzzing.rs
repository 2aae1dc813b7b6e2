//! Fuzzing entry points (feature `fuzzing`, hidden from the documentation): the bytes of an
//! Iceberg table that rayquet reads from files other people wrote, each through the check a
//! scan runs, compared with an independent reading where there is one. The cargo-fuzz targets
//! of `fuzz/` (`iceberg_dv`, `iceberg_manifest`) call them, and `crates/fuzz-replay` replays
//! every committed input through them on stable.
//!
//! | function | what runs | reference |
//! | --- | --- | --- |
//! | [`deletion_vector`] | a `deletion-vector-v1` blob parsed and checked (length, magic, CRC, Roaring structure, cardinality) | the roaring crate's own 64-bit deserialization of the same vector: the same positions |
//! | [`manifest`] | the integrity check of a manifest list or manifest (Avro container, counts, duplicates), then iceberg-rust's parsing of what it accepted | no crash, no allocation over the limit |

use rayquet::task::RoaringTreemap;
use rayquet::ErrorKind;

use crate::dv::{parse, DeletionVector};
use crate::integrity::Checker;

/// `data[0..8]`: the cardinality the manifest claims (u64, little-endian); the rest, a
/// deletion-vector blob. A vector `parse` accepts deletes exactly that many positions, the
/// positions the roaring crate reads from the same bytes; a refusal is `CorruptTable` naming
/// the Puffin file.
pub fn deletion_vector(data: &[u8]) {
    let Some((claim, blob)) = data.split_first_chunk::<8>() else {
        return;
    };
    let dv = DeletionVector {
        path: "fuzz.puffin".into(),
        offset: 0,
        length: blob.len() as u64,
        cardinality: u64::from_le_bytes(*claim),
    };
    match parse(blob, &dv) {
        Ok(positions) => {
            assert_eq!(positions.len(), dv.cardinality, "the cardinality checked");
            let reference = RoaringTreemap::deserialize_from(&blob[8..blob.len() - 4])
                .expect("roaring reads the vector rayquet accepted");
            assert_eq!(positions, reference, "the positions roaring reads");
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::CorruptTable, "{e}");
            assert!(e.to_string().contains("fuzz.puffin"), "{e}");
        }
    }
}

/// An Avro manifest list or manifest. What the integrity check accepts is parsed by
/// iceberg-rust as a scan would (manifest lists of format v1 to v3, manifests), which must not
/// crash or allocate past the limit.
pub fn manifest(bytes: &[u8]) {
    if Checker::default().check("fuzz.avro", bytes).is_err() {
        return;
    }
    for version in [
        iceberg::spec::FormatVersion::V1,
        iceberg::spec::FormatVersion::V2,
        iceberg::spec::FormatVersion::V3,
    ] {
        let _ = iceberg::spec::ManifestList::parse_with_version(bytes, version);
    }
    let _ = iceberg::spec::Manifest::parse_avro(bytes);
}
