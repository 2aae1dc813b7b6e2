//! Fuzzing entry points (feature `fuzzing`, hidden from the documentation): the bytes of a
//! Delta table that rayquet reads from files other people wrote, each through the code a scan
//! runs. The cargo-fuzz targets of `fuzz/` (`delta_log`, `delta_dv`) call them, and
//! `crates/fuzz-replay` replays every committed input through them on stable.
//!
//! | function | what runs | reference |
//! | --- | --- | --- |
//! | [`log`] | the strict check of a commit, a log compaction or a JSON checkpoint, then serde_json's reading of each line it accepted, then the nanosecond-timestamp rewrite (`nanos`) | every accepted line is one JSON object of one action; a rewritten file is still accepted, line for line, without the feature |
//! | [`deletion_vector`] | a deletion vector read by the kernel's descriptor (inline, Z85; or a slice of a DV file: size, magic, CRC) and its cardinality checked | the roaring crate's own reading of the same bitmap: the same positions |
//!
//! Delta checkpoints in Parquet are read through rayquet's scans (the `scan` target).

use bytes::Bytes;
use delta_kernel::actions::deletion_vector::{DeletionVectorDescriptor, DeletionVectorStorageType};
use rayquet::task::RoaringTreemap;
use rayquet::ErrorKind;
use url::Url;

use crate::dv::{attempt, Attempt};
use crate::log_check::{check, LogFile};

/// `data[0]` picks the kind of file (commit, compaction, checkpoint); the rest is its bytes.
/// What the check accepts is, line by line, one JSON object with exactly one key.
pub fn log(data: &[u8]) {
    let Some((&kind, bytes)) = data.split_first() else {
        return;
    };
    let kind = match kind % 3 {
        0 => LogFile::Commit,
        1 => LogFile::Compaction,
        _ => LogFile::Checkpoint,
    };
    if check(bytes, kind).is_err() {
        return;
    }
    for line in bytes.split(|&b| b == b'\n') {
        if line.iter().all(|&b| crate::log_check::json_whitespace(b)) {
            continue;
        }
        let v: serde_json::Value = serde_json::from_slice(line).expect("an accepted line parses");
        let obj = v.as_object().expect("an accepted line is an object");
        assert_eq!(obj.len(), 1, "an accepted line holds one action");
    }
    // What the kernel is shown of nanosecond timestamps (`nanos`): still a file the check
    // accepts, with as many lines, and no `timestampNanos` feature left in a protocol.
    if let Some(shown) = crate::nanos::rewrite_json(bytes) {
        assert!(check(&shown, kind).is_ok(), "a rewritten log is accepted");
        let lines = |b: &[u8]| b.split(|&c| c == b'\n').count();
        assert_eq!(lines(&shown), lines(bytes), "one line for one line");
        for line in shown.split(|&b| b == b'\n') {
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) else {
                continue;
            };
            for key in ["readerFeatures", "writerFeatures"] {
                if let Some(features) = v["protocol"][key].as_array() {
                    assert!(!features.iter().any(|f| f == "timestampNanos"), "{key}");
                }
            }
        }
    }
}

/// `data[0]` bit 0: an inline vector (the rest, Z85-encoded, as the log would hold it) or a
/// DV file (`data[1..5]`: the vector's offset, `data[5..9]`: its size as the log claims them;
/// the rest, the file); `data[9..17]` (or `data[1..9]` inline): the cardinality the log
/// claims. A vector the reader accepts deletes exactly that many rows, the rows the roaring
/// crate reads from the same bytes; a refusal names the data file.
pub fn deletion_vector(data: &[u8]) {
    let Some((&ctrl, rest)) = data.split_first() else {
        return;
    };
    let root = Url::parse("file:///table/").expect("a URL");
    let (dv, fetched, bitmap) = if ctrl & 1 == 0 {
        let Some((claim, body)) = rest.split_first_chunk::<8>() else {
            return;
        };
        // Z85 encodes groups of 4 bytes.
        let body = &body[..body.len() / 4 * 4];
        let dv = DeletionVectorDescriptor {
            storage_type: DeletionVectorStorageType::Inline,
            path_or_inline_dv: z85::encode(body),
            offset: None,
            size_in_bytes: body.len() as i32,
            cardinality: i64::from_le_bytes(*claim),
        };
        (dv, None, body.get(4..).map(<[u8]>::to_vec))
    } else {
        let Some((head, file)) = rest.split_first_chunk::<16>() else {
            return;
        };
        let offset = i32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
        let size = i32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
        let claim = i64::from_le_bytes(head[8..16].try_into().expect("8 bytes"));
        let url = Url::parse("file:///table/dv.bin").expect("a URL");
        let dv = DeletionVectorDescriptor {
            storage_type: DeletionVectorStorageType::PersistedAbsolute,
            path_or_inline_dv: url.to_string(),
            offset: Some(offset),
            size_in_bytes: size,
            cardinality: claim,
        };
        let bitmap = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(size).ok())
            .and_then(|(o, s)| file.get(o.checked_add(8)?..o.checked_add(4)?.checked_add(s)?))
            .map(<[u8]>::to_vec);
        (dv, Some((url, Bytes::copy_from_slice(file))), bitmap)
    };
    match attempt(&dv, &root, fetched, "fuzz.parquet") {
        Ok(Attempt::Rows(rows)) => {
            assert_eq!(rows.len() as i64, dv.cardinality, "the cardinality checked");
            let bitmap = bitmap.expect("an accepted vector has its bitmap");
            let reference = RoaringTreemap::deserialize_from(&bitmap[..])
                .expect("roaring reads the bitmap the kernel read");
            assert_eq!(rows, reference, "the rows roaring reads");
        }
        Ok(Attempt::Needs(url)) => panic!("{url} was served, yet asked for"),
        Err(e) => {
            assert!(
                matches!(e.kind(), ErrorKind::CorruptTable | ErrorKind::CorruptData),
                "{e}"
            );
            assert!(e.to_string().contains("fuzz.parquet"), "{e}");
        }
    }
}
