#!/usr/bin/env bash
# Extracts small seed corpora for the fuzz targets from a folder of Parquet files (read in
# place; e.g. the parquet-testing files) into fuzz/corpus/<target>/: footers, page headers,
# column chunks up to 64 KiB (validate), snappy page bodies (snappy), definition levels and
# dictionary indices of data pages (rle), whole files up to 32 KiB (direct, scan), JSON file
# tasks (task). Uses
# rayquet::fuzzing::seeds through the replay crate's ignored `write_seeds` test.
#
#   fuzz/seeds.sh ../shared/parquet-testing/data
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
from="${1:?usage: fuzz/seeds.sh DIR_OF_PARQUET_FILES}"
RAYQUET_SEEDS_FROM="$(realpath "$from")" RAYQUET_SEEDS_TO="$PWD/fuzz/corpus" \
    nice -n 10 cargo test -p rayquet-fuzz-replay --release --test replay -- \
    --ignored write_seeds --nocapture
RAYQUET_SEEDS_TO="$PWD/fuzz/corpus" nice -n 10 cargo test -p rayquet-fuzz-replay --release \
    --test tables -- --ignored write_table_seeds --nocapture
du -sh fuzz/corpus/*
