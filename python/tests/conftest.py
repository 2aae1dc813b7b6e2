"""Data for the tests, written in the test session by the reference libraries themselves
(pyarrow, pyiceberg, deltalake); rayquet's reads are compared with theirs."""

from __future__ import annotations

import datetime as dt
import decimal
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

ROWS_PER_FILE = 20_000
FILES = 3


def make_table(n: int, seed: int, start: int = 0) -> pa.Table:
    """`n` rows of the common flat types (and a struct), with nulls; ids from `start`."""
    rnd = random.Random(seed)

    def maybe(v, p=0.1):
        return None if rnd.random() < p else v

    base = dt.datetime(2021, 1, 1)
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "i32": pa.array([maybe(rnd.randrange(-100, 100)) for _ in range(n)], pa.int32()),
            "f": pa.array([maybe(rnd.random()) for _ in range(n)], pa.float64()),
            "s": pa.array([maybe(rnd.choice("abcde") * rnd.randrange(1, 4)) for _ in range(n)], pa.string()),
            "d": pa.array([maybe(dt.date(2021, 1, 1) + dt.timedelta(days=rnd.randrange(365))) for _ in range(n)], pa.date32()),
            "ts": pa.array([maybe(base + dt.timedelta(seconds=rnd.randrange(86400 * 365))) for _ in range(n)], pa.timestamp("us")),
            "dec": pa.array([maybe(decimal.Decimal(rnd.randrange(-10000, 10000)) / 100) for _ in range(n)], pa.decimal128(10, 2)),
            "b": pa.array([maybe(rnd.random() < 0.5) for _ in range(n)], pa.bool_()),
            "st": pa.array(
                [maybe({"x": rnd.randrange(10), "y": rnd.choice(["p", "q"])}) for _ in range(n)],
                pa.struct([("x", pa.int32()), ("y", pa.string())]),
            ),
        }
    )


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    """A directory of FILES Parquet files written by pyarrow, several row groups each; returns
    (directory, the files in order, the whole table as pyarrow wrote it)."""
    root = tmp_path_factory.mktemp("dataset")
    files, tables = [], []
    for i in range(FILES):
        t = make_table(ROWS_PER_FILE, seed=i, start=i * ROWS_PER_FILE)
        p = root / f"part-{i}.parquet"
        pq.write_table(t, p, row_group_size=4_000, compression="snappy")
        files.append(p)
        tables.append(t)
    return root, files, pa.concat_tables(tables)


@pytest.fixture(scope="session")
def big_file(tmp_path_factory):
    """One file of 2M random int64s (no statistics can prune a filter on them), for scans
    that take a while: repeated, it makes a scan long enough to interrupt."""
    root = tmp_path_factory.mktemp("big")
    rnd = random.Random(7)
    n = 2_000_000
    t = pa.table({"v": pa.array([rnd.randrange(1, 1 << 40) for _ in range(n)], pa.int64())})
    p = root / "big.parquet"
    pq.write_table(t, p, row_group_size=250_000, compression="snappy")
    return p
