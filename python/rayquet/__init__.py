"""rayquet for Python: Parquet files, Iceberg tables and Delta tables read on every core into
Arrow record batches.

A small tokio runtime does the IO (prefetching upcoming row groups into a bounded buffer), a
rayon pool decodes, and your thread pulls batches, in order by default. Every function returns a
:class:`Reader`: iterate it for ``pyarrow.RecordBatch``\\ es, call ``read_all()`` for a
``pyarrow.Table``, or hand it to anything that reads an Arrow stream (it has
``__arrow_c_stream__``): ``pa.table(reader)``, ``pl.DataFrame(reader)``,
``duckdb.sql("select ... from reader")``, without copies.

pyarrow is optional (``pip install 'rayquet[pyarrow]'``): only the methods that return pyarrow
objects (iteration, ``read_all()``, ``schema``, pyarrow filter expressions) need it; polars users
get their frames through the C stream (``pl.DataFrame(reader)``, :mod:`rayquet.polars`).

>>> import rayquet
>>> reader = rayquet.scan("lineitem/", columns=["l_orderkey", "l_quantity"],
...                       filter="l_quantity < 5")
>>> table = reader.read_all()

While a reader waits for a batch the GIL is released; Ctrl-C (KeyboardInterrupt) interrupts the
wait and cancels the scan, as does ``reader.close()`` or dropping the reader. Errors are
:class:`RayquetError` subclasses carrying rayquet's ``kind``, ``path`` and ``row_group``.
"""

from __future__ import annotations

import datetime
import os
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

# Results are pyarrow objects when pyarrow is installed: import it now, not inside the first
# read (~90 ms). It is optional: without it, readers go to polars through the C stream.
try:
    import pyarrow  # noqa: F401
except ImportError:
    pass

from . import _rayquet
from ._errors import (
    CancelledError,
    CorruptFileError,
    CorruptTableError,
    InvalidArgumentError,
    NotFoundError,
    PanicError,
    PermissionDeniedError,
    RayquetError,
    SchemaMismatchError,
    StorageError,
    UnsupportedError,
)
from ._dataset import Dataset
from ._rayquet import Reader

__version__ = _rayquet.__version__

__all__ = [
    "scan",
    "iceberg",
    "DEFAULT_BATCH_SIZE",
    "delta",
    "dataset",
    "table",
    "Dataset",
    "Reader",
    "RayquetError",
    "NotFoundError",
    "PermissionDeniedError",
    "StorageError",
    "CorruptFileError",
    "CorruptTableError",
    "UnsupportedError",
    "SchemaMismatchError",
    "InvalidArgumentError",
    "CancelledError",
    "PanicError",
]

PathLike = Union[str, "os.PathLike[str]"]

#: Rows per batch when ``batch_size`` is not given: 65,536, eight times the Rust default
#: (8,192, what DataFusion's operators expect). Every batch has a fixed cost (in the decoders,
#: the Arrow C stream and the interpreter) and ``read_all()`` keeps them all as a table's
#: chunks, so fewer, larger batches are cheaper: the warm ``read_all()`` of TPC-H lineitem
#: (SF1) took 0.18-0.21 s against 0.22-0.24 s with 8,192 rows per batch, two columns 0.043
#: against 0.049 s (BENCHMARKS.md, "Python"). pyarrow's datasets use 131,072. The first batch
#: still comes within ~20 ms of the call.
DEFAULT_BATCH_SIZE = 65536


def _location(path: PathLike) -> str:
    return os.fspath(path)


def _locations(paths: Union[PathLike, Iterable[PathLike]]) -> list:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    out = [os.fspath(p) for p in paths]
    if not out:
        raise InvalidArgumentError("no input given", kind="InvalidArgument")
    return out


def _counts(limit, batch_size, memory_budget) -> None:
    """Refuse counts that are not whole numbers, or negative (``batch_size``: below 1), with
    the option's name, before they reach the extension (whose conversion error names none)."""
    for name, value, least in (
        ("limit", limit, 0),
        ("batch_size", batch_size, 1),
        ("memory_budget", memory_budget, 0),
    ):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgumentError(
                f"{name} must be an int, not {type(value).__name__}", kind="InvalidArgument"
            )
        if value < least:
            what = "positive" if least else "non-negative"
            raise InvalidArgumentError(
                f"{name} must be {what}, got {value}", kind="InvalidArgument"
            )


def _no_views(string_views: bool) -> None:
    if string_views:
        raise InvalidArgumentError(
            "string_views=True does nothing for a table: its batches have the types of its "
            "schema (string, binary); cast them (pyarrow.compute.cast) where views are wanted",
            kind="InvalidArgument",
        )


def _epoch_millis(value: Any, name: str) -> Optional[int]:
    """Milliseconds since the epoch from an int, a ``datetime``/``date`` or an ISO 8601 string
    (UTC when it names no time zone); anything else is an :class:`InvalidArgumentError`."""
    import datetime as dt

    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    moment = value
    if isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value)
        except ValueError:
            raise InvalidArgumentError(
                f"{name}: {value!r} is not an ISO 8601 date or time", kind="InvalidArgument"
            ) from None
    elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        moment = dt.datetime(value.year, value.month, value.day)
    if not isinstance(moment, dt.datetime):
        raise InvalidArgumentError(
            f"{name} must be milliseconds since the epoch, a datetime or an ISO 8601 string, "
            f"not {type(value).__name__}",
            kind="InvalidArgument",
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    delta = moment - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    return delta // dt.timedelta(milliseconds=1)


Filter = Union[str, "pyarrow.compute.Expression"]


def _filter(filter: Optional[Filter], probe) -> Optional[str]:
    """A filter as rayquet SQL: a string as it is, a pyarrow expression translated against
    the schema ``probe()``'s reader reports (a reader that reads no rows)."""
    if filter is None or isinstance(filter, str):
        return filter

    def schema_of():
        reader = probe()
        try:
            return reader.schema
        finally:
            reader.close()

    # A pyarrow expression: pyarrow is installed.
    from . import _expression

    return _expression.to_sql(filter, schema_of)


def _columns(columns: Optional[Sequence[str]]) -> Optional[list]:
    if columns is None:
        return None
    if isinstance(columns, str):
        return [columns]
    return list(columns)


def scan(
    paths_or_urls: Union[PathLike, Iterable[PathLike]],
    columns: Optional[Sequence[str]] = None,
    filter: Optional[Filter] = None,
    limit: Optional[int] = None,
    batch_size: Optional[int] = None,
    ordered: bool = True,
    storage_options: Optional[Mapping[str, str]] = None,
    *,
    memory_budget: Optional[int] = None,
    string_views: bool = False,
    memory_map: bool = False,
    row_index: Optional[str] = None,
    verify_checksums: bool = True,
    union_by_name: bool = False,
) -> Reader:
    """Scan Parquet files, directories or prefixes.

    Args:
        paths_or_urls: a local path or URL (``s3://``, ``gs://``, ``az://``, ``file://``), or a
            list of them, read in that order. A directory or prefix (or a trailing ``/``) means
            every ``*.parquet`` object under it, in lexical order; Hive-style ``name=value``
            directories become columns.
        columns: the columns to read, in this order (``"a.b"`` selects a nested field).
            Default: all.
        filter: only rows where this SQL expression is true (rayquet's parser: ``= != < <= >
            >=``, ``IN``, ``IS [NOT] NULL``, ``BETWEEN``, ``[NOT] LIKE``/``ILIKE``,
            ``AND``/``OR``/``NOT``), e.g.
            ``"l_quantity < 5 AND l_shipmode = 'AIR'"``; or a ``pyarrow.compute.Expression``
            of the same forms (``(pc.field("l_quantity") < 5) & pc.field("l_shipmode").isin(
            ["AIR"])``; ``pc.starts_with``, ``pc.ends_with`` and ``pc.match_substring`` of a
            string column as ``LIKE`` patterns), which keeps exactly the rows
            ``pyarrow.dataset`` keeps for it (an
            expression that cannot be translated exactly, such as arithmetic or a cast, is an
            :class:`InvalidArgumentError`). Exact, and used to skip row groups and pages that
            cannot match.
        limit: at most this many rows.
        batch_size: rows per batch (a row group's last batch may be shorter); ``None``:
            :data:`DEFAULT_BATCH_SIZE` (65,536).
        ordered: deliver batches in file and row order (``True``) or as soon as they are ready.
        storage_options: object_store configuration keys (``aws_region``, ``aws_endpoint``,
            ``aws_allow_http``, ``google_service_account``, ``azure_storage_account_name``...);
            the environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``) is read too.
        memory_budget: bytes fetched or decoded but not yet delivered (default 256 MiB).
        string_views: strings and binaries as ``string_view``/``binary_view``.
        memory_map: map local files instead of reading them (only for files nobody rewrites).
        row_index: add an ``int64`` column of this name: each row's position in its file.
        verify_checksums: check the CRC-32 of every page whose header has one before decoding
            it (a mismatch is a :class:`CorruptFileError` naming the page); ``False`` skips it.
        union_by_name: read files whose schemas differ as one schema, as duckdb's
            ``union_by_name`` and ``pyarrow.unify_schemas``: columns matched by name, in the
            order they first appear; a column a file lacks is null in its rows; a type that
            differs widens where both convert exactly (``int32`` and ``int64``: ``int64``),
            anything else is a :class:`SchemaMismatchError`. Every footer is read before the
            first batch. Default ``False``: every file must have the first file's schema.

    Returns:
        A :class:`Reader`; its schema is known (the first footer was read).
    """
    locations = _locations(paths_or_urls)
    _counts(limit, batch_size, memory_budget)
    options = dict(storage_options) if storage_options is not None else None
    filter = _filter(
        filter,
        lambda: _rayquet.scan(
            locations, None, None, 0, DEFAULT_BATCH_SIZE, ordered, options,
            memory_budget=memory_budget, memory_map=memory_map, row_index=row_index,
            union_by_name=union_by_name,
        ),
    )
    return _rayquet.scan(
        locations,
        _columns(columns),
        filter,
        limit,
        DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
        ordered,
        options,
        memory_budget=memory_budget,
        string_views=string_views,
        memory_map=memory_map,
        row_index=row_index,
        verify_checksums=verify_checksums,
        union_by_name=union_by_name,
    )


def iceberg(
    table_location: Union[PathLike, Any],
    snapshot_id: Optional[int] = None,
    ref: Optional[str] = None,
    columns: Optional[Sequence[str]] = None,
    filter: Optional[Filter] = None,
    limit: Optional[int] = None,
    batch_size: Optional[int] = None,
    ordered: bool = True,
    storage_options: Optional[Mapping[str, str]] = None,
    *,
    as_of_timestamp: Union[int, str, "datetime.datetime", None] = None,
    case_sensitive: bool = True,
    memory_budget: Optional[int] = None,
    string_views: bool = False,
    memory_map: bool = False,
    verify_checksums: bool = True,
    catalog: Optional[str] = None,
    **catalog_properties: str,
) -> Reader:
    """Scan an Iceberg table (formats v1, v2 and v3: deletes, schema evolution, partitions).

    Args:
        table_location: the table's directory (with its ``metadata/`` folder) or a metadata
            JSON file, a local path or URL; with ``catalog``, ``namespace.table``; or a
            pyiceberg ``Table`` (its metadata location, read with its FileIO's storage
            properties under ``storage_options``).
        catalog: the name of the catalog holding the table (REST, Glue, or SQL: pyiceberg's
            ``SqlCatalog`` in sqlite or Postgres), configured as pyiceberg configures it (``~/.pyiceberg.yaml`` or ``$PYICEBERG_HOME/.pyiceberg.yaml``,
            ``PYICEBERG_CATALOG__<NAME>__<KEY>`` variables); ``catalog_properties`` over that
            configuration, as ``pyiceberg.catalog.load_catalog(name, **properties)`` takes
            them (``uri=``, ``credential=``, ``token=``, ``warehouse=``,
            ``**{"s3.endpoint": ...}``).
        snapshot_id: read this snapshot (time travel). Default: the current one.
        ref: read the snapshot this branch or tag points to (wins over ``snapshot_id``).
        columns, filter, limit, batch_size, ordered, storage_options, memory_budget,
            memory_map, verify_checksums: as for :func:`scan`; ``columns`` and ``filter`` name the table's
            columns.
        string_views: must be ``False``: a table's batches have the types of its schema
            (``string``, ``binary``); ``True`` is an :class:`InvalidArgumentError` rather than
            an option silently ignored.
        as_of_timestamp: read the snapshot current at this time: milliseconds since the epoch,
            a ``datetime`` or an ISO 8601 string (``"2026-01-31T12:00:00+01:00"``,
            ``"2026-01-31"``); one without a time zone is UTC, as Iceberg's timestamps are.
        case_sensitive: match column names case-sensitively.

    Files come in the order Iceberg's planner emits them, which may vary between runs;
    within a file rows keep their order.
    """
    file_io = None
    if catalog_properties and catalog is None:
        raise TypeError(
            f"iceberg() got unexpected keyword arguments {sorted(catalog_properties)} "
            "(catalog properties need catalog=NAME)"
        )
    if hasattr(table_location, "metadata_location") and hasattr(table_location, "io"):
        if catalog is not None:
            raise ValueError("pass a pyiceberg Table or a catalog with a table name, not both")
        # A pyiceberg Table: its current metadata and its FileIO's properties.
        file_io = {str(k): str(v) for k, v in dict(table_location.io.properties).items()}
        location = str(table_location.metadata_location)
    elif catalog is not None:
        location = str(table_location)
    else:
        location = _location(table_location)
    _no_views(string_views)
    props = {str(k): str(v) for k, v in catalog_properties.items()} or None
    as_of_timestamp = _epoch_millis(as_of_timestamp, "as_of_timestamp")
    _counts(limit, batch_size, memory_budget)
    options = dict(storage_options) if storage_options is not None else None
    tables = dict(catalog=catalog, catalog_properties=props, file_io_properties=file_io)
    filter = _filter(
        filter,
        lambda: _rayquet.iceberg(
            location, snapshot_id, ref, None, None, 0, DEFAULT_BATCH_SIZE, ordered, options,
            as_of_timestamp=as_of_timestamp, case_sensitive=case_sensitive,
            memory_budget=memory_budget, memory_map=memory_map, **tables,
        ),
    )
    return _rayquet.iceberg(
        location,
        snapshot_id,
        ref,
        _columns(columns),
        filter,
        limit,
        DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
        ordered,
        options,
        as_of_timestamp=as_of_timestamp,
        case_sensitive=case_sensitive,
        memory_budget=memory_budget,
        string_views=string_views,
        memory_map=memory_map,
        verify_checksums=verify_checksums,
        **tables,
    )


def delta(
    table_uri: PathLike,
    version: Union[int, str, "datetime.datetime", "datetime.date", None] = None,
    columns: Optional[Sequence[str]] = None,
    filter: Optional[Filter] = None,
    limit: Optional[int] = None,
    batch_size: Optional[int] = None,
    ordered: bool = True,
    storage_options: Optional[Mapping[str, str]] = None,
    *,
    memory_budget: Optional[int] = None,
    string_views: bool = False,
    memory_map: bool = False,
    verify_checksums: bool = True,
) -> Reader:
    """Scan a Delta table's logical rows (deletion vectors, partitions, column mapping).

    Args:
        table_uri: the table root (above ``_delta_log``), a local path or URL.
        version: read this version of the table: its number, or the version current at a
            time (a ``datetime``, ``date`` or ISO 8601 string, UTC when it names no time zone:
            the newest commit at or before it, as deltalake's ``load_as_version`` picks it).
            Default: the newest.
        columns, filter, limit, batch_size, ordered, storage_options, memory_budget,
            memory_map, verify_checksums: as for :func:`scan`; ``columns`` and ``filter`` name the table's
            columns.
        string_views: must be ``False``: a table's batches have the types of its schema
            (``string``, ``binary``); ``True`` is an :class:`InvalidArgumentError` rather than
            an option silently ignored.
    """
    location = _location(table_uri)
    _no_views(string_views)
    as_of = None
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        as_of, version = _epoch_millis(version, "version"), None
    _counts(limit, batch_size, memory_budget)
    options = dict(storage_options) if storage_options is not None else None
    filter = _filter(
        filter,
        lambda: _rayquet.delta(
            location, version, None, None, 0, DEFAULT_BATCH_SIZE, ordered, options,
            memory_budget=memory_budget, memory_map=memory_map, as_of_timestamp=as_of,
        ),
    )
    return _rayquet.delta(
        location,
        version,
        _columns(columns),
        filter,
        limit,
        DEFAULT_BATCH_SIZE if batch_size is None else batch_size,
        ordered,
        options,
        memory_budget=memory_budget,
        string_views=string_views,
        memory_map=memory_map,
        verify_checksums=verify_checksums,
        as_of_timestamp=as_of,
    )


_QUERY_OPTIONS = ("columns", "filter", "limit", "batch_size")


def _reusable(function, source, options: dict):
    """Check ``options`` against ``function``'s parameters now (a misspelt option is a
    ``TypeError`` here, not at the first scan); the query's own options are ``scan()``'s."""
    import inspect

    given = sorted(set(options) & set(_QUERY_OPTIONS))
    if given:
        raise InvalidArgumentError(
            f"{', '.join(given)}: pass these to scan(), to_arrow() or count(), not here",
            kind="InvalidArgument",
        )
    inspect.signature(function).bind(source, **options)

    def open_reader(**query):
        return function(source, **options, **query)

    return open_reader


def dataset(paths_or_urls: Union[PathLike, Iterable[PathLike]], **options: Any) -> Dataset:
    """Parquet files, directories or prefixes as a :class:`Dataset`, scanned any number of times.

    Args:
        paths_or_urls: what :func:`scan` takes.
        options: :func:`scan`'s other keyword options (``storage_options``, ``memory_budget``,
            ``ordered``, ``row_index``...), used by every scan.

    >>> ds = rayquet.dataset("lineitem/")
    >>> ds.count(), ds.schema
    >>> ds.to_polars(columns=["l_orderkey"], filter="l_quantity < 5")
    >>> duckdb.sql("select count(*) from ds")  # as often as wanted
    """
    if not isinstance(paths_or_urls, (str, os.PathLike)):
        paths_or_urls = _locations(paths_or_urls)
    opener = _reusable(scan, paths_or_urls, options)

    def lazy():
        from . import polars

        return polars.scan_parquet(paths_or_urls, **options)

    return Dataset(opener, "parquet", str(paths_or_urls), lazy)


def _table_format(location: Any, options: dict) -> str:
    if hasattr(location, "metadata_location") or "catalog" in options:
        return "iceberg"
    text = os.fspath(location) if isinstance(location, (str, os.PathLike)) else None
    if text is not None and text.endswith(".metadata.json"):
        return "iceberg"
    if text is not None and "://" not in text:
        if os.path.isdir(os.path.join(text, "_delta_log")):
            return "delta"
        if os.path.isdir(os.path.join(text, "metadata")):
            return "iceberg"
    raise InvalidArgumentError(
        f"cannot tell whether {location!r} is an Iceberg or a Delta table "
        "(no local _delta_log/ or metadata/ folder): pass format='iceberg' or format='delta'",
        kind="InvalidArgument",
    )


def table(location: Any, format: Optional[str] = None, **options: Any) -> Dataset:
    """An Iceberg or Delta table as a :class:`Dataset`, scanned any number of times.

    Args:
        location: what :func:`iceberg` or :func:`delta` takes.
        format: ``"iceberg"`` or ``"delta"``; default: a local table's folders tell
            (``_delta_log/`` or ``metadata/``), as do a pyiceberg ``Table`` and ``catalog=``.
        options: that function's other keyword options (``snapshot_id``, ``version``,
            ``storage_options``, catalog properties...), used by every scan.
    """
    fmt = format if format is not None else _table_format(location, options)
    if fmt == "iceberg":
        function = iceberg
    elif fmt == "delta":
        function = delta
    else:
        raise InvalidArgumentError(
            f"format must be 'iceberg' or 'delta', not {fmt!r}", kind="InvalidArgument"
        )
    opener = _reusable(function, location, options)

    def lazy():
        from . import polars

        scan_table = polars.scan_iceberg if fmt == "iceberg" else polars.scan_delta
        return scan_table(location, **options)

    return Dataset(opener, fmt, str(location), lazy)
