"""rayquet.dataset and rayquet.table: scanned any number of times, each result compared with
pyarrow's, pyiceberg's or deltalake's read of the same data."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

import rayquet

from conftest import make_table


def rows(t: pa.Table, key: str = "id") -> list:
    return t.sort_by(key).to_pylist()


def test_a_dataset_scans_again_and_again(dataset):
    import duckdb
    import polars as pl

    directory, _, table = dataset
    expected = table  # noqa: F841 (read by duckdb)
    ds = rayquet.dataset(directory, memory_budget=64 << 20)
    assert ds.schema == rayquet.scan(directory).schema
    assert ds.count() == table.num_rows
    assert ds.count("i32 < 0") == ds.count(pc.field("i32") < 0) == table.filter(pc.field("i32") < 0).num_rows
    # duckdb queries it as often as asked (a Reader is one pass).
    for _ in range(3):
        assert duckdb.sql("select count(*), sum(i32) from ds").fetchall() == duckdb.sql(
            "select count(*), sum(i32) from expected"
        ).fetchall()
    assert pa.table(ds).equals(ds.to_arrow())
    assert rows(ds.to_arrow(columns=["id", "s"], filter="s = 'bb'")) == rows(
        table.filter(pc.field("s") == "bb").select(["id", "s"])
    )
    assert ds.to_arrow(limit=10).num_rows == 10
    assert ds.to_polars(columns=["id", "f"]).equals(pl.from_arrow(table.select(["id", "f"])))
    assert pl.DataFrame(ds).height == table.num_rows
    assert ds.lazy().filter(pl.col("i32") < 0).collect().height == ds.count("i32 < 0")
    with ds.scan(columns=["id"], batch_size=1000) as reader:
        assert max(b.num_rows for b in reader) == 1000


def test_to_pandas_is_pyarrows(dataset):
    pytest.importorskip("pandas")
    directory, _, table = dataset
    got = rayquet.dataset(directory).to_pandas(columns=["id", "i32", "s", "d"], filter="id < 5000")
    want = pads.dataset(directory).to_table(columns=["id", "i32", "s", "d"], filter=pc.field("id") < 5000)
    assert got.equals(want.to_pandas())


def test_options_are_checked_when_the_dataset_is_made(dataset):
    directory = dataset[0]
    with pytest.raises(TypeError, match="colums"):
        rayquet.dataset(directory, colums=["id"])
    with pytest.raises(rayquet.InvalidArgumentError, match="scan"):
        rayquet.dataset(directory, filter="id < 3")
    with pytest.raises(rayquet.InvalidArgumentError, match="format='iceberg' or format='delta'"):
        rayquet.table(directory)
    with pytest.raises(rayquet.InvalidArgumentError, match="format must be"):
        rayquet.table(directory, format="hudi")
    assert "Dataset(parquet" in repr(rayquet.dataset(directory))


def test_tables_read_their_newest_version_at_each_call(tmp_path):
    from deltalake import DeltaTable, write_deltalake
    from pyiceberg.catalog.sql import SqlCatalog

    delta = tmp_path / "delta"
    first = make_table(1000, seed=41).select(["id", "i32", "s"])
    write_deltalake(str(delta), first)
    t = rayquet.table(delta)
    assert repr(t).startswith("rayquet.Dataset(delta")
    assert t.count() == 1000
    write_deltalake(str(delta), make_table(500, seed=42, start=1000).select(["id", "i32", "s"]), mode="append")
    assert t.count() == 1500
    assert rows(t.to_arrow()) == rows(DeltaTable(str(delta)).to_pyarrow_table())
    pinned = rayquet.table(delta, version=0)
    assert pinned.count() == 1000

    catalog = SqlCatalog("ds", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("db")
    tbl = catalog.create_table("db.t", schema=first.schema)
    tbl.append(first)
    by_object = rayquet.table(tbl)
    by_file = rayquet.table(tbl.metadata_location)
    assert by_object.count() == by_file.count() == 1000
    assert rows(by_object.to_arrow(filter="i32 < 0")) == rows(tbl.scan(row_filter="i32 < 0").to_arrow())
