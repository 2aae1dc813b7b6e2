#!/usr/bin/env python3
"""Tables and files written by the writers rayquet's users have, with each writer's own read.

    python make.py OUT_DIR

writes, under OUT_DIR:

- the data: `iceberg/` (pyiceberg, an SqlCatalog on sqlite with a local warehouse),
  `delta/` (deltalake), `parquet/` (pyarrow, duckdb, polars files), `dataset/` (directories
  of Parquet files: Hive folders...);
- one folder per case under `cases/` with `case.json` and, unless the case expects an error,
  `expected.arrow`: the writer's own read of the table or file (an Arrow IPC file written by
  pyarrow), which crates/cli/tests/real_writers.rs compares with rayquet's read.

case.json:
    name      unique, `group/what` (the folder is the name with `/` as `__`)
    kind      iceberg | delta | parquet | dataset
    location  relative to OUT_DIR, or an absolute path or URL (`location_is_absolute`)
    read      options: snapshot_id, ref, as_of_timestamp_ms (Iceberg); version (Delta);
              columns; filter (a SQL string, rayquet's `Expr::parse_sql`)
    expected  "expected.arrow", or
    error     {"kind": "Unsupported", "contains": "..."}: rayquet must refuse with that
    writer    who wrote the data, and which read is the expectation
    why       what the case checks, and where the expectation departs from the writer's read

Deterministic: fixed data (no randomness), fixed row order where a writer keeps it. Only the
ids, UUIDs and timestamps the writers mint themselves (snapshot ids, file names) vary from run
to run; case.json records them. The test caches OUT_DIR keyed by a hash of this file and
requirements.txt.
"""

import datetime as dt
import decimal
import json
import os
import shutil
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path

os.environ.setdefault("TZ", "UTC")

import duckdb  # noqa: E402
import polars as pl  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.dataset as pads  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import deltalake  # noqa: E402
import pyiceberg  # noqa: E402
from deltalake import DeltaTable, QueryBuilder, write_deltalake  # noqa: E402
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.expressions import AlwaysTrue  # noqa: E402
from pyiceberg.io.pyarrow import ArrowScan  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import (  # noqa: E402
    BucketTransform,
    DayTransform,
    HourTransform,
    IdentityTransform,
    MonthTransform,
    TruncateTransform,
    VoidTransform,
    YearTransform,
)
from pyiceberg.types import (  # noqa: E402
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

decimal.getcontext().prec = 80

OUT = Path(sys.argv[1]).resolve()
ONLY = sys.argv[2] if len(sys.argv) > 2 else None  # a name prefix, for development

PYICEBERG = f"pyiceberg {pyiceberg.__version__}"
DELTALAKE = f"deltalake {deltalake.__version__}"
PYARROW = f"pyarrow {pa.__version__}"
DUCKDB = f"duckdb {duckdb.__version__}"
POLARS = f"polars {pl.__version__}"

NAMES = set()


def wanted(name):
    return ONLY is None or name.startswith(ONLY)


def rel(path):
    """A location for case.json: relative to OUT when under it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(OUT)), False
    except ValueError:
        return str(path), True


def write_ipc(table, path):
    # An IPC *file* holds one dictionary per field: unify them, one chunk.
    table = table.unify_dictionaries().combine_chunks()
    with pa.OSFile(str(path), "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)


def case(name, kind, location, *, expected=None, error=None, read=None, writer, why):
    assert name not in NAMES, name
    NAMES.add(name)
    assert (expected is None) != (error is None), name
    d = OUT / "cases" / name.replace("/", "__")
    d.mkdir(parents=True)
    loc, absolute = rel(location) if not isinstance(location, str) or "://" not in location else (location, True)
    doc = {"name": name, "kind": kind, "location": loc, "writer": writer, "why": why}
    if absolute:
        doc["location_is_absolute"] = True
    if read:
        doc["read"] = read
    if expected is not None:
        if isinstance(expected, pa.RecordBatchReader):
            expected = expected.read_all()
        # A filter that keeps no row would pass whatever a reader does with it.
        assert not (read and "filter" in read) or expected.num_rows > 0, f"{name}: the filter keeps no row"
        write_ipc(expected, d / "expected.arrow")
        doc["expected"] = "expected.arrow"
        doc["rows"] = expected.num_rows
    else:
        doc["error"] = error
    (d / "case.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def fresh(path):
    p = Path(path)
    if p.exists():
        shutil.rmtree(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    return p


# ------------------------------------------------------------------------------------------
# Values shared by the writers: partition values that need escaping in paths.

ESCAPE_STRINGS = [
    "a:b",
    "x=y",
    "a/b",
    "50%",
    "%25",
    "a+b",
    "with space",
    "why?",
    "#hash",
    "é日本🦀",
    "",
    None,
    "plain",
    "__HIVE_DEFAULT_PARTITION__x",
]
ESCAPE_TIMESTAMPS = [
    dt.datetime(2024, 1, 2, 3, 4, 5),
    dt.datetime(2024, 1, 2, 3, 4, 5, 678901),
    dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
    dt.datetime(2000, 2, 29, 0, 0, 0),
    None,
]
ESCAPE_DATES = [dt.date(2024, 1, 2), dt.date(1969, 12, 31), dt.date(2000, 2, 29), None]


def utc(ts):
    return None if ts is None else ts.replace(tzinfo=dt.timezone.utc)


# ==========================================================================================
# pyiceberg

ICE = OUT / "iceberg"
CATALOG = None


def catalog():
    global CATALOG
    if CATALOG is None:
        ICE.mkdir(parents=True, exist_ok=True)
        CATALOG = SqlCatalog(
            "rayquet",
            uri=f"sqlite:///{ICE}/catalog.db",
            warehouse=f"file://{ICE}/warehouse",
        )
        CATALOG.create_namespace("db")
    return CATALOG


def metadata_path(tbl):
    loc = tbl.metadata_location
    assert loc.startswith("file://"), loc
    return Path(loc[len("file://") :])


def ice_table(name, schema, spec=None, fv=2, properties=None):
    props = {"format-version": str(fv)}
    props.update(properties or {})
    kw = {"schema": schema, "properties": props}
    if spec is not None:
        kw["partition_spec"] = spec
    return catalog().create_table(f"db.{name}", **kw)


def ice_case(name, tbl, expected, *, read=None, why, location=None, writer=None):
    case(
        name,
        "iceberg",
        location if location is not None else metadata_path(tbl),
        expected=expected,
        read=read,
        writer=writer or f"{PYICEBERG} (expected: pyiceberg's scan().to_arrow())",
        why=why,
    )


def ice_current(tbl, row_filter=None):
    return tbl.scan(row_filter=row_filter).to_arrow() if row_filter else tbl.scan().to_arrow()


def ice_reprojected(tbl, snapshot_id):
    """pyiceberg's read of a snapshot's files in the table's *current* schema (Iceberg's rule
    for a branch: SnapshotUtil.schemaFor gives the table schema)."""
    tasks = tbl.scan(snapshot_id=snapshot_id).plan_files()
    return ArrowScan(tbl.metadata, tbl.io, tbl.schema(), AlwaysTrue()).to_table(tasks)


TYPE_VALUES = {
    "int": (IntegerType(), pa.array([1, -5, None, 100, 2**31 - 1, -(2**31)], pa.int32())),
    "long": (LongType(), pa.array([1, -5, None, 2**40, 2**63 - 1, -(2**63)], pa.int64())),
    "string": (StringType(), pa.array(["abc", "", None, "zzzz", "é日本", "ab"], pa.string())),
    "date": (
        DateType(),
        pa.array(
            [dt.date(2024, 1, 1), dt.date(1969, 12, 31), None, dt.date(2000, 2, 29), dt.date(1, 1, 1), dt.date(2024, 12, 31)],
            pa.date32(),
        ),
    ),
    "timestamp": (
        TimestampType(),
        pa.array(
            [
                dt.datetime(2024, 1, 1, 1, 2, 3),
                dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
                None,
                dt.datetime(2000, 2, 29),
                dt.datetime(2024, 1, 1, 23, 0, 0, 1),
                dt.datetime(1970, 1, 1),
            ],
            pa.timestamp("us"),
        ),
    ),
    "timestamptz": (
        TimestamptzType(),
        pa.array(
            [
                dt.datetime(2024, 1, 1, 1, 2, 3),
                dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
                None,
                dt.datetime(2000, 2, 29),
                dt.datetime(2024, 1, 1, 23, 0, 0, 1),
                dt.datetime(1970, 1, 1),
            ],
            pa.timestamp("us", tz="UTC"),
        ),
    ),
    "decimal": (
        DecimalType(10, 2),
        pa.array(
            [Decimal("1.23"), Decimal("-0.01"), None, Decimal("99999999.99"), Decimal("-99999999.98"), Decimal("0.00")],
            pa.decimal128(10, 2),
        ),
    ),
    "boolean": (BooleanType(), pa.array([True, False, None, True, True, False])),
    "binary": (BinaryType(), pa.array([b"ab", b"", None, b"\x00\xff", b"a/b", b"%"], pa.binary())),
    "uuid": (
        UUIDType(),
        pa.array([uuid.UUID(int=i).bytes if i else None for i in [1, 2, 0, 3, 2**127, 5]], pa.binary(16)),
    ),
    "fixed": (FixedType(3), pa.array([b"abc", b"def", None, b"ghi", b"\x00\x00\x00", b"a/b"], pa.binary(3))),
}

# A filter per type, on the partitioned column: (SQL for rayquet, pyiceberg row filter).
TYPE_FILTERS = {
    "int": "c = 100",
    "long": "c >= 1",
    "string": "c = 'abc'",
    "date": "c >= DATE '2000-01-01'",
    "timestamp": "c < TIMESTAMP '2000-03-01 00:00:00'",
    "decimal": "c > 0",
    "boolean": "c = true",
}
ICE_ROW_FILTERS = {
    "int": "c = 100",
    "long": "c >= 1",
    "string": "c = 'abc'",
    "date": "c >= '2000-01-01'",
    "timestamp": "c < '2000-03-01T00:00:00'",
    "decimal": "c > 0",
    "boolean": "c = true",
}

TRANSFORMS = {
    "identity": IdentityTransform(),
    "bucket": BucketTransform(4),
    "truncate": TruncateTransform(2),
    "year": YearTransform(),
    "month": MonthTransform(),
    "day": DayTransform(),
    "hour": HourTransform(),
    "void": VoidTransform(),
}


def iceberg_transforms():
    for fv in (2, 1):
        for tname, (itype, values) in TYPE_VALUES.items():
            for trname, tr in TRANSFORMS.items():
                if not tr.can_transform(itype):
                    continue
                # Format v1: a representative subset (the transforms are the same code).
                if fv == 1 and (trname, tname) not in {
                    ("identity", "string"),
                    ("identity", "timestamp"),
                    ("bucket", "long"),
                    ("truncate", "string"),
                    ("day", "timestamptz"),
                    ("month", "date"),
                    ("void", "int"),
                }:
                    continue
                name = f"iceberg/v{fv}/transform/{trname}_{tname}"
                if not wanted(name):
                    continue
                schema = Schema(
                    NestedField(1, "id", IntegerType(), required=False),
                    NestedField(2, "c", itype, required=False),
                    NestedField(3, "v", StringType(), required=False),
                )
                spec = PartitionSpec(PartitionField(2, 1000, tr, f"c_{trname}"))
                tbl = ice_table(f"v{fv}_{trname}_{tname}", schema, spec, fv=fv)
                n = len(values)
                data = pa.table(
                    {
                        "id": pa.array(range(n), pa.int32()),
                        "c": values,
                        "v": pa.array([f"v{i}" for i in range(n)]),
                    }
                )
                tbl.append(data)
                ice_case(
                    name,
                    tbl,
                    ice_current(tbl),
                    why=f"format v{fv}, partition {trname}({tname}); nulls, extremes, epoch edges",
                )
                if tname in TYPE_FILTERS and fv == 2:
                    ice_case(
                        name + "/filter",
                        tbl,
                        ice_current(tbl, ICE_ROW_FILTERS[tname]),
                        read={"filter": TYPE_FILTERS[tname]},
                        why=f"filter on the {trname}-partitioned column ({TYPE_FILTERS[tname]})",
                    )
                if trname == "identity" and fv == 2:
                    ice_case(
                        name + "/columns",
                        tbl,
                        tbl.scan(selected_fields=("c", "id")).to_arrow().select(["c", "id"]),
                        read={"columns": ["c", "id"]},
                        why="projection of the identity-partition column and another, reordered",
                    )


def iceberg_escapes():
    # Identity partitions whose values need escaping in paths.
    n = len(ESCAPE_STRINGS)
    for fv in (2, 1):
        name = f"iceberg/v{fv}/escape/identity_string"
        if wanted(name):
            schema = Schema(
                NestedField(1, "id", IntegerType(), required=False),
                NestedField(2, "s", StringType(), required=False),
            )
            spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "s"))
            tbl = ice_table(f"v{fv}_escape_string", schema, spec, fv=fv)
            tbl.append(pa.table({"id": pa.array(range(n), pa.int32()), "s": pa.array(ESCAPE_STRINGS)}))
            ice_case(name, tbl, ice_current(tbl), why="identity(string) with : = / % + space ? # non-ASCII, '' and null: paths escaped")
            if fv == 2:
                for i, (sql, rf) in enumerate(
                    [
                        ("s = 'a/b'", "s = 'a/b'"),
                        ("s = '%25'", "s = '%25'"),
                        ("s = ''", "s = ''"),
                        ("s IS NULL", "s is null"),
                        ("s IN ('a:b', 'with space', 'é日本🦀')", "s in ('a:b', 'with space', 'é日本🦀')"),
                    ]
                ):
                    ice_case(
                        f"{name}/filter{i}",
                        tbl,
                        ice_current(tbl, rf),
                        read={"filter": sql},
                        why=f"filter on an escaped identity partition: {sql}",
                    )
    name = "iceberg/v2/escape/identity_timestamps"
    if wanted(name):
        schema = Schema(
            NestedField(1, "id", IntegerType(), required=False),
            NestedField(2, "ts", TimestampType(), required=False),
            NestedField(3, "tstz", TimestamptzType(), required=False),
            NestedField(4, "d", DateType(), required=False),
        )
        spec = PartitionSpec(
            PartitionField(2, 1000, IdentityTransform(), "ts"),
            PartitionField(3, 1001, IdentityTransform(), "tstz"),
            PartitionField(4, 1002, IdentityTransform(), "d"),
        )
        tbl = ice_table("v2_escape_ts", schema, spec)
        m = len(ESCAPE_TIMESTAMPS)
        tbl.append(
            pa.table(
                {
                    "id": pa.array(range(m), pa.int32()),
                    "ts": pa.array(ESCAPE_TIMESTAMPS, pa.timestamp("us")),
                    "tstz": pa.array([utc(t) for t in ESCAPE_TIMESTAMPS], pa.timestamp("us", tz="UTC")),
                    "d": pa.array([t.date() if t else None for t in ESCAPE_TIMESTAMPS], pa.date32()),
                }
            )
        )
        ice_case(name, tbl, ice_current(tbl), why="identity(timestamp), identity(timestamptz), identity(date): ':' in paths, pre-epoch, null")
        ice_case(
            name + "/filter",
            tbl,
            ice_current(tbl, "ts = '2024-01-02T03:04:05.678901'"),
            read={"filter": "ts = TIMESTAMP '2024-01-02 03:04:05.678901'"},
            why="filter on an identity(timestamp) partition with microseconds",
        )
    name = "iceberg/v2/escape/identity_string_and_long"
    if wanted(name):
        schema = Schema(
            NestedField(1, "id", IntegerType(), required=False),
            NestedField(2, "s", StringType(), required=False),
            NestedField(3, "n", LongType(), required=False),
            NestedField(4, "b", BooleanType(), required=False),
        )
        spec = PartitionSpec(
            PartitionField(2, 1000, IdentityTransform(), "s"),
            PartitionField(3, 1001, IdentityTransform(), "n"),
            PartitionField(4, 1002, IdentityTransform(), "b"),
        )
        tbl = ice_table("v2_escape_multi", schema, spec)
        tbl.append(
            pa.table(
                {
                    "id": pa.array(range(n), pa.int32()),
                    "s": pa.array(ESCAPE_STRINGS),
                    "n": pa.array([(-1) ** i * i for i in range(n - 1)] + [None], pa.int64()),
                    "b": pa.array([i % 3 == 0 if i % 5 else None for i in range(n)]),
                }
            )
        )
        ice_case(name, tbl, ice_current(tbl), why="three identity partitions (string, long, boolean) with escaping and nulls")
        ice_case(
            name + "/filter",
            tbl,
            ice_current(tbl, "n < 0 and b = false"),
            read={"filter": "n < 0 AND b = false"},
            why="filter on two identity partitions",
        )


def iceberg_location_escapes():
    # The table name (so its default location) has a space and a '%' (a literal "%25"):
    # pyiceberg writes `file:///.../db/t %25 x/...` unescaped, and files lie at that literal path.
    name = "iceberg/v2/location_percent_space"
    if not wanted(name):
        return
    schema = Schema(
        NestedField(1, "id", IntegerType(), required=False),
        NestedField(2, "s", StringType(), required=False),
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "s"))
    tbl = ice_table("t %25 x", schema, spec)
    tbl.append(pa.table({"id": pa.array([1, 2, 3], pa.int32()), "s": pa.array(["a b", "c%3Ad", None])}))
    tbl.append(pa.table({"id": pa.array([4], pa.int32()), "s": pa.array(["e"])}))
    exp = ice_current(tbl)
    table_dir = Path(tbl.metadata.location[len("file://") :])
    assert table_dir.name == "t %25 x", table_dir
    ice_case(name + "/metadata_path", tbl, exp, why="table location with a space and '%25' (a local path to the metadata JSON)")
    ice_case(name + "/table_dir", tbl, exp, location=table_dir, why="the same table by its directory (a local path with a space and '%25')")
    ice_case(
        name + "/metadata_uri",
        tbl,
        exp,
        location=tbl.metadata_location,
        why="the same table by the metadata location its catalog gives: a file:// URI written unescaped by pyiceberg",
    )


# Schema evolution: one table per step, with and without a write after the change.
def evo_base_schema():
    return Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "a", IntegerType(), required=False),
        NestedField(3, "f", FloatType(), required=False),
        NestedField(4, "d", DecimalType(9, 2), required=False),
        NestedField(5, "s", StructType(NestedField(6, "x", IntegerType(), required=False)), required=False),
        NestedField(7, "name", StringType(), required=False),
    )


def evo_base_data():
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "a": pa.array([10, None, -(2**31)], pa.int32()),
            "f": pa.array([1.5, None, -0.25], pa.float32()),
            "d": pa.array([Decimal("1.25"), None, Decimal("-9999999.99")], pa.decimal128(9, 2)),
            "s": pa.array([{"x": 1}, None, {"x": None}], pa.struct([("x", pa.int32())])),
            "name": pa.array(["one", None, "three"]),
        }
    )


def evo_steps():
    """step -> (change(update_schema), data for a write after it)."""

    def add(u):
        u.add_column("added", StringType())

    def rename(u):
        u.rename_column("name", "label")

    def drop(u):
        u.delete_column("f")

    def promote_int(u):
        u.update_column("a", LongType())

    def promote_float(u):
        u.update_column("f", DoubleType())

    def widen_decimal(u):
        u.update_column("d", DecimalType(12, 2))

    def nested_add(u):
        u.add_column(("s", "y"), StringType())

    def reorder(u):
        u.move_first("name")
        u.move_after("id", "d")

    def rename_nested(u):
        u.rename_column("s.x", "xx")

    def combined(u):
        u.rename_column("name", "label")
        u.delete_column("a")
        u.add_column("a", StringType())  # a new column reusing a dropped name (new id)

    struct_x = pa.struct([("x", pa.int32())])
    return {
        "add_column": (add, lambda: {"id": [4], "a": [4], "f": [4.0], "d": [Decimal("4.00")], "s": pa.array([{"x": 4}], struct_x), "name": ["four"], "added": ["new"]}),
        "rename": (rename, lambda: {"id": [4], "a": [4], "f": [4.0], "d": [Decimal("4.00")], "s": pa.array([{"x": 4}], struct_x), "label": ["four"]}),
        "drop": (drop, lambda: {"id": [4], "a": [4], "d": [Decimal("4.00")], "s": pa.array([{"x": 4}], struct_x), "name": ["four"]}),
        "promote_int_long": (promote_int, lambda: {"id": [4], "a": pa.array([2**40], pa.int64()), "f": [4.0], "d": [Decimal("4.00")], "s": pa.array([{"x": 4}], struct_x), "name": ["four"]}),
        "promote_float_double": (promote_float, lambda: {"id": [4], "a": [4], "f": pa.array([0.1], pa.float64()), "d": [Decimal("4.00")], "s": pa.array([{"x": 4}], struct_x), "name": ["four"]}),
        "widen_decimal": (widen_decimal, lambda: {"id": [4], "a": [4], "f": [4.0], "d": pa.array([Decimal("9999999999.99")], pa.decimal128(12, 2)), "s": pa.array([{"x": 4}], struct_x), "name": ["four"]}),
        "nested_add": (nested_add, lambda: {"id": [4], "a": [4], "f": [4.0], "d": [Decimal("4.00")], "s": pa.array([{"x": 4, "y": "why"}], pa.struct([("x", pa.int32()), ("y", pa.string())])), "name": ["four"]}),
        "reorder": (reorder, lambda: {"name": ["four"], "a": [4], "f": [4.0], "d": [Decimal("4.00")], "id": [4], "s": pa.array([{"x": 4}], struct_x)}),
        "rename_nested": (rename_nested, lambda: {"id": [4], "a": [4], "f": [4.0], "d": [Decimal("4.00")], "s": pa.array([{"xx": 4}], pa.struct([("xx", pa.int32())])), "name": ["four"]}),
        "combined": (combined, lambda: {"id": [4], "f": [4.0], "d": [Decimal("4.00")], "s": pa.array([{"x": 4}], struct_x), "label": ["four"], "a": ["a-string"]}),
    }


# Filters on the changed column, for the tables written after the change: (SQL, pyiceberg).
EVO_FILTERS = {
    "add_column": ("added IS NULL", "added is null"),
    "rename": ("label = 'one' OR label = 'four'", "label = 'one' or label = 'four'"),
    "promote_int_long": ("a > 5", "a > 5"),
    "promote_float_double": ("f < 1.0", "f < 1.0"),
    "widen_decimal": ("d > 1000", "d > 1000"),
    "nested_add": ("s.x >= 1", "s.x >= 1"),
    "rename_nested": ("s.xx = 4", "s.xx = 4"),
    "combined": ("label IS NOT NULL AND a IS NULL", "label is not null and a is null"),
}


def to_table_schema(tbl, cols):
    """`cols` as an Arrow table in the table's current schema (types from pyiceberg)."""
    arrow_schema = tbl.schema().as_arrow()
    arrays = {}
    for f in arrow_schema:
        v = cols[f.name]
        arrays[f.name] = v.cast(f.type) if isinstance(v, pa.Array) else pa.array(v, f.type)
    return pa.table(arrays, schema=pa.schema([pa.field(f.name, f.type) for f in arrow_schema]))


def iceberg_schema_evolution():
    for fv in (2, 1):
        for step, (change, data) in evo_steps().items():
            for write in (False, True):
                name = f"iceberg/v{fv}/evolution/{step}/{'then_write' if write else 'no_write'}"
                if not wanted(name):
                    continue
                tbl = ice_table(f"v{fv}_evo_{step}_{int(write)}", evo_base_schema(), fv=fv)
                tbl.append(evo_base_data())
                first = tbl.current_snapshot().snapshot_id
                with tbl.update_schema() as u:
                    change(u)
                if write:
                    tbl.append(to_table_schema(tbl, data()))
                ice_case(
                    name,
                    tbl,
                    ice_current(tbl),
                    why=f"{step}{', then an append' if write else ' and no write since'}: the current table reads in the table's current schema",
                )
                if write and fv == 2 and step in EVO_FILTERS:
                    sql, rf = EVO_FILTERS[step]
                    ice_case(
                        name + "/filter",
                        tbl,
                        ice_current(tbl, rf),
                        read={"filter": sql},
                        why=f"{step}, then an append: filter on the changed column ({sql}), old files and new",
                    )
                ice_case(
                    name + "/first_snapshot",
                    tbl,
                    tbl.scan(snapshot_id=first).to_arrow(),
                    read={"snapshot_id": first},
                    why=f"{step}: time travel by id to the snapshot before the change reads in that snapshot's schema",
                )


def iceberg_time_travel():
    for fv in (2, 1):
        name = f"iceberg/v{fv}/time_travel"
        if not wanted(name):
            continue
        schema = Schema(
            NestedField(1, "id", LongType(), required=False),
            NestedField(2, "cat", StringType(), required=False),
        )
        spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
        tbl = ice_table(f"v{fv}_time_travel", schema, spec, fv=fv)

        def rows(ids, cat):
            return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array([cat] * len(ids))})

        def pause():
            time.sleep(0.01)  # distinct snapshot timestamps

        tbl.append(rows([1, 2, 3], "a"))
        s1 = tbl.current_snapshot()
        pause()
        tbl.append(rows([4, 5, 6], "b"))
        s2 = tbl.current_snapshot()
        tbl.manage_snapshots().create_tag(s1.snapshot_id, "t1").create_branch(s2.snapshot_id, "dev").create_branch(s2.snapshot_id, "frozen").commit()
        pause()
        tbl.delete("id = 2")
        s3 = tbl.current_snapshot()
        pause()
        with tbl.update_schema() as u:
            u.add_column("extra", StringType())
            u.rename_column("cat", "category")
        ext = pa.table(
            {"id": pa.array([7, 8], pa.int64()), "category": pa.array(["c", "a"]), "extra": pa.array(["x", None])}
        )
        tbl.append(ext)
        s4 = tbl.current_snapshot()
        tbl.append(
            pa.table({"id": pa.array([100], pa.int64()), "category": pa.array(["dev"]), "extra": pa.array(["on dev"])}),
            branch="dev",
        )
        tbl.manage_snapshots().create_tag(s4.snapshot_id, "t4").commit()
        pause()
        tbl.overwrite(rows([9], "z").rename_columns(["id", "category"]).append_column("extra", pa.array(["o"])), overwrite_filter="category = 'b'")
        s5 = tbl.current_snapshot()
        tbl = catalog().load_table(f"db.v{fv}_time_travel")
        why_rule = "Iceberg (Java SnapshotUtil.schemaFor): "
        ice_case(name + "/current", tbl, ice_current(tbl), why="the current snapshot after appends, a delete, a schema change and an overwrite")
        for label, snap in [("s1", s1), ("s2", s2), ("s3", s3), ("s4", s4), ("s5", s5)]:
            ice_case(
                f"{name}/snapshot_{label}",
                tbl,
                tbl.scan(snapshot_id=snap.snapshot_id).to_arrow(),
                read={"snapshot_id": snap.snapshot_id},
                why=why_rule + "a snapshot id reads in that snapshot's schema",
            )
        # As of a time between s2 and s3: s2.
        ts = (s2.timestamp_ms + s3.timestamp_ms) // 2
        assert s2.timestamp_ms < ts < s3.timestamp_ms, (s2.timestamp_ms, s3.timestamp_ms)
        assert tbl.snapshot_as_of_timestamp(ts).snapshot_id == s2.snapshot_id
        ice_case(
            f"{name}/as_of_timestamp",
            tbl,
            tbl.scan(snapshot_id=s2.snapshot_id).to_arrow(),
            read={"as_of_timestamp_ms": ts},
            why=why_rule + "as of a timestamp (between the 2nd and 3rd commits) reads the snapshot then current, in its schema",
        )
        ice_case(
            f"{name}/tag_t1",
            tbl,
            tbl.scan(snapshot_id=s1.snapshot_id).to_arrow(),
            read={"ref": "t1"},
            why=why_rule + "a tag reads in its snapshot's schema (before the rename: column `cat`)",
        )
        ice_case(
            f"{name}/tag_t4",
            tbl,
            tbl.scan(snapshot_id=s4.snapshot_id).to_arrow(),
            read={"ref": "t4"},
            why=why_rule + "a tag reads in its snapshot's schema",
        )
        ice_case(
            f"{name}/branch_main",
            tbl,
            ice_current(tbl),
            read={"ref": "main"},
            why=why_rule + "the main branch reads in the table's current schema",
        )
        dev = tbl.refs()["dev"].snapshot_id
        ice_case(
            f"{name}/branch_dev",
            tbl,
            ice_reprojected(tbl, dev),
            read={"ref": "dev"},
            why=why_rule + "a branch (appended to with pyiceberg's append(branch=)) reads in the table's current schema",
        )
        frozen = tbl.refs()["frozen"].snapshot_id
        ice_case(
            f"{name}/branch_frozen",
            tbl,
            ice_reprojected(tbl, frozen),
            read={"ref": "frozen"},
            why=why_rule
            + "a branch with no commit since the schema change reads in the table's current schema "
            "(`category`, `extra`); pyiceberg's scan(snapshot_id=) would use the snapshot's schema: "
            "expected = pyiceberg's ArrowScan of the branch's files in the current schema",
        )
        ice_case(
            f"{name}/filter",
            tbl,
            ice_current(tbl, "category = 'a' or id > 7"),
            read={"filter": "category = 'a' OR id > 7"},
            why="filter on a renamed identity-partition column OR a data column",
        )
        if fv == 2:
            hadoop_layout(tbl)


def hadoop_layout(tbl):
    """Hadoop tables (metadata/vN.metadata.json, version-hint.text) made of pyiceberg's
    metadata files, copied as they are."""
    meta_dir = metadata_path(tbl).parent
    files = sorted(meta_dir.glob("*.metadata.json"), key=lambda p: int(p.name.split("-")[0]))
    expected = ice_current(tbl)
    n = len(files)
    root = fresh(ICE / "hadoop")
    for variant, hint in [("latest_hint", str(n)), ("stale_hint", "1"), ("no_hint", None)]:
        d = root / variant
        (d / "metadata").mkdir(parents=True)
        for i, f in enumerate(files, start=1):
            shutil.copy(f, d / "metadata" / f"v{i}.metadata.json")
        if hint is not None:
            (d / "metadata" / "version-hint.text").write_text(hint + "\n")
        why = {
            "latest_hint": f"Hadoop layout: v1..v{n}.metadata.json and version-hint.text = {n}",
            "stale_hint": f"Hadoop layout with a stale version-hint.text (1, while v{n} exists): Java's HadoopTableOperations reads the hint, then the newer vN files that exist",
            "no_hint": f"Hadoop layout without version-hint.text: the newest vN.metadata.json (v{n})",
        }[variant]
        ice_case(f"iceberg/hadoop/{variant}", tbl, expected, location=d, why=why)


def iceberg_partition_evolution():
    for fv in (1, 2):
        name = f"iceberg/v{fv}/partition_evolution"
        if not wanted(name):
            continue
        schema = Schema(
            NestedField(1, "id", LongType(), required=False),
            NestedField(2, "cat", StringType(), required=False),
            NestedField(3, "ts", TimestampType(), required=False),
        )
        spec = PartitionSpec(
            PartitionField(2, 1000, IdentityTransform(), "cat"),
            PartitionField(1, 1001, BucketTransform(4), "id_bucket"),
        )
        tbl = ice_table(f"v{fv}_partition_evolution", schema, spec, fv=fv)

        def rows(ids, cats, day):
            return pa.table(
                {
                    "id": pa.array(ids, pa.int64()),
                    "cat": pa.array(cats),
                    "ts": pa.array([dt.datetime(2024, 1, day, i % 24) for i in ids], pa.timestamp("us")),
                }
            )

        tbl.append(rows([1, 2, 3, 4], ["a", "b", None, "a"], 1))
        with tbl.update_spec() as u:
            u.remove_field("cat")
        tbl.append(rows([5, 6], ["a", "c"], 2))
        with tbl.update_spec() as u:
            u.add_field("ts", DayTransform(), "ts_day")
        tbl.append(rows([7, 8], ["b", None], 3))
        specs = json.dumps({s.spec_id: str(s) for s in tbl.specs().values()})
        why = (
            f"format v{fv}: identity(cat) removed (v1 keeps it as a void field of that name), then day(ts) added; "
            f"files of three specs: {specs}"
        )
        ice_case(name, tbl, ice_current(tbl), why=why)
        ice_case(
            name + "/filter_cat",
            tbl,
            ice_current(tbl, "cat = 'a'"),
            read={"filter": "cat = 'a'"},
            why="filter on the removed identity partition column: " + why,
        )
        ice_case(
            name + "/filter_ts",
            tbl,
            ice_current(tbl, "ts >= '2024-01-02T00:00:00'"),
            read={"filter": "ts >= TIMESTAMP '2024-01-02 00:00:00'"},
            why="filter on the column of the added day() partition: " + why,
        )


def iceberg_types():
    for fv in (2, 1):
        name = f"iceberg/v{fv}/types"
        if not wanted(name):
            continue
        schema = Schema(
            NestedField(1, "id", IntegerType(), required=True),
            NestedField(2, "b", BooleanType(), required=False),
            NestedField(3, "i", IntegerType(), required=False),
            NestedField(4, "l", LongType(), required=False),
            NestedField(5, "f", FloatType(), required=False),
            NestedField(6, "d", DoubleType(), required=False),
            NestedField(7, "dec9", DecimalType(9, 2), required=False),
            NestedField(8, "dec18", DecimalType(18, 4), required=False),
            NestedField(9, "dec38", DecimalType(38, 10), required=False),
            NestedField(10, "date", DateType(), required=False),
            NestedField(11, "time", TimeType(), required=False),
            NestedField(12, "ts", TimestampType(), required=False),
            NestedField(13, "tstz", TimestamptzType(), required=False),
            NestedField(14, "s", StringType(), required=False),
            NestedField(15, "u", UUIDType(), required=False),
            NestedField(16, "fx", FixedType(5), required=False),
            NestedField(17, "bin", BinaryType(), required=False),
            NestedField(18, "li", ListType(19, IntegerType(), element_required=False), required=False),
            NestedField(20, "m", MapType(21, StringType(), 22, LongType(), value_required=False), required=False),
            NestedField(
                23,
                "st",
                StructType(
                    NestedField(24, "a", IntegerType(), required=False),
                    NestedField(25, "inner", StructType(NestedField(26, "z", StringType(), required=False)), required=False),
                    NestedField(27, "ls", ListType(28, StructType(NestedField(29, "q", DoubleType(), required=False)), element_required=False), required=False),
                ),
                required=False,
            ),
            NestedField(30, "req", StringType(), required=True),
        )
        tbl = ice_table(f"v{fv}_types", schema, fv=fv)
        arrow_schema = tbl.schema().as_arrow()
        nan = float("nan")
        rows = {
            "id": [1, 2, 3, 4],
            "b": [True, None, False, True],
            "i": [1, None, -(2**31), 2**31 - 1],
            "l": [1, None, -(2**63), 2**63 - 1],
            "f": [1.5, None, -0.0, nan],
            "d": [2.5, None, float("inf"), -0.0],
            "dec9": [Decimal("1.23"), None, Decimal("-9999999.99"), Decimal("0.01")],
            "dec18": [Decimal("1.2345"), None, Decimal("-99999999999999.9999"), Decimal("0")],
            "dec38": [Decimal("1.0000000001"), None, Decimal("-9999999999999999999999999999.9999999999"), Decimal("0")],
            "date": [dt.date(2024, 1, 1), None, dt.date(1, 1, 1), dt.date(9999, 12, 31)],
            "time": [dt.time(1, 2, 3, 4), None, dt.time(0), dt.time(23, 59, 59, 999999)],
            "ts": [dt.datetime(2024, 1, 1, 1, 2, 3, 4), None, dt.datetime(1900, 1, 1), dt.datetime(2262, 4, 11)],
            "tstz": [utc(dt.datetime(2024, 1, 1, 1, 2, 3, 4)), None, utc(dt.datetime(1900, 1, 1)), utc(dt.datetime(3000, 1, 1))],
            "s": ["a", None, "", "é日本🦀"],
            "u": [uuid.UUID(int=1).bytes, None, uuid.UUID(int=2**128 - 1).bytes, uuid.UUID("12345678-1234-5678-1234-567812345678").bytes],
            "fx": [b"abcde", None, b"\x00\x00\x00\x00\x00", b"\xff\xff\xff\xff\xff"],
            "bin": [b"x", None, b"", b"\x00\x01"],
            "li": [[1, None, 3], None, [], [None]],
            "m": [[("a", 1), ("b", None)], None, [], [("z", -1)]],
            "st": [
                {"a": 1, "inner": {"z": "zz"}, "ls": [{"q": 1.0}, None]},
                None,
                {"a": None, "inner": None, "ls": None},
                {"a": 4, "inner": {"z": None}, "ls": []},
            ],
            "req": ["r1", "r2", "r3", "r4"],
        }
        arrays = []
        for f in arrow_schema:
            v = rows[f.name]
            if f.name == "u" and pa.types.is_fixed_size_binary(f.type) is False:
                v = pa.array(v, pa.binary(16))
                arrays.append(v.cast(f.type) if v.type != f.type else v)
                continue
            arrays.append(pa.array(v, f.type))
        tbl.append(pa.Table.from_arrays(arrays, schema=arrow_schema))
        tbl.append(pa.Table.from_arrays([a.slice(0, 2) for a in arrays], schema=arrow_schema))
        ice_case(name, tbl, ice_current(tbl), why=f"format v{fv}: every Iceberg type pyiceberg writes (v3 types: pyiceberg 0.12 cannot write v3), nested, NaN, -0.0, extremes")
        ice_case(
            name + "/columns",
            tbl,
            tbl.scan(selected_fields=("st", "m", "id")).to_arrow().select(["st", "m", "id"]),
            read={"columns": ["st", "m", "id"]},
            why="projection of nested columns, reordered",
        )
        if fv == 2:
            for i, (sql, rf) in enumerate(
                [
                    ("d = 0.0", "d = 0.0"),
                    ("dec38 < 0", "dec38 < 0"),
                    ("tstz > TIMESTAMP '2000-01-01 00:00:00+00:00'", "tstz > '2000-01-01T00:00:00+00:00'"),
                    ("s = ''", "s = ''"),
                    ("st.a = 4", "st.a = 4"),
                ]
            ):
                ice_case(
                    f"{name}/filter{i}",
                    tbl,
                    ice_current(tbl, rf),
                    read={"filter": sql},
                    why=f"filter on a data column: {sql}",
                )


def iceberg_operations():
    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "cat", StringType(), required=False),
        NestedField(3, "v", DoubleType(), required=False),
        identifier_field_ids=[1],
    )
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))

    def rows(ids, cats, vs):
        return pa.table(
            {"id": pa.array(ids, pa.int64()), "cat": pa.array(cats), "v": pa.array(vs, pa.float64())},
            schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("cat", pa.string()), ("v", pa.float64())]),
        )

    name = "iceberg/v2/ops/delete_overwrite_upsert"
    if wanted(name):
        tbl = ice_table("v2_ops", schema, spec)
        tbl.append(rows([1, 2, 3, 4, 5], ["a", "a", "b", "b", None], [1.0, 2.0, 3.0, 4.0, 5.0]))
        tbl.delete("v > 1.5 and v < 2.5")  # deletes inside a file: copy-on-write in pyiceberg 0.12
        ice_case(name + "/after_delete", tbl, ice_current(tbl), why="pyiceberg delete (rewrites files: pyiceberg 0.12 has no merge-on-read deletes)")
        tbl.delete("cat = 'b'")  # whole partition
        tbl.overwrite(rows([6, 7], ["c", "c"], [6.0, 7.0]), overwrite_filter="cat = 'c'")
        tbl.dynamic_partition_overwrite(rows([8, 9], ["a", "d"], [8.0, 9.0]))
        ice_case(name + "/after_overwrites", tbl, ice_current(tbl), why="deletes, overwrite(filter) and dynamic_partition_overwrite")
        tbl.upsert(rows([8, 10], ["a", "e"], [80.0, 10.0]))
        ice_case(name, tbl, ice_current(tbl), why="after upsert (identifier field id)")
    name = "iceberg/v2/ops/add_files_name_mapping"
    if wanted(name):
        d = fresh(ICE / "external")
        d.mkdir()
        f1 = d / "a.parquet"
        pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64()), "cat": ["x", "y"], "v": [0.5, None]}), f1)
        f2 = d / "b.parquet"
        # Columns in another order, one missing: resolved by name through the name mapping.
        pq.write_table(pa.table({"v": [7.5], "id": pa.array([3], pa.int64())}), f2)
        sch = Schema(
            NestedField(1, "id", LongType(), required=False),
            NestedField(2, "cat", StringType(), required=False),
            NestedField(3, "v", DoubleType(), required=False),
        )
        tbl = ice_table("v2_add_files", sch)
        tbl.add_files([f"file://{f1}", f"file://{f2}"])
        tbl.append(pa.table({"id": pa.array([4], pa.int64()), "cat": ["z"], "v": [1.0]}))
        ice_case(
            name,
            tbl,
            ice_current(tbl),
            why="add_files of Parquet files without field ids (the table's schema.name-mapping.default maps them), then an append",
        )
        ice_case(
            name + "/filter",
            tbl,
            ice_current(tbl, "v > 0.6"),
            read={"filter": "v > 0.6"},
            why="filter through the name mapping",
        )
    # gzip metadata (write.metadata.compression-codec=gzip): pyiceberg 0.12 ignores the property
    # (it compresses only when the path it is given ends in .gz.metadata.json): not covered.
    name = "iceberg/v2/ops/empty"
    if wanted(name):
        tbl = ice_table("v2_empty", schema, spec)
        ice_case(name + "/no_snapshot", tbl, ice_current(tbl), why="a table created and never written (no snapshot)")
        tbl.append(rows([1, 2], ["a", None], [1.0, 2.0]))
        tbl.delete("id > 0")
        assert ice_current(tbl).num_rows == 0
        ice_case(name + "/all_deleted", tbl, ice_current(tbl), why="every row deleted: a current snapshot with no data file")
    name = "iceberg/v2/ops/metrics"
    if wanted(name):
        long_schema = Schema(
            NestedField(1, "id", LongType(), required=False),
            NestedField(2, "s", StringType(), required=False),
            NestedField(3, "v", DoubleType(), required=False),
        )
        prefix = "a-shared-prefix-longer-than-16-chars-"
        data = pa.table(
            {
                "id": pa.array(range(2000), pa.int64()),
                "s": pa.array([f"{prefix}{i:05d}" if i % 50 else None for i in range(2000)]),
                "v": pa.array([None if i % 7 == 0 else (i % 100) / 4 for i in range(2000)], pa.float64()),
            }
        )
        for variant, props in [
            ("truncated_bounds", {"write.parquet.row-group-limit": "300", "write.parquet.page-size-bytes": "1024", "write.parquet.compression-codec": "snappy"}),
            ("no_metrics", {"write.metadata.metrics.default": "none", "write.parquet.row-group-limit": "300", "write.parquet.compression-codec": "gzip"}),
            ("full_metrics", {"write.metadata.metrics.default": "full", "write.parquet.compression-codec": "uncompressed"}),
        ]:
            tbl = ice_table(f"v2_metrics_{variant}", long_schema, properties=props)
            tbl.append(data.slice(0, 1000))
            tbl.append(data.slice(1000))
            why = f"table properties {props}: strings sharing a 37-character prefix (bounds truncated to 16 by default)"
            ice_case(f"{name}/{variant}", tbl, ice_current(tbl), why=why)
            for i, (sql, rf) in enumerate(
                [
                    (f"s = '{prefix}01234'", f"s = '{prefix}01234'"),
                    (f"s > '{prefix}01990'", f"s > '{prefix}01990'"),
                    ("id >= 999 AND id <= 1001", "id >= 999 and id <= 1001"),
                    ("v IS NULL AND id < 30", "v is null and id < 30"),
                ]
            ):
                ice_case(f"{name}/{variant}/filter{i}", tbl, ice_current(tbl, rf), read={"filter": sql}, why=f"{sql}; {why}")
    name = "iceberg/v2/ops/many_files"
    if wanted(name):
        tbl = ice_table("v2_many", schema, spec, properties={"write.target-file-size-bytes": "1"})
        for k in range(6):
            tbl.append(rows([k * 10 + j for j in range(5)], [f"c{k % 3}"] * 5, [float(k)] * 5))
        ice_case(name, tbl, ice_current(tbl), why="six appends of small files in three partitions")
        ice_case(
            name + "/filter",
            tbl,
            ice_current(tbl, "id >= 12 and id < 44 and cat != 'c1'"),
            read={"filter": "id >= 12 AND id < 44 AND cat != 'c1'"},
            why="filter on data and partition columns over many files",
        )


# ==========================================================================================
# deltalake

DELTA = OUT / "delta"


def delta_read(path, version=None, columns=None, filters=None):
    t = DeltaTable(str(path), version=version).to_pyarrow_table(columns=columns, filters=filters)
    return t.select(columns) if columns else t


def delta_query(path, sql_where=None, version=None):
    t = DeltaTable(str(path), version=version)
    q = "select * from t" + (f" where {sql_where}" if sql_where else "")
    return pa.table(QueryBuilder().register("t", t).execute(q).read_all())


def delta_case(name, path, expected, *, read=None, why, writer=None):
    case(
        name,
        "delta",
        path,
        expected=expected,
        read=read,
        writer=writer or f"{DELTALAKE} (expected: DeltaTable(...).to_pyarrow_table())",
        why=why,
    )


def delta_types_table():
    nan = float("nan")
    struct_t = pa.struct([("a", pa.int32()), ("inner", pa.struct([("z", pa.string())]))])
    return pa.table(
        {
            "id": pa.array([1, 2, 3, 4], pa.int64()),
            "b": pa.array([True, None, False, True]),
            "i8": pa.array([1, None, -128, 127], pa.int8()),
            "i16": pa.array([1, None, -(2**15), 2**15 - 1], pa.int16()),
            "i32": pa.array([1, None, -(2**31), 2**31 - 1], pa.int32()),
            "i64": pa.array([1, None, -(2**63), 2**63 - 1], pa.int64()),
            "f32": pa.array([1.5, None, -0.0, nan], pa.float32()),
            "f64": pa.array([2.5, None, float("-inf"), -0.0], pa.float64()),
            "dec5": pa.array([Decimal("1.23"), None, Decimal("-999.99"), Decimal("0.00")], pa.decimal128(5, 2)),
            "dec18": pa.array([Decimal("1.2345"), None, Decimal("-99999999999999.9999"), Decimal("0")], pa.decimal128(18, 4)),
            "dec38": pa.array([Decimal("1.0000000001"), None, Decimal("-9999999999999999999999999999.9999999999"), Decimal("0")], pa.decimal128(38, 10)),
            "date": pa.array([dt.date(2024, 1, 1), None, dt.date(1, 1, 1), dt.date(9999, 12, 31)]),
            "ts": pa.array([utc(dt.datetime(2024, 1, 1, 1, 2, 3, 4)), None, utc(dt.datetime(1900, 1, 1)), utc(dt.datetime(2262, 4, 11))], pa.timestamp("us", tz="UTC")),
            "ts_ntz": pa.array([dt.datetime(2024, 1, 1, 1, 2, 3, 4), None, dt.datetime(1900, 1, 1), dt.datetime(2262, 4, 11)], pa.timestamp("us")),
            "s": pa.array(["a", None, "", "é日本🦀"]),
            "bin": pa.array([b"x", None, b"", b"\x00\x01"]),
            "li": pa.array([[1, None, 3], None, [], [None]], pa.list_(pa.int32())),
            "lst": pa.array([[{"q": 1.0}, None], None, [], [{"q": None}]], pa.list_(pa.struct([("q", pa.float64())]))),
            "m": pa.array([[("a", 1), ("b", None)], None, [], [("z", -1)]], pa.map_(pa.string(), pa.int64())),
            "st": pa.array([{"a": 1, "inner": {"z": "zz"}}, None, {"a": None, "inner": None}, {"a": 4, "inner": {"z": None}}], struct_t),
        }
    )


def delta_all():
    name = "delta/stats_cut_short"
    if wanted(name):
        # Statistics keep 32 characters of a string and milliseconds of a timestamp: the
        # greatest values here are longer or finer than that, so a max read as written would
        # fall below them (the real-writers statistics test checks the bounds hold).
        p = fresh(DELTA / "stats_cut_short")
        t = pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "s": pa.array(["b" * 40, "a" * 33 + "z", "b" * 32 + "c"]),
                "ts": pa.array([utc(dt.datetime(2024, 1, 1, 0, 0, 0, 999_999)), utc(dt.datetime(2023, 1, 1)), None], pa.timestamp("us", tz="UTC")),
                "ts_ntz": pa.array([dt.datetime(2024, 5, 5, 5, 5, 5, 123_456), None, dt.datetime(2000, 1, 1)], pa.timestamp("us")),
            }
        )
        write_deltalake(str(p), t)
        delta_case(name, p, delta_read(p), why="strings longer than the 32 characters statistics keep, timestamps finer than a millisecond")
    name = "delta/types"
    if wanted(name):
        p = fresh(DELTA / "types")
        t = delta_types_table()
        write_deltalake(str(p), t)
        write_deltalake(str(p), t.slice(0, 2), mode="append")
        delta_case(name, p, delta_read(p), why="every type deltalake writes: ints, floats (NaN, -0.0), decimals, date, timestamp, timestamp_ntz, nested")
        delta_case(name + "/columns", p, delta_read(p, columns=["st", "m", "id"]), read={"columns": ["st", "m", "id"]}, why="projection of nested columns, reordered")
        for i, (sql, where) in enumerate(
            [
                ("f64 = 0.0", "f64 = 0.0"),
                ("dec38 < 0", "dec38 < 0"),
                ("ts_ntz >= TIMESTAMP '2024-01-01 00:00:00'", "ts_ntz >= TIMESTAMP '2024-01-01 00:00:00'"),
                ("i8 = -128 OR s = ''", "i8 = -128 OR s = ''"),
            ]
        ):
            delta_case(
                f"{name}/filter{i}",
                p,
                delta_query(p, where),
                read={"filter": sql},
                why=f"filter on a data column: {sql}",
                writer=f"{DELTALAKE} (expected: deltalake's QueryBuilder SQL with the same WHERE)",
            )

    # Partitions of every type, with values needing escaping.
    n = len(ESCAPE_STRINGS)
    m = len(ESCAPE_TIMESTAMPS)
    parts = {
        "string": pa.array(ESCAPE_STRINGS),
        "int": pa.array([(-1) ** i * i * 1000 for i in range(n - 1)] + [None], pa.int32()),
        "long": pa.array([2**40 + i for i in range(n - 1)] + [None], pa.int64()),
        "date": pa.array((ESCAPE_DATES * n)[:n], pa.date32()),
        "timestamp": pa.array([utc(ESCAPE_TIMESTAMPS[i % m]) for i in range(n)], pa.timestamp("us", tz="UTC")),
        "timestamp_ntz": pa.array([ESCAPE_TIMESTAMPS[i % m] for i in range(n)], pa.timestamp("us")),
        "boolean": pa.array([[True, False, None][i % 3] for i in range(n)]),
        "decimal": pa.array([Decimal(i) / 8 if i % 4 else None for i in range(n)], pa.decimal128(10, 3)),
        "double": pa.array([[0.5, -0.0, None, 1.5e10][i % 4] for i in range(n)], pa.float64()),
        "binary": pa.array([[b"a/b", b"\x00", None][i % 3] for i in range(n)], pa.binary()),
    }
    filters = {
        "string": ("p = 'a/b' OR p = '%25' OR p IS NULL", "p = 'a/b' OR p = '%25' OR p IS NULL"),
        "int": ("p > 0", "p > 0"),
        "date": ("p = DATE '1969-12-31'", "p = DATE '1969-12-31'"),
        "timestamp": ("p = TIMESTAMP '2024-01-02 03:04:05.678901+00:00'", "p = TIMESTAMP '2024-01-02 03:04:05.678901+00:00'"),
        "timestamp_ntz": ("p < TIMESTAMP '2000-01-01 00:00:00'", "p < TIMESTAMP '2000-01-01 00:00:00'"),
    }
    for ptype, values in parts.items():
        name = f"delta/partition/{ptype}"
        if not wanted(name):
            continue
        p = fresh(DELTA / f"part_{ptype}")
        t = pa.table({"id": pa.array(range(n), pa.int64()), "p": values})
        try:
            write_deltalake(str(p), t, partition_by=["p"])
        except Exception as e:  # a partition type deltalake refuses
            print(f"deltalake cannot partition by {ptype}: {e}", file=sys.stderr)
            continue
        delta_case(name, p, delta_read(p), why=f"partitioned by a {ptype} column: values needing escaping in paths, nulls")
        if ptype in filters:
            sql, where = filters[ptype]
            delta_case(
                name + "/filter",
                p,
                delta_query(p, where),
                read={"filter": sql},
                why=f"filter on the partition column: {sql}",
                writer=f"{DELTALAKE} (expected: deltalake's QueryBuilder SQL with the same WHERE)",
            )
    name = "delta/partition/multi"
    if wanted(name):
        p = fresh(DELTA / "part_multi")
        t = pa.table(
            {
                "id": pa.array(range(n), pa.int64()),
                "s": pa.array(ESCAPE_STRINGS),
                "d": parts["date"],
                "ts": parts["timestamp"],
                "v": pa.array([f"v{i}" for i in range(n)]),
            }
        )
        write_deltalake(str(p), t, partition_by=["s", "d", "ts"])
        delta_case(name, p, delta_read(p), why="three partition columns (string, date, timestamp), escaped paths")
        delta_case(name + "/columns", p, delta_read(p, columns=["v", "ts"]), read={"columns": ["v", "ts"]}, why="projection of a data and a partition column")

    name = "delta/versions"
    if wanted(name):
        p = fresh(DELTA / "versions")

        def rows(ids, cat):
            return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array([cat] * len(ids)), "v": pa.array([float(i) for i in ids])})

        write_deltalake(str(p), rows([1, 2, 3], "a"), partition_by=["cat"])  # 0
        write_deltalake(str(p), rows([4, 5], "b"), mode="append")  # 1
        write_deltalake(str(p), rows([6], "c"), mode="overwrite")  # 2
        write_deltalake(str(p), rows([7, 8], "a"), mode="append")  # 3
        DeltaTable(str(p)).delete("id = 7")  # 4
        DeltaTable(str(p)).update({"v": "v * 10"}, predicate="cat = 'c'")  # 5
        write_deltalake(str(p), rows([9, 10], "b"), mode="overwrite", predicate="cat = 'b'")  # 6 (replace where)
        (
            DeltaTable(str(p))
            .merge(rows([8, 11], "a"), predicate="t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_update({"v": "s.v + 0.5"})
            .when_not_matched_insert_all()
            .execute()
        )  # 7
        last = DeltaTable(str(p)).version()
        for v in range(last + 1):
            delta_case(f"{name}/v{v}", p, delta_read(p, version=v), read={"version": v}, why=f"version {v} of: write, append, overwrite, append, delete, update, replace-where, merge")
        delta_case(name + "/latest", p, delta_read(p), why="the latest version")

    name = "delta/schema_merge"
    if wanted(name):
        p = fresh(DELTA / "schema_merge")
        write_deltalake(str(p), pa.table({"id": pa.array([1, 2], pa.int64()), "s": pa.array([{"x": 1}, None], pa.struct([("x", pa.int32())]))}))
        write_deltalake(
            str(p),
            pa.table({"id": pa.array([3], pa.int64()), "extra": ["e"], "s": pa.array([{"x": 3, "y": "why"}], pa.struct([("x", pa.int32()), ("y", pa.string())]))}),
            mode="append",
            schema_mode="merge",
        )
        write_deltalake(str(p), pa.table({"id": pa.array([4], pa.int64())}), mode="append", schema_mode="merge")
        for v in range(3):
            delta_case(f"{name}/v{v}", p, delta_read(p, version=v), read={"version": v}, why="schema_mode='merge': a column added, a nested field added, then a write lacking columns")
        delta_case(name + "/filter", p, delta_query(p, "extra IS NULL"), read={"filter": "extra IS NULL"}, why="filter on a column added by schema merge (absent from old files)", writer=f"{DELTALAKE} (expected: QueryBuilder SQL)")

    name = "delta/checkpoint"
    if wanted(name):
        p = fresh(DELTA / "checkpoint")
        for k in range(4):
            write_deltalake(str(p), pa.table({"id": pa.array([k * 10, k * 10 + 1], pa.int64()), "k": pa.array([k, k], pa.int32())}), mode="append", partition_by=["k"])
        DeltaTable(str(p)).create_checkpoint()  # at version 3
        DeltaTable(str(p)).delete("id = 11")
        write_deltalake(str(p), pa.table({"id": pa.array([40], pa.int64()), "k": pa.array([4], pa.int32())}), mode="append")
        delta_case(name + "/latest", p, delta_read(p), why="a checkpoint (create_checkpoint at v3), then a delete and an append")
        delta_case(name + "/v3", p, delta_read(p, version=3), read={"version": 3}, why="the checkpointed version")
        delta_case(name + "/v1", p, delta_read(p, version=1), read={"version": 1}, why="a version before the checkpoint")
    name = "delta/checkpoint_interval"
    if wanted(name):
        p = fresh(DELTA / "checkpoint_interval")
        for k in range(5):
            write_deltalake(
                str(p),
                pa.table({"id": pa.array([k], pa.int64()), "s": [f"s{k}"]}),
                mode="append",
                configuration={"delta.checkpointInterval": "2"},
            )
        delta_case(name, p, delta_read(p), why="delta.checkpointInterval=2: checkpoints written by deltalake's post-commit hook")
        delta_case(name + "/v2", p, delta_read(p, version=2), read={"version": 2}, why="the version of a checkpoint")

    name = "delta/column_mapping_name"
    if wanted(name):
        p = fresh(DELTA / "column_mapping")
        t = pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "Name With Space": pa.array(["a", None, "c"]),
                "part col": pa.array(["x", "y", None]),
                "st": pa.array([{"in ner": 1}, None, {"in ner": 3}], pa.struct([("in ner", pa.int32())])),
            }
        )
        write_deltalake(str(p), t, partition_by=["part col"], configuration={"delta.columnMapping.mode": "name"})
        write_deltalake(str(p), t.slice(0, 1), mode="append")
        why = (
            "delta.columnMapping.mode=name set through configuration (protocol reader 2 / writer 5; "
            "physical names col-<uuid> and field ids in the files; a partition column and a nested field mapped). "
            "deltalake's to_pyarrow_table() reads every column NULL here (it looks columns up by logical name): "
            "expected = deltalake's QueryBuilder (its DataFusion reader)"
        )
        qb = f"{DELTALAKE} (expected: QueryBuilder 'select * from t')"
        DeltaTable(str(p)).create_checkpoint()  # at version 1
        write_deltalake(str(p), t.slice(2, 1), mode="append")
        delta_case(name, p, delta_query(p), why="after a checkpoint and an append; " + why, writer=qb)
        delta_case(name + "/v1", p, delta_query(p, version=1), read={"version": 1}, why="the checkpointed version; " + why, writer=qb)
        delta_case(name + "/filter", p, delta_query(p, '"Name With Space" = \'a\''), read={"filter": "\"Name With Space\" = 'a'"}, why="filter on a mapped column; " + why, writer=qb)
        delta_case(name + "/columns", p, delta_query(p).select(["st", "part col"]), read={"columns": ["st", "part col"]}, why="projection of mapped columns; " + why, writer=qb)
        delta_case(name + "/filter_partition", p, delta_query(p, '"part col" = \'x\''), read={"filter": "\"part col\" = 'x'"}, why="filter on a mapped partition column; " + why, writer=qb)

    name = "delta/column_mapping_id"
    if wanted(name):
        p = fresh(DELTA / "column_mapping_id")
        t = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "a b": pa.array(["x", None, "z"]), "p": pa.array(["u", "v", "u"])})
        write_deltalake(str(p), t, partition_by=["p"], configuration={"delta.columnMapping.mode": "id"})
        write_deltalake(str(p), t.slice(1, 2), mode="append")
        delta_case(
            name,
            p,
            delta_query(p),
            why="delta.columnMapping.mode=id set through configuration (protocol 2/5): columns found by field id; expected = QueryBuilder (to_pyarrow_table reads mapped columns as NULL)",
            writer=f"{DELTALAKE} (expected: QueryBuilder 'select * from t')",
        )
    name = "delta/column_mapping_nested"
    if wanted(name):
        # Issue 77 reported "schema mismatch: a batch of ..." on such tables (field metadata
        # on nested fields compared): a struct holding a struct and a list, a map, a list.
        p = fresh(DELTA / "column_mapping_nested")
        inner = pa.struct([("x", pa.int32()), ("y", pa.string())])
        st = pa.struct([("in", inner), ("li", pa.list_(pa.int64()))])
        t = pa.table(
            {
                "id": pa.array([1, 2, 3], pa.int64()),
                "st": pa.array([{"in": {"x": 1, "y": "a"}, "li": [1, 2]}, None, {"in": None, "li": []}], st),
                "m": pa.array([[("k", 1)], None, []], pa.map_(pa.string(), pa.int32())),
                "l": pa.array([["p", None], [], None], pa.list_(pa.string())),
            }
        )
        write_deltalake(str(p), t, configuration={"delta.columnMapping.mode": "name"})
        write_deltalake(str(p), t.slice(0, 1), mode="append")
        qb = f"{DELTALAKE} (expected: QueryBuilder 'select * from t')"
        why = "delta.columnMapping.mode=name with nested columns (a struct holding a struct and a list, a map, a list): every nested field has a physical name"
        delta_case(name, p, delta_query(p), why=why, writer=qb)
        delta_case(name + "/filter", p, delta_query(p, "id >= 2"), read={"filter": "id >= 2"}, why=why + "; filtered", writer=qb)
        DeltaTable(str(p)).create_checkpoint()
        delta_case(name + "/checkpoint", p, delta_query(p), why=why + "; after a checkpoint", writer=qb)
    name = "delta/change_data_feed"
    if wanted(name):
        p = fresh(DELTA / "cdf")
        t = pa.table({"id": pa.array([1, 2, 3, 4], pa.int64()), "s": ["a", "b", "c", "d"]})
        write_deltalake(str(p), t, configuration={"delta.enableChangeDataFeed": "true"})
        DeltaTable(str(p)).delete("id = 2")
        DeltaTable(str(p)).update({"s": "'B'"}, predicate="id = 3")
        assert (p / "_change_data").is_dir()
        delta_case(name, p, delta_read(p), why="delta.enableChangeDataFeed=true: a delete and an update write _change_data files (cdc actions), which a scan must not read")
        delta_case(name + "/v1", p, delta_read(p, version=1), read={"version": 1}, why="the version after the delete")
    name = "delta/deletion_vectors_feature"
    if wanted(name):
        p = fresh(DELTA / "dv_feature")
        t = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "s": ["a", None, "c"]})
        write_deltalake(str(p), t, configuration={"delta.enableDeletionVectors": "true"})
        try:
            DeltaTable(str(p)).to_pyarrow_table()
            raise AssertionError("deltalake now reads tables with deletion vectors: use its read")
        except Exception as e:
            assert "deletionVectors" in str(e), e
        delta_case(
            name,
            p,
            t,
            why="delta.enableDeletionVectors=true (reader feature deletionVectors), no deletion vector yet: "
            "deltalake writes the table but its reader refuses it and its delete fails, so the expected rows "
            "are the rows written (deltalake cannot write deletion vectors: the Rust testkit covers them)",
            writer=f"{DELTALAKE} (expected: the rows written; deltalake's reader refuses the deletionVectors feature)",
        )

    name = "delta/empty"
    if wanted(name):
        p = fresh(DELTA / "empty")
        t = pa.table({"id": pa.array([], pa.int64()), "s": pa.array([], pa.string()), "p": pa.array([], pa.int32())})
        DeltaTable.create(str(p), schema=t.schema, partition_by=["p"])
        delta_case(name + "/created", p, delta_read(p, version=0), read={"version": 0}, why="a table created with DeltaTable.create: a schema, no data file (version 0)")
        write_deltalake(str(p), pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"], "p": pa.array([1, 2], pa.int32())}), mode="append")
        DeltaTable(str(p)).delete()
        assert delta_read(p).num_rows == 0
        delta_case(name + "/all_deleted", p, delta_read(p), why="every row deleted (delete without predicate)")

    name = "delta/optimize"
    if wanted(name):
        p = fresh(DELTA / "optimize")
        for k in range(4):
            write_deltalake(str(p), pa.table({"id": pa.array([k, k + 100], pa.int64()), "s": [f"a{k}", None]}), mode="append")
        DeltaTable(str(p)).optimize.compact()
        DeltaTable(str(p)).optimize.z_order(["id"])
        delta_case(name, p, delta_read(p), why="optimize.compact() then z_order(): files removed and rewritten")
        delta_case(name + "/v2", p, delta_read(p, version=2), read={"version": 2}, why="a version before optimize")

    name = "delta/large_and_views"
    if wanted(name):
        p = fresh(DELTA / "large_types")
        t = pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "ls": pa.array(["a", None], pa.large_string()),
                "sv": pa.array(["v", "w"], pa.string_view()),
                "lb": pa.array([b"a", None], pa.large_binary()),
                "ll": pa.array([[1], None], pa.large_list(pa.int64())),
                "dict": pa.array(["x", "y"]).dictionary_encode(),
            }
        )
        write_deltalake(str(p), t)
        delta_case(name, p, delta_read(p), why="large_string, string_view, large_binary, large_list and dictionary arrays handed to write_deltalake")

    delta_nanos()


def delta_nanos():
    """Nanosecond timestamps (`timestamp_nanos`, `timestamp_nanos_ntz`, reader feature
    `timestampNanos`), which deltalake writes and reads only after
    `enable_nanosecond_timestamps()`: a process-wide switch (it also stops deltalake casting
    other nanosecond columns to microseconds), turned off again before the other cases."""
    deltalake.enable_nanosecond_timestamps()
    try:
        delta_nanos_cases()
    finally:
        deltalake._disable_nanosecond_timestamps()


def delta_nanos_cases():
    nanos_writer = f"{DELTALAKE} with enable_nanosecond_timestamps() (expected: DeltaTable(...).to_pyarrow_table())"

    def table(first):
        when = pa.struct([("a", pa.int32()), ("when", pa.timestamp("ns", tz="UTC"))])
        return pa.table(
            {
                "id": pa.array([first + 1, first + 2, first + 3], pa.int64()),
                "ts": pa.array([1, None, 1_700_000_000_123_456_789], pa.timestamp("ns")),
                "tz": pa.array([5, 1_000_000_001, None], pa.timestamp("ns", tz="UTC")),
                "st": pa.array([{"a": 1, "when": 7}, None, {"a": 3, "when": None}], when),
                "p": pa.array(["x", "y", "x"]),
            }
        )

    for name, kw, why in [
        ("delta/timestamp_nanos", {}, "timestamp_nanos_ntz, timestamp_nanos and one in a struct, to the nanosecond"),
        ("delta/timestamp_nanos_partitioned", {"partition_by": ["p"]}, "nanosecond timestamps in a table partitioned by a string (the kernel's transform adds the partition column)"),
        (
            "delta/timestamp_nanos_column_mapping",
            {"partition_by": ["p"], "configuration": {"delta.columnMapping.mode": "name"}},
            "nanosecond timestamps under column mapping (name), partitioned",
        ),
    ]:
        if not wanted(name):
            continue
        p = fresh(DELTA / name.split("/")[1])
        write_deltalake(str(p), table(0), **kw)
        write_deltalake(str(p), table(10), mode="append")
        delta_case(name, p, delta_read(p), why=why, writer=nanos_writer)
        where = "ts >= TIMESTAMP '2023-11-14 22:13:20.123456789'"
        expected = delta_read(p).filter(pc.field("ts") >= pa.scalar(1_700_000_000_123_456_789, pa.timestamp("ns")))
        delta_case(name + "/filter", p, expected, read={"filter": where}, why=why + "; a filter at the nanosecond (one nanosecond less keeps more rows)", writer=nanos_writer + ", filtered by pyarrow")
    name = "delta/timestamp_nanos_checkpoint"
    if wanted(name):
        p = fresh(DELTA / "timestamp_nanos_checkpoint")
        write_deltalake(str(p), table(0))
        write_deltalake(str(p), table(10), mode="append")
        DeltaTable(str(p)).create_checkpoint()
        write_deltalake(str(p), table(20), mode="append")
        delta_case(name, p, delta_read(p), why="nanosecond timestamps whose protocol and schema are in a checkpoint", writer=nanos_writer)
    name = "delta/timestamp_nanos_list"
    if wanted(name):
        p = fresh(DELTA / "timestamp_nanos_list")
        write_deltalake(str(p), pa.table({"l": pa.array([[1, 2]], pa.list_(pa.timestamp("ns")))}))
        case(name, "delta", p, error={"kind": "Unsupported", "contains": "timestamp_nanos"}, writer=nanos_writer, why="a list of nanosecond timestamps: not read (delta-kernel 0.29 does not know the type), refused clearly")


# ==========================================================================================
# Parquet files: pyarrow

PQ = OUT / "parquet"


def pq_case(name, path, expected, *, read=None, why, writer=None, kind="parquet"):
    case(name, kind, path, expected=expected, read=read, writer=writer or f"{PYARROW} (expected: pyarrow.parquet.read_table)", why=why)


def pa_types_table(rows=300):
    """Every type pyarrow writes to Parquet, nulls in every column (row i % 7 == 3)."""

    def nul(vals):
        return [None if i % 7 == 3 else v for i, v in enumerate(vals)]

    r = range(rows)
    nan = float("nan")
    cols = {
        "i8": pa.array(nul([(i * 37) % 256 - 128 for i in r]), pa.int8()),
        "i16": pa.array(nul([(i * 7919) % 65536 - 32768 for i in r]), pa.int16()),
        "i32": pa.array(nul([(i * 2654435761) % 2**32 - 2**31 for i in r]), pa.int32()),
        "i64": pa.array(nul([(i * 11400714819323198485) % 2**64 - 2**63 for i in r]), pa.int64()),
        "u8": pa.array(nul([(i * 37) % 256 for i in r]), pa.uint8()),
        "u16": pa.array(nul([(i * 7919) % 65536 for i in r]), pa.uint16()),
        "u32": pa.array(nul([(i * 2654435761) % 2**32 for i in r]), pa.uint32()),
        "u64": pa.array(nul([(i * 11400714819323198485) % 2**64 for i in r]), pa.uint64()),
        "f16": pa.array(nul([[1.5, -0.0, 0.0, 65504.0, -2.0, 0.099975586, nan][i % 7] for i in r]), pa.float32()).cast(pa.float16()),
        "f32": pa.array(nul([[1.5, -0.0, 0.0, nan, float("inf"), -1e30, 3.25][i % 7] * (1 + i % 3) for i in r]), pa.float32()),
        "f64": pa.array(nul([[1.5, -0.0, 0.0, nan, float("-inf"), 1e300, 0.1][i % 7] * (1 + i % 3) for i in r]), pa.float64()),
        "dec32": pa.array(nul([Decimal(i * 13 - 1000) / 100 for i in r]), pa.decimal32(7, 2)),
        "dec64": pa.array(nul([Decimal(i * 1000003 - 10**9) / 10**4 for i in r]), pa.decimal64(18, 4)),
        "dec128": pa.array(nul([Decimal(i * 10**25 + i - 10**27) / 10**10 for i in r]), pa.decimal128(38, 10)),
        "dec256": pa.array(nul([Decimal(i * 10**45 - 10**47) / 10**5 for i in r]), pa.decimal256(60, 5)),
        "date32": pa.array(nul([dt.date(1970, 1, 1) + dt.timedelta(days=i * 997 - 150000) for i in r]), pa.date32()),
        "date64": pa.array(nul([dt.date(1970, 1, 1) + dt.timedelta(days=i * 3 - 300) for i in r]), pa.date64()),
        "t32s": pa.array(nul([(i * 37) % 86400 for i in r]), pa.int32()).cast(pa.time32("s")),
        "t32ms": pa.array(nul([(i * 3700001) % 86400000 for i in r]), pa.int32()).cast(pa.time32("ms")),
        "t64us": pa.array(nul([(i * 3700000001) % 86400000000 for i in r]), pa.int64()).cast(pa.time64("us")),
        "t64ns": pa.array(nul([(i * 370000000001) % 86400000000000 for i in r]), pa.int64()).cast(pa.time64("ns")),
        "ts_s": pa.array(nul([i * 86400 * 37 - 10**9 for i in r]), pa.int64()).cast(pa.timestamp("s")),
        "ts_ms": pa.array(nul([i * 86400 * 37001 - 10**12 for i in r]), pa.int64()).cast(pa.timestamp("ms")),
        "ts_us": pa.array(nul([i * 86400 * 37000001 - 10**15 for i in r]), pa.int64()).cast(pa.timestamp("us")),
        "ts_ns": pa.array(nul([i * 86400 * 37000000001 - 10**18 for i in r]), pa.int64()).cast(pa.timestamp("ns")),
        "ts_ms_utc": pa.array(nul([i * 86400 * 37001 for i in r]), pa.int64()).cast(pa.timestamp("ms", tz="UTC")),
        "ts_us_tz": pa.array(nul([i * 86400 * 37000001 for i in r]), pa.int64()).cast(pa.timestamp("us", tz="America/New_York")),
        "ts_ns_off": pa.array(nul([i * 86400 * 37000000001 for i in r]), pa.int64()).cast(pa.timestamp("ns", tz="+05:30")),
        "dur_s": pa.array(nul([i * 3 - 100 for i in r]), pa.int64()).cast(pa.duration("s")),
        "dur_ns": pa.array(nul([i * 3000000007 - 10**11 for i in r]), pa.int64()).cast(pa.duration("ns")),
        "b": pa.array(nul([i % 3 == 0 for i in r])),
        "s": pa.array(nul([["", "a", "é日本🦀", "x" * 50, "with space", "tab\t", "nul\x00in"][i % 7] + str(i % 11) for i in r])),
        "ls": pa.array(nul([f"large{i % 13}" for i in r]), pa.large_string()),
        "sv": pa.array(nul([f"view{i % 17}" * (1 + i % 4) for i in r]), pa.string_view()),
        "bin": pa.array(nul([bytes([i % 256, (i * 7) % 256]) * (i % 3) for i in r]), pa.binary()),
        "lbin": pa.array(nul([bytes([i % 256]) for i in r]), pa.large_binary()),
        "bv": pa.array(nul([bytes([i % 256]) * (i % 20) for i in r]), pa.binary_view()),
        "fsb": pa.array(nul([bytes([i % 256, 0, 255]) for i in r]), pa.binary(3)),
        "uuid": pa.array(nul([uuid.UUID(int=i * 2**100 + i).bytes for i in r]), pa.binary(16)).cast(pa.uuid()),
        "json": pa.array(nul([json.dumps({"k": i, "v": [i, None]}) for i in r]), pa.string()).cast(pa.json_()),
        "li": pa.array(nul([[j if j % 4 else None for j in range(i % 5)] for i in r]), pa.list_(pa.int32())),
        "lli": pa.array(nul([[str(j) for j in range(i % 3)] for i in r]), pa.large_list(pa.string())),
        "fsl": pa.array(nul([[i, None, -i] for i in r]), pa.list_(pa.int16(), 3)),
        "m": pa.array(nul([[(f"k{j}", j if j % 2 else None) for j in range(i % 4)] for i in r]), pa.map_(pa.string(), pa.int64())),
        "st": pa.array(
            nul([{"a": i, "b": None if i % 5 == 0 else f"b{i}", "c": {"d": [i, i + 1] if i % 6 else None}} for i in r]),
            pa.struct([("a", pa.int32()), ("b", pa.string()), ("c", pa.struct([("d", pa.list_(pa.int64()))]))]),
        ),
        "lst": pa.array(
            nul([[{"x": j, "y": [f"{j}"] * j} if j % 3 else None for j in range(i % 4)] for i in r]),
            pa.list_(pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))])),
        ),
        "mls": pa.array(nul([[(j, [j] * j) for j in range(i % 3)] for i in r]), pa.map_(pa.int32(), pa.list_(pa.int8()))),
        "dict_s": pa.array(nul([f"d{i % 5}" for i in r])).dictionary_encode(),
        "dict_i": pa.array(nul([i % 9 for i in r]), pa.int64()).dictionary_encode(),
        "nulls": pa.nulls(rows),
    }
    return pa.table(cols)


def unview(t):
    """`t` with its (top-level) string and binary views as plain strings and binaries."""
    for i, f in enumerate(t.schema):
        to = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}.get(f.type)
        if to is not None:
            t = t.set_column(i, pa.field(f.name, to), t.column(i).cast(to))
    return t


def pyarrow_files():
    types = pa_types_table()
    name = "parquet/pyarrow/types"
    if wanted(name):
        f = PQ / "pyarrow_types.parquet"
        f.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(types, f, row_group_size=128)
        pq_case(name, f, pq.read_table(f), why="every Arrow type pyarrow writes (ints of all widths, float16, decimal32/64/128/256, dates, times, timestamps with zones, durations, strings, binaries, uuid, json, lists, maps, structs, dictionaries, null), nulls in every column, 3 row groups")
        for i, (sql, expr) in enumerate(
            [
                ("dec128 < 0", pc.field("dec128") < pa.scalar(Decimal(0), pa.decimal128(38, 10))),
                ("dec32 >= 10.5", pc.field("dec32") >= pa.scalar(Decimal("10.5"), pa.decimal32(7, 2))),
                ("ts_us_tz >= TIMESTAMP '1990-01-01 00:00:00+00:00'", pc.field("ts_us_tz") >= pa.scalar(dt.datetime(1990, 1, 1, tzinfo=dt.timezone.utc), pa.timestamp("us", tz="UTC"))),
                ("ts_ns < TIMESTAMP '1960-01-01 00:00:00'", pc.field("ts_ns") < pa.scalar(dt.datetime(1960, 1, 1), pa.timestamp("ns"))),
                ("date32 BETWEEN DATE '1700-01-01' AND DATE '2000-01-01'", (pc.field("date32") >= pa.scalar(dt.date(1700, 1, 1))) & (pc.field("date32") <= pa.scalar(dt.date(2000, 1, 1)))),
                ("st.a > 250", pc.field(("st", "a")) > 250),
                ("u32 > 3000000000", pc.field("u32") > pa.scalar(3000000000, pa.uint32())),
                ("i8 < -100 OR b = true", (pc.field("i8") < -100) | (pc.field("b") == True)),  # noqa: E712
                ("dict_s = 'd3'", pc.field("dict_s") == "d3"),
                ("ls IN ('large1', 'large12')", pc.field("ls").isin(["large1", "large12"])),
                ("f32 > 3.0", pc.field("f32") > pa.scalar(3.0, pa.float32())),
                ("s IS NULL", pc.field("s").is_null()),
            ]
        ):
            pq_case(f"{name}/filter{i}", f, unview(pq.read_table(f)).filter(expr), read={"filter": sql}, why=f"filter on the types file: {sql} (expected: pyarrow's read, filtered; view columns as plain strings/binaries: pyarrow cannot filter views)")
        pq_case(
            name + "/columns",
            f,
            pq.read_table(f, columns=["lst", "u64", "st"]),
            read={"columns": ["lst", "u64", "st"]},
            why="projection of nested and flat columns, reordered",
        )
    for codec in ["none", "snappy", "gzip", "brotli", "zstd", "lz4"]:
        for page_version in ["1.0", "2.0"]:
            name = f"parquet/pyarrow/codec_{codec}_page_v{page_version[0]}"
            if not wanted(name):
                continue
            f = PQ / f"pyarrow_{codec}_v{page_version[0]}.parquet"
            pq.write_table(types, f, compression=codec, data_page_version=page_version, row_group_size=100, data_page_size=2048)
            pq_case(name, f, pq.read_table(f), why=f"codec {codec}, data page v{page_version[0]}, several pages per chunk")
    for opt, kw, why in [
        ("content_defined_chunking", {"use_content_defined_chunking": True}, "content-defined chunking: pages cut where the content says"),
        ("decimal_as_integer", {"store_decimal_as_integer": True}, "store_decimal_as_integer: decimals of precision <= 18 as INT32/INT64"),
        ("coerce_timestamps_ms", {"coerce_timestamps": "ms", "allow_truncated_timestamps": True}, "coerce_timestamps='ms': every timestamp stored in ms, the ARROW:schema hint keeping the original unit and zone"),
        ("time_adjusted_to_utc", {"write_time_adjusted_to_utc": True}, "write_time_adjusted_to_utc: TIME columns with isAdjustedToUTC=true"),
    ]:
        name = f"parquet/pyarrow/option_{opt}"
        if not wanted(name):
            continue
        f = PQ / f"pyarrow_option_{opt}.parquet"
        pq.write_table(types, f, row_group_size=200, **kw)
        pq_case(name, f, pq.read_table(f), why=why)
    name = "parquet/pyarrow/empty"
    if wanted(name):
        f = PQ / "pyarrow_empty.parquet"
        pq.write_table(types.slice(0, 0), f)
        pq_case(name, f, pq.read_table(f), why="a file with no rows (one empty row group or none), every type")
        f2 = PQ / "pyarrow_empty_groups.parquet"
        with pq.ParquetWriter(f2, types.schema) as w:
            w.write_table(types.slice(0, 0))
            w.write_table(types.slice(0, 5))
            w.write_table(types.slice(0, 0))
        pq_case(name + "/empty_row_groups", f2, pq.read_table(f2), why="empty row groups around a non-empty one (ParquetWriter.write_table of 0 rows)")
    name = "parquet/pyarrow/no_arrow_schema"
    if wanted(name):
        f = PQ / "pyarrow_no_arrow_schema.parquet"
        pq.write_table(types, f, store_schema=False, row_group_size=150)
        pq_case(name, f, pq.read_table(f), why="store_schema=False: no ARROW:schema hint, types from the Parquet schema alone")
    name = "parquet/pyarrow/legacy"
    if wanted(name):
        f = PQ / "pyarrow_legacy.parquet"
        legacy = types.drop_columns(["f16", "uuid", "json", "dec32", "dec64"])
        pq.write_table(legacy, f, version="1.0", use_compliant_nested_type=False, use_deprecated_int96_timestamps=True, store_schema=False)
        pq_case(name, f, pq.read_table(f), why="format version 1.0 (converted types only), non-compliant nested lists, INT96 timestamps, no ARROW:schema")

    # Encodings, one file each, over the columns each applies to; many small pages.
    n = 5000
    enc_cols = {
        "i32": pa.array([None if i % 11 == 0 else (i * 7) % 1000 - 500 for i in range(n)], pa.int32()),
        "i64": pa.array([None if i % 13 == 0 else i * 1000003 - 2**40 for i in range(n)], pa.int64()),
        "u64": pa.array([None if i % 17 == 0 else 2**64 - 1 - i * 3 for i in range(n)], pa.uint64()),
        "f32": pa.array([None if i % 7 == 0 else (i % 100) / 7 for i in range(n)], pa.float32()),
        "f64": pa.array([None if i % 5 == 0 else i / 3 for i in range(n)], pa.float64()),
        "f16": pa.array([None if i % 9 == 0 else (i % 50) / 4 for i in range(n)], pa.float32()).cast(pa.float16()),
        "s": pa.array([None if i % 3 == 0 else f"prefix-{i // 10}-{'x' * (i % 5)}" for i in range(n)]),
        "bin": pa.array([None if i % 4 == 0 else f"b{i % 97}".encode() for i in range(n)], pa.binary()),
        "fsb": pa.array([None if i % 6 == 0 else (i % 65536).to_bytes(4, "big") for i in range(n)], pa.binary(4)),
        "dec": pa.array([None if i % 8 == 0 else Decimal(i * 37 - 90000) / 100 for i in range(n)], pa.decimal128(9, 2)),
        "b": pa.array([None if i % 10 == 0 else (i // 3) % 2 == 0 for i in range(n)]),
        "d": pa.array([None if i % 12 == 0 else dt.date(2000, 1, 1) + dt.timedelta(days=i) for i in range(n)]),
    }
    encodings = {
        "PLAIN": ["i32", "i64", "u64", "f32", "f64", "f16", "s", "bin", "fsb", "dec", "b", "d"],
        "DELTA_BINARY_PACKED": ["i32", "i64", "u64", "d"],
        "DELTA_LENGTH_BYTE_ARRAY": ["s", "bin"],
        "DELTA_BYTE_ARRAY": ["s", "bin", "fsb"],
        "BYTE_STREAM_SPLIT": ["f32", "f64", "f16", "i32", "i64", "fsb", "dec"],
        "RLE": ["b"],
    }
    for enc, cols in encodings.items():
        for page_version in ["1.0", "2.0"]:
            name = f"parquet/pyarrow/encoding_{enc.lower()}_page_v{page_version[0]}"
            if not wanted(name):
                continue
            t = pa.table({c: enc_cols[c] for c in cols})
            f = PQ / f"pyarrow_enc_{enc.lower()}_v{page_version[0]}.parquet"
            pq.write_table(
                t,
                f,
                use_dictionary=False,
                column_encoding={c: enc for c in cols},
                data_page_version=page_version,
                row_group_size=2000,
                data_page_size=512,
                compression="snappy" if page_version == "1.0" else "zstd",
            )
            pq_case(name, f, pq.read_table(f), why=f"{enc} encoding on {', '.join(cols)}; data page v{page_version[0]}, 512-byte pages, 3 row groups")
            if enc == "DELTA_BINARY_PACKED":
                pq_case(name + "/filter", f, pq.read_table(f, filters=pc.field("i64") > -(2**40) + 3 * 10**9), read={"filter": f"i64 > {-(2**40) + 3 * 10**9}"}, why="filter on a DELTA_BINARY_PACKED column")
    for page_version in ["1.0", "2.0"]:
        name = f"parquet/pyarrow/dictionary_page_v{page_version[0]}"
        if not wanted(name):
            continue
        t = pa.table(
            {
                "s": pa.array([f"v{(i // 700) * 10 + i % 10}" if i % 9 else None for i in range(n)]),
                "i": pa.array([(i // 1000) * 100 + i % 3 for i in range(n)], pa.int64()),
                "ds": pa.array([f"d{(i // 1000)}-{i % 4}" for i in range(n)]).dictionary_encode(),
                "f": pa.array([float(i % 6) - 2.5 for i in range(n)]),
                "high": pa.array([f"unique-{i}" for i in range(n)]),  # falls back to plain
            }
        )
        f = PQ / f"pyarrow_dictionary_v{page_version[0]}.parquet"
        pq.write_table(t, f, data_page_version=page_version, row_group_size=1000, data_page_size=1024, dictionary_pagesize_limit=4096)
        pq_case(name, f, pq.read_table(f), why=f"dictionary encoding (dictionaries differing per row group, a dictionary column, fallback to plain past the dictionary page limit), data page v{page_version[0]}")
        pq_case(name + "/filter", f, pq.read_table(f, filters=(pc.field("s") == "v31") | (pc.field("ds") == "d4-1")), read={"filter": "s = 'v31' OR ds = 'd4-1'"}, why="filter on dictionary-encoded columns")

    name = "parquet/pyarrow/small_groups_page_index"
    if wanted(name):
        t = pa.table(
            {
                "id": pa.array(range(3000), pa.int64()),
                "s": pa.array([f"s{i // 100:03d}" for i in range(3000)]),
                "x": pa.array([None if i % 10 == 0 else i * 0.5 for i in range(3000)]),
                "l": pa.array([[i] * (i % 3) for i in range(3000)], pa.list_(pa.int64())),
            }
        )
        f = PQ / "pyarrow_small_groups.parquet"
        pq.write_table(
            t,
            f,
            row_group_size=250,
            data_page_size=128,
            write_batch_size=50,
            max_rows_per_page=60,
            write_page_index=True,
            write_page_checksum=True,
            bloom_filter_options={"s": {"ndv": 100, "fpp": 0.01}},
            sorting_columns=[pq.SortingColumn(0)],
        )
        pq_case(name, f, pq.read_table(f), why="12 row groups, pages of <= 60 rows, page index, page checksums, a bloom filter, sorting columns")
        for i, (sql, expr) in enumerate(
            [
                ("id >= 1234 AND id < 1300", (pc.field("id") >= 1234) & (pc.field("id") < 1300)),
                ("s = 's017'", pc.field("s") == "s017"),
                ("s IN ('s000', 's029')", pc.field("s").isin(["s000", "s029"])),
                ("x IS NULL AND id < 100", pc.field("x").is_null() & (pc.field("id") < 100)),
                ("id BETWEEN 2990 AND 5000", (pc.field("id") >= 2990) & (pc.field("id") <= 5000)),
            ]
        ):
            pq_case(f"{name}/filter{i}", f, pq.read_table(f, filters=expr), read={"filter": sql}, why=f"filter with page-index and bloom pruning: {sql}")

    name = "parquet/pyarrow/filters"
    if wanted(name):
        big = 2**63 + 5
        t = pa.table(
            {
                "u64": pa.array([0, 1, 2**63 - 1, 2**63, big, 2**64 - 1, None], pa.uint64()),
                "f64": pa.array([-0.0, 0.0, 1.0, float("nan"), None, -1.0, 0.0], pa.float64()),
                "f32": pa.array([0.0, -0.0, float("nan"), 2.5, None, 0.0, -0.0], pa.float32()),
                "u32": pa.array([0, 2**31, 2**32 - 1, 5, None, 7, 2**31 - 1], pa.uint32()),
                "u8": pa.array([0, 128, 255, 5, None, 7, 127], pa.uint8()),
                "s": pa.array(["a", "b", None, "", "é", "b", "z"]),
            }
        )
        f = PQ / "pyarrow_filters.parquet"
        pq.write_table(t, f, row_group_size=3)
        f2 = PQ / "pyarrow_filters_one_group.parquet"
        pq.write_table(t, f2)
        for fname, path in [("", f), ("/one_group", f2)]:
            for i, (sql, expr, note) in enumerate(
                [
                    (f"u64 > {2**63}", pc.field("u64") > pa.scalar(2**63, pa.uint64()), "a u64 literal above 2^63 on a UInt64 column"),
                    (f"u64 = {big}", pc.field("u64") == pa.scalar(big, pa.uint64()), "u64 equality above 2^63"),
                    (f"u64 >= {2**63 - 1}", pc.field("u64") >= pa.scalar(2**63 - 1, pa.uint64()), "u64 around 2^63"),
                    ("f64 = 0.0", pc.field("f64") == 0.0, "-0.0 = 0.0 in SQL (duckdb, Spark)"),
                    ("f32 = 0.0", pc.field("f32") == pa.scalar(0.0, pa.float32()), "-0.0 = 0.0 on float32"),
                    ("f64 = -0.0", pc.field("f64") == -0.0, "0.0 = -0.0"),
                    ("f64 > -0.5 AND f64 < 0.5", (pc.field("f64") > -0.5) & (pc.field("f64") < 0.5), "a range around zero"),
                    (f"u32 > {2**31 - 1}", pc.field("u32") > pa.scalar(2**31 - 1, pa.uint32()), "u32 above 2^31"),
                    ("u8 >= 128", pc.field("u8") >= pa.scalar(128, pa.uint8()), "u8 above 127"),
                    ("s <> 'b'", pc.field("s") != "b", "not equal drops nulls"),
                ]
            ):
                pq_case(f"{name}{fname}/filter{i}", path, pq.read_table(path, filters=expr), read={"filter": sql}, why=f"{note}: {sql} ({'one row group' if fname else 'row groups of 3 rows'})")
    name = "parquet/pyarrow/nulls"
    if wanted(name):
        r = 40
        t = pa.table(
            {
                "all_null_i": pa.nulls(r, pa.int32()),
                "all_null_s": pa.nulls(r, pa.string()),
                "all_null_l": pa.nulls(r, pa.list_(pa.int32())),
                "all_null_st": pa.nulls(r, pa.struct([("a", pa.int32())])),
                "l_null_items": pa.array([[None] * (i % 3) if i % 4 else None for i in range(r)], pa.list_(pa.string())),
                "st_null_fields": pa.array([{"a": None, "b": {"c": None}} if i % 2 else None for i in range(r)], pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.string())]))])),
                "m_null_vals": pa.array([[("k", None)] if i % 3 else None for i in range(r)], pa.map_(pa.string(), pa.float64())),
                "ll": pa.array([[[None], None, []] if i % 2 else [None] for i in range(r)], pa.list_(pa.list_(pa.int8()))),
            }
        )
        f = PQ / "pyarrow_nulls.parquet"
        pq.write_table(t, f, row_group_size=16)
        pq_case(name, f, pq.read_table(f), why="nulls at every level: all-null columns, null lists, null items, null structs and fields, null map values, nested lists")


# ==========================================================================================
# Parquet files: duckdb


def duck():
    con = duckdb.connect()
    con.sql("SET TimeZone = 'UTC'")
    return con


def duck_read(path, where=None):
    """duckdb's read, with two of its Arrow export's conversions undone (top-level columns):
    UUIDs come out as strings (as 16-byte UUIDs again) and TIMESTAMP(MILLIS) as microseconds
    (cast back to the file's unit: the same instants). (Its arrow_lossless_conversion would
    keep UUIDs but turn BOOLEAN into int8 `bool8`.)"""
    q = f"select * from read_parquet('{path}')" + (f" where {where}" if where else "")
    t = duck().sql(q).arrow().read_all()
    file_types = pq.read_schema(path)
    for i, f in enumerate(t.schema):
        want = file_types.field(f.name).type
        col = t.column(i)
        if isinstance(want, pa.UuidType) and pa.types.is_string(f.type):
            col = pa.array([None if v is None else uuid.UUID(v).bytes for v in col.to_pylist()], pa.binary(16)).cast(want)
        elif pa.types.is_timestamp(f.type) and pa.types.is_timestamp(want) and want.unit != f.type.unit:
            col = col.cast(pa.timestamp(want.unit, f.type.tz))
        else:
            continue
        t = t.set_column(i, pa.field(f.name, col.type), col)
    return t


DUCK_TYPES = """
select i::INT as id,
  case when i % 5 = 3 then null else (i - 100)::TINYINT end as i8,
  case when i % 5 = 3 then null else (i * 300 - 30000)::SMALLINT end as i16,
  case when i % 5 = 3 then null else (i * 20000000 - 2000000000)::INTEGER end as i32,
  case when i % 5 = 3 then null else (i::HUGEINT * 90000000000000000 - 9000000000000000000)::BIGINT end as i64,
  case when i % 5 = 3 then null else i::UTINYINT end as u8,
  case when i % 5 = 3 then null else (i * 300)::USMALLINT end as u16,
  case when i % 5 = 3 then null else (i * 20000000)::UINTEGER end as u32,
  case when i % 5 = 3 then null else (i::UBIGINT * 90000000000000000) end as u64,
  case when i % 5 = 3 then null else (i::HUGEINT * 1000000000000000000000000000000 - 10) end as huge,
  case when i % 5 = 3 then null else (i::UHUGEINT * 1000000000000000000000000000000) end as uhuge,
  case when i % 5 = 3 then null else (i / 7)::FLOAT end as f32,
  case when i % 5 = 3 then null else (i / 7)::DOUBLE end as f64,
  case when i % 5 = 3 then null else ((i % 79) * 1.25)::DECIMAL(4,2) end as dec4,
  case when i % 5 = 3 then null else (i * 1234.567)::DECIMAL(9,3) end as dec9,
  case when i % 5 = 3 then null else (i * 1234567890.12345)::DECIMAL(18,5) end as dec18,
  case when i % 5 = 3 then null else (i * 123456789012345678901234567.12345678 - 10)::DECIMAL(38,8) end as dec38,
  case when i % 5 = 3 then null else DATE '1970-01-01' + (i * 400 - 20000)::INT end as d,
  case when i % 5 = 3 then null else TIME '00:00:00' + to_microseconds(i * 700000001) end as t,
  case when i % 5 = 3 then null else TIMESTAMP '1970-01-01' + to_microseconds(i * 86400000001 * 37 - 1000000000000000) end as ts,
  case when i % 5 = 3 then null else make_timestamp_ns(i * 86400000000001 * 37 - 1000000000000000000) end as ts_ns,
  case when i % 5 = 3 then null else (TIMESTAMP '2000-01-01' + to_milliseconds(i * 86400001))::TIMESTAMP_MS end as ts_ms,
  case when i % 5 = 3 then null else (TIMESTAMP '2000-01-01' + to_seconds(i * 86401))::TIMESTAMP_S end as ts_s,
  case when i % 5 = 3 then null else (TIMESTAMPTZ '2000-01-01 00:00:00+00' + to_microseconds(i * 3600000001)) end as tstz,
  case when i % 5 = 3 then null else to_months(i % 25) + to_days(i % 40) + to_microseconds(i * 1000001) end as iv,
  case when i % 5 = 3 then null else ('0000000' || (i % 10)::VARCHAR || '-0000-4000-8000-' || lpad(i::VARCHAR, 12, '0'))::UUID end as u,
  case when i % 5 = 3 then null else (['a','b','c'][i % 3 + 1])::ENUM('a','b','c') end as e,
  case when i % 5 = 3 then null else 'str-' || i::VARCHAR || repeat('é', i % 4) end as s,
  case when i % 5 = 3 then null else ('\\x' || lpad(to_hex(i), 2, '0'))::BLOB end as blob,
  case when i % 5 = 3 then null else i % 2 = 0 end as b,
  case when i % 5 = 3 then null else [i, NULL, i + 1] end as l,
  case when i % 5 = 3 then null else {'a': i, 'b': 'x' || i::VARCHAR, 'c': [{'d': i}]} end as st,
  case when i % 5 = 3 then null else MAP {'k' || i::VARCHAR: i, 'z': NULL} end as m,
  case when i % 5 = 3 then null else [[i], [], NULL] end as ll,
  [1.5, i::DOUBLE]::DOUBLE[2] as arr
from range(0, 200) r(i)
"""


def duckdb_files():
    d = PQ
    d.mkdir(parents=True, exist_ok=True)
    name = "parquet/duckdb/types"
    if wanted(name):
        f = d / "duckdb_types.parquet"
        duck().sql(f"copy ({DUCK_TYPES}) to '{f}' (format parquet, row_group_size 64)")
        why = (
            "duckdb COPY TO parquet: signed/unsigned ints, HUGEINT/UHUGEINT (duckdb writes them as DOUBLE), "
            "DECIMAL(4..38), DATE, TIME, TIMESTAMP s/ms/us/ns, TIMESTAMPTZ, INTERVAL (months, days, micros; "
            "read back by duckdb as month_day_nano), UUID, ENUM, VARCHAR, BLOB, LIST, STRUCT, MAP, ARRAY; nulls"
        )
        exp = duck_read(f)
        case(name, "parquet", f, expected=exp, writer=f"{DUCKDB} (expected: duckdb's read_parquet, UUIDs and TIMESTAMP(MILLIS) as in the file)", why=why)
        for i, (sql, where) in enumerate(
            [
                ("u64 > 9223372036854775808", "u64 > 9223372036854775808"),
                ("dec38 < 0", "dec38 < 0"),
                ("ts_ns >= TIMESTAMP '1950-01-01 00:00:00'", "ts_ns >= TIMESTAMP '1950-01-01 00:00:00'"),
                ("e = 'b'", "e = 'b'"),
                ("u8 >= 150", "u8 >= 150"),
            ]
        ):
            # Every column but the INTERVAL (its own case): the filter alone is judged.
            cols = [c for c in exp.column_names if c != "iv"]
            case(
                f"{name}/filter{i}",
                "parquet",
                f,
                expected=duck_read(f, where=where).select(cols),
                read={"filter": sql, "columns": cols},
                writer=f"{DUCKDB} (expected: duckdb's read_parquet WHERE, UUIDs and TIMESTAMP(MILLIS) as in the file)",
                why=f"filter: {sql} (every column but the INTERVAL)",
            )
    name = "parquet/duckdb/interval"
    if wanted(name):
        f = d / "duckdb_interval.parquet"
        duck().sql(
            f"""copy (select * from (values
                (1, INTERVAL 1 MONTH + INTERVAL 2 DAYS),
                (2, INTERVAL 1 YEAR),
                (3, INTERVAL 3 HOURS + INTERVAL 4 MINUTES + INTERVAL 5 SECONDS + INTERVAL 6 MILLISECONDS),
                (4, INTERVAL 11 MONTHS + INTERVAL 30 DAYS + INTERVAL 86399999 MILLISECONDS),
                (5, INTERVAL 0 SECONDS),
                (6, NULL),
                (7, INTERVAL 40 DAYS + INTERVAL 25 HOURS)) t(id, iv)) to '{f}' (format parquet)"""
        )
        case(
            name,
            "parquet",
            f,
            expected=duck_read(f),
            writer=f"{DUCKDB} (expected: duckdb's read_parquet)",
            why="INTERVAL (Parquet INTERVAL: months, days, millis): duckdb reads it back as month_day_nano (months, days, nanoseconds)",
        )
    name = "parquet/duckdb/timetz"
    if wanted(name):
        f = d / "duckdb_timetz.parquet"
        duck().sql(f"copy (select 1 as id, TIMETZ '12:34:56+00' as t union all select 2, NULL) to '{f}' (format parquet)")
        case(name, "parquet", f, expected=duck_read(f), writer=f"{DUCKDB} (expected: duckdb's read_parquet)", why="TIMETZ (Parquet TIME adjusted to UTC)")
    for codec in ["uncompressed", "snappy", "gzip", "zstd", "lz4", "brotli"]:
        for version in ["V1", "V2"]:
            name = f"parquet/duckdb/codec_{codec}_{version.lower()}"
            if not wanted(name):
                continue
            f = d / f"duckdb_{codec}_{version.lower()}.parquet"
            # The INTERVAL column aside (its own case): the codec and encodings alone are judged.
            duck().sql(f"copy (select * exclude (iv) from ({DUCK_TYPES})) to '{f}' (format parquet, compression {codec}, parquet_version {version}, row_group_size 100)")
            case(
                name,
                "parquet",
                f,
                expected=duck_read(f),
                writer=f"{DUCKDB} (expected: duckdb's read_parquet, UUIDs and TIMESTAMP(MILLIS) as in the file)",
                why=f"the types file but INTERVAL, codec {codec}, PARQUET_VERSION {version} ({'data page v2, DELTA_BINARY_PACKED/DELTA_LENGTH_BYTE_ARRAY/BYTE_STREAM_SPLIT' if version == 'V2' else 'data page v1, dictionary/plain'})",
            )
    name = "parquet/duckdb/filters"
    if wanted(name):
        f = d / "duckdb_filters.parquet"
        duck().sql(
            f"""copy (select * from (values
                (1, 0::UBIGINT, -0.0::DOUBLE, -0.0::FLOAT),
                (2, 9223372036854775808::UBIGINT, 0.0::DOUBLE, 0.0::FLOAT),
                (3, 18446744073709551615::UBIGINT, 1.0::DOUBLE, 'nan'::FLOAT),
                (4, 9223372036854775813::UBIGINT, 'nan'::DOUBLE, 1.0::FLOAT),
                (5, NULL, NULL, NULL),
                (6, 9223372036854775807::UBIGINT, -0.0::DOUBLE, 0.0::FLOAT)) t(id, u64, f64, f32)) to '{f}' (format parquet, row_group_size 2)"""
        )
        for i, (sql, where) in enumerate(
            [
                ("u64 > 9223372036854775808", "u64 > 9223372036854775808"),
                ("u64 = 9223372036854775813", "u64 = 9223372036854775813"),
                ("f64 = 0.0", "f64 = 0.0"),
                ("f32 = 0.0", "f32 = 0.0"),
                ("f64 = -0.0", "f64 = -0.0"),
            ]
        ):
            case(
                f"{name}/filter{i}",
                "parquet",
                f,
                expected=duck_read(f, where=where),
                read={"filter": sql},
                writer=f"{DUCKDB} (expected: duckdb's WHERE)",
                why=f"{sql}: duckdb's SQL semantics (-0.0 = 0.0; u64 literals above 2^63)",
            )
    name = "parquet/duckdb/bare_boolean"
    if wanted(name):
        # A bare boolean column as a filter (issue 77: the filter parser refused `flag`).
        f = d / "duckdb_bare_boolean.parquet"
        duck().sql(
            f"""copy (select i as id, case i % 5 when 0 then NULL when 1 then true when 3 then true else false end as flag,
                i % 4 as x from range(40) t(i)) to '{f}' (format parquet, row_group_size 16)"""
        )
        for i, sql in enumerate(["flag", "NOT flag", "flag AND x > 1", "NOT flag OR x = 3"]):
            case(
                f"{name}/filter{i}",
                "parquet",
                f,
                expected=duck_read(f, where=sql),
                read={"filter": sql},
                writer=f"{DUCKDB} (expected: duckdb's WHERE)",
                why=f"WHERE {sql}: a bare boolean column is a predicate (a NULL flag is not true)",
            )


def refused():
    """Files rayquet must refuse clearly (ErrorKind::Unsupported)."""
    d = PQ
    d.mkdir(parents=True, exist_ok=True)
    name = "parquet/duckdb/encrypted"
    if wanted(name):
        f = d / "duckdb_encrypted.parquet"
        con = duck()
        con.sql("SET force_mbedtls_unsafe = 'true'")  # writing needs httpfs's crypto otherwise
        con.sql("PRAGMA add_parquet_key('key128', '0123456789112345')")
        con.sql(f"copy (select 1 as id, 'x' as s) to '{f}' (format parquet, encryption_config {{footer_key: 'key128'}})")
        case(name, "parquet", f, error={"kind": "Unsupported", "contains": "encrypt"}, writer=f"{DUCKDB} (ENCRYPTION_CONFIG)", why="Parquet modular encryption, encrypted footer (PARE), no key given: refuse clearly")
    for plaintext in (False, True):
        name = f"parquet/pyarrow/encrypted_{'plaintext_footer' if plaintext else 'footer'}"
        if not wanted(name):
            continue
        import base64
        import pyarrow.parquet.encryption as pe

        class Kms(pe.KmsClient):
            def __init__(self, config):
                pe.KmsClient.__init__(self)

            def wrap_key(self, key_bytes, master_key_identifier):
                return base64.b64encode(key_bytes)

            def unwrap_key(self, wrapped_key, master_key_identifier):
                return base64.b64decode(wrapped_key)

        factory = pe.CryptoFactory(lambda config: Kms(config))
        conf = pe.EncryptionConfiguration(
            footer_key="footer",
            column_keys={"col": ["s"]},
            plaintext_footer=plaintext,
            double_wrapping=False,
            data_key_length_bits=128,
        )
        props = factory.file_encryption_properties(pe.KmsConnectionConfig(), conf)
        t = pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", "b"]})
        f = d / f"pyarrow_encrypted_{int(plaintext)}.parquet"
        with pq.ParquetWriter(f, t.schema, encryption_properties=props) as w:
            w.write_table(t)
        case(
            name,
            "parquet",
            f,
            error={"kind": "Unsupported", "contains": "encrypt"},
            writer=f"{PYARROW} (pyarrow.parquet.encryption, a test KMS)",
            why=f"Parquet modular encryption, {'plaintext footer (PAR1), column s encrypted' if plaintext else 'encrypted footer (PARE)'}, no key given: refuse clearly",
        )
    name = "parquet/duckdb/variant"
    if wanted(name):
        f = d / "duckdb_variant.parquet"
        duck().sql(f"""copy (select i as id, ('{{"a": ' || i::VARCHAR || '}}')::JSON::VARIANT as v from range(3) t(i)) to '{f}' (format parquet)""")
        pq_case(
            name,
            f,
            pq.read_table(f),
            writer=f"{DUCKDB} (VARIANT; expected: pyarrow.parquet.read_table, as duckdb's own Arrow export refuses VARIANT)",
            why="a shredded VARIANT column (Parquet VARIANT logical type): read in the Arrow form of Parquet's variant "
            "encoding, struct<metadata, value, typed_value> tagged with the arrow.parquet.variant extension type "
            "(parquet's variant_experimental), values as pyarrow reads the struct",
        )


# ==========================================================================================
# Parquet files: polars


def polars_read(path, **kw):
    return pl.read_parquet(path, **kw).to_arrow()


def polars_files():
    d = PQ
    d.mkdir(parents=True, exist_ok=True)
    name = "parquet/polars/categorical_row_groups"
    if wanted(name):
        f = d / "polars_categorical_rg.parquet"
        # Row groups of 3: each holds other categories, so each row group's dictionary differs.
        vals = ["red", "green", "red", "blue", "blue", "cyan", "magenta", None, "yellow", "red", "black", "white"]
        df = pl.DataFrame({"id": list(range(len(vals))), "c": pl.Series(vals, dtype=pl.Categorical), "e": pl.Series([v or "red" for v in vals], dtype=pl.Enum(["white", "black", "yellow", "magenta", "cyan", "blue", "green", "red"]))})
        df.write_parquet(f, row_group_size=3)
        pq_case(name, f, polars_read(f), writer=f"{POLARS} (expected: pl.read_parquet(...).to_arrow())", why="Categorical and Enum columns; row groups of 3 rows whose dictionaries differ")
        pq_case(name + "/filter", f, polars_read(f).filter(pc.field("c") == "red"), read={"filter": "c = 'red'"}, writer=f"{POLARS} (expected: polars' read, filtered)", why="filter on a Categorical column across row groups")
    name = "parquet/polars/categorical_files"
    if wanted(name):
        dd = fresh(OUT / "dataset" / "polars_categorical")
        dd.mkdir()
        pl.DataFrame({"id": [1, 2, 3], "c": pl.Series(["a", "b", "a"], dtype=pl.Categorical)}).write_parquet(dd / "part-0.parquet")
        pl.DataFrame({"id": [4, 5], "c": pl.Series(["z", None], dtype=pl.Categorical)}).write_parquet(dd / "part-1.parquet")
        exp = pl.read_parquet([dd / "part-0.parquet", dd / "part-1.parquet"]).to_arrow()
        pq_case(name, dd, exp, kind="dataset", writer=f"{POLARS} (expected: pl.read_parquet of both files)", why="two files whose Categorical dictionaries differ")
    name = "parquet/polars/types"
    if wanted(name):
        f = d / "polars_types.parquet"
        n = 50
        df = pl.DataFrame(
            {
                "i8": pl.Series([i - 25 for i in range(n)], dtype=pl.Int8),
                "u16": pl.Series([i * 1000 for i in range(n)], dtype=pl.UInt16),
                "u64": pl.Series([2**64 - 1 - i for i in range(n)], dtype=pl.UInt64),
                "f32": pl.Series([None if i % 7 == 0 else i / 3 for i in range(n)], dtype=pl.Float32),
                "dec": pl.Series([f"{i}.{i % 100:02d}" for i in range(n)]).cast(pl.Decimal(20, 2)),
                "dec38": pl.Series([f"-{i}12345678901234567890.{i:04d}" for i in range(n)]).cast(pl.Decimal(38, 4)),
                "s": pl.Series([None if i % 5 == 0 else f"s{i}" * (i % 4) for i in range(n)], dtype=pl.String),
                "bin": pl.Series([bytes([i]) * (i % 3) for i in range(n)], dtype=pl.Binary),
                "d": pl.Series([dt.date(2020, 1, 1) + dt.timedelta(days=i * 30) for i in range(n)]),
                "ts_ms": pl.Series([dt.datetime(2020, 1, 1) + dt.timedelta(hours=i) for i in range(n)]).cast(pl.Datetime("ms")),
                "ts_ns_tz": pl.Series([dt.datetime(2020, 1, 1) + dt.timedelta(minutes=i) for i in range(n)]).cast(pl.Datetime("ns", "Europe/Paris")),
                "dur": pl.Series([dt.timedelta(seconds=i) for i in range(n)]),
                "t": pl.Series([dt.time(i % 24, i) for i in range(n)]),
                "l": pl.Series([[i] * (i % 3) if i % 4 else None for i in range(n)]),
                "arr": pl.Series([[i, i + 1] for i in range(n)], dtype=pl.Array(pl.Int32, 2)),
                "st": pl.Series([{"a": i, "b": [f"x{i}"], "c": {"d": i * 0.5}} if i % 6 else None for i in range(n)]),
                "b": pl.Series([None if i % 9 == 0 else i % 2 == 0 for i in range(n)]),
            }
        )
        df.write_parquet(f, row_group_size=20, statistics="full", compression="lz4")
        pq_case(name, f, polars_read(f), writer=f"{POLARS} (expected: pl.read_parquet(...).to_arrow())", why="polars types: ints, UInt64 near 2^64, Float32, Decimal(20,2) and (38,4), String (views), Binary, Date, Datetime ms and ns with a zone, Duration, Time, List, Array, Struct; statistics='full', lz4")
        pq_case(name + "/filter", f, polars_read(f).filter(pc.field("u64") > pa.scalar(2**64 - 10, pa.uint64())), read={"filter": f"u64 > {2**64 - 10}"}, writer=f"{POLARS} (expected: polars' read, filtered)", why="a u64 literal near 2^64")
    for comp, level in [("uncompressed", None), ("snappy", None), ("gzip", 9), ("brotli", 5), ("zstd", 22), ("lz4", None)]:
        name = f"parquet/polars/compression_{comp}"
        if not wanted(name):
            continue
        f = d / f"polars_{comp}.parquet"
        df = pl.DataFrame({"id": list(range(2000)), "s": [f"value-{i % 37}" for i in range(2000)], "f": [i / 7 for i in range(2000)]})
        df.write_parquet(f, compression=comp, compression_level=level, statistics=False, row_group_size=500, data_page_size=1024)
        pq_case(name, f, polars_read(f), writer=f"{POLARS} (expected: polars' read)", why=f"compression {comp} (level {level}), statistics=False, 4 row groups of 1 KiB pages")
    name = "parquet/polars/int128"
    if wanted(name):
        f = d / "polars_int128.parquet"
        vals = [1, -(2**100), None, 10**38 - 1, -(10**38 - 1)]
        pl.DataFrame({"id": [1, 2, 3, 4, 5], "i128": pl.Series(vals, dtype=pl.Int128)}).write_parquet(f)
        # polars' to_arrow() cannot export Int128 (format '_pli128', unknown to pyarrow): the
        # values polars reads back, as the widest Arrow integer-valued type.
        back = pl.read_parquet(f)
        assert back["i128"].to_list() == vals
        exp = pa.table({"id": pa.array([1, 2, 3, 4, 5], pa.int64()), "i128": pa.array([None if v is None else Decimal(v) for v in vals], pa.decimal128(38, 0))})
        pq_case(
            name,
            f,
            exp,
            writer=f"{POLARS} (expected: polars' read values, as Decimal128(38, 0))",
            why="Int128: polars writes FIXED_LEN_BYTE_ARRAY(16) without a logical type (little-endian), only its ARROW:schema hint says Int128; polars reads it back; pyarrow refuses the file",
        )


# ==========================================================================================
# Hive-partitioned folders


def hive_datasets():
    base = OUT / "dataset"
    t = pa.table(
        {
            "v": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
            "year": pa.array([2024, 2024, 2025, None, 2023, 2024], pa.int32()),
            "cat": pa.array(["a:b", "x/y", "p%q r", None, "é=1", "plain"]),
            "d": pa.array([dt.date(2024, 1, 1), dt.date(2024, 1, 1), dt.date(2025, 6, 30), None, dt.date(2023, 12, 31), dt.date(2024, 1, 1)]),
        }
    )
    why_common = "Hive folders (key=value); expected rows include the partition columns as pyarrow's discovery types them (int32, string; percent-escapes decoded; __HIVE_DEFAULT_PARTITION__ as null)"
    name = "dataset/hive/pyarrow"
    if wanted(name):
        p = fresh(base / "hive_pyarrow")
        pads.write_dataset(t, str(p), format="parquet", partitioning=["year", "cat"], partitioning_flavor="hive", existing_data_behavior="overwrite_or_ignore")
        exp = pads.dataset(str(p), partitioning="hive").to_table()
        pq_case(name, p, exp, kind="dataset", writer=f"{PYARROW} (expected: pyarrow.dataset(partitioning='hive'))", why="pyarrow write_dataset(partitioning_flavor='hive'): " + why_common)
        pq_case(
            name + "/filter",
            p,
            pads.dataset(str(p), partitioning="hive").to_table(filter=pc.field("year") == 2024),
            kind="dataset",
            read={"filter": "year = 2024"},
            writer=f"{PYARROW} (expected: pyarrow.dataset with the filter)",
            why="filter on a Hive partition column",
        )
    name = "dataset/hive/duckdb"
    if wanted(name):
        p = fresh(base / "hive_duckdb")
        con = duck()
        con.register("t", t)
        con.sql(f"copy (select * from t) to '{p}' (format parquet, partition_by (year, cat, d))")
        exp = pads.dataset(str(p), partitioning="hive").to_table()
        # pyarrow's discovery leaves dates as strings; rayquet types a column whose every value
        # is YYYY-MM-DD as date32 (as DuckDB and polars do): the same values, cast here.
        exp = exp.set_column(exp.schema.get_field_index("d"), "d", pc.cast(exp["d"], pa.date32()))
        pq_case(name, p, exp, kind="dataset", writer=f"{DUCKDB} (expected: pyarrow.dataset(partitioning='hive'), d cast to date32)", why="duckdb COPY (PARTITION_BY year, cat, d): " + why_common + "; a date partition (pyarrow: strings; rayquet, DuckDB, polars: dates)")
    name = "dataset/hive/polars"
    if wanted(name):
        p = fresh(base / "hive_polars")
        pl.from_arrow(t).write_parquet(p, partition_by=["year", "cat"])
        exp = pl.read_parquet(p, hive_partitioning=True).to_arrow()
        pq_case(
            name,
            p,
            exp,
            kind="dataset",
            writer=f"{POLARS} (expected: pl.read_parquet(dir, hive_partitioning=True))",
            why="polars write_parquet(partition_by=): polars also keeps the partition columns inside the files (pyarrow's discovery then refuses the dataset: int64 in files vs int32 from paths); expected: polars' read",
        )


# ==========================================================================================
# The CLI's --out with dictionary columns (crates/cli/tests/real_writers.rs, cli_out_*).


def cli_inputs():
    name = "cli"
    if not wanted(name):
        return
    d = fresh(OUT / "cli")
    d.mkdir()
    f1 = d / "cat-0.parquet"
    f2 = d / "cat-1.parquet"
    pl.DataFrame({"id": [1, 2, 3], "c": pl.Series(["a", "b", "a"], dtype=pl.Categorical)}).write_parquet(f1)
    pl.DataFrame({"id": [4, 5, 6], "c": pl.Series(["z", None, "y"], dtype=pl.Categorical)}).write_parquet(f2)
    write_ipc(pq.ParquetDataset([str(f1), str(f2)]).read(), d / "cat-files.expected.arrow")
    f3 = d / "cat-row-groups.parquet"
    vals = ["red", "green", "red", "blue", "cyan", None, "black", "red"]
    pl.DataFrame({"id": list(range(8)), "c": pl.Series(vals, dtype=pl.Categorical)}).write_parquet(f3, row_group_size=3)
    write_ipc(pq.read_table(f3), d / "cat-row-groups.expected.arrow")
    # A file whose second row group is damaged: the scan fails after the first batches.
    f4 = d / "damaged.parquet"
    t = pa.table({"id": pa.array(range(20000), pa.int64()), "s": [f"s{i}" for i in range(20000)]})
    pq.write_table(t, f4, row_group_size=10000, compression="snappy", use_dictionary=False)
    meta = pq.ParquetFile(f4).metadata
    col = meta.row_group(1).column(1)
    start = col.data_page_offset
    raw = bytearray(f4.read_bytes())
    # Overwrite the compressed values of the page (past its header) with garbage.
    for k in range(start + 40, start + min(col.total_compressed_size, 4000)):
        raw[k] = 0xFF
    f4.write_bytes(bytes(raw))
    (d / "README").write_text(
        "cat-0/1.parquet: polars Categorical files with different dictionaries; cat-row-groups.parquet: "
        "one file whose row groups' dictionaries differ; *.expected.arrow: pyarrow's read; "
        "damaged.parquet: row group 1's string column overwritten with 0xFF\n"
    )


def main():
    if OUT.exists() and any(OUT.iterdir()):
        sys.exit(f"{OUT} is not empty")
    OUT.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    steps = [
        iceberg_transforms,
        iceberg_escapes,
        iceberg_location_escapes,
        iceberg_schema_evolution,
        iceberg_time_travel,
        iceberg_partition_evolution,
        iceberg_types,
        iceberg_operations,
        delta_all,
        pyarrow_files,
        duckdb_files,
        refused,
        polars_files,
        hive_datasets,
        cli_inputs,
    ]
    for step in steps:
        t = time.time()
        step()
        print(f"{step.__name__}: {time.time() - t:.1f}s", file=sys.stderr)
    (OUT / "cases.txt").write_text("".join(n + "\n" for n in sorted(NAMES)))
    print(f"{len(NAMES)} cases in {time.time() - t0:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
