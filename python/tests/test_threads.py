"""One reader shared by several Python threads; several readers at once."""

from __future__ import annotations

import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.compute  # noqa: F401 (pa.compute)
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import rayquet


def test_one_reader_many_threads(dataset):
    root, _, _ = dataset
    expected = ds.dataset(root, format="parquet").to_table()
    reader = rayquet.scan(root, batch_size=500)
    got: list = []
    lock = threading.Lock()
    errors: list = []

    def drain():
        try:
            for batch in reader:
                with lock:
                    got.append(batch)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=drain) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    # Every batch went to exactly one thread.
    table = pa.Table.from_batches(got, schema=reader.schema).sort_by("id")
    assert table.equals(expected)


def test_many_readers_at_once(dataset):
    root, files, _ = dataset
    cases = [
        (dict(), None),
        (dict(columns=["id", "s"]), ["id", "s"]),
        (dict(filter="i32 < 0"), None),
    ]

    def run(i):
        kw, cols = cases[i % len(cases)]
        target = files[i % len(files)] if i % 2 else root
        got = rayquet.scan(target, **kw).read_all()
        dset = ds.dataset(target, format="parquet")
        want = dset.to_table(columns=cols, filter=(ds.field("i32") < 0) if "filter" in kw else None)
        return got.equals(want)

    with ThreadPoolExecutor(max_workers=6) as pool:
        assert all(pool.map(run, range(18)))


def test_iterating_readers_interleaved(dataset):
    """A thread may interleave several readers (each scan may always read its next row
    group, so neither waits on the other's consumer)."""
    root, files, _ = dataset
    readers = [rayquet.scan(root, batch_size=1000), rayquet.scan(files[0], batch_size=1000)]
    out = [[], []]
    live = [True, True]
    while any(live):
        for i, r in enumerate(readers):
            if live[i]:
                try:
                    out[i].append(next(r))
                except StopIteration:
                    live[i] = False
    assert pa.Table.from_batches(out[0]).equals(ds.dataset(root, format="parquet").to_table())
    assert pa.Table.from_batches(out[1]).equals(ds.dataset(files[0], format="parquet").to_table())


def test_read_all_while_another_thread_iterates(big_file):
    """read_all() of a fresh reader collects the whole scan at once: another thread's next()
    waits for it and then finds the reader exhausted; no batch is lost or given twice."""
    import pyarrow.parquet as pq

    files = [big_file] * 2
    reader = rayquet.scan(files, batch_size=1000)
    other: list = []

    def iterate():
        for batch in reader:
            other.append(batch)

    table = None

    def read():
        nonlocal table
        table = reader.read_all()

    a = threading.Thread(target=read)
    a.start()
    b = threading.Thread(target=iterate)
    b.start()
    a.join()
    b.join()
    got = pa.concat_tables([table, pa.Table.from_batches(other, schema=reader.schema)])
    want = pq.read_table(big_file)
    want = pa.concat_tables([want] * 2).sort_by("v")
    assert got.sort_by("v").equals(want)


def test_close_from_another_thread_stops_read_all(big_file):
    reader = rayquet.scan([big_file] * 400, filter="v = 549755813887")
    closer = threading.Timer(0.3, reader.close)
    closer.start()
    try:
        reader.read_all()
        raise AssertionError("read_all() returned after close()")
    except rayquet.CancelledError:
        pass
    finally:
        closer.join()


def _scan_in_child(path, queue):
    try:
        queue.put(rayquet.scan(path, filter="id < 100").read_all().num_rows)
    except BaseException as e:  # the parent reports it
        queue.put(repr(e))


@pytest.mark.skipif(sys.platform != "linux", reason="the fork start method")
def test_a_forked_child_scans_with_pools_of_its_own(dataset):
    """multiprocessing's fork after a scan: the child inherits the pools' memory but not their
    threads, and makes its own on first use (it used to wait forever)."""
    import multiprocessing

    _, files, table = dataset
    path = str(files[0])
    expected = pq.read_table(path).filter(pa.compute.field("id") < 100).num_rows
    assert rayquet.scan(path, filter="id < 100").read_all().num_rows == expected  # pools made
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_scan_in_child, args=(path, queue))
    child.start()
    try:
        assert queue.get(timeout=60) == expected
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
    # The parent's pools still work.
    assert rayquet.scan(path, filter="id < 100").read_all().num_rows == expected
