"""Errors are Python exceptions carrying rayquet's kind, file and row group."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rayquet


def test_missing_file_is_file_not_found(tmp_path):
    missing = tmp_path / "nope.parquet"
    with pytest.raises(FileNotFoundError) as info:
        rayquet.scan(missing)
    e = info.value
    assert isinstance(e, rayquet.NotFoundError) and isinstance(e, rayquet.RayquetError)
    assert e.kind == "NotFound"
    assert "nope.parquet" in str(e)
    assert e.path is not None and "nope.parquet" in e.path
    assert e.filename == e.path


def test_missing_table_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        rayquet.delta(tmp_path / "no_table")
    with pytest.raises(rayquet.RayquetError):
        rayquet.iceberg(tmp_path / "no_table")


def test_not_parquet_names_the_file(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"this is not a parquet file at all, not even close" * 10)
    with pytest.raises(rayquet.CorruptFileError) as info:
        rayquet.scan(bad).read_all()
    e = info.value
    assert e.kind == "CorruptFooter"
    assert "bad.parquet" in str(e) and "bad.parquet" in e.path


def test_corrupt_data_names_file_and_row_group(dataset, tmp_path):
    _, files, _ = dataset
    bad = tmp_path / "damaged.parquet"
    shutil.copy(files[0], bad)
    meta = pq.read_metadata(bad)
    # Overwrite the middle of the second row group's first column chunk's data: the footer
    # stays intact, the pages do not.
    col = meta.row_group(1).column(0)
    start = col.data_page_offset
    data = bytearray(bad.read_bytes())
    for i in range(start, start + col.total_compressed_size):
        data[i] = 0xFF
    bad.write_bytes(bytes(data))
    reader = rayquet.scan(bad, batch_size=100_000)
    with pytest.raises(rayquet.RayquetError) as info:
        for _ in reader:
            pass
    e = info.value
    assert isinstance(e, rayquet.CorruptFileError), e
    assert "damaged.parquet" in str(e) and "damaged.parquet" in e.path
    assert e.row_group == 1
    # the reader is fused after the error
    assert list(reader) == []


def test_bad_arguments_are_value_errors(dataset):
    root, _, _ = dataset
    with pytest.raises(ValueError) as info:
        rayquet.scan(root, columns=["no_such_column"])
    assert isinstance(info.value, rayquet.InvalidArgumentError)
    assert info.value.kind == "InvalidArgument"
    with pytest.raises(rayquet.InvalidArgumentError):
        rayquet.scan(root, filter="id <")
    with pytest.raises(rayquet.InvalidArgumentError):
        rayquet.scan(root, filter="no_such_column = 1")
    with pytest.raises(ValueError):
        rayquet.scan([])
    with pytest.raises(rayquet.InvalidArgumentError):
        rayquet.scan(root, batch_size=0)


@pytest.mark.parametrize(
    "option, value, says",
    [
        ("limit", -1, "limit must be non-negative, got -1"),
        ("batch_size", -5, "batch_size must be positive, got -5"),
        ("memory_budget", -1, "memory_budget must be non-negative, got -1"),
        ("limit", 2.5, "limit must be an int, not float"),
        ("batch_size", "10", "batch_size must be an int, not str"),
        ("limit", True, "limit must be an int, not bool"),
    ],
)
def test_bad_counts_are_named(tmp_path, option, value, says):
    # Before: pyo3's conversion error ("can't convert negative int to unsigned") named no
    # option. Every entry point checks them the same way.
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3]}), path)
    for call in (
        lambda **kw: rayquet.scan(path, **kw),
        lambda **kw: rayquet.iceberg(tmp_path / "no-table", **kw),
        lambda **kw: rayquet.delta(tmp_path / "no-table", **kw),
    ):
        with pytest.raises(rayquet.InvalidArgumentError) as info:
            call(**{option: value})
        assert says in str(info.value)
    # The bounds themselves are accepted.
    assert rayquet.scan(path, limit=0).read_all().num_rows == 0
    assert rayquet.scan(path, batch_size=1).read_all().num_rows == 3


def test_pyarrow_consumer_sees_the_message(tmp_path):
    bad = tmp_path / "x.parquet"
    bad.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    with pytest.raises(rayquet.CorruptFileError):
        rayquet.scan(bad)


def _page_checksum_file(tmp_path):
    """A file pyarrow wrote with page checksums, and the offset of a byte inside the stored
    data of the first page of column ``x`` (uncompressed, plain, 16 KiB pages: 1000 bytes in
    is past its header and levels, a byte of one of its values)."""
    n = 20_000
    table = pa.table({"id": range(n), "x": [i * 3 for i in range(n)]})
    path = tmp_path / "crc.parquet"
    pq.write_table(
        table, path, write_page_checksum=True, compression="none", use_dictionary=False,
        data_page_size=16 << 10,
    )
    md = pq.ParquetFile(path).metadata
    col = md.row_group(0).column(1)
    return table, path, col.data_page_offset + 1000


def test_page_checksums_are_verified(tmp_path):
    # pyarrow's checksums are rayquet's: the intact file reads as written.
    table, path, at = _page_checksum_file(tmp_path)
    assert rayquet.scan(str(path)).read_all().equals(table)
    data = bytearray(path.read_bytes())
    data[at] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(rayquet.CorruptFileError) as e:
        rayquet.scan(str(path)).read_all()
    assert "CRC-32 mismatch" in str(e.value), e.value
    assert "crc.parquet" in str(e.value) and e.value.row_group == 0
    # Not verified, the damaged page decodes: one value differs from the table written.
    got = rayquet.scan(str(path), verify_checksums=False).read_all()
    assert got.num_rows == table.num_rows
    assert not got.equals(table)
    # pyarrow with its own verification refuses the file too.
    with pytest.raises(OSError):
        pq.read_table(path, page_checksum_verification=True)


def test_unknown_storage_option_is_an_error_naming_it(dataset):
    _, files, _ = dataset
    with pytest.raises(ValueError) as info:
        rayquet.scan(files[0], storage_options={"s3.acess-key-id": "x"}).read_all()
    msg = str(info.value)
    assert "s3.acess-key-id" in msg and "s3.access-key-id" in msg
    assert info.value.kind == "InvalidArgument"
    # pyiceberg's own FileIO names are store options, not errors.
    n = rayquet.scan(files[0], storage_options={"s3.region": "us-east-1"}).read_all().num_rows
    assert n == pq.read_metadata(files[0]).num_rows


def test_errors_through_the_c_stream_keep_kind_path_and_row_group(tmp_path):
    """pyarrow, polars and duckdb turn a stream's error into their own exception; its message
    is rayquet's: the kind, the file and the row group."""
    import duckdb
    import polars as pl

    path = tmp_path / "crc.parquet"
    pq.write_table(pa.table({"a": list(range(100_000))}), path, row_group_size=20_000,
                   compression="none", write_page_checksum=True)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2  # inside a later row group's data page
    data[middle:middle + 64] = bytes(b ^ 0x55 for b in data[middle:middle + 64])
    path.write_bytes(bytes(data))
    with pytest.raises(rayquet.CorruptFileError) as direct:
        rayquet.scan(path).read_all()
    want = f"corrupt data: {path}, row group {direct.value.row_group}"
    with pytest.raises(pa.ArrowInvalid, match="CRC-32 mismatch") as e:
        pa.table(rayquet.scan(path))
    assert want in str(e.value)
    with pytest.raises(pl.exceptions.ComputeError) as e:
        pl.DataFrame(rayquet.scan(path))
    assert want in str(e.value)
    r = rayquet.scan(path)  # noqa: F841 (read by duckdb)
    with pytest.raises(duckdb.Error) as e:
        duckdb.sql("select count(*) from r").fetchall()
    assert want in str(e.value)
