"""Request validation helpers and conversion between database rows and proto messages.

Validators raise ``InvalidArgument`` naming the offending field (with any prefix the caller
passes, e.g. ``requests[3].memory.content``) before any work is done.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from google.protobuf import json_format, struct_pb2

from lightmind.errors import InvalidArgument
from lightmind.etags import format_etag
from lightmind.memory.v1 import memory_service_pb2 as pb
from memory_svc.embedder import STORED_DIMENSIONS
from memory_svc.repository import Record
from memory_svc.scopes import SPECS, TYPE_NAMES, TYPE_VALUES, ScopeSpec

_KNOWLEDGE_BASE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")
DEFAULT_KNOWLEDGE_BASE = "default"
MAX_LABEL_CHARS = 1024


def uuid_field(value: str, field: str, *, required: bool = False) -> str | None:
    """The canonical form of a UUID field; None when empty and optional."""
    if not value:
        if required:
            raise InvalidArgument.field(field, "is required")
        return None
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise InvalidArgument.field(field, f"{value[:64]!r} is not a UUID") from None


def required_uuid(value: str, field: str) -> str:
    result = uuid_field(value, field, required=True)
    if result is None:  # pragma: no cover - required=True never returns None
        raise InvalidArgument.field(field, "is required")
    return result


def scope_spec(scope: int, field: str, *, writable: bool = False) -> ScopeSpec:
    spec = SPECS.get(scope)
    if spec is None:
        if scope == pb.SCOPE_UNSPECIFIED:
            raise InvalidArgument.field(field, "is required")
        raise InvalidArgument.field(field, f"unknown scope {scope}")
    if writable and not spec.writable:
        raise InvalidArgument.field(
            field, "organization memories are created by IngestDocument, not directly"
        )
    return spec


def memory_type(spec: ScopeSpec, value: Any, field: str) -> str | None:
    if value == pb.MEMORY_TYPE_UNSPECIFIED:
        value = spec.default_type
        if value == pb.MEMORY_TYPE_UNSPECIFIED:
            return None
    if value not in TYPE_NAMES:
        raise InvalidArgument.field(field, f"unknown memory type {value}")
    if value not in spec.types:
        allowed = ", ".join(pb.MemoryType.Name(t) for t in spec.types) or "none"
        raise InvalidArgument.field(
            field, f"{pb.MemoryType.Name(value)} is not a {spec.name} memory type ({allowed})"
        )
    return TYPE_NAMES[value]


def content(value: str, field: str, max_bytes: int) -> str:
    if not value.strip():
        raise InvalidArgument.field(field, "must not be empty")
    size = len(value.encode())
    if size > max_bytes:
        raise InvalidArgument.field(
            field, f"{size} bytes exceed the limit of {max_bytes}", reason="CONTENT_TOO_LARGE"
        )
    return value


def vector(values: Sequence[float], field: str) -> list[float]:
    if len(values) != STORED_DIMENSIONS:
        raise InvalidArgument.field(
            field, f"has {len(values)} dimensions; the model's vectors have {STORED_DIMENSIONS}"
        )
    result = list(values)
    if not all(math.isfinite(v) for v in result):
        raise InvalidArgument.field(field, "must contain only finite numbers")
    if not any(result):
        raise InvalidArgument.field(field, "must not be all zeros (cosine is undefined)")
    return result


def importance(value: float, field: str) -> float:
    if not (0.0 <= value <= 1.0) or math.isnan(value):
        raise InvalidArgument.field(field, "must be between 0 and 1")
    return float(value)


def metadata(value: struct_pb2.Struct) -> dict[str, Any]:
    result: dict[str, Any] = json_format.MessageToDict(value)
    return result


def knowledge_base(value: str, field: str) -> str:
    if not value:
        return DEFAULT_KNOWLEDGE_BASE
    if not _KNOWLEDGE_BASE.match(value):
        raise InvalidArgument.field(
            field, "use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return value


def label(value: str, field: str) -> str:
    if len(value) > MAX_LABEL_CHARS:
        raise InvalidArgument.field(field, f"at most {MAX_LABEL_CHARS} characters")
    return value


def _ts(target: Any, value: datetime | None) -> None:
    if value is not None:
        target.FromDatetime(value)


def memory_pb(row: Record) -> pb.Memory:
    message = pb.Memory(
        id=str(row["id"]),
        scope=row["scope"],
        content=row["content"],
        importance=float(row["importance"]),
        access_count=int(row["access_count"]),
        embedding_model=row["embedding_model"],
        etag=format_etag(row["version"]),
        chunk_index=row["chunk_index"] or 0,
        source=row["source"] or "",
    )
    for name in ("session_id", "agent_id", "user_id", "source_memory_id", "document_id"):
        if row[name] is not None:
            setattr(message, name, str(row[name]))
    if row["memory_type"] is not None:
        message.type = TYPE_VALUES[row["memory_type"]]
    message.metadata.update(row["metadata"] or {})
    _ts(message.create_time, row["create_time"])
    _ts(message.update_time, row["update_time"])
    _ts(message.expire_time, row["expire_time"])
    _ts(message.last_access_time, row["last_access_time"])
    return message


def document_pb(row: Record) -> pb.Document:
    message = pb.Document(
        id=str(row["id"]),
        source=row["source"],
        title=row["title"],
        knowledge_base=row["knowledge_base"],
        content_hash=row["content_hash"],
        chunk_count=row["chunk_count"],
        token_count=row["token_count"],
        content_length=row["content_length"],
        embedding_model=row["embedding_model"],
        chunk_tokens=row["chunk_tokens"],
        overlap_tokens=row["overlap_tokens"],
    )
    message.metadata.update(row["metadata"] or {})
    _ts(message.create_time, row["create_time"])
    return message
