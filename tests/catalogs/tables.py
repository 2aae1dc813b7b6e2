"""Tables for the catalog tests, written and read by pyiceberg.

  python tables.py seed --db URL --warehouse URL [--name NAME] [--property K=V ...]
  python tables.py seed --glue --warehouse URL [--name NAME] [--property K=V ...]
      Writes, through pyiceberg's SqlCatalog named NAME (default `backing`) in the database
      at URL (SQLAlchemy's: sqlite:///dir/catalog.db, postgresql+psycopg2://...), or its
      GlueCatalog (glue.* properties; Glue has no nested namespaces, so no `db.inner`): `db.events` (three appends, a delete, a column
      added, one more append) and `db.inner.small` (a nested namespace, one append).
  python tables.py read CATALOG TABLE OUT.arrow
      pyiceberg's read of TABLE through catalog CATALOG (its configuration: PYICEBERG_HOME's
      .pyiceberg.yaml, PYICEBERG_CATALOG__* variables), as an Arrow IPC file.
"""

from __future__ import annotations

import argparse
import datetime as dt

import pyarrow as pa
import pyarrow.fs
import pyarrow.ipc as ipc
from pyiceberg.catalog import load_catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.expressions import LessThan
from pyiceberg.types import DoubleType

# moto answers a CompleteMultipartUpload in a way pyarrow 26's AWS SDK refuses; with pyarrow's
# delayed open a small file is one PutObject. pyiceberg passes no such option to pyarrow, so
# these test scripts make it pyarrow's default.
_S3FileSystem = pyarrow.fs.S3FileSystem


def _s3_single_put(*args, **kwargs):
    kwargs.setdefault("allow_delayed_open", True)
    return _S3FileSystem(*args, **kwargs)


pyarrow.fs.S3FileSystem = _s3_single_put


def batch(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([None if i % 7 == 0 else f"name-{i}" for i in ids], pa.large_string()),
            "at": pa.array(
                [dt.datetime(2026, 1, 1) + dt.timedelta(minutes=i) for i in ids], pa.timestamp("us")
            ),
        }
    )


def seed(args) -> None:
    props = {"warehouse": args.warehouse}
    props.update(dict(p.split("=", 1) for p in args.property or []))
    if args.glue:
        from pyiceberg.catalog.glue import GlueCatalog

        catalog = GlueCatalog(args.name, **props)
    else:
        catalog = SqlCatalog(args.name, uri=args.db, **props)
    catalog.create_namespace("db")
    events = catalog.create_table("db.events", schema=batch(0, 1).schema)
    for start in (0, 1000, 2000):
        events.append(batch(start, 1000))
    events.delete(LessThan("id", 100))
    with events.update_schema() as update:
        update.add_column("score", DoubleType())
    more = batch(3000, 500)
    more = more.append_column("score", pa.array([i / 4 for i in range(500)], pa.float64()))
    events.append(more)
    if not args.glue:
        catalog.create_namespace(("db", "inner"))
        small = catalog.create_table(("db", "inner", "small"), schema=batch(0, 1).schema)
        small.append(batch(0, 10))


def read(args) -> None:
    table = load_catalog(args.catalog).load_table(args.table).scan().to_arrow()
    with ipc.new_file(args.out, table.schema) as w:
        w.write_table(table)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("seed")
    s.add_argument("--db")
    s.add_argument("--glue", action="store_true")
    s.add_argument("--warehouse", required=True)
    s.add_argument("--name", default="backing")
    s.add_argument("--property", action="append")
    r = sub.add_parser("read")
    r.add_argument("catalog")
    r.add_argument("table")
    r.add_argument("out")
    args = ap.parse_args()
    {"seed": seed, "read": read}[args.cmd](args)


if __name__ == "__main__":
    main()
