"""rayquet.iceberg against pyiceberg's reads, rayquet.delta against deltalake's, on tables they
write here. Iceberg's planner emits files in a varying order, so rows are compared sorted."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import rayquet

from conftest import make_table


def rows(t: pa.Table, key: str = "id") -> list:
    return t.sort_by(key).to_pylist()


def flat(t: pa.Table) -> pa.Table:
    """The columns pyiceberg and deltalake both write as they are (no struct)."""
    return t.select(["id", "i32", "f", "s", "d", "dec", "b"])


# ---------------------------------------------------------------------------------- Iceberg


@pytest.fixture(scope="module")
def iceberg_table(tmp_path_factory):
    from pyiceberg.catalog.sql import SqlCatalog

    root = tmp_path_factory.mktemp("iceberg")
    catalog = SqlCatalog("test", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse")
    catalog.create_namespace("db")
    first = flat(make_table(5000, seed=11))
    tbl = catalog.create_table("db.events", schema=first.schema)
    tbl.append(first)
    s1 = tbl.current_snapshot().snapshot_id
    tbl.manage_snapshots().create_tag(s1, "v1").commit()
    tbl.append(flat(make_table(3000, seed=12, start=5000)))
    tbl.append(flat(make_table(2000, seed=13, start=8000)))
    tbl = catalog.load_table("db.events")
    return tbl, s1


def iceberg_location(tbl) -> str:
    return tbl.metadata_location


def test_iceberg_current_snapshot(iceberg_table):
    tbl, _ = iceberg_table
    expected = tbl.scan().to_arrow()
    reader = rayquet.iceberg(iceberg_location(tbl))
    got = reader.read_all()
    assert got.schema == expected.schema
    assert got.num_rows == expected.num_rows == 10_000
    assert rows(got) == rows(expected)


def test_iceberg_table_directory(iceberg_table):
    tbl, _ = iceberg_table
    location = tbl.location()
    assert location.startswith("file://")
    got = rayquet.iceberg(location[len("file://"):]).read_all()
    assert rows(got) == rows(tbl.scan().to_arrow())


def test_iceberg_snapshot_and_ref(iceberg_table):
    tbl, s1 = iceberg_table
    expected = tbl.scan(snapshot_id=s1).to_arrow()
    assert rows(rayquet.iceberg(iceberg_location(tbl), snapshot_id=s1).read_all()) == rows(expected)
    assert rows(rayquet.iceberg(iceberg_location(tbl), ref="v1").read_all()) == rows(expected)
    assert rows(rayquet.iceberg(iceberg_location(tbl), ref="main").read_all()) == rows(tbl.scan().to_arrow())


def test_iceberg_as_of_a_datetime_or_iso_string(iceberg_table):
    import datetime as dt

    tbl, s1 = iceberg_table
    first = tbl.snapshot_by_id(s1)
    expected = rows(tbl.scan(snapshot_id=s1).to_arrow())
    at = dt.datetime.fromtimestamp(first.timestamp_ms / 1000, dt.timezone.utc)
    # The first snapshot's own time, as milliseconds, an aware datetime, a naive one (UTC), an
    # ISO string with an offset: all read the first snapshot.
    for when in (
        first.timestamp_ms,
        at,
        at.replace(tzinfo=None),
        at.astimezone(dt.timezone(dt.timedelta(hours=5))).isoformat(),
    ):
        got = rayquet.iceberg(iceberg_location(tbl), as_of_timestamp=when).read_all()
        assert rows(got) == expected, when
    with pytest.raises(rayquet.InvalidArgumentError, match="ISO 8601"):
        rayquet.iceberg(iceberg_location(tbl), as_of_timestamp="yesterday")
    with pytest.raises(rayquet.InvalidArgumentError, match="as_of_timestamp must be"):
        rayquet.iceberg(iceberg_location(tbl), as_of_timestamp=1.5)


@pytest.mark.parametrize(
    "sql",
    ["i32 < 0", "s = 'bb' AND f > 0.5", "id >= 4990 AND id < 5010", "b IS NULL OR dec > 50"],
)
def test_iceberg_filter_and_columns(iceberg_table, sql):
    tbl, _ = iceberg_table
    expected = tbl.scan(row_filter=sql, selected_fields=("id", "s", "f")).to_arrow()
    # pyiceberg's filter prunes files; it is exact on the rows it returns
    got = rayquet.iceberg(iceberg_location(tbl), columns=["id", "s", "f"], filter=sql).read_all()
    assert got.column_names == ["id", "s", "f"]
    assert rows(got) == rows(expected)


def test_iceberg_filter_as_a_pyarrow_expression(iceberg_table):
    tbl, _ = iceberg_table
    expr = ((pc.field("i32") < 0) & (pc.field("s") != "bb")) | pc.field("f").is_null()
    # pyarrow evaluates its own expression on pyiceberg's read of the table
    expected = tbl.scan().to_arrow().filter(expr).select(["id", "s"])
    got = rayquet.iceberg(iceberg_location(tbl), columns=["id", "s"], filter=expr).read_all()
    assert 0 < got.num_rows < tbl.scan().to_arrow().num_rows
    assert rows(got) == rows(expected)


def test_iceberg_limit_and_stream(iceberg_table):
    tbl, _ = iceberg_table
    assert rayquet.iceberg(iceberg_location(tbl), limit=1234).read_all().num_rows == 1234
    assert rows(pa.table(rayquet.iceberg(iceberg_location(tbl)))) == rows(tbl.scan().to_arrow())


# ------------------------------------------------------------------------------------ Delta


@pytest.fixture(scope="module")
def delta_table(tmp_path_factory):
    from deltalake import DeltaTable, write_deltalake

    path = tmp_path_factory.mktemp("delta") / "events"
    t0 = flat(make_table(4000, seed=21))
    write_deltalake(str(path), t0, partition_by=["b"])  # version 0
    write_deltalake(str(path), flat(make_table(3000, seed=22, start=4000)), mode="append")  # 1
    DeltaTable(str(path)).delete("id % 7 = 0")  # 2
    write_deltalake(str(path), flat(make_table(1000, seed=23, start=7000)), mode="append")  # 3
    return path


def delta_read(path, version=None) -> pa.Table:
    from deltalake import DeltaTable

    return DeltaTable(str(path), version=version).to_pyarrow_table()


def test_delta_versions(delta_table):
    from deltalake import DeltaTable

    newest = DeltaTable(str(delta_table)).version()
    for v in range(newest + 1):
        expected = delta_read(delta_table, v)
        got = rayquet.delta(delta_table, version=v).read_all()
        assert sorted(got.column_names) == sorted(expected.column_names)
        assert rows(got) == rows(expected.select(got.column_names)), v
    latest = rayquet.delta(delta_table).read_all()
    assert rows(latest) == rows(delta_read(delta_table).select(latest.column_names))


@pytest.mark.parametrize(
    "sql,expr",
    [
        ("i32 < 0", pc.field("i32") < 0),
        ("b = true AND s IN ('a', 'bb')", (pc.field("b") == True) & pc.field("s").isin(["a", "bb"])),  # noqa: E712
        ("id BETWEEN 3990 AND 4010", (pc.field("id") >= 3990) & (pc.field("id") <= 4010)),
        ("b IS NULL", pc.field("b").is_null()),
    ],
)
def test_delta_filter_and_columns(delta_table, sql, expr):
    expected = delta_read(delta_table).filter(expr).select(["id", "b", "s"])
    for f in (sql, expr):
        got = rayquet.delta(delta_table, columns=["id", "b", "s"], filter=f).read_all()
        assert got.column_names == ["id", "b", "s"]
        assert rows(got) == rows(expected), f


def test_delta_consumers(delta_table):
    import duckdb
    import polars as pl

    expected = delta_read(delta_table)
    assert rows(pa.table(rayquet.delta(delta_table))) == rows(expected.select(rayquet.delta(delta_table).schema.names))
    df = pl.DataFrame(rayquet.delta(delta_table, columns=["id", "i32"]))
    assert df.sort("id").to_arrow().to_pylist() == rows(expected.select(["id", "i32"]))
    r = rayquet.delta(delta_table, columns=["id", "i32"])  # noqa: F841
    assert duckdb.sql("select count(*), sum(i32) from r").fetchall() == duckdb.sql(
        "select count(*), sum(i32) from expected"
    ).fetchall()


def test_repeated_table_reads_take_footers_from_the_cache(iceberg_table, delta_table):
    # The tables' data files are immutable: a read after another takes every footer from the
    # process-wide cache (no footer request) and gives the writer's rows.
    tbl, _ = iceberg_table
    rayquet.iceberg(iceberg_location(tbl)).read_all()
    reader = rayquet.iceberg(iceberg_location(tbl))
    got = reader.read_all()
    m = reader.metrics()
    assert m["files"] == 3
    assert m["footer_cache_hits"] == m["files"]
    assert m["metadata_bytes"] == 0
    assert rows(got) == rows(tbl.scan().to_arrow())

    path = delta_table
    rayquet.delta(path).read_all()
    reader = rayquet.delta(path)
    got = reader.read_all()
    m = reader.metrics()
    assert m["files"] >= 2
    assert m["footer_cache_hits"] == m["files"]
    assert m["metadata_bytes"] == 0
    assert rows(got) == rows(delta_read(path).select(got.column_names))


def test_iceberg_uuid_columns_are_arrow_uuids(tmp_path):
    """uuid columns (top level and in a struct) as pyiceberg types them: Arrow's arrow.uuid."""
    import uuid

    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StructType, UUIDType

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/c.db", warehouse=f"file://{tmp_path}/w")
    catalog.create_namespace("db")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "u", UUIDType(), required=False),
        NestedField(3, "s", StructType(NestedField(4, "inner", UUIDType(), required=False)), required=False),
    )
    tbl = catalog.create_table("db.uuids", schema=schema)
    values = [uuid.UUID(int=i * 7919) if i % 3 else None for i in range(50)]

    def uuids(vs):
        storage = pa.array([v.bytes if v else None for v in vs], pa.binary(16))
        return pa.ExtensionArray.from_storage(pa.uuid(), storage)

    inner = uuids(list(reversed(values)))
    data = pa.table(
        {
            "id": pa.array(range(50), pa.int64()),
            "u": uuids(values),
            "s": pa.StructArray.from_arrays([inner], fields=[pa.field("inner", pa.uuid())]),
        }
    )
    tbl.append(data)
    want = tbl.scan().to_arrow()
    got = rayquet.iceberg(tbl.metadata_location).read_all()
    assert want.schema.field("u").type == pa.uuid()
    assert got.schema.field("u").type == want.schema.field("u").type
    assert got.schema.field("s").type == want.schema.field("s").type
    assert rows(got) == rows(want)


def test_options_that_do_nothing_for_a_table_are_errors(iceberg_table, delta_table):
    tbl, _ = iceberg_table
    with pytest.raises(rayquet.InvalidArgumentError, match="string_views"):
        rayquet.iceberg(iceberg_location(tbl), string_views=True)
    with pytest.raises(rayquet.InvalidArgumentError, match="string_views"):
        rayquet.delta(delta_table, string_views=True)


def test_delta_version_as_a_time(tmp_path):
    """version= as a datetime, date or ISO string reads the version current at that time, as
    deltalake's load_as_version picks it (commits a second apart, times between them)."""
    import datetime as dt
    import time

    from deltalake import DeltaTable, write_deltalake

    path = tmp_path / "timed"
    for i in range(3):
        write_deltalake(str(path), flat(make_table(500, seed=60 + i, start=500 * i)), mode="append")
        time.sleep(1.0)
    stamps = {h["version"]: h["timestamp"] for h in DeltaTable(str(path)).history()}
    for v in range(3):
        mid = dt.datetime.fromtimestamp((stamps[v] + 500) / 1000, dt.timezone.utc)
        reference = DeltaTable(str(path))
        reference.load_as_version(mid)
        assert reference.version() == v
        want = rows(reference.to_pyarrow_table())
        for when in (mid, mid.isoformat(), mid.replace(tzinfo=None)):
            got = rayquet.delta(path, version=when).read_all()
            assert rows(got) == rows(reference.to_pyarrow_table().select(got.column_names)), (v, when)
        assert len(want) == 500 * (v + 1)
    # A date: midnight UTC of that day, before the first commit: an error naming the table.
    with pytest.raises(rayquet.InvalidArgumentError, match="as of"):
        rayquet.delta(path, version=dt.date(2000, 1, 1))
    with pytest.raises(rayquet.InvalidArgumentError, match="ISO 8601"):
        rayquet.delta(path, version="v2")
