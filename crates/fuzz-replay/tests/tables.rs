//! The table formats' fuzz targets replayed (feature `tables`): Iceberg deletion vectors and
//! manifests, Delta logs and deletion vectors (`rayquet_iceberg::fuzzing`,
//! `rayquet_delta::fuzzing`). `write_table_seeds` (ignored) writes their seeds:
//! `fuzz/seeds.sh`.

use std::path::{Path, PathBuf};

use rayquet_fuzz_replay::replay;

#[global_allocator]
static ALLOC: rayquet_fuzz_replay::Limited = rayquet_fuzz_replay::Limited;

#[test]
fn iceberg_dv() {
    assert!(replay("iceberg_dv", rayquet_iceberg::fuzzing::deletion_vector) > 0);
}

#[test]
fn iceberg_manifest() {
    assert!(replay("iceberg_manifest", rayquet_iceberg::fuzzing::manifest) > 0);
}

#[test]
fn delta_log() {
    assert!(replay("delta_log", rayquet_delta::fuzzing::log) > 0);
}

#[test]
fn delta_dv() {
    assert!(replay("delta_dv", rayquet_delta::fuzzing::deletion_vector) > 0);
}

/// Seeds of the table targets: deletion vectors (Iceberg blobs with their cardinality; Delta
/// inline and in a DV file), the manifest lists and manifests of an Iceberg table written by
/// iceberg-rust, and the commits of Delta's golden tables.
fn table_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    use rayquet::task::RoaringTreemap;
    let mut out = Vec::new();
    let sets: Vec<RoaringTreemap> = vec![
        [0u64, 5, 7].into_iter().collect(),
        (0..5000u64).filter(|p| p % 3 == 0).collect(),
        {
            let mut t = RoaringTreemap::new();
            t.insert_range(100..70_000);
            t.insert((1 << 33) + 1);
            t
        },
    ];
    for (i, set) in sets.iter().enumerate() {
        // Iceberg: the claimed cardinality, then the blob.
        let mut seed = set.len().to_le_bytes().to_vec();
        seed.extend(rayquet_testkit::iceberg_v3::dv_blob(
            &set.iter().collect::<Vec<_>>(),
        ));
        out.push(("iceberg_dv", format!("vector-{i}"), seed));
        // Delta inline: control 0, the cardinality, the magic and the bitmap.
        let mut body = 1681511377u32.to_le_bytes().to_vec();
        set.serialize_into(&mut body).unwrap();
        while body.len() % 4 != 0 {
            body.push(0);
        }
        let mut seed = vec![0u8];
        seed.extend((set.len() as i64).to_le_bytes());
        seed.extend(&body);
        out.push(("delta_dv", format!("inline-{i}"), seed));
        // Delta DV file: version byte, then size (BE), magic and bitmap, CRC (BE).
        let mut file = vec![1u8];
        file.extend((body.len() as u32).to_be_bytes());
        file.extend(&body);
        file.extend(crc32fast::hash(&body).to_be_bytes());
        let mut seed = vec![1u8];
        seed.extend(1i32.to_le_bytes());
        seed.extend((body.len() as i32).to_le_bytes());
        seed.extend((set.len() as i64).to_le_bytes());
        seed.extend(file);
        out.push(("delta_dv", format!("file-{i}"), seed));
    }
    // Manifest lists and manifests of a v2 table with deletes.
    let fx = rayquet_testkit::iceberg_v3::v3_deletes(10, rayquet_testkit::iceberg_v3::Damage::None);
    let mut avro: Vec<PathBuf> = walk(&fx.table_root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "avro"))
        .collect();
    avro.sort();
    for (i, p) in avro.iter().enumerate() {
        out.push((
            "iceberg_manifest",
            format!("v3-{i}"),
            std::fs::read(p).unwrap(),
        ));
    }
    // Delta commits: a few golden tables' logs.
    for name in [
        "dv-partitioned-with-checkpoint",
        "basic-with-inserts-updates",
        "124-decimal-decode-bug",
    ] {
        let root = rayquet_testkit::delta_tables::golden_table_path(name);
        let mut logs: Vec<PathBuf> = walk(&root.join("_delta_log"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        logs.sort();
        for (i, p) in logs.iter().take(4).enumerate() {
            let mut seed = vec![0u8];
            seed.extend(std::fs::read(p).unwrap());
            out.push(("delta_log", format!("{name}-{i}"), seed));
        }
    }
    out
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Writes the table targets' seeds to `RAYQUET_SEEDS_TO/<target>/` (`fuzz/seeds.sh` runs it).
#[test]
#[ignore = "writes files: run by fuzz/seeds.sh"]
fn write_table_seeds() {
    let to = PathBuf::from(std::env::var("RAYQUET_SEEDS_TO").expect("RAYQUET_SEEDS_TO"));
    let mut count = std::collections::BTreeMap::<&str, usize>::new();
    for (target, name, seed) in table_seeds() {
        let dir = to.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), seed).unwrap();
        *count.entry(target).or_default() += 1;
    }
    println!("seeds: {count:?}");
}
