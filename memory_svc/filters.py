"""The metadata filter language, compiled to parameterized SQL.

A ``MetadataFilter`` proto (equals, in, range, exists, and/or/not over metadata keys) becomes
a SQL boolean expression over ``<alias>.metadata`` in which every key and every value is a
bind parameter (``$n``) appended to the caller's parameter list: nothing from the request is
ever spliced into the statement text. Keys are dotted paths bound as ``text[]`` for ``#>``.
Each leaf is wrapped in ``coalesce(..., false)`` so a missing key is simply "no match" and
``negate`` of it matches. Malformed filters raise ``InvalidArgument`` naming the field path.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format, struct_pb2

from lightmind.errors import InvalidArgument
from lightmind.memory.v1 import memory_service_pb2 as pb

MAX_DEPTH = 8
MAX_NODES = 64
MAX_KEY_LENGTH = 256
MAX_IN_VALUES = 1000


class Params:
    """The growing list of bind parameters of one statement."""

    def __init__(self, values: list[Any] | None = None) -> None:
        self.values: list[Any] = values if values is not None else []

    def add(self, value: Any) -> str:
        self.values.append(value)
        return f"${len(self.values)}"


def value_of(value: struct_pb2.Value) -> Any:
    """A ``google.protobuf.Value`` as the plain Python value the jsonb codec encodes."""
    return json_format.MessageToDict(value)


def compile_filter(
    flt: pb.MetadataFilter, params: Params, *, alias: str, field: str = "filter"
) -> str:
    """SQL for ``flt`` over ``<alias>.metadata``. ``alias`` comes from code, never a request."""
    counter = [0]
    return _compile(flt, params, f"{alias}.metadata", field, 0, counter)


def _compile(
    flt: pb.MetadataFilter, params: Params, column: str, field: str, depth: int, n: list[int]
) -> str:
    n[0] += 1
    if n[0] > MAX_NODES:
        raise InvalidArgument.field(field, f"a filter may have at most {MAX_NODES} conditions")
    if depth > MAX_DEPTH:
        raise InvalidArgument.field(field, f"filters may nest at most {MAX_DEPTH} levels deep")
    kind = flt.WhichOneof("expression")
    if kind is None:
        raise InvalidArgument.field(field, "set exactly one expression")
    if kind == "equals":
        eq = flt.equals
        path = params.add(_path(eq.key, f"{field}.equals.key"))
        value = params.add(_value(eq, "value", f"{field}.equals.value"))
        return f"coalesce(({column} #> {path}::text[]) = {value}::jsonb, false)"
    if kind == "in_set":
        cond = flt.in_set
        path = params.add(_path(cond.key, f"{field}.in_set.key"))
        if not cond.values:
            raise InvalidArgument.field(f"{field}.in_set.values", "give at least one value")
        if len(cond.values) > MAX_IN_VALUES:
            raise InvalidArgument.field(f"{field}.in_set.values", f"at most {MAX_IN_VALUES} values")
        values = []
        for i, v in enumerate(cond.values):
            if v.WhichOneof("kind") is None:
                raise InvalidArgument.field(f"{field}.in_set.values[{i}]", "set a value")
            values.append(value_of(v))
        arr = params.add(values)
        return (
            f"coalesce(({column} #> {path}::text[]) IN "
            f"(SELECT jsonb_array_elements({arr}::jsonb)), false)"
        )
    if kind == "range":
        return _range(flt.range, params, column, f"{field}.range")
    if kind == "exists":
        path = params.add(_path(flt.exists.key, f"{field}.exists.key"))
        return f"(({column} #> {path}::text[]) IS NOT NULL)"
    if kind in ("all_of", "any_of"):
        group = flt.all_of if kind == "all_of" else flt.any_of
        if not group.filters:
            raise InvalidArgument.field(f"{field}.{kind}.filters", "give at least one filter")
        parts = [
            _compile(sub, params, column, f"{field}.{kind}.filters[{i}]", depth + 1, n)
            for i, sub in enumerate(group.filters)
        ]
        joiner = " AND " if kind == "all_of" else " OR "
        return "(" + joiner.join(parts) + ")"
    # negate
    inner = _compile(flt.negate, params, column, f"{field}.negate", depth + 1, n)
    return f"(NOT {inner})"


def _range(cond: pb.RangeCondition, params: Params, column: str, field: str) -> str:
    path = params.add(_path(cond.key, f"{field}.key"))
    bounds: list[tuple[str, Any]] = []
    kinds: set[str] = set()
    for name, op in (("gt", ">"), ("gte", ">="), ("lt", "<"), ("lte", "<=")):
        if not cond.HasField(name):  # type: ignore[arg-type]
            continue
        bound: struct_pb2.Value = getattr(cond, name)
        kind = bound.WhichOneof("kind")
        if kind not in ("number_value", "string_value"):
            raise InvalidArgument.field(f"{field}.{name}", "a bound must be a number or a string")
        kinds.add(kind)
        bounds.append((op, value_of(bound)))
    if not bounds:
        raise InvalidArgument.field(field, "set at least one of gt, gte, lt, lte")
    if len(kinds) > 1:
        raise InvalidArgument.field(field, "all bounds must be numbers, or all strings")
    json_type = "number" if kinds == {"number_value"} else "string"
    target = f"({column} #> {path}::text[])"
    parts = [f"jsonb_typeof({target}) = '{json_type}'"]
    for op, bound_value in bounds:
        parts.append(f"{target} {op} {params.add(bound_value)}::jsonb")
    return "coalesce((" + " AND ".join(parts) + "), false)"


def _path(key: str, field: str) -> list[str]:
    if not key:
        raise InvalidArgument.field(field, "must not be empty")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidArgument.field(field, f"at most {MAX_KEY_LENGTH} characters")
    parts = key.split(".")
    if any(not p for p in parts):
        raise InvalidArgument.field(field, "empty path segment (leading, trailing or double dot)")
    return parts


def _value(message: Any, name: str, field: str) -> Any:
    if not message.HasField(name):
        raise InvalidArgument.field(field, "must be set")
    value: struct_pb2.Value = getattr(message, name)
    if value.WhichOneof("kind") is None:
        raise InvalidArgument.field(field, "must be set")
    return value_of(value)
