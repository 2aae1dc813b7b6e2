"""rayquet.scan(..., union_by_name=True) over files pyarrow wrote with evolving schemas, against
pyarrow's unified read (``unify_schemas(promote_options="permissive")`` as the dataset's schema)
and duckdb's ``read_parquet(..., union_by_name=true)``."""

from __future__ import annotations

from decimal import Decimal

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import rayquet


@pytest.fixture()
def evolving(tmp_path):
    """Four files: ``id`` int32, int64, uint32, then missing; ``s`` gains a child and widens
    one; ``tags`` widens its items; ``name`` string then large_string; decimals that widen."""
    tables = [
        pa.table({
            "id": pa.array([1, 2, 3], pa.int32()),
            "name": ["x", "y", None],
            "s": pa.array([{"p": 1}, {"p": 2}, None], pa.struct([("p", pa.int32())])),
            "tags": pa.array([[1], [2, 3], None], pa.list_(pa.int32())),
        }),
        pa.table({
            "score": [1.5, None],
            "id": pa.array([2**40, 5], pa.int64()),
            "s": pa.array(
                [{"q": "k", "p": 9}, None], pa.struct([("q", pa.string()), ("p", pa.int64())])
            ),
            "tags": pa.array([[2**33], []], pa.list_(pa.int64())),
        }),
        pa.table({
            "id": pa.array([7], pa.uint32()),
            "name": pa.array(["w"], pa.large_string()),
            "d": pa.array([Decimal("1.25")], pa.decimal128(5, 2)),
        }),
        pa.table({"d": pa.array([Decimal("123456.5")], pa.decimal128(10, 1))}),
    ]
    files = []
    for i, t in enumerate(tables):
        path = tmp_path / f"part-{i}.parquet"
        pq.write_table(t, path)
        files.append(str(path))
    return tmp_path, files


def pyarrow_union(files):
    schema = pa.unify_schemas([pq.read_schema(f) for f in files], promote_options="permissive")
    return ds.dataset(files, schema=schema, format="parquet").to_table()


def test_union_by_name_matches_pyarrow_and_duckdb(evolving):
    root, files = evolving
    got = rayquet.scan(str(root), union_by_name=True).read_all()
    expected = pyarrow_union(files)
    assert got.schema.remove_metadata() == expected.schema.remove_metadata()
    assert got.to_pylist() == expected.to_pylist()
    rel = duckdb.sql(f"SELECT * FROM read_parquet({files!r}, union_by_name = true)")
    assert rel.columns == got.column_names
    rows = [tuple(r.values()) for r in got.to_pylist()]
    assert rows == rel.fetchall()


def test_union_by_name_with_columns_and_filters(evolving):
    root, files = evolving
    expected = pyarrow_union(files)
    got = rayquet.scan(
        str(root), columns=["d", "id"], filter="id > 2", union_by_name=True
    ).read_all()
    want = expected.filter(pa.compute.field("id") > 2).select(["d", "id"])
    assert got.to_pylist() == want.to_pylist()
    # A column most files lack: a filter keeps only the rows that hold it.
    got = rayquet.scan(str(root), filter="score IS NOT NULL", union_by_name=True).read_all()
    assert got.to_pylist() == expected.filter(pa.compute.field("score").is_valid()).to_pylist()


def test_union_by_name_through_polars_lazy_frames(evolving):
    from rayquet.polars import scan_parquet

    root, files = evolving
    lf = scan_parquet(str(root), union_by_name=True)
    got = lf.filter(pl.col("id") < 5).select("id", "name").collect()
    want = pl.from_arrow(pyarrow_union(files)).filter(pl.col("id") < 5).select("id", "name")
    assert got.to_dicts() == want.to_dicts()


def test_without_it_files_that_differ_are_an_error(evolving):
    root, _ = evolving
    with pytest.raises(rayquet.SchemaMismatchError):
        rayquet.scan(str(root)).read_all()


def test_types_without_a_common_type_name_both_files(evolving, tmp_path):
    root, files = evolving
    bad = root / "part-9.parquet"
    pq.write_table(pa.table({"name": pa.array([1], pa.int64())}), bad)
    with pytest.raises(rayquet.SchemaMismatchError) as e:
        rayquet.scan(str(root), union_by_name=True)
    msg = str(e.value)
    assert "name" in msg and "part-0.parquet" in msg and "part-9.parquet" in msg
