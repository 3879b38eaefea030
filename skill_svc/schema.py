"""Names, JSON Schemas and argument validation: the pure rules every RPC shares.

A tool's ``inputSchema`` is built from its parameters (type, description, default and the
parameter's own validation keywords, ordered by ``order`` then name). ``validate_arguments``
checks a call's arguments against it with the ``jsonschema`` library and reports every
violation as a field path (``arguments.city``, ``arguments.items[2]``), then fills defaults.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema.validators import Draft202012Validator

from lightmind.errors import FieldViolation, InvalidArgument

SKILL_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SKILL_NAME_MAX = 64
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
DESCRIPTION_MAX = 500
TOOL_DESCRIPTION_MAX = 4000
VERSION_MAX = 20
PARAM_TYPES = ("string", "number", "integer", "boolean", "object", "array")
ACCESS_LEVELS = ("read", "write", "execute")


def is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def check_skill_name(name: str, field: str) -> FieldViolation | None:
    if not name:
        return FieldViolation(field, "is required")
    if len(name) > SKILL_NAME_MAX or not SKILL_NAME.match(name):
        return FieldViolation(
            field,
            "must be 1-64 lowercase letters, digits and single hyphens, not starting or "
            "ending with a hyphen",
        )
    if is_uuid(name):
        return FieldViolation(field, "must not look like a UUID (ids and names share fields)")
    return None


def check_tool_name(name: str, field: str) -> FieldViolation | None:
    if not name:
        return FieldViolation(field, "is required")
    if not TOOL_NAME.match(name):
        return FieldViolation(field, "must be 1-128 letters, digits, '_', '-' or '.'")
    if is_uuid(name):
        return FieldViolation(field, "must not look like a UUID (ids and names share fields)")
    return None


def raise_if(violations: Iterable[FieldViolation | None], reason: str | None = None) -> None:
    found = [v for v in violations if v is not None]
    if found:
        raise InvalidArgument(
            "; ".join(f"{v.field}: {v.description}" for v in found),
            violations=found,
            reason=reason,
        )


def level_rank(level: str) -> int:
    return ACCESS_LEVELS.index(level)


def required_level(explicit: str | None, annotations: Mapping[str, Any]) -> str:
    """The access level a grant must reach to run a tool (see AccessLevel in the proto)."""
    if explicit:
        return explicit
    if annotations.get("read_only_hint"):
        return "read"
    if annotations.get("destructive_hint"):
        return "execute"
    return "write"


@dataclass(frozen=True)
class Parameter:
    name: str
    type: str
    required: bool
    default: Any  # None: no default (JSON null defaults are not supported)
    description: str
    validation_schema: Mapping[str, Any] | None
    order: int


def check_schema(schema: Mapping[str, Any], field: str) -> FieldViolation | None:
    try:
        Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return FieldViolation(field, f"is not a valid JSON Schema: {exc.message}")
    return None


def check_parameters(params: list[Parameter], field: str) -> list[FieldViolation]:
    violations: list[FieldViolation] = []
    seen: set[str] = set()
    for i, p in enumerate(params):
        here = f"{field}[{i}]"
        if not PARAM_NAME.match(p.name):
            violations.append(
                FieldViolation(f"{here}.name", "must be a letter or '_' then letters, digits, '_'")
            )
        elif p.name in seen:
            violations.append(FieldViolation(f"{here}.name", f"duplicate parameter {p.name!r}"))
        seen.add(p.name)
        if p.type not in PARAM_TYPES:
            violations.append(FieldViolation(f"{here}.type", "is required"))
        if p.validation_schema is not None:
            bad = check_schema(p.validation_schema, f"{here}.validation_schema")
            if bad:
                violations.append(bad)
        if p.default is not None and p.type in PARAM_TYPES:
            errors = list(Draft202012Validator(property_schema(p)).iter_errors(p.default))
            if errors:
                violations.append(
                    FieldViolation(
                        f"{here}.default_value", f"does not fit the parameter: {errors[0].message}"
                    )
                )
    return violations


def property_schema(p: Parameter) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": p.type}
    if p.description:
        schema["description"] = p.description
    if p.validation_schema:
        schema.update(_integral(dict(p.validation_schema)))
        schema["type"] = p.type
    if p.default is not None:
        schema["default"] = p.default
    return schema


def input_schema(params: Iterable[Parameter]) -> dict[str, Any]:
    """The tool's inputSchema (a JSON Schema object) from its parameters."""
    ordered = sorted(params, key=lambda p: (p.order, p.name))
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p.name: property_schema(p) for p in ordered},
    }
    required = [p.name for p in ordered if p.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _integral(value: Any) -> Any:
    """protobuf Struct numbers are doubles: turn 3.0 back into 3 so schemas read naturally."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


def integral(value: Any) -> Any:
    return _integral(value)


def _path(prefix: str, parts: Iterable[Any]) -> str:
    out = prefix
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def validate_arguments(schema: Mapping[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """Checks ``arguments`` against ``schema``; raises InvalidArgument naming every violation.
    Returns the arguments with defaults filled in for omitted properties."""
    arguments = _integral(arguments)
    validator = Draft202012Validator(schema)
    violations: list[FieldViolation] = []
    for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)):
        parts = list(error.absolute_path)
        if error.validator == "required" and isinstance(error.instance, dict):
            missing = [r for r in error.validator_value if r not in error.instance]
            for name in missing:
                violations.append(FieldViolation(_path("arguments", [*parts, name]), "is required"))
            continue
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = set(error.schema.get("properties", {}))
            for name in sorted(set(error.instance) - allowed):
                violations.append(
                    FieldViolation(_path("arguments", [*parts, name]), "is not a parameter")
                )
            continue
        violations.append(FieldViolation(_path("arguments", parts), error.message))
    if violations:
        raise InvalidArgument(
            f"the arguments do not match the tool's input schema: {len(violations)} violation(s)",
            violations=violations,
            reason="ARGUMENTS_INVALID",
        )
    filled = dict(arguments)
    for name, prop in schema.get("properties", {}).items():
        if name not in filled and "default" in prop:
            filled[name] = prop["default"]
    return filled
