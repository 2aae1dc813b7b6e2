"""Filters given as pyarrow compute expressions: rayquet keeps exactly the rows
``pyarrow.dataset`` keeps for the same expression (pyarrow is the reference), including where
pyarrow's semantics differ from SQL's (NaN, ``isin`` and nulls), and refuses what it cannot
translate exactly."""

from __future__ import annotations

import datetime as dt
import decimal
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import rayquet

UTC = dt.timezone.utc


@pytest.fixture(scope="module")
def edgy(tmp_path_factory):
    """A file with what tells pyarrow's semantics from SQL's: NaNs (and nulls) in float
    columns, nulls in string and boolean columns, a timestamp with a time zone, a nested field,
    a column name that needs quoting."""
    rnd = random.Random(5)
    n = 6000

    def maybe(v, p=0.1):
        return None if rnd.random() < p else v

    def fl():
        return float("nan") if rnd.random() < 0.1 else rnd.gauss(0, 1)

    t = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "x": pa.array([maybe(fl()) for _ in range(n)], pa.float64()),
            "y": pa.array([maybe(fl()) for _ in range(n)], pa.float32()),
            "s": pa.array([maybe(rnd.choice(["a", "b", "c", "it's"])) for _ in range(n)]),
            "flag": pa.array([maybe(rnd.random() < 0.5) for _ in range(n)]),
            "u8": pa.array([maybe(rnd.randrange(256)) for _ in range(n)], pa.uint8()),
            "tz": pa.array(
                [maybe(dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(minutes=7 * i)) for i in range(n)],
                pa.timestamp("ms", tz="Europe/Paris"),
            ),
            "ns": pa.array([maybe(1_700_000_000_000_000_000 + 123_456_789 * i) for i in range(n)], pa.timestamp("ns")),
            "us": pa.array([maybe(1_700_000_000_000_000 + 123_457 * i) for i in range(n)], pa.timestamp("us")),
            "dec": pa.array([maybe(decimal.Decimal(rnd.randrange(-10**6, 10**6)) / 1000) for _ in range(n)], pa.decimal128(12, 3)),
            "st": pa.array([maybe({"k": rnd.randrange(5)}) for _ in range(n)], pa.struct([("k", pa.int16())])),
            "odd name": pa.array([maybe(rnd.randrange(10)) for _ in range(n)], pa.int32()),
        }
    )
    p = tmp_path_factory.mktemp("expr") / "edgy.parquet"
    pq.write_table(t, p, row_group_size=1000)
    return p


def same(a: pa.Table, b: pa.Table) -> bool:
    """Tables equal with NaN equal to NaN (``Table.equals`` says NaN != NaN)."""
    if a.schema != b.schema:
        return False

    def nan_free(c):
        if pa.types.is_floating(c.type):
            # NaN where it was, as a value no row holds: compared like any other
            return pc.if_else(pc.is_nan(c), pa.scalar(1e300, c.type) if c.type != pa.float32() else pa.scalar(3e38, c.type), c)
        return c

    return all(nan_free(a.column(n)).equals(nan_free(b.column(n))) for n in a.column_names)


F, S = pc.field, pa.scalar
EXPRESSIONS = {
    # NaN: pyarrow's comparisons with NaN are false, rayquet orders NaN above every number.
    "x > 0": F("x") > 0,
    "x >= 0.5": F("x") >= 0.5,
    "not x > 0": ~(F("x") > 0),
    "x < 0": F("x") < 0,
    "not x <= -1": ~(F("x") <= -1),
    "x != 0.25": F("x") != 0.25,
    "y > 0 (float32)": F("y") > S(0.0, pa.float32()),
    "x > -inf": F("x") > float("-inf"),
    "x < inf": F("x") < float("inf"),
    "0 < x (literal first)": 0 < F("x"),
    "x is null": F("x").is_null(),
    # isin and nulls: a null value is false (its negation true) unless the set holds a null.
    "s isin": F("s").isin(["a", "it's"]),
    "not s isin": ~F("s").isin(["a", "it's"]),
    "s isin with null": F("s").isin(["b", None]),
    "not s isin with null": ~F("s").isin(["b", None]),
    "u8 isin": F("u8").isin([0, 255, 7]),
    # booleans, Kleene logic
    "flag": F("flag"),
    "not flag": ~F("flag"),
    "flag == false": F("flag") == False,  # noqa: E712
    "flag or x > 1": F("flag") | (F("x") > 1),
    "not (flag and s == b)": ~(F("flag") & (F("s") == "b")),
    # types
    "tz >= (a time zone)": F("tz") >= S(dt.datetime(2024, 1, 10, 12, 30, tzinfo=UTC), pa.timestamp("ms", tz="UTC")),
    "us < (no time zone)": F("us") < S(1_700_000_000_000_000 + 123_457 * 3000, pa.timestamp("us")),
    "dec between": (F("dec") >= S(decimal.Decimal("-12.5"), pa.decimal128(12, 3))) & (F("dec") < S(decimal.Decimal("250.125"), pa.decimal128(12, 3))),
    "nested field": F("st", "k") == 3,
    "odd name": F("odd name") <= 4,
    "u8 > 200 (pyarrow widens the column)": F("u8") > 200,
    "odd name isin": F("odd name").isin([1, 2, 3]),
}


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_keeps_the_rows_pyarrow_keeps(edgy, name):
    expr = EXPRESSIONS[name]
    expected = ds.dataset(edgy).to_table(filter=expr)
    got = rayquet.scan(edgy, filter=expr).read_all()
    assert 0 < expected.num_rows < pq.read_metadata(edgy).num_rows, "the case must select"
    assert got.num_rows == expected.num_rows
    assert same(got, expected)
    # the columns it names need not be read
    got = rayquet.scan(edgy, columns=["id"], filter=expr).read_all()
    assert got.column("id").to_pylist() == expected.column("id").to_pylist()


def test_statistics_still_prune(edgy):
    reader = rayquet.scan(edgy, filter=F("id") < 500)
    assert reader.read_all().num_rows == 500
    assert reader.metrics()["row_groups_pruned"] == 5


@pytest.mark.parametrize(
    "expr,says",
    [
        (F("id") + 1 > 3, "not of a column with a literal"),
        (F("id").isin([1]) == True, "not of a column with a literal"),  # noqa: E712
        (F("id") < 5.5, "cast"),
        (F("id") < F("u8"), "two columns"),
        (F("x") < F("x"), "two columns"),
        (F("dec") > 10.5, "give a literal the column's type"),
        (F("ns") < S(1_700_000_000_000_000_000, pa.timestamp("ns")), "Literal"),
        (F("u8") > 300, "cannot be compared with column u8"),
        (F("x").is_nan(), "function 'is_nan'"),
        (F("x") == float("nan"), "NaN"),
        (F("id") == S(None, pa.int64()), "null"),
        (pc.is_in(F("s"), value_set=pa.array(["a", None]), skip_nulls=True), "null_matching_behavior=SKIP"),
        (F("no_such_column") == 1, "no_such_column"),
    ],
)
def test_refuses_what_it_cannot_translate_exactly(edgy, expr, says):
    with pytest.raises(rayquet.InvalidArgumentError) as e:
        rayquet.scan(edgy, filter=expr)
    assert says in str(e.value)
    assert isinstance(e.value, ValueError)


def test_a_filter_of_another_type_is_refused(edgy):
    with pytest.raises(rayquet.InvalidArgumentError, match="SQL string or a pyarrow.compute.Expression"):
        rayquet.scan(edgy, filter=3)


def test_hive_partition_columns(tmp_path):
    t = pa.table({"id": range(300), "year": [2020 + i % 3 for i in range(300)], "region": [["eu", "us"][i % 2] for i in range(300)]})
    pq.write_to_dataset(t, tmp_path, partition_cols=["year", "region"])
    for expr in [F("region") == "eu", (F("year") >= 2021) & (F("id") < 150), ~F("year").isin([2020])]:
        expected = ds.dataset(tmp_path, partitioning="hive").to_table(filter=expr)
        got = rayquet.scan(tmp_path, filter=expr).read_all()
        assert 0 < got.num_rows < 300
        assert sorted(got.column("id").to_pylist()) == sorted(expected.column("id").to_pylist())


def test_large_strings_and_date64(tmp_path):
    # Types pyarrow's Substrait has no standard literal for (polars writes large strings).
    n = 2000
    t = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "ls": pa.array([None if i % 9 == 0 else f"k{i % 40:02d}" for i in range(n)], pa.large_string()),
            "d64": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i % 500) for i in range(n)], pa.date64()),
        }
    )
    p = tmp_path / "large.parquet"
    pq.write_table(t, p, row_group_size=500)
    for expr in [F("ls") >= "k20", ~F("ls").isin(["k01", "k02"]), F("d64") < dt.date(2020, 6, 1)]:
        expected = ds.dataset(p).to_table(filter=expr)
        got = rayquet.scan(p, filter=expr).read_all()
        assert 0 < got.num_rows < n
        assert got.column("id").to_pylist() == expected.column("id").to_pylist()
