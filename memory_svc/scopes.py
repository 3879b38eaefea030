"""What each scope is in storage: table, owner columns, memory types, selected columns.

The repository builds its SQL from these specs; table and column names come only from here
(an allow-list), never from a request. Every scope's rows are read through the same column
list (``COLUMNS``), so one converter turns any of them into a ``Memory`` message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lightmind.memory.v1 import memory_service_pb2 as pb

# The common shape every scope's SELECT produces, in this order.
COLUMNS = (
    "id",
    "scope",
    "session_id",
    "agent_id",
    "user_id",
    "content",
    "memory_type",
    "importance",
    "metadata",
    "create_time",
    "update_time",
    "expire_time",
    "access_count",
    "last_access_time",
    "embedding_model",
    "version",
    "source_memory_id",
    "document_id",
    "chunk_index",
    "source",
)

_NULL_TYPES = {
    "session_id": "uuid",
    "agent_id": "uuid",
    "user_id": "uuid",
    "memory_type": "text",
    "expire_time": "timestamptz",
    "last_access_time": "timestamptz",
    "source_memory_id": "uuid",
    "document_id": "uuid",
    "chunk_index": "integer",
    "source": "text",
}
_CONSTANTS = {"access_count": "0::bigint", "version": "1::bigint", "importance": "1::real"}

TYPE_NAMES = {
    pb.MEMORY_TYPE_FACT: "fact",
    pb.MEMORY_TYPE_PREFERENCE: "preference",
    pb.MEMORY_TYPE_SUMMARY: "summary",
    pb.MEMORY_TYPE_LEARNING: "learning",
    pb.MEMORY_TYPE_STATE: "state",
    pb.MEMORY_TYPE_PERSONA: "persona",
    pb.MEMORY_TYPE_SCRATCHPAD: "scratchpad",
}
TYPE_VALUES = {name: value for value, name in TYPE_NAMES.items()}


@dataclass(frozen=True)
class ScopeSpec:
    scope: pb.Scope.ValueType
    name: str
    table: str
    # Owner columns in the order of the dedup key; `required` must be set on create.
    owners: tuple[str, ...]
    required: tuple[str, ...]
    columns: frozenset[str]
    types: tuple[pb.MemoryType.ValueType, ...] = ()
    default_type: pb.MemoryType.ValueType = pb.MEMORY_TYPE_UNSPECIFIED
    writable: bool = True
    # Columns updatable through UpdateMemory's mask (mask path -> column).
    mutable: dict[str, str] = field(default_factory=dict)

    def select(self, alias: str = "m") -> str:
        """The COLUMNS of this table, NULL or a constant where it has no such column."""
        parts = []
        for col in COLUMNS:
            if col == "scope":
                parts.append(f"{self.scope}::integer AS scope")
            elif col == "update_time" and "update_time" not in self.columns:
                parts.append(f"{alias}.create_time AS update_time")
            elif col in self.columns:
                parts.append(f"{alias}.{col}")
            elif col in _CONSTANTS:
                parts.append(f"{_CONSTANTS[col]} AS {col}")
            else:
                parts.append(f"NULL::{_NULL_TYPES[col]} AS {col}")
        return ", ".join(parts)


_BASE = frozenset(
    {"id", "content", "embedding_model", "metadata", "create_time", "update_time", "version"}
)

SESSION = ScopeSpec(
    scope=pb.SCOPE_SESSION,
    name="session",
    table="session_memories",
    owners=("session_id", "agent_id", "user_id"),
    required=("session_id", "agent_id"),
    columns=_BASE | {"session_id", "agent_id", "user_id", "importance", "expire_time"},
    mutable={
        "content": "content",
        "importance": "importance",
        "metadata": "metadata",
        "expire_time": "expire_time",
    },
)
USER = ScopeSpec(
    scope=pb.SCOPE_USER,
    name="user",
    table="user_memories",
    owners=("agent_id", "user_id"),
    required=("agent_id", "user_id"),
    columns=_BASE
    | {
        "agent_id",
        "user_id",
        "memory_type",
        "importance",
        "access_count",
        "last_access_time",
        "source_memory_id",
    },
    types=(pb.MEMORY_TYPE_FACT, pb.MEMORY_TYPE_PREFERENCE, pb.MEMORY_TYPE_SUMMARY),
    default_type=pb.MEMORY_TYPE_FACT,
    mutable={
        "content": "content",
        "type": "memory_type",
        "importance": "importance",
        "metadata": "metadata",
    },
)
AGENT = ScopeSpec(
    scope=pb.SCOPE_AGENT,
    name="agent",
    table="agent_memories",
    owners=("agent_id",),
    required=("agent_id",),
    columns=_BASE | {"agent_id", "memory_type", "importance", "source_memory_id"},
    types=(
        pb.MEMORY_TYPE_LEARNING,
        pb.MEMORY_TYPE_STATE,
        pb.MEMORY_TYPE_PERSONA,
        pb.MEMORY_TYPE_SCRATCHPAD,
    ),
    default_type=pb.MEMORY_TYPE_LEARNING,
    mutable={
        "content": "content",
        "type": "memory_type",
        "importance": "importance",
        "metadata": "metadata",
    },
)
ORGANIZATION = ScopeSpec(
    scope=pb.SCOPE_ORGANIZATION,
    name="organization",
    table="document_chunks",
    owners=(),
    required=(),
    columns=frozenset(
        {"id", "content", "embedding_model", "metadata", "create_time"}
        | {"document_id", "chunk_index", "source"}
    ),
    writable=False,
)

SPECS: dict[int, ScopeSpec] = {s.scope: s for s in (SESSION, USER, AGENT, ORGANIZATION)}
WRITABLE = (SESSION, USER, AGENT)
