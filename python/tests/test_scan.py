"""rayquet.scan against pyarrow's own reads of the files pyarrow wrote."""

from __future__ import annotations

import datetime as dt
import decimal

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import rayquet


def sort(t: pa.Table, key: str = "id") -> pa.Table:
    return t.sort_by(key)


def test_full_scan_matches_pyarrow(dataset):
    root, files, _ = dataset
    expected = ds.dataset(root, format="parquet").to_table()
    got = rayquet.scan(root).read_all()
    assert got.schema == expected.schema
    assert got.equals(expected)


def test_one_file_and_a_list_of_files(dataset):
    _, files, _ = dataset
    assert rayquet.scan(files[1]).read_all().equals(pq.read_table(files[1]))
    # str and pathlib paths, in the caller's order
    order = [str(files[2]), files[0]]
    expected = pa.concat_tables([pq.read_table(files[2]), pq.read_table(files[0])])
    assert rayquet.scan(order).read_all().equals(expected)
    # file:// URLs
    assert rayquet.scan(files[0].as_uri()).read_all().equals(pq.read_table(files[0]))


def test_iteration_yields_record_batches(dataset):
    root, _, _ = dataset
    reader = rayquet.scan(root, batch_size=1000)
    batches = list(reader)
    assert batches and all(isinstance(b, pa.RecordBatch) for b in batches)
    assert all(b.num_rows <= 1000 for b in batches)
    assert all(b.schema == reader.schema for b in batches)
    expected = ds.dataset(root, format="parquet").to_table()
    assert pa.Table.from_batches(batches).equals(expected)


def test_read_next_batch_and_stop_iteration(dataset):
    _, files, _ = dataset
    reader = rayquet.scan(files[0], batch_size=8192)
    rows = 0
    with pytest.raises(StopIteration):
        while True:
            rows += reader.read_next_batch().num_rows
    assert rows == pq.read_metadata(files[0]).num_rows


def test_default_batch_size(big_file):
    # 250,000-row row groups: batches of DEFAULT_BATCH_SIZE rows, each row group's last one
    # shorter, and the rows pyarrow reads.
    assert rayquet.DEFAULT_BATCH_SIZE == 65536
    reader = rayquet.scan(big_file, limit=600_000)
    sizes = [b.num_rows for b in reader]
    n = rayquet.DEFAULT_BATCH_SIZE
    per_group = [n, n, n, 250_000 - 3 * n]
    assert sizes == per_group + per_group + [n, 100_000 - n]
    got = rayquet.scan(big_file).read_all()
    assert got.equals(pq.read_table(big_file))
    assert max(len(c) for c in got.column(0).chunks) == n
    # None (a wrapper passing its own default through) means the default too.
    sizes_none = [b.num_rows for b in rayquet.scan(big_file, limit=600_000, batch_size=None)]
    assert sizes_none == sizes


def test_schema_known_before_reading(dataset):
    root, _, _ = dataset
    reader = rayquet.scan(root)
    assert isinstance(reader.schema, pa.Schema)
    assert reader.schema == ds.dataset(root, format="parquet").schema
    assert rayquet.scan(root, columns=["s", "id"]).schema.names == ["s", "id"]


def test_columns_in_the_order_named(dataset):
    root, _, _ = dataset
    expected = ds.dataset(root, format="parquet").to_table(columns=["ts", "id", "dec"])
    got = rayquet.scan(root, columns=["ts", "id", "dec"]).read_all()
    assert got.equals(expected)


def test_limit_batch_size_unordered_and_row_index(dataset):
    root, files, _ = dataset
    full = ds.dataset(root, format="parquet").to_table()
    assert rayquet.scan(root, limit=12_345).read_all().equals(full.slice(0, 12_345))
    got = rayquet.scan(root, batch_size=777).read_all()
    assert got.equals(full)
    assert max(b.num_rows for b in got.to_batches()) <= 777
    unordered = rayquet.scan(root, ordered=False).read_all()
    assert sort(unordered).equals(sort(full))
    with_pos = rayquet.scan(files[1], columns=["id"], row_index="_pos").read_all()
    assert with_pos.column("_pos").to_pylist() == list(range(pq.read_metadata(files[1]).num_rows))


def test_string_views(dataset):
    _, files, _ = dataset
    got = rayquet.scan(files[0], columns=["s"], string_views=True).read_all()
    assert got.schema.field("s").type == pa.string_view()
    assert got.column("s").cast(pa.string()).equals(pq.read_table(files[0], columns=["s"]).column("s"))


def test_repr_names_types_as_pyarrow_does(dataset):
    _, files, _ = dataset
    reader = rayquet.scan(files[0], columns=["id", "s", "ts", "dec"])
    fields = ", ".join(f"{f.name}: {f.type}" for f in reader.schema)
    assert repr(reader) == f"rayquet.Reader({fields})"
    assert "s: string" in repr(reader) and "Utf8" not in repr(reader)


FILTERS = [
    ("i32 < 50", pc.field("i32") < 50),
    ("s = 'bb' AND f > 0.5", (pc.field("s") == "bb") & (pc.field("f") > 0.5)),
    ("s IN ('a', 'ccc') OR i32 IS NULL", pc.field("s").isin(["a", "ccc"]) | pc.field("i32").is_null()),
    ("NOT (b = true)", ~(pc.field("b") == True)),  # noqa: E712
    ("d BETWEEN DATE '2021-03-01' AND DATE '2021-03-31'",
     (pc.field("d") >= pa.scalar(dt.date(2021, 3, 1))) & (pc.field("d") <= pa.scalar(dt.date(2021, 3, 31)))),
    ("ts >= TIMESTAMP '2021-06-01 12:00:00'", pc.field("ts") >= pa.scalar(dt.datetime(2021, 6, 1, 12), pa.timestamp("us"))),
    ("dec > 10.5", pc.field("dec") > pa.scalar(decimal.Decimal("10.50"), pa.decimal128(10, 2))),
    ("id != 5 AND id <= 30000 AND f IS NOT NULL", (pc.field("id") != 5) & (pc.field("id") <= 30000) & pc.field("f").is_valid()),
    ("id >= 19990 AND id < 20010", (pc.field("id") >= 19990) & (pc.field("id") < 20010)),
    ("id < 0", pc.field("id") < 0),
]


@pytest.mark.parametrize("sql,expr", FILTERS, ids=[f for f, _ in FILTERS])
@pytest.mark.parametrize("given", ["sql", "expression"])
def test_filters_match_pyarrow(dataset, sql, expr, given):
    root, _, _ = dataset
    dset = ds.dataset(root, format="parquet")
    expected = dset.to_table(filter=expr)
    # the filter as SQL text, or as the very pyarrow expression pyarrow's dataset was given
    f = sql if given == "sql" else expr
    got = rayquet.scan(root, filter=f).read_all()
    assert got.schema == expected.schema
    assert got.equals(expected), (got.num_rows, expected.num_rows)
    # with a projection that leaves the filter's columns out
    got = rayquet.scan(root, columns=["id"], filter=f).read_all()
    assert got.equals(expected.select(["id"]))


LIKE_FILTERS = [
    ("s LIKE 'b%'", pc.match_like(pc.field("s"), "b%")),
    ("s NOT LIKE '%c_' AND i32 < 70", ~pc.match_like(pc.field("s"), "%c_") & (pc.field("i32") < 70)),
    ("s ILIKE 'A%' OR s LIKE '_'",
     pc.match_like(pc.field("s"), "A%", ignore_case=True) | pc.match_like(pc.field("s"), "_")),
]


@pytest.mark.parametrize("sql,expr", LIKE_FILTERS, ids=[f for f, _ in LIKE_FILTERS])
def test_like_filters_match_pyarrow(dataset, sql, expr):
    root, _, _ = dataset
    expected = ds.dataset(root, format="parquet").to_table(filter=expr)
    assert expected.num_rows > 0
    got = rayquet.scan(root, filter=sql).read_all()
    assert got.equals(expected), (got.num_rows, expected.num_rows)


STRING_PREDICATES = [
    pc.starts_with(pc.field("s"), "bb"),
    pc.ends_with(pc.field("s"), "c"),
    pc.match_substring(pc.field("s"), "dd"),
    pc.starts_with(pc.field("s"), "B", ignore_case=True),
    ~pc.match_substring(pc.field("s"), "a") & (pc.field("i32") < 70),
    # LIKE's wildcards in the literal are literal characters: no row starts with "_".
    pc.starts_with(pc.field("s"), "_"),
    pc.match_substring(pc.field("s"), "%"),
]


@pytest.mark.parametrize("expr", STRING_PREDICATES, ids=str)
def test_string_predicates_match_pyarrow(dataset, expr):
    # pyarrow cannot serialize match_like; starts_with, ends_with and match_substring become
    # LIKE patterns, which must keep the rows pyarrow's dataset keeps.
    root, _, _ = dataset
    expected = ds.dataset(root, format="parquet").to_table(filter=expr)
    got = rayquet.scan(root, filter=expr).read_all()
    assert got.equals(expected), (got.num_rows, expected.num_rows)


def test_filter_prunes_and_metrics(dataset):
    root, _, _ = dataset
    reader = rayquet.scan(root, filter="id < 1000")
    table = reader.read_all()
    assert table.num_rows == 1000
    m = reader.metrics()
    assert m["rows"] == 1000
    assert m["row_groups_pruned"] > 0
    assert m["bytes_fetched"] > 0 and m["files"] >= 1
    assert isinstance(m["decode_seconds"], float)


def test_arrow_stream_consumers(dataset):
    root, _, _ = dataset
    expected = ds.dataset(root, format="parquet").to_table(columns=["id", "s", "f"])

    def reader():
        return rayquet.scan(root, columns=["id", "s", "f"])

    assert pa.table(reader()).equals(expected)
    assert pa.RecordBatchReader.from_stream(reader()).read_all().equals(expected)
    assert pl.DataFrame(reader()).equals(pl.from_arrow(expected))
    # polars makes any non-pyarrow Arrow stream a struct Series: one unnest away
    assert pl.from_arrow(reader()).struct.unnest().equals(pl.from_arrow(expected))
    r = reader()  # noqa: F841  (duckdb finds it by name)
    got = duckdb.sql("select id, s, f from r order by id").to_arrow_table()
    want = duckdb.sql("select id, s, f from expected order by id").to_arrow_table()
    assert got.equals(want)
    r = reader()
    count = duckdb.sql("select count(*), sum(id) from r where s = 'a'").fetchall()
    assert count == duckdb.sql("select count(*), sum(id) from expected where s = 'a'").fetchall()


def test_stream_after_partial_iteration(dataset):
    root, _, _ = dataset
    expected = ds.dataset(root, format="parquet").to_table()
    reader = rayquet.scan(root, batch_size=1000)
    first = next(reader)
    rest = pa.table(reader)
    assert pa.concat_tables([pa.Table.from_batches([first]), rest]).equals(expected)
    with pytest.raises(ValueError):
        pa.table(reader)  # consumed


def test_context_manager_and_close(dataset):
    root, _, _ = dataset
    with rayquet.scan(root) as reader:
        next(reader)
    with pytest.raises(rayquet.CancelledError):
        next(reader)
    reader.close()  # twice: nothing
