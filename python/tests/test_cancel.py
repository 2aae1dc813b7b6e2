"""Cancellation: dropping or closing a reader mid-scan, KeyboardInterrupt while waiting."""

from __future__ import annotations

import _thread
import gc
import os
import signal
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rayquet

# A hang guard for waits on background work winding down, not a performance bound.
GUARD = 60.0


def reader_threads() -> set:
    """rayquet's helper threads alive in this process, by thread id (Linux:
    /proc/self/task/*/comm)."""
    tids = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().startswith("rayquet-py"):
                    tids.add(tid)
        except OSError:
            pass
    return tids


def new_threads_gone(before: set) -> bool:
    """Whether every helper thread started since `before` was taken has ended. (Threads in
    `before` may end meanwhile: an earlier test's helper finishing its last hand-over would
    otherwise make a count never come back to where it was.)"""
    return not (reader_threads() - before)


def wait_until(cond) -> bool:
    deadline = time.monotonic() + GUARD
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def long_scan(big_file, **kw):
    """A scan that runs for a long while without delivering a row: a filter no row matches,
    over the same 2M-row file many times (random values: no statistics prune it)."""
    return rayquet.scan([big_file] * 400, filter="v = 549755813887", **kw)


pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="Linux /proc")


@pytest.fixture(autouse=True)
def sigint_raises():
    """Python's own SIGINT handler for every test here: a process started in the background
    by a non-interactive shell (`cmd &`, as a CI script may run the suite) inherits SIGINT
    ignored, and then Python installs no handler, so neither `_thread.interrupt_main()` nor a
    real SIGINT would raise KeyboardInterrupt."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_drop_mid_scan_stops_the_scan(dataset):
    root, _, _ = dataset
    before = reader_threads()
    for _ in range(5):
        reader = rayquet.scan(root, batch_size=500)
        next(reader)
        next(reader)
        del reader
        gc.collect()
    assert wait_until(lambda: new_threads_gone(before)), reader_threads() - before


def test_close_mid_scan_winds_down(dataset):
    root, _, _ = dataset
    reader = rayquet.scan(root, batch_size=500)
    rows = next(reader).num_rows
    reader.close()
    with pytest.raises(rayquet.CancelledError):
        next(reader)
    assert wait_until(lambda: reader.metrics()["tasks_running"] == 0)
    total = sum(pq.read_metadata(f).num_rows for f in sorted(root.iterdir()))
    assert reader.metrics()["rows"] < total
    assert rows == 500


def interrupt_later(how: str, after: float = 0.3) -> threading.Thread:
    def fire():
        time.sleep(after)
        if how == "interrupt_main":
            _thread.interrupt_main()
        else:
            os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=fire, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("how", ["interrupt_main", "sigint"])
def test_keyboard_interrupt_while_iterating(big_file, how):
    reader = long_scan(big_file)
    t = interrupt_later(how)
    with pytest.raises(KeyboardInterrupt):
        for _ in reader:
            pass
    t.join()
    # The interrupt ended the scan early, and cancelled it.
    with pytest.raises(rayquet.CancelledError):
        next(reader)
    assert wait_until(lambda: reader.metrics()["tasks_running"] == 0)
    assert reader.metrics()["row_groups"] < 400 * pq.read_metadata(big_file).num_row_groups


def test_keyboard_interrupt_in_read_all(big_file):
    reader = long_scan(big_file)
    t = interrupt_later("interrupt_main")
    with pytest.raises(KeyboardInterrupt):
        reader.read_all()
    t.join()
    with pytest.raises(rayquet.CancelledError):
        reader.read_all()
    assert wait_until(lambda: reader.metrics()["tasks_running"] == 0)


def test_other_threads_keep_running_while_a_reader_waits(big_file):
    """The GIL is released while waiting: a Python thread makes progress meanwhile."""
    reader = long_scan(big_file)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    interrupter = interrupt_later("interrupt_main", after=0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            reader.read_all()
    finally:
        stop.set()
        t.join()
        interrupter.join()
    assert len(ticks) > 10


def test_a_stream_outlives_its_reader(big_file):
    """`pa.RecordBatchReader.from_stream(rayquet.scan(...))` drops the reader before the first
    batch is asked for: the exported stream owns the scan, which must not be cancelled. A scan
    long enough that it cannot finish before the reader goes."""
    files = [big_file] * 6
    expected = sum(pq.read_metadata(big_file).num_rows for _ in files)
    stream = pa.RecordBatchReader.from_stream(rayquet.scan(files, batch_size=1000))
    gc.collect()
    time.sleep(0.05)
    got = stream.read_all()
    assert got.num_rows == expected
    want = pq.read_table(big_file).column("v")
    assert got.column("v").slice(0, len(want)).equals(want)


def test_an_unread_stream_dropped_with_its_reader_stops_the_scan(big_file):
    before = reader_threads()
    reader = rayquet.scan([big_file] * 50, batch_size=1000)
    next(reader)  # a helper thread runs the scan
    stream = pa.RecordBatchReader.from_stream(reader)
    del reader
    gc.collect()
    del stream
    gc.collect()
    assert wait_until(lambda: new_threads_gone(before)), reader_threads() - before


@pytest.mark.parametrize("consumer", ["pyarrow", "polars"])
def test_keyboard_interrupt_through_the_c_stream(big_file, consumer):
    """Ctrl-C while pyarrow or polars reads the exported stream on the main thread: the stream
    ends with a Cancelled error, its scan is cancelled, and KeyboardInterrupt reaches the
    caller (pyarrow raises it itself; polars raises its error for the stream first, and the
    interrupt follows at the next line of Python)."""
    import polars as pl

    reader = long_scan(big_file)
    read = pa.table if consumer == "pyarrow" else pl.DataFrame

    def consume():
        try:
            read(reader)
        except (pa.ArrowInvalid, pl.exceptions.ComputeError) as e:
            assert "cancelled: interrupted (Ctrl-C)" in str(e)
            deadline = time.monotonic() + GUARD
            while time.monotonic() < deadline:
                time.sleep(0.01)
        raise AssertionError("no KeyboardInterrupt")

    t = interrupt_later("sigint")
    with pytest.raises(KeyboardInterrupt):
        consume()
    t.join()
    assert wait_until(lambda: reader.metrics()["tasks_running"] == 0)
    assert reader.metrics()["row_groups"] < 400 * pq.read_metadata(big_file).num_row_groups
