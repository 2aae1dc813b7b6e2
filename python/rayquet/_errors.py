"""rayquet's errors as Python exceptions.

Every error a scan raises is a :class:`RayquetError` carrying rayquet's ``kind`` (the name of
its ``rayquet::ErrorKind``), the ``path`` of the file (or table file) it concerns and the
``row_group`` where known. Each kind has its subclass; those that fit also subclass Python's
own: :class:`NotFoundError` is a ``FileNotFoundError``, :class:`PermissionDeniedError` a
``PermissionError``, :class:`StorageError` an ``OSError``, :class:`InvalidArgumentError` a
``ValueError``.
"""

from __future__ import annotations

import errno as _errno
from typing import Optional

__all__ = [
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


class RayquetError(Exception):
    """An error from a rayquet scan.

    Attributes:
        kind: rayquet's error kind: ``"NotFound"``, ``"PermissionDenied"``, ``"Io"``,
            ``"CorruptFooter"``, ``"CorruptData"``, ``"CorruptTable"``, ``"Unsupported"``,
            ``"SchemaMismatch"``, ``"InvalidArgument"``, ``"Cancelled"`` or ``"Panic"``.
        path: the file (URL or path) the error concerns, if any.
        row_group: the row group the error concerns, if known.
        message: the full message (kind, location, details and causes).
    """

    kind: str = "Other"

    def __init__(
        self,
        message: str,
        kind: Optional[str] = None,
        path: Optional[str] = None,
        row_group: Optional[int] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind
        self.path = path
        self.row_group = row_group

    def __str__(self) -> str:
        return self.message


class _OSErrorMixin:
    """Fills the ``OSError`` attributes (``errno``, ``strerror``, ``filename``)."""

    _errno: Optional[int] = None

    def _fill_oserror(self) -> None:
        self.errno = self._errno
        self.strerror = self.message
        self.filename = self.path


class NotFoundError(RayquetError, FileNotFoundError, _OSErrorMixin):
    """A file, prefix or table does not exist (``kind == "NotFound"``); a ``FileNotFoundError``
    whose ``filename`` is the path."""

    kind = "NotFound"
    _errno = _errno.ENOENT

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._fill_oserror()


class PermissionDeniedError(RayquetError, PermissionError, _OSErrorMixin):
    """The store refused access (``kind == "PermissionDenied"``); a ``PermissionError``."""

    kind = "PermissionDenied"
    _errno = _errno.EACCES

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._fill_oserror()


class StorageError(RayquetError, OSError, _OSErrorMixin):
    """Any other IO or object-store failure (``kind == "Io"``); an ``OSError``."""

    kind = "Io"

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._fill_oserror()


class CorruptFileError(RayquetError):
    """A Parquet file's footer or data cannot be read (``kind`` ``"CorruptFooter"`` or
    ``"CorruptData"``): truncated, not Parquet, damaged pages. Names the file (and row
    group)."""

    kind = "CorruptData"


class CorruptTableError(RayquetError):
    """A table's metadata (Iceberg metadata, manifests; a Delta log) is damaged
    (``kind == "CorruptTable"``)."""

    kind = "CorruptTable"


class UnsupportedError(RayquetError):
    """The file or table uses something rayquet does not read (``kind == "Unsupported"``)."""

    kind = "Unsupported"


class SchemaMismatchError(RayquetError):
    """Two files of one scan have different schemas (``kind == "SchemaMismatch"``)."""

    kind = "SchemaMismatch"


class InvalidArgumentError(RayquetError, ValueError):
    """The scan was configured wrongly: unknown column, a filter that does not parse, a bad
    URL (``kind == "InvalidArgument"``); a ``ValueError``."""

    kind = "InvalidArgument"


class CancelledError(RayquetError):
    """The scan was stopped before it finished: the reader was closed, or interrupted
    (KeyboardInterrupt) while waiting (``kind == "Cancelled"``)."""

    kind = "Cancelled"


class PanicError(RayquetError):
    """A task panicked (inside parquet, say); rayquet caught it (``kind == "Panic"``)."""

    kind = "Panic"


_BY_KIND = {
    "NotFound": NotFoundError,
    "PermissionDenied": PermissionDeniedError,
    "Io": StorageError,
    "CorruptFooter": CorruptFileError,
    "CorruptData": CorruptFileError,
    "CorruptTable": CorruptTableError,
    "Unsupported": UnsupportedError,
    "SchemaMismatch": SchemaMismatchError,
    "InvalidArgument": InvalidArgumentError,
    "Cancelled": CancelledError,
    "Panic": PanicError,
}


def _from_rayquet(
    kind: str, message: str, path: Optional[str], row_group: Optional[int]
) -> RayquetError:
    """The exception for an error of ``kind`` (called by the extension module)."""
    cls = _BY_KIND.get(kind, RayquetError)
    return cls(message, kind=kind, path=path, row_group=row_group)
