"""SQL for AgentService's schema ``agent``: agents, sessions, turns, events, messages.

Every statement is keyed by ``current_tenant()``, so no query can reach another tenant's
rows. Functions take a connection (the caller decides about transactions) and return
``asyncpg.Record`` rows; ``convert`` turns them into protos. Optimistic concurrency uses a
``version`` column that the etag encodes; a stale one raises ``Aborted``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, TypeAlias

import asyncpg

from lightmind.errors import Aborted, AlreadyExists, NotFound
from lightmind.tenancy import current_tenant

AGENT_COLUMNS = (
    "name",
    "description",
    "system_prompt",
    "model",
    "chat_options",
    "knowledge_bases",
    "memory_limits",
    "max_iterations",
    "extract_facts",
    "metadata",
)

Record: TypeAlias = Any  # asyncpg.Record (asyncpg ships no type hints)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


# -- agents ---------------------------------------------------------------------------------


async def insert_agent(conn: asyncpg.Connection, values: dict[str, Any]) -> Record:
    columns = ", ".join(AGENT_COLUMNS)
    params = ", ".join(f"${i}" for i in range(3, len(AGENT_COLUMNS) + 3))
    try:
        row: Record = await conn.fetchrow(
            f"INSERT INTO agent (tenant, id, {columns}) VALUES ($1, $2, {params}) RETURNING *",
            current_tenant(),
            uuid.uuid4(),
            *(values[c] for c in AGENT_COLUMNS),
        )
    except asyncpg.UniqueViolationError:
        raise AlreadyExists(
            f"agent.name: an agent named {values['name']!r} already exists",
            reason="AGENT_EXISTS",
        ) from None
    return row


async def get_agent(conn: asyncpg.Connection, ref: str) -> Record:
    """By id (a UUID) or by name; NotFound otherwise."""
    if _is_uuid(ref):
        row = await conn.fetchrow(
            "SELECT * FROM agent WHERE tenant = $1 AND id = $2", current_tenant(), uuid.UUID(ref)
        )
    else:
        row = await conn.fetchrow(
            "SELECT * FROM agent WHERE tenant = $1 AND name = $2", current_tenant(), ref
        )
    if row is None:
        raise NotFound(f"agent {ref!r} does not exist", reason="AGENT_NOT_FOUND")
    return row


async def list_agents(conn: asyncpg.Connection, after_name: str | None, limit: int) -> list[Record]:
    rows: list[Record] = await conn.fetch(
        "SELECT * FROM agent WHERE tenant = $1 AND ($2::text IS NULL OR name > $2) "
        "ORDER BY name LIMIT $3",
        current_tenant(),
        after_name,
        limit,
    )
    return rows


async def update_agent(
    conn: asyncpg.Connection, agent_id: uuid.UUID, values: dict[str, Any], version: int | None
) -> Record:
    names = [c for c in AGENT_COLUMNS if c in values]
    sets = ", ".join(f"{c} = ${i}" for i, c in enumerate(names, start=4))
    if sets:
        sets += ", "
    try:
        row = await conn.fetchrow(
            f"UPDATE agent SET {sets}version = version + 1, updated_at = now() "
            "WHERE tenant = $1 AND id = $2 AND ($3::bigint IS NULL OR version = $3) RETURNING *",
            current_tenant(),
            agent_id,
            version,
            *(values[c] for c in names),
        )
    except asyncpg.UniqueViolationError:
        raise AlreadyExists(
            f"agent.name: an agent named {values.get('name')!r} already exists",
            reason="AGENT_EXISTS",
        ) from None
    if row is None:
        await get_agent(conn, str(agent_id))  # NotFound when it is gone
        raise Aborted("agent.etag: the agent changed since it was read", reason="STALE_ETAG")
    return row


async def delete_agent(conn: asyncpg.Connection, agent_id: uuid.UUID, version: int | None) -> None:
    status = await conn.execute(
        "DELETE FROM agent WHERE tenant = $1 AND id = $2 AND ($3::bigint IS NULL OR version = $3)",
        current_tenant(),
        agent_id,
        version,
    )
    if status == "DELETE 0":
        await get_agent(conn, str(agent_id))
        raise Aborted("etag: the agent changed since it was read", reason="STALE_ETAG")


# -- sessions -------------------------------------------------------------------------------


async def insert_session(
    conn: asyncpg.Connection,
    agent_id: uuid.UUID,
    user_id: uuid.UUID | None,
    title: str,
    metadata: dict[str, Any],
) -> Record:
    row: Record = await conn.fetchrow(
        "INSERT INTO chat_session (tenant, id, agent_id, user_id, title, metadata) "
        "VALUES ($1, $2, $3, $4, $5, $6) RETURNING *",
        current_tenant(),
        uuid.uuid4(),
        agent_id,
        user_id,
        title,
        metadata,
    )
    return row


async def get_session(
    conn: asyncpg.Connection, session_id: uuid.UUID, *, for_update: bool = False
) -> Record:
    lock = " FOR UPDATE" if for_update else ""
    row = await conn.fetchrow(
        f"SELECT * FROM chat_session WHERE tenant = $1 AND id = $2{lock}",
        current_tenant(),
        session_id,
    )
    if row is None:
        raise NotFound(f"session {session_id} does not exist", reason="SESSION_NOT_FOUND")
    return row


async def list_sessions(
    conn: asyncpg.Connection,
    agent_id: uuid.UUID | None,
    user_id: uuid.UUID | None,
    cursor: tuple[Any, uuid.UUID] | None,
    limit: int,
) -> list[Record]:
    after_time, after_id = cursor if cursor else (None, None)
    rows: list[Record] = await conn.fetch(
        "SELECT * FROM chat_session WHERE tenant = $1 "
        "AND ($2::uuid IS NULL OR agent_id = $2) AND ($3::uuid IS NULL OR user_id = $3) "
        "AND ($4::timestamptz IS NULL OR (created_at, id) < ($4, $5::uuid)) "
        "ORDER BY created_at DESC, id DESC LIMIT $6",
        current_tenant(),
        agent_id,
        user_id,
        after_time,
        after_id,
        limit,
    )
    return rows


async def delete_session(
    conn: asyncpg.Connection, session_id: uuid.UUID, version: int | None
) -> None:
    status = await conn.execute(
        "DELETE FROM chat_session WHERE tenant = $1 AND id = $2 "
        "AND ($3::bigint IS NULL OR version = $3)",
        current_tenant(),
        session_id,
        version,
    )
    if status == "DELETE 0":
        await get_session(conn, session_id)
        raise Aborted("etag: the session changed since it was read", reason="STALE_ETAG")


async def save_session_state(
    conn: asyncpg.Connection,
    session_id: uuid.UUID,
    continuity: dict[str, Any] | None,
    title: str | None = None,
) -> None:
    await conn.execute(
        "UPDATE chat_session SET continuity = $3, title = COALESCE($4, title), "
        "version = version + 1, updated_at = now() WHERE tenant = $1 AND id = $2",
        current_tenant(),
        session_id,
        continuity,
        title,
    )


# -- messages -------------------------------------------------------------------------------


async def insert_message(
    conn: asyncpg.Connection,
    session_id: uuid.UUID,
    turn_id: uuid.UUID | None,
    role: str,
    content: str,
    *,
    tool_calls: Sequence[dict[str, Any]] = (),
    tool_call_id: str = "",
    tool_name: str = "",
    metadata: dict[str, Any] | None = None,
) -> Record:
    row: Record = await conn.fetchrow(
        "INSERT INTO chat_message (tenant, id, session_id, turn_id, role, content, tool_calls, "
        "tool_call_id, tool_name, metadata) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) "
        "RETURNING *",
        current_tenant(),
        uuid.uuid4(),
        session_id,
        turn_id,
        role,
        content,
        list(tool_calls),
        tool_call_id,
        tool_name,
        metadata or {},
    )
    return row


async def merge_message_metadata(
    conn: asyncpg.Connection, message_id: uuid.UUID, metadata: dict[str, Any]
) -> None:
    await conn.execute(
        "UPDATE chat_message SET metadata = metadata || $3 WHERE tenant = $1 AND id = $2",
        current_tenant(),
        message_id,
        metadata,
    )


async def recent_messages(
    conn: asyncpg.Connection, session_id: uuid.UUID, limit: int
) -> list[Record]:
    """The last ``limit`` messages of a session, oldest first."""
    rows: list[Record] = await conn.fetch(
        "SELECT * FROM (SELECT * FROM chat_message WHERE tenant = $1 AND session_id = $2 "
        "ORDER BY seq DESC LIMIT $3) recent ORDER BY seq",
        current_tenant(),
        session_id,
        limit,
    )
    return rows


async def list_messages(
    conn: asyncpg.Connection, session_id: uuid.UUID, after_seq: int, limit: int
) -> list[Record]:
    rows: list[Record] = await conn.fetch(
        "SELECT * FROM chat_message WHERE tenant = $1 AND session_id = $2 AND seq > $3 "
        "ORDER BY seq LIMIT $4",
        current_tenant(),
        session_id,
        after_seq,
        limit,
    )
    return rows


async def find_assistant_call(
    conn: asyncpg.Connection, session_id: uuid.UUID, call_id: str
) -> Record | None:
    """The assistant message that requested tool call ``call_id``."""
    row: Record | None = await conn.fetchrow(
        "SELECT * FROM chat_message WHERE tenant = $1 AND session_id = $2 AND role = 'assistant' "
        "AND tool_calls @> $3::jsonb ORDER BY seq DESC LIMIT 1",
        current_tenant(),
        session_id,
        [{"id": call_id}],
    )
    return row


async def answered_calls(
    conn: asyncpg.Connection, session_id: uuid.UUID, call_ids: Sequence[str]
) -> set[str]:
    """Which of ``call_ids`` already have a tool message (completed calls)."""
    rows = await conn.fetch(
        "SELECT tool_call_id FROM chat_message WHERE tenant = $1 AND session_id = $2 "
        "AND role = 'tool' AND tool_call_id = ANY($3::text[])",
        current_tenant(),
        session_id,
        list(call_ids),
    )
    return {row["tool_call_id"] for row in rows}


# -- turns and their events -----------------------------------------------------------------


async def insert_turn(
    conn: asyncpg.Connection, session_id: uuid.UUID, request_id: uuid.UUID | None
) -> Record | None:
    """A new running turn, or None when ``request_id`` already has one."""
    row: Record | None = await conn.fetchrow(
        "INSERT INTO chat_turn (tenant, id, session_id, request_id, status) "
        "VALUES ($1, $2, $3, $4, 'running') ON CONFLICT DO NOTHING RETURNING *",
        current_tenant(),
        uuid.uuid4(),
        session_id,
        request_id,
    )
    return row


async def turn_by_request(conn: asyncpg.Connection, request_id: uuid.UUID) -> Record | None:
    row: Record | None = await conn.fetchrow(
        "SELECT * FROM chat_turn WHERE tenant = $1 AND request_id = $2",
        current_tenant(),
        request_id,
    )
    return row


async def finish_turn(conn: asyncpg.Connection, turn_id: uuid.UUID, status: str) -> None:
    await conn.execute(
        "UPDATE chat_turn SET status = $3, finished_at = now() WHERE tenant = $1 AND id = $2",
        current_tenant(),
        turn_id,
        status,
    )


async def append_event(
    conn: asyncpg.Connection, turn_id: uuid.UUID, seq: int, payload: bytes
) -> None:
    await conn.execute(
        "INSERT INTO chat_event (tenant, turn_id, seq, payload) VALUES ($1, $2, $3, $4)",
        current_tenant(),
        turn_id,
        seq,
        payload,
    )


async def turn_events(conn: asyncpg.Connection, turn_id: uuid.UUID) -> list[bytes]:
    rows = await conn.fetch(
        "SELECT payload FROM chat_event WHERE tenant = $1 AND turn_id = $2 ORDER BY seq",
        current_tenant(),
        turn_id,
    )
    return [bytes(row["payload"]) for row in rows]


# -- idempotent unary requests ---------------------------------------------------------------
