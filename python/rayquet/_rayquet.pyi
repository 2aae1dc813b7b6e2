"""Type stubs of the extension module ``rayquet._rayquet`` (``python/src``): what the Python
layer (``rayquet/__init__.py``) calls and what users get back."""

from types import TracebackType
from typing import Dict, Iterator, List, Mapping, Optional, Tuple, Type

import pyarrow as pa

__version__: str

class Reader:
    """One pass over a scan's batches (see :mod:`rayquet`)."""

    @property
    def schema(self) -> pa.Schema: ...
    def __iter__(self) -> Iterator[pa.RecordBatch]: ...
    def __next__(self) -> pa.RecordBatch: ...
    def read_next_batch(self) -> pa.RecordBatch: ...
    def read_all(self) -> pa.Table: ...
    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def metrics(self) -> Dict[str, float]: ...
    def _next_group(self, rows: int, bytes: int) -> Optional[object]: ...
    def _count_rows(self) -> int: ...
    def _types(
        self,
    ) -> List[Tuple[str, Tuple[str, int, int, int, str, Optional[str]]]]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Reader": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

def scan(
    paths: List[str],
    columns: Optional[List[str]] = None,
    filter: Optional[str] = None,
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
) -> Reader: ...
def iceberg(
    location: str,
    snapshot_id: Optional[int] = None,
    ref: Optional[str] = None,
    columns: Optional[List[str]] = None,
    filter: Optional[str] = None,
    limit: Optional[int] = None,
    batch_size: Optional[int] = None,
    ordered: bool = True,
    storage_options: Optional[Mapping[str, str]] = None,
    *,
    as_of_timestamp: Optional[int] = None,
    case_sensitive: bool = True,
    memory_budget: Optional[int] = None,
    string_views: bool = False,
    memory_map: bool = False,
    verify_checksums: bool = True,
    catalog: Optional[str] = None,
    catalog_properties: Optional[Mapping[str, str]] = None,
    file_io_properties: Optional[Mapping[str, str]] = None,
) -> Reader: ...
def delta(
    location: str,
    version: Optional[int] = None,
    columns: Optional[List[str]] = None,
    filter: Optional[str] = None,
    limit: Optional[int] = None,
    batch_size: Optional[int] = None,
    ordered: bool = True,
    storage_options: Optional[Mapping[str, str]] = None,
    *,
    memory_budget: Optional[int] = None,
    string_views: bool = False,
    memory_map: bool = False,
    verify_checksums: bool = True,
    as_of_timestamp: Optional[int] = None,
) -> Reader: ...

