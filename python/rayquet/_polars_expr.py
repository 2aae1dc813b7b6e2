"""polars predicates as rayquet filters, for the lazy frames of :mod:`rayquet.polars`.

polars hands an IO source its predicate as a ``pl.Expr``; its JSON form
(``Expr.meta.serialize(format="json")``, polars 1.x-2.x) is read here and the parts rayquet's SQL
says the same way are written in it. The source still applies polars' whole predicate to every
batch, so a filter pushed into rayquet only has to keep every row polars keeps:

- an ``&`` pushes the conjuncts that translate and drops the others (polars applies them);
- an ``|`` or ``~`` pushes only when everything under it translates exactly;
- comparisons of a column with a literal of its own kind (integers within the column's range,
  finite floats (polars' JSON writes an infinite or NaN one as null), decimals the column holds
  exactly, strings, booleans, dates, timestamps of the same time zone kind),
  ``is_null``/``is_not_null``, ``is_between``, ``is_in`` of a literal list, and
  ``str.starts_with``/``ends_with``/``contains(literal=True)`` translate; anything else
  (casts, arithmetic, two columns, nested fields) is left to polars.

Both evaluators order NaN above every number and treat ``-0.0`` as ``0.0`` (rayquet
canonicalises NaNs before comparing, ``src/expr/eval.rs``), and a null compared with anything
is null in both, so a translated comparison keeps the same rows as polars.

Invariant: :func:`pushdown` returns SQL whose rows are a superset of the predicate's (exactly
its rows when nothing was dropped), or ``None``; it never raises for an expression it cannot read.
"""

from __future__ import annotations

import datetime
import io
import json
import math
from typing import Any, Dict, Iterable, NamedTuple, Optional, Tuple

_OPS = {"Eq": "=", "NotEq": "!=", "Lt": "<", "LtEq": "<=", "Gt": ">", "GtEq": ">="}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_UNITS = {"Nanoseconds": 9, "Microseconds": 6, "Milliseconds": 3}


class _Skip(Exception):
    """Raised inside the translation where an expression does not translate exactly."""


class ColumnType(NamedTuple):
    """What the translation needs of a column's Arrow type (``Reader._types()`` reports it
    without pyarrow): ``kind`` is ``int``, ``uint``, ``float``, ``string``, ``bool``,
    ``date32``, ``decimal``, ``timestamp`` or ``other``."""

    kind: str
    bit_width: int
    precision: int
    scale: int
    unit: str
    tz: Optional[str]


def column_types(described: Iterable[Tuple[str, tuple]]) -> Dict[str, ColumnType]:
    """``Reader._types()``'s (name, type info) pairs as a dict of :class:`ColumnType`."""
    return {name: ColumnType(*info) for name, info in described}


def pushdown(predicate: Any, types: Dict[str, ColumnType]) -> Optional[str]:
    """The rayquet SQL for as much of ``predicate`` (a ``pl.Expr``) as translates, or ``None``."""
    if predicate is None:
        return None
    try:
        tree = json.loads(predicate.meta.serialize(format="json"))
    except Exception:
        return None
    return _Translator(types).superset(tree)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _only(node: Any) -> tuple:
    """A one-key JSON object as (key, value)."""
    if isinstance(node, dict) and len(node) == 1:
        return next(iter(node.items()))
    if isinstance(node, str):
        return node, None
    raise _Skip()


class _Translator:
    def __init__(self, types: Dict[str, ColumnType]):
        self.types = types

    def superset(self, node: Any) -> Optional[str]:
        """SQL keeping every row ``node`` keeps: the translatable conjuncts of an ``&``."""
        try:
            kind, body = _only(node)
            if kind == "BinaryExpr" and body["op"] in ("And", "LogicalAnd"):
                parts = [self.superset(body["left"]), self.superset(body["right"])]
                parts = [p for p in parts if p is not None]
                return " AND ".join(f"({p})" for p in parts) if parts else None
            return self.exact(node)
        except (_Skip, KeyError, TypeError, ValueError, IndexError):
            return None

    def exact(self, node: Any) -> str:
        kind, body = _only(node)
        if kind == "BinaryExpr":
            op = body["op"]
            if op in ("And", "LogicalAnd", "Or", "LogicalOr"):
                word = "AND" if "And" in op else "OR"
                return f"({self.exact(body['left'])}) {word} ({self.exact(body['right'])})"
            if op not in _OPS:
                raise _Skip()
            return self.compare(body["left"], _OPS[op], body["right"])
        if kind == "Column":
            col, ty = self.column(node)
            if ty.kind != "bool":
                raise _Skip()
            return f"{col} = TRUE"
        if kind != "Function":
            raise _Skip()
        inputs, function = body["input"], body["function"]
        fkind, fbody = _only(function)
        if fkind == "Boolean":
            name, options = _only(fbody)
            if name == "Not" and len(inputs) == 1:
                return f"NOT ({self.exact(inputs[0])})"
            if name in ("IsNull", "IsNotNull") and len(inputs) == 1:
                col, _ = self.column(inputs[0])
                return f"{col} IS {'NOT ' if name == 'IsNotNull' else ''}NULL"
            if name == "IsBetween" and len(inputs) == 3:
                closed = options["closed"]
                low = ">=" if closed in ("Both", "Left") else ">"
                high = "<=" if closed in ("Both", "Right") else "<"
                return (
                    f"{self.compare(inputs[0], low, inputs[1])} AND "
                    f"{self.compare(inputs[0], high, inputs[2])}"
                )
            if name == "IsIn" and len(inputs) == 2 and not options.get("nulls_equal"):
                return self.is_in(inputs[0], inputs[1])
            raise _Skip()
        if fkind == "StringExpr" and len(inputs) == 2:
            name, options = _only(fbody)
            col, ty = self.column(inputs[0])
            if not _is_string(ty):
                raise _Skip()
            text = self.literal_value(inputs[1])
            if not isinstance(text, str):
                raise _Skip()
            if name == "Contains" and not (options or {}).get("literal"):
                raise _Skip()
            pattern = {"StartsWith": "{}%", "EndsWith": "%{}", "Contains": "%{}%"}.get(name)
            if pattern is None:
                raise _Skip()
            escaped = "".join("\\" + c if c in "%_\\" else c for c in text)
            return f"{col} LIKE {_string(pattern.format(escaped))}"
        raise _Skip()

    def column(self, node: Any) -> tuple:
        """A column the scan reads, as SQL, and its type."""
        kind, name = _only(node)
        if kind != "Column" or name not in self.types:
            raise _Skip()
        return _quote(name), self.types[name]

    def compare(self, left: Any, op: str, right: Any) -> str:
        if _only(left)[0] == "Literal":
            left, right, op = right, left, _FLIP[op]
        col, ty = self.column(left)
        return f"{col} {op} {self.literal(right, ty)}"

    def literal_value(self, node: Any) -> Any:
        """A literal as (Python value) for strings and numbers; raises for others."""
        kind, body = _only(node)
        if kind != "Literal":
            raise _Skip()
        lkind, value = _only(body)
        vkind, v = _only(value)
        if lkind == "Dyn" and vkind in ("Int", "Float", "Str"):
            return v
        if lkind == "Scalar" and vkind == "String":
            return v
        raise _Skip()

    def literal(self, node: Any, ty: ColumnType) -> str:
        kind, body = _only(node)
        if kind != "Literal":
            raise _Skip()
        _, value = _only(body)
        vkind, v = _only(value)
        return _sql_value(vkind, v, ty)

    def is_in(self, column: Any, values: Any) -> str:
        col, ty = self.column(column)
        kind, body = _only(values)
        if kind != "Literal":
            raise _Skip()
        _, value = _only(body)
        vkind, v = _only(value)
        if vkind != "List" or not isinstance(v, list):
            raise _Skip()
        # The list is an Arrow IPC stream of one column (polars' serialized Series).
        import polars as pl

        frame = pl.read_ipc_stream(io.BytesIO(bytes(v)))
        if frame.width != 1:
            raise _Skip()
        items = [x for x in frame.to_series(0).to_list() if x is not None]
        if not items:
            raise _Skip()
        texts = [_python_value(x, ty) for x in items]
        return f"{col} IN ({', '.join(texts)})"


def _is_string(ty: ColumnType) -> bool:
    return ty.kind == "string"


def _integer_text(v: Any, ty: ColumnType) -> str:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Skip()
    bits = ty.bit_width
    low, high = (0, 2**bits - 1) if ty.kind == "uint" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not low <= v <= high:
        raise _Skip()
    return str(v)


def _float_text(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _Skip()
    x = float(v)
    if math.isnan(x):
        raise _Skip()
    if math.isinf(x):
        return "'-inf'" if x < 0 else "'inf'"
    return repr(x)


def _sql_value(vkind: str, v: Any, ty: ColumnType) -> str:
    """A polars JSON literal (its kind and value) as SQL for a column of type ``ty``."""
    if ty.kind in ("int", "uint") and (vkind == "Int" or vkind.startswith(("Int", "UInt"))):
        return _integer_text(v, ty)
    if ty.kind == "float" and (vkind in ("Int", "Float") or vkind.startswith(("Int", "UInt", "Float"))):
        return _float_text(v)
    if _is_string(ty) and vkind in ("String", "Str"):
        return _string(v)
    if ty.kind == "bool" and vkind == "Boolean" and isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if ty.kind == "date32" and vkind == "Date" and isinstance(v, int):
        day = datetime.date(1970, 1, 1) + datetime.timedelta(days=v)
        return _string(day.isoformat())
    if ty.kind == "decimal" and vkind in ("Decimal", "Int"):
        unscaled, scale = (v[0], v[2]) if vkind == "Decimal" else (v, 0)
        return _decimal_text(unscaled, scale, ty)
    if ty.kind == "timestamp" and vkind == "Datetime":
        value, unit, tz = v
        if unit not in _UNITS or (tz is None) != (ty.tz is None):
            raise _Skip()
        precision, column = _UNITS[unit], {"s": 0, "ms": 3, "us": 6, "ns": 9}[ty.unit]
        # rayquet refuses a literal its column cannot hold exactly (a microsecond on a
        # millisecond column): such a comparison is left to polars.
        if precision > column and int(value) % 10 ** (precision - column):
            raise _Skip()
        return _timestamp(int(value), precision, ty.tz is not None)
    raise _Skip()


def _decimal_text(unscaled: Any, scale: Any, ty: ColumnType) -> str:
    """``unscaled * 10^-scale`` for a decimal column, only when the column holds it exactly
    (rayquet refuses a literal its column cannot hold; polars compares it exactly)."""
    if isinstance(unscaled, bool) or not isinstance(unscaled, int) or not isinstance(scale, int):
        raise _Skip()
    while scale > ty.scale and unscaled % 10 == 0 and unscaled:
        unscaled, scale = unscaled // 10, scale - 1
    if unscaled == 0:
        scale = min(scale, ty.scale)
    if scale > ty.scale or scale < 0 or len(str(abs(unscaled))) - scale > ty.precision - ty.scale:
        raise _Skip()
    sign, digits = ("-" if unscaled < 0 else ""), str(abs(unscaled)).rjust(scale + 1, "0")
    return _string(f"{sign}{digits[:len(digits) - scale]}.{digits[len(digits) - scale:]}" if scale else sign + digits)


def _python_value(x: Any, ty: ColumnType) -> str:
    """A value of an ``is_in`` list (as polars gives it) as SQL for a column of type ``ty``."""
    if ty.kind in ("int", "uint"):
        return _integer_text(x, ty)
    if ty.kind == "float":
        return _float_text(x)
    if _is_string(ty) and isinstance(x, str):
        return _string(x)
    if ty.kind == "date32" and type(x) is datetime.date:
        return _string(x.isoformat())
    raise _Skip()


def _timestamp(value: int, precision: int, zoned: bool) -> str:
    seconds, fraction = divmod(value, 10**precision)
    try:
        moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    except OverflowError:
        raise _Skip() from None
    text = moment.strftime("%Y-%m-%dT%H:%M:%S") + "." + str(fraction).rjust(precision, "0")
    return _string(text + ("+00:00" if zoned else ""))
