"""pyarrow compute expressions as rayquet filters.

``rayquet.scan(..., filter=pc.field("l_quantity") < 5)`` accepts the expressions a
``pyarrow.dataset`` user already writes. The expression is bound to the scan's schema by pyarrow
itself and serialized as Substrait (``Expression.to_substrait``), the only structured form
pyarrow exposes; this module reads that message (a small protobuf decoder for the few messages
a filter uses) and writes the same filter in rayquet's SQL, which the Rust side parses.

Invariant: a translation keeps exactly the rows ``pyarrow.dataset`` keeps for the expression, or
fails with :class:`InvalidArgumentError` naming what cannot be translated. Where the two
evaluators differ, the SQL is written to agree with pyarrow:

- floats: pyarrow compares NaN as IEEE does (every comparison with NaN is false), rayquet
  orders NaN above every number. ``x > v`` and ``x >= v`` on a float column become
  ``(x > v AND x < 'NaN')``; a NaN literal in a comparison is refused.
- ``is_in`` (``null_matching_behavior=MATCH``, ``Expression.isin``'s default): a null value is
  false, not null, unless the value set holds a null. ``x.isin([1, 2])`` becomes
  ``(x IS NOT NULL AND x IN (1, 2))`` so that its negation keeps the nulls, as pyarrow's does.
- ``starts_with``, ``ends_with`` and ``match_substring`` of a string column (pyarrow cannot
  serialize ``match_like``) become ``LIKE 'v%'``, ``'%v'`` and ``'%v%'`` with ``%``, ``_`` and
  ``\\`` of the literal escaped, ``ILIKE`` with ``ignore_case=True``.
- casts are refused (pyarrow refuses to serialize the implicit ones too), as are comparisons of
  two columns, arithmetic and functions rayquet's filters do not have.

The schema comes from a reader of the same scan that reads no rows (``limit=0``): pyarrow
binds an expression to a schema before it can serialize it. That reader lists the dataset (or
loads the table's metadata) and reads the first footer, which the footer cache then serves to
the scan itself: about a millisecond on a local dataset, one more listing (or metadata load)
on an object store than a SQL string costs.
"""

from __future__ import annotations

import datetime
import math
import re
import struct
from typing import Callable, List, Optional, Tuple

import pyarrow as pa

from ._errors import InvalidArgumentError

# --------------------------------------------------------------------------------------------
# Protobuf wire format: enough to walk a message's fields.


def _varint(b: bytes, i: int) -> Tuple[int, int]:
    out = 0
    shift = 0
    while True:
        if i >= len(b):
            raise ValueError("truncated varint")
        c = b[i]
        i += 1
        out |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return out, i


def _fields(b: bytes) -> List[Tuple[int, int, object]]:
    """The (field number, wire type, value) of every field of a message, in order."""
    out = []
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(b, i)
        elif wire == 1:
            value, i = b[i : i + 8], i + 8
        elif wire == 2:
            n, i = _varint(b, i)
            value, i = b[i : i + n], i + n
        elif wire == 5:
            value, i = b[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _one(b: bytes, number: int, default=None):
    """The last value of field ``number`` (protobuf's rule for a repeated singular field)."""
    found = default
    for n, _, v in _fields(b):
        if n == number:
            found = v
    return found


def _all(b: bytes, number: int) -> list:
    return [v for n, _, v in _fields(b) if n == number]


def _signed(v: int) -> int:
    """A varint of an int32/int64 field as the signed integer it encodes."""
    return v - (1 << 64) if v >= 1 << 63 else v


# --------------------------------------------------------------------------------------------
# Substrait field numbers (substrait/algebra.proto, extended_expression.proto).

_EXT_DECLARATIONS, _REFERRED, _FUNCTION = 2, 3, 3
_LITERAL, _SELECTION, _SCALAR_FUNCTION, _SINGULAR_OR_LIST, _CAST = 1, 2, 3, 8, 11
_COMPARISONS = {
    "equal": "=",
    "not_equal": "!=",
    "lt": "<",
    "lte": "<=",
    "gt": ">",
    "gte": ">=",
}
# pyarrow's string predicates (as Substrait names them) as LIKE patterns around the literal.
_PATTERNS = {"starts_with": "{}%", "ends_with": "%{}", "contains": "%{}%"}
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_NULL = object()


def _unsupported(what: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"cannot use this pyarrow expression as a rayquet filter: {what} (filters compare a "
        "column with a literal: ==, !=, <, <=, >, >=, isin, is_null, is_valid, starts_with, "
        "ends_with, match_substring, &, |, ~; or "
        "pass the filter as a SQL string)",
        kind="InvalidArgument",
    )


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _string(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


class _Translator:
    def __init__(self, schema: pa.Schema, functions: dict):
        self.schema = schema
        self.functions = functions

    # A column: (its SQL reference, its pyarrow type).
    def column(self, selection: bytes) -> Tuple[str, pa.DataType]:
        seg = _one(selection, 1)
        if seg is None or _one(selection, 4) is None:
            raise _unsupported("a field reference that is not a column of the scan")
        names: List[str] = []
        fields = list(self.schema)
        ty: Optional[pa.DataType] = None
        while seg is not None:
            struct_field = _one(seg, 2)
            if struct_field is None:
                raise _unsupported("a list or map element")
            index = _signed(_one(struct_field, 1, 0))
            if not 0 <= index < len(fields):
                raise _unsupported(f"field index {index} outside the schema")
            field = fields[index]
            names.append(field.name)
            ty = field.type
            seg = _one(struct_field, 2)
            if seg is not None:
                if not pa.types.is_struct(ty):
                    raise _unsupported(f"a field inside {field.name!r} of type {ty}")
                fields = [ty.field(i) for i in range(ty.num_fields)]
        return ".".join(_quote(n) for n in names), ty

    def literal(self, lit: bytes, ty: Optional[pa.DataType]) -> object:
        """The literal as rayquet SQL text, or ``_NULL``."""
        for number, wire, v in _fields(lit):
            if number == 1:
                return "TRUE" if v else "FALSE"
            if number in (2, 3, 5, 7):
                return str(_signed(v))
            if number in (10, 11):
                x = struct.unpack("<f" if number == 10 else "<d", v)[0]
                if math.isnan(x):
                    raise _unsupported(
                        "a comparison with NaN (pyarrow: never true; rayquet: NaN equals NaN)"
                    )
                if math.isinf(x):
                    return "'-inf'" if x < 0 else "'inf'"
                return repr(x)
            if number in (12, 21):
                return _string(bytes(v).decode("utf-8"))
            if number == 22:  # VarChar {value = 1, length = 2}
                return _string(bytes(_one(v, 1, b"")).decode("utf-8"))
            if number == 16:
                day = datetime.date(1970, 1, 1) + datetime.timedelta(days=_signed(v))
                return _string(day.isoformat())
            if number == 24:  # Decimal {value = 1 (16 bytes LE), precision = 2, scale = 3}
                unscaled = int.from_bytes(bytes(_one(v, 1, b"")), "little", signed=True)
                return _decimal_text(unscaled, _signed(_one(v, 3, 0)))
            if number in (14, 27):  # deprecated microsecond timestamps
                return _timestamp_text(_signed(v), 6, ty)
            if number in (34, 35):  # PrecisionTimestamp {precision = 1, value = 2}
                return _timestamp_text(_signed(_one(v, 2, 0)), _signed(_one(v, 1, 0)), ty)
            if number == 29:
                return _NULL
            if number in (50, 51):  # nullable, type variation: not the value
                continue
            raise _unsupported(f"a literal of Substrait kind {number}")
        raise _unsupported("an empty literal")

    def operands(self, fn: bytes) -> List[Tuple[int, bytes]]:
        out = []
        for arg in _all(fn, 4):
            value = _one(arg, 3)
            if value is None:
                raise _unsupported("a function argument that is not an expression")
            out.append(_kind(value))
        if not out:
            # Older producers put the arguments in the deprecated field 2.
            out = [_kind(e) for e in _all(fn, 2)]
        return out

    def expr(self, kind: int, body: bytes) -> str:
        """An Expression (its kind and message, as `_kind` splits it) as a condition."""
        if kind == _SELECTION:
            col, ty = self.column(body)
            if not pa.types.is_boolean(ty):
                raise _unsupported(f"column {col} of type {ty} used as a condition")
            return f"{col} = TRUE"
        if kind == _LITERAL:
            text = self.literal(body, pa.bool_())
            if text not in ("TRUE", "FALSE"):
                raise _unsupported("a literal that is not a boolean used as a condition")
            return text
        if kind == _SINGULAR_OR_LIST:
            return self.is_in(body)
        if kind == _CAST:
            raise _unsupported("a cast")
        if kind != _SCALAR_FUNCTION:
            raise _unsupported(f"a Substrait expression of kind {kind}")
        name = self.functions.get(_one(body, 1, 0))
        if name is None:
            raise _unsupported("a function the message does not declare")
        args = self.operands(body)
        if name in ("and", "or"):
            if len(args) < 2:
                raise _unsupported(f"{name} of {len(args)} operand")
            parts = [self.expr(k, b) for k, b in args]
            return "(" + f" {name.upper()} ".join(parts) + ")"
        if len(args) == 1 and name == "not":
            return f"NOT ({self.expr(*args[0])})"
        if len(args) == 1 and name in ("is_null", "is_not_null"):
            kind, arg = args[0]
            if kind != _SELECTION:
                raise _unsupported(f"{name} of something other than a column")
            col, _ = self.column(arg)
            return f"{col} IS {'NOT ' if name == 'is_not_null' else ''}NULL"
        if name in _COMPARISONS:
            return self.compare(_COMPARISONS[name], args)
        if name in _PATTERNS:
            return self.pattern(name, body, args)
        if name in ("not", "is_null", "is_not_null"):
            raise _unsupported(f"{name} of {len(args)} operands")
        raise _unsupported(f"the function {name!r}")

    def compare(self, op: str, args: List[Tuple[int, bytes]]) -> str:
        if len(args) != 2:
            raise _unsupported(f"a comparison of {len(args)} operands")
        (ka, a), (kb, b) = args
        if ka == _SELECTION and kb == _LITERAL:
            column, literal = a, b
        elif ka == _LITERAL and kb == _SELECTION:
            column, literal, op = b, a, _FLIPPED[op]
        elif ka == _SELECTION and kb == _SELECTION:
            raise _unsupported("a comparison of two columns")
        elif _CAST in (ka, kb):
            raise _unsupported("a cast")
        else:
            raise _unsupported("a comparison that is not of a column with a literal")
        col, ty = self.column(column)
        value = self.literal(literal, ty)
        if value is _NULL:
            raise _unsupported("a comparison with null (never true; use is_null / is_valid)")
        sql = f"{col} {op} {value}"
        if op in (">", ">=") and pa.types.is_floating(ty):
            # pyarrow: NaN > v is false; rayquet orders NaN above every number.
            return f"({sql} AND {col} < 'NaN')"
        return sql

    def pattern(self, name: str, body: bytes, args: List[Tuple[int, bytes]]) -> str:
        """``starts_with``, ``ends_with`` and ``match_substring`` (Substrait's ``contains``)
        of a string column as ``[I]LIKE`` with the literal's ``%``, ``_`` and ``\\`` escaped."""
        if len(args) != 2 or args[0][0] != _SELECTION or args[1][0] != _LITERAL:
            raise _unsupported(f"{name} of something other than a column and a string")
        col, ty = self.column(args[0][1])
        if not (pa.types.is_string(ty) or pa.types.is_large_string(ty)
                or ty == getattr(pa, "string_view", lambda: None)()):
            raise _unsupported(f"{name} of column {col} of type {ty}")
        text = None
        for number, _, v in _fields(args[1][1]):
            if number in (12, 21):
                text = bytes(v).decode("utf-8")
            elif number == 22:
                text = bytes(_one(v, 1, b"")).decode("utf-8")
        if text is None:
            raise _unsupported(f"{name} of a literal that is not a string")
        escaped = "".join("\\" + c if c in "%_\\" else c for c in text)
        op = "LIKE"
        for option in _all(body, 5):  # FunctionOption {name = 1, preference = 2}
            if bytes(_one(option, 1, b"")) == b"case_sensitivity":
                if b"CASE_INSENSITIVE" in [bytes(p) for p in _all(option, 2)]:
                    op = "ILIKE"
        return f"{col} {op} {_string(_PATTERNS[name].format(escaped))}"

    def is_in(self, body: bytes) -> str:
        kind, value = _kind(_one(body, 1, b""))
        if kind != _SELECTION:
            raise _unsupported("isin of something other than a column")
        col, ty = self.column(value)
        values, has_null = [], False
        for option in _all(body, 2):
            k, lit = _kind(option)
            if k != _LITERAL:
                raise _unsupported("isin with a value that is not a literal")
            text = self.literal(lit, ty)
            if text is _NULL:
                has_null = True
            else:
                values.append(text)
        # pyarrow's is_in (MATCH): a null value is false, or true when the set holds a null.
        if has_null:
            if not values:
                return f"{col} IS NULL"
            return f"({col} IS NULL OR {col} IN ({', '.join(values)}))"
        if not values:
            return f"({col} IS NOT NULL AND FALSE)"
        return f"({col} IS NOT NULL AND {col} IN ({', '.join(values)}))"


def _kind(e: bytes) -> Tuple[int, bytes]:
    """An Expression's one field: (its kind, its message)."""
    fields = _fields(bytes(e))
    if len(fields) != 1 or fields[0][1] != 2:
        raise _unsupported("an expression Substrait encodes in an unexpected way")
    return fields[0][0], fields[0][2]


def _decimal_text(unscaled: int, scale: int) -> str:
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled))
    if scale <= 0:
        return _string(sign + digits + "0" * -scale)
    digits = digits.rjust(scale + 1, "0")
    return _string(f"{sign}{digits[:-scale]}.{digits[-scale:]}")


def _timestamp_text(value: int, precision: int, ty: Optional[pa.DataType]) -> str:
    unit = 10**precision
    seconds, fraction = divmod(value, unit)
    try:
        moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    except OverflowError:
        raise _unsupported("a timestamp beyond year 9999") from None
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if precision:
        text += "." + str(fraction).rjust(precision, "0")
    # An instant on a column with a time zone; a wall-clock time on one without.
    if ty is not None and pa.types.is_timestamp(ty) and ty.tz is not None:
        text += "+00:00"
    return _string(text)


_PYARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowKeyError, pa.ArrowTypeError)


def _refused(e: Exception) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"cannot use this pyarrow expression as a rayquet filter: {e} (give a literal the "
        "column's type, e.g. pa.scalar(Decimal('10.50'), pa.decimal128(10, 2)), where pyarrow "
        "would cast the column)",
        kind="InvalidArgument",
    )


def _plain(t: pa.DataType) -> pa.DataType:
    """``t`` with large and view strings as ``string`` and ``date64`` as ``date32``: their
    literals are written the same way in rayquet's SQL and compare the same, but pyarrow's
    Substrait has no standard literal for them."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_date64(t):
        return pa.date32()
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_plain(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _widened(field: pa.Field) -> pa.Field:
    t = field.type
    if pa.types.is_integer(t) and t != pa.uint64():
        return field.with_type(pa.int64())
    return field


_NULL_MATCHING = re.compile(r"null_matching_behavior=(\w+)")


def to_sql(expression, schema_of: Callable[[], pa.Schema]) -> str:
    """The rayquet SQL filter that keeps the rows ``expression`` keeps in ``pyarrow.dataset``.

    ``schema_of`` gives the scan's schema (columns before projection); only the fields the
    expression can name are given to pyarrow, so types Substrait lacks elsewhere do no harm.
    """
    import pyarrow.compute as pc

    if not isinstance(expression, pc.Expression):
        raise InvalidArgumentError(
            f"filter must be a SQL string or a pyarrow.compute.Expression, not "
            f"{type(expression).__name__}",
            kind="InvalidArgument",
        )
    if not hasattr(expression, "to_substrait"):
        raise InvalidArgumentError(
            "a pyarrow.compute.Expression filter needs pyarrow >= 14 (Expression.to_substrait); "
            "pass the filter as a SQL string",
            kind="InvalidArgument",
        )
    text = str(expression)
    for behavior in _NULL_MATCHING.findall(text):
        if behavior != "MATCH":
            raise _unsupported(f"is_in with null_matching_behavior={behavior}")
    schema = schema_of()
    # Every field the expression names appears in its text; the others are left out. Types
    # whose literals pyarrow's Substrait cannot write are bound as their plain equivalents.
    named = pa.schema([f.with_type(_plain(f.type)) for f in schema if f.name in text])
    try:
        message = bytes(expression.to_substrait(named))
    except pa.ArrowInvalid as e:
        if "cast" not in str(e):
            raise _refused(e) from e
        # `uint8_column > 200`: pyarrow casts the column to the literal's int64, which
        # Substrait cannot say. Integer columns bound as int64 take integer literals as they
        # are; rayquet converts each literal to the column's own type exactly (or refuses it),
        # which compares as pyarrow's widened column does.
        named = pa.schema([_widened(f) for f in named])
        try:
            message = bytes(expression.to_substrait(named))
        except _PYARROW_ERRORS as e2:
            raise _refused(e) from e2
    except _PYARROW_ERRORS as e:
        raise _refused(e) from e
    functions = {}
    for decl in _all(message, _EXT_DECLARATIONS):
        fn = _one(decl, _FUNCTION)
        if fn is not None:
            name = bytes(_one(fn, 3, b"")).decode("utf-8")
            functions[_one(fn, 2, 0)] = name.split(":", 1)[0]
    referred = _all(message, _REFERRED)
    if len(referred) != 1 or _one(referred[0], 1) is None:
        raise _unsupported("not a single expression")
    return _Translator(named, functions).expr(*_kind(_one(referred[0], 1)))
