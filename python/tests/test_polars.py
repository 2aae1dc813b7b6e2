"""rayquet.polars' lazy frames against polars' own lazy scans (scan_parquet, scan_iceberg,
scan_delta) of the same data, query by query; and the predicate translation against polars'
own evaluation of each predicate."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

import rayquet
import rayquet.polars as rqpl
from rayquet import _polars_expr

from conftest import make_table

pl = pytest.importorskip("polars")


def flat(t: pa.Table) -> pa.Table:
    return t.select(["id", "i32", "f", "s", "d", "dec", "b"])


@pytest.fixture(scope="module")
def sources(tmp_path_factory, dataset):
    """(name, rayquet's LazyFrame, polars' own LazyFrame) per format."""
    from deltalake import write_deltalake
    from pyiceberg.catalog.sql import SqlCatalog

    root = tmp_path_factory.mktemp("lazy")
    catalog = SqlCatalog("lazy", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/wh")
    catalog.create_namespace("db")
    first = flat(make_table(5000, seed=31))
    tbl = catalog.create_table("db.t", schema=first.schema)
    tbl.append(first)
    tbl.append(flat(make_table(3000, seed=32, start=5000)))
    tbl = catalog.load_table("db.t")
    delta = root / "delta"
    write_deltalake(str(delta), flat(make_table(4000, seed=33)), partition_by=["b"])
    write_deltalake(str(delta), flat(make_table(2000, seed=34, start=4000)), mode="append")
    directory = dataset[0]
    return [
        ("parquet", rqpl.scan_parquet(str(directory) + "/"), pl.scan_parquet(str(directory) + "/*.parquet")),
        ("iceberg", rqpl.scan_iceberg(tbl), pl.scan_iceberg(tbl)),
        ("delta", rqpl.scan_delta(delta), pl.scan_delta(str(delta))),
    ]


# Each query: polars' predicate (pushed where it translates), projection, limits, aggregates.
QUERIES = {
    "compare": lambda lf: lf.filter(pl.col("i32") < 0).select("id", "i32"),
    "and": lambda lf: lf.filter((pl.col("s") == "bb") & (pl.col("f") > 0.5)),
    "or with is_in and a bare boolean": lambda lf: lf.filter(pl.col("s").is_in(["a", "bb"]) | pl.col("b")),
    "not and between dates": lambda lf: lf.filter(
        ~(pl.col("i32") >= 0) & pl.col("d").is_between(dt.date(2021, 3, 1), dt.date(2021, 6, 1))
    ),
    "starts_with": lambda lf: lf.filter(pl.col("s").str.starts_with("aa")).select("id", "s"),
    "decimal": lambda lf: lf.filter(pl.col("dec") > Decimal("10.25")).select("id", "dec"),
    "decimal finer than its column (left to polars)": lambda lf: lf.filter(pl.col("dec") > Decimal("10.251")),
    "arithmetic (left to polars)": lambda lf: lf.filter((pl.col("i32") * 2) > 50),
    "half translatable": lambda lf: lf.filter((pl.col("i32") > 10) & ((pl.col("i32") % 3) == 0)),
    "is_null count": lambda lf: lf.filter(pl.col("i32").is_null()).select(pl.len()),
    "literal on the left, float": lambda lf: lf.filter(pl.lit(0.25) >= pl.col("f")).select("id", "f"),
    "group by": lambda lf: lf.filter(pl.col("b")).group_by("s").agg(pl.len(), pl.col("i32").sum()),
    "count": lambda lf: lf.select(pl.len()),
}


def same(got: "pl.DataFrame", want: "pl.DataFrame") -> bool:
    """Equal as sets of rows (Iceberg's planner orders files as it likes)."""
    if got.columns != want.columns or got.height != want.height:
        return False
    key = got.columns
    return got.sort(key, nulls_last=True).equals(want.sort(key, nulls_last=True))


@pytest.mark.parametrize("query", list(QUERIES))
def test_lazy_frames_match_polars_own_scans(sources, query):
    q = QUERIES[query]
    for name, ours, theirs in sources:
        got, want = q(ours).collect(), q(theirs).collect()
        assert want.height > 0 or query == "count", (name, query)
        assert same(got, want), (name, query, got, want)


def test_limits_apply_after_the_predicate(sources):
    for name, ours, _ in sources:
        got = ours.filter(pl.col("i32") < -90).head(7).collect()
        assert got.height == 7 and (got["i32"] < -90).all(), name
        assert ours.head(5).collect().height == 5
        # A predicate rayquet cannot take, with a limit: polars' filter first, then the limit.
        odd = ours.filter((pl.col("id") % 1000) == 999).head(3).collect()
        assert odd.height == 3 and ((odd["id"] % 1000) == 999).all(), name


def test_schema_and_query_options(sources):
    for name, ours, theirs in sources:
        assert ours.collect_schema().names() == theirs.collect_schema().names(), name
    with pytest.raises(rayquet.InvalidArgumentError, match="filter"):
        rqpl.scan_parquet("x.parquet", filter="a < 1")


PREDICATES = [
    pl.col("i32") < 0,
    (pl.col("s") == "bb") & (pl.col("f") > 0.5),
    pl.col("s").is_in(["a", "bb"]) | pl.col("b"),
    ~(pl.col("i32") >= 0) & pl.col("d").is_between(dt.date(2021, 3, 1), dt.date(2021, 6, 1)),
    pl.col("s").str.ends_with("b") | pl.col("s").str.contains("cc", literal=True),
    pl.col("ts") >= dt.datetime(2021, 6, 1, 12, 30),
    ~pl.col("s").is_in(["a"]),
    pl.col("i32").is_not_null() & (pl.col("id") != 3),
    (pl.col("f") <= 0.75) | (pl.col("f") > 1e300),
    (pl.col("dec") > Decimal("10.5")) | (pl.col("dec") <= -3),
    pl.col("dec") == Decimal("-12.340"),
]


def types_of(directory):
    """The scan's column types as the lazy frames give them to the translator."""
    with rayquet.scan(str(directory) + "/", limit=0) as reader:
        return _polars_expr.column_types(reader._types())


@pytest.mark.parametrize("i", range(len(PREDICATES)))
def test_translated_predicates_keep_polars_rows(dataset, i):
    """Each predicate here translates whole: rayquet's filter alone keeps exactly the rows
    polars keeps."""
    predicate = PREDICATES[i]
    directory, _, table = dataset
    sql = _polars_expr.pushdown(predicate, types_of(directory))
    assert sql is not None, predicate
    want = pl.from_arrow(table).filter(predicate)
    got = pl.from_arrow(rayquet.scan(str(directory) + "/", filter=sql).read_all())
    assert same(got, want), (sql, got.height, want.height)


def test_untranslatable_parts_are_dropped_only_under_and(dataset):
    schema = types_of(dataset[0])
    half = (pl.col("i32") > 10) & ((pl.col("i32") % 3) == 0)
    assert _polars_expr.pushdown(half, schema) == '("i32" > 10)'
    assert _polars_expr.pushdown((pl.col("i32") > 10) | ((pl.col("i32") % 3) == 0), schema) is None
    assert _polars_expr.pushdown(~((pl.col("i32") % 3) == 0), schema) is None
    # A literal its column cannot hold, a cast: left to polars.
    assert _polars_expr.pushdown(pl.col("i32") < 2**40, schema) is None
    assert _polars_expr.pushdown(pl.col("i32").cast(pl.Int64) < 5, schema) is None
    assert _polars_expr.pushdown(pl.col("dec") > Decimal("1.005"), schema) is None
    assert _polars_expr.pushdown(pl.col("dec") > Decimal("123456789"), schema) is None
    assert _polars_expr.pushdown(pl.col("dec") > Decimal("1.500"), schema) == "\"dec\" > '1.50'"
    # polars' JSON writes an infinite or NaN float as null: which one is lost, so not pushed.
    assert _polars_expr.pushdown(pl.col("f") <= float("inf"), schema) is None
