"""Reusable datasets and tables: :func:`rayquet.dataset` and :func:`rayquet.table`.

A :class:`Reader` is one pass over a scan (as a ``pyarrow.RecordBatchReader`` is); a
:class:`Dataset` remembers what to scan and how (paths or table, storage options, budget) and
opens a fresh reader for every ``scan()``, ``to_arrow()``, ``to_pandas()``, ``to_polars()``,
``count()`` or Arrow C stream export, so duckdb can query it any number of times and pandas and
polars users get their frames in one call.

Invariant: every method reads the dataset as it is at that call (a table's newest snapshot or
version unless one was pinned); only the schema is read once and kept.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, List, Optional, Sequence

if TYPE_CHECKING:
    import pyarrow as pa


class Dataset:
    """Parquet files or a table that can be scanned any number of times.

    Made by :func:`rayquet.dataset` (Parquet files, directories, prefixes) and
    :func:`rayquet.table` (an Iceberg or Delta table).
    """

    def __init__(self, open_reader: Callable[..., Any], kind: str, source: str, lazy: Callable[[], Any]):
        self._open = open_reader
        self._kind = kind
        self._source = source
        self._lazy = lazy
        self._schema: List[Any] = []

    def scan(
        self,
        columns: Optional[Sequence[str]] = None,
        filter: Any = None,
        limit: Optional[int] = None,
        batch_size: Optional[int] = None,
    ) -> Any:
        """A new :class:`rayquet.Reader` over the rows where ``filter`` holds (SQL or a
        ``pyarrow.compute.Expression``, as :func:`rayquet.scan` takes it)."""
        return self._open(columns=columns, filter=filter, limit=limit, batch_size=batch_size)

    @property
    def schema(self) -> pa.Schema:
        """The Arrow schema of every batch (read once, from the first footer or the table's
        metadata)."""
        if not self._schema:
            with self.scan(limit=0) as reader:
                self._schema.append(reader.schema)
        return self._schema[0]

    def to_arrow(
        self, columns: Optional[Sequence[str]] = None, filter: Any = None, limit: Optional[int] = None
    ) -> pa.Table:
        """The rows as a ``pyarrow.Table``."""
        return self.scan(columns, filter, limit).read_all()

    def to_pandas(
        self, columns: Optional[Sequence[str]] = None, filter: Any = None, limit: Optional[int] = None
    ) -> Any:
        """The rows as a ``pandas.DataFrame`` (through pyarrow's ``Table.to_pandas``)."""
        return self.to_arrow(columns, filter, limit).to_pandas()

    def to_polars(
        self, columns: Optional[Sequence[str]] = None, filter: Any = None, limit: Optional[int] = None
    ) -> Any:
        """The rows as a ``polars.DataFrame`` (through the Arrow C stream: no pyarrow needed)."""
        import polars as pl

        return pl.DataFrame(self.scan(columns, filter, limit))

    def lazy(self) -> Any:
        """A ``polars.LazyFrame`` over the dataset (see :mod:`rayquet.polars`)."""
        return self._lazy()

    def count(self, filter: Any = None) -> int:
        """How many rows there are (where ``filter`` holds): no column is read, so without a
        filter only the footers (or a table's metadata and data files' footers) are."""
        with self.scan(columns=[], filter=filter) as reader:
            return int(reader._count_rows())

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """A fresh scan as an Arrow C stream (the PyCapsule interface): ``pa.table(ds)``,
        ``pl.DataFrame(ds)``, ``duckdb.sql("select ... from ds")``, as often as wanted."""
        return self.scan().__arrow_c_stream__(requested_schema)

    def __repr__(self) -> str:
        return f"rayquet.Dataset({self._kind}, {self._source!r})"
