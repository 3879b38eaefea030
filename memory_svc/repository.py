"""SQL for memories of every scope: insert with dedup, get, update, delete, list.

Every statement is keyed by ``current_tenant()``; table and column names come from
``memory_svc.scopes`` only, every value is a bind parameter. Inserts take many rows at once
(``unnest`` of arrays, one round trip) and resolve duplicates against the scope's dedup key
(owners, model, content hash): the existing row is returned instead of a second one. An
expired session memory that is created again is revived with the new expiry.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeAlias

import asyncpg
from pgvector import Vector

from lightmind.errors import Aborted, FailedPrecondition, NotFound
from lightmind.etags import parse_etag
from lightmind.tenancy import current_tenant
from memory_svc.filters import Params
from memory_svc.pagination import Cursor, keyset_clause
from memory_svc.scopes import ORGANIZATION, SESSION, SPECS, ScopeSpec

# asyncpg ships no type information; rows are read by column name.
Record: TypeAlias = Any


def content_hash(content: str) -> bytes:
    return hashlib.sha256(content.encode()).digest()


@dataclass
class NewMemory:
    """One row to insert, already validated and embedded."""

    content: str
    embedding: Sequence[float]
    embedding_model: str
    owners: dict[str, str | None]
    memory_type: str | None = None
    importance: float = 1.0
    metadata: dict[str, Any] = field(default_factory=dict)
    expire_time: datetime | None = None
    source_memory_id: str | None = None
    id: str = field(default_factory=lambda: str(uuid.uuid4()))


def _insert_columns(spec: ScopeSpec) -> list[tuple[str, str]]:
    """(column, SQL array type) pairs inserted for ``spec``."""
    cols = [("id", "uuid"), *((o, "uuid") for o in spec.owners)]
    cols += [
        ("content", "text"),
        ("content_hash", "bytea"),
        ("embedding", "vector"),
        ("embedding_model", "text"),
        ("importance", "real"),
        ("metadata", "jsonb"),
    ]
    if "memory_type" in spec.columns:
        cols.append(("memory_type", "text"))
    if "expire_time" in spec.columns:
        cols.append(("expire_time", "timestamptz"))
    if "source_memory_id" in spec.columns:
        cols.append(("source_memory_id", "uuid"))
    return cols


def _value(row: NewMemory, column: str) -> Any:
    if column in row.owners:
        return row.owners[column]
    if column == "content_hash":
        return content_hash(row.content)
    if column == "embedding":
        return Vector(list(row.embedding))
    return getattr(row, column)


def _dedup_key(spec: ScopeSpec, row: NewMemory) -> tuple[Any, ...]:
    return (*(row.owners.get(o) for o in spec.owners), row.embedding_model, row.content)


async def insert_memories(
    conn: asyncpg.Connection, spec: ScopeSpec, rows: Sequence[NewMemory]
) -> list[Record]:
    """Inserts ``rows`` (one scope); returns one record per row, existing ones for duplicates."""
    tenant = current_tenant()
    cols = _insert_columns(spec)
    # Duplicates within the batch map to the first occurrence.
    first: dict[tuple[Any, ...], int] = {}
    order = [first.setdefault(_dedup_key(spec, r), i) for i, r in enumerate(rows)]
    unique = [rows[i] for i in sorted(set(order))]
    params: list[Any] = [tenant]
    arrays = []
    for name, sql_type in cols:
        params.append([_value(r, name) for r in unique])
        arrays.append(f"${len(params)}::{sql_type}[]")
    names = ", ".join(name for name, _ in cols)
    conflict = ", ".join(("tenant", *spec.owners, "embedding_model", "content_hash"))
    on_conflict = "DO NOTHING"
    if spec is SESSION:  # revive an expired duplicate instead of returning it
        on_conflict = (
            "DO UPDATE SET expire_time = EXCLUDED.expire_time, update_time = now(), "
            "version = m.version + 1 WHERE m.expire_time <= now()"
        )
    sql = (
        f"INSERT INTO {spec.table} AS m (tenant, {names}) "
        f"SELECT $1, * FROM unnest({', '.join(arrays)}) "
        f"ON CONFLICT ({conflict}) {on_conflict} "
        f"RETURNING {spec.select('m')}"
    )
    inserted = await conn.fetch(sql, *params)
    by_id = {str(r["id"]): r for r in inserted}
    missing = [r for r in unique if r.id not in by_id]
    if missing:
        for row in missing:
            existing = await _find_duplicate(conn, spec, row)
            if existing is None:  # deleted concurrently; extremely rare
                raise Aborted("a duplicate memory changed concurrently; retry")
            by_id[row.id] = existing
    return [by_id[rows[i].id] for i in order]


async def _find_duplicate(
    conn: asyncpg.Connection, spec: ScopeSpec, row: NewMemory
) -> Record | None:
    params = Params([current_tenant()])
    where = ["m.tenant = $1"]
    for owner in spec.owners:
        value = row.owners.get(owner)
        if value is None:
            where.append(f"m.{owner} IS NULL")
        else:
            where.append(f"m.{owner} = {params.add(value)}::uuid")
    where.append(f"m.embedding_model = {params.add(row.embedding_model)}")
    where.append(f"m.content_hash = {params.add(content_hash(row.content))}")
    sql = f"SELECT {spec.select('m')} FROM {spec.table} m WHERE {' AND '.join(where)}"
    result: Record | None = await conn.fetchrow(sql, *params.values)
    return result


def _live(spec: ScopeSpec, alias: str = "m") -> str:
    return f" AND {alias}.expire_time > now()" if "expire_time" in spec.columns else ""


async def get_memory(conn: asyncpg.Connection, memory_id: str) -> Record:
    """A memory of any scope by id; NOT_FOUND when absent, expired or another tenant's."""
    parts = [
        f"SELECT {spec.select('m')} FROM {spec.table} m "
        f"WHERE m.tenant = $1 AND m.id = $2::uuid{_live(spec)}"
        for spec in SPECS.values()
    ]
    row = await conn.fetchrow(" UNION ALL ".join(parts), current_tenant(), memory_id)
    if row is None:
        raise NotFound(f"id: no memory {memory_id}", metadata={"field": "id"})
    return row


def writable_spec(row: Record) -> ScopeSpec:
    spec = SPECS[row["scope"]]
    if not spec.writable:
        raise FailedPrecondition(
            "id: organization memories are document chunks; change them through their "
            "document (DeleteDocument, IngestDocument)",
            reason="DOCUMENT_CHUNK",
        )
    return spec


def check_etag(row: Record, etag: str, field: str) -> None:
    expected = parse_etag(etag, field)
    if expected is not None and expected != row["version"]:
        raise Aborted(
            "etag: the memory changed since it was read; get it again and retry",
            reason="ETAG_MISMATCH",
        )


async def update_memory(
    conn: asyncpg.Connection,
    spec: ScopeSpec,
    memory_id: str,
    version: int,
    changes: dict[str, Any],
) -> Record:
    """Applies ``changes`` (column -> value) if the row is still at ``version``."""
    params = Params([current_tenant(), memory_id, version])
    sets = ["update_time = now()", "version = m.version + 1"]
    for column, value in changes.items():
        if column == "embedding":
            value = Vector(value)
        sets.append(f"{column} = {params.add(value)}")
        if column == "content":
            sets.append(f"content_hash = {params.add(content_hash(value))}")
    sql = (
        f"UPDATE {spec.table} AS m SET {', '.join(sets)} "
        f"WHERE m.tenant = $1 AND m.id = $2::uuid AND m.version = $3{_live(spec)} "
        f"RETURNING {spec.select('m')}"
    )
    try:
        row = await conn.fetchrow(sql, *params.values)
    except asyncpg.UniqueViolationError:
        raise FailedPrecondition(
            "memory.content: the same owners already have a memory with this content",
            reason="DUPLICATE_CONTENT",
        ) from None
    if row is None:
        raise Aborted("the memory changed concurrently; get it again and retry", reason="ABORTED")
    result: Record = row
    return result


async def delete_memory(conn: asyncpg.Connection, spec: ScopeSpec, memory_id: str) -> None:
    await conn.execute(
        f"DELETE FROM {spec.table} WHERE tenant = $1 AND id = $2::uuid",
        current_tenant(),
        memory_id,
    )


async def list_memories(
    conn: asyncpg.Connection,
    spec: ScopeSpec,
    owners: dict[str, str],
    filter_sql: str | None,
    params: Params,
    cursor: Cursor | None,
    limit: int,
    knowledge_bases: Sequence[str] = (),
) -> list[Record]:
    """Newest first. ``params`` already holds the filter's values ($1 is the tenant)."""
    where = ["m.tenant = $1"]
    for column, value in owners.items():
        where.append(f"m.{column} = {params.add(value)}::uuid")
    if spec is ORGANIZATION and knowledge_bases:
        where.append(f"m.knowledge_base = ANY({params.add(list(knowledge_bases))}::text[])")
    if filter_sql:
        where.append(filter_sql)
    if cursor is not None:
        where.append(keyset_clause(cursor, params.add))
    sql = (
        f"SELECT {spec.select('m')} FROM {spec.table} m "
        f"WHERE {' AND '.join(where)}{_live(spec)} "
        f"ORDER BY m.create_time DESC, m.id DESC LIMIT {params.add(limit)}"
    )
    rows: list[Record] = await conn.fetch(sql, *params.values)
    return rows


async def record_access(
    conn: asyncpg.Connection, user_memory_ids: Sequence[str]
) -> dict[str, tuple[int, datetime]]:
    """RetrieveContext returned these user memories: count it. Returns the new counts."""
    rows = await conn.fetch(
        "UPDATE user_memories SET access_count = access_count + 1, last_access_time = now() "
        "WHERE tenant = $1 AND id = ANY($2::uuid[]) RETURNING id, access_count, last_access_time",
        current_tenant(),
        list(user_memory_ids),
    )
    return {str(r["id"]): (r["access_count"], r["last_access_time"]) for r in rows}


async def promote(
    conn: asyncpg.Connection,
    source: Record,
    target: ScopeSpec,
    owners: dict[str, str | None],
    memory_type: str,
    importance: float,
) -> Record:
    """Copies a session memory (vector included, read in SQL) into ``target``."""
    vector = await conn.fetchval(
        "SELECT embedding FROM session_memories WHERE tenant = $1 AND id = $2::uuid",
        current_tenant(),
        str(source["id"]),
    )
    if vector is None:
        raise NotFound(f"id: no memory {source['id']}")
    row = NewMemory(
        content=source["content"],
        embedding=vector.to_list() if hasattr(vector, "to_list") else list(vector),
        embedding_model=source["embedding_model"],
        owners=owners,
        memory_type=memory_type,
        importance=importance,
        metadata=dict(source["metadata"] or {}),
        source_memory_id=str(source["id"]),
    )
    (stored,) = await insert_memories(conn, target, [row])
    return stored


async def sweep_expired(conn: asyncpg.Connection, batch: int = 10_000) -> int:
    """Deletes expired session memories of every tenant, in batches; returns the count."""
    total = 0
    while True:
        status = await conn.execute(
            "DELETE FROM session_memories WHERE id IN (SELECT id FROM session_memories "
            "WHERE expire_time <= now() LIMIT $1)",
            batch,
        )
        deleted = int(status.split()[-1])
        total += deleted
        if deleted < batch:
            return total
