"""Request-id replay for mutating RPCs (AIP-155): a repeated request gets the first answer.

Each storage-owning service keeps a ``request_log`` table in its own schema (created by its
migrations, with the columns below). ``RequestLog.once`` runs a mutation at most once per
(tenant, request_id): a repeat of the same request returns the stored answer without running
anything; the same request_id on a *different* request (another method or other fields) is
INVALID_ARGUMENT (``REQUEST_ID_REUSED``) rather than a silent wrong answer. Concurrent repeats
within one process wait for the first to finish. Answers are kept for a configurable number
of hours (``purge``).

    CREATE TABLE request_log (
        tenant text, request_id uuid, method text, fingerprint text, response bytea,
        create_time timestamptz DEFAULT now(), PRIMARY KEY (tenant, method, request_id))
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg
from google.protobuf.message import Message

from lightmind.errors import InvalidArgument
from lightmind.tenancy import current_tenant

M = TypeVar("M", bound=Message)


def request_uuid(value: str) -> uuid.UUID | None:
    """The request_id as a UUID; None when empty; INVALID_ARGUMENT naming the field otherwise."""
    if not value:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidArgument.field("request_id", f"{value[:64]!r} is not a UUID") from None


def fingerprint(method: str, request: Message) -> str:
    """A digest of the request minus its request_id: what a repeat must match."""
    probe = type(request)()
    probe.CopyFrom(request)
    probe.request_id = ""  # type: ignore[attr-defined]
    return hashlib.sha256(method.encode() + probe.SerializeToString(deterministic=True)).hexdigest()


class RequestLog:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self._pool = pool
        self._locks: dict[tuple[str, uuid.UUID], asyncio.Lock] = {}

    async def once(
        self, method: str, request: Any, response_type: type[M], work: Callable[[], Awaitable[M]]
    ) -> M:
        response, _ = await self.once_with_replay(method, request, response_type, work)
        return response

    async def once_with_replay(
        self, method: str, request: Any, response_type: type[M], work: Callable[[], Awaitable[M]]
    ) -> tuple[M, bool]:
        """The answer, and whether it was replayed from the log."""
        rid = request_uuid(request.request_id)
        if rid is None:
            return await work(), False
        digest = fingerprint(method, request)
        key = (current_tenant(), rid)
        lock = self._locks.setdefault(key, asyncio.Lock())
        try:
            async with lock:
                row = await self._pool.fetchrow(
                    "SELECT method, fingerprint, response FROM request_log "
                    "WHERE tenant = $1 AND request_id = $2 LIMIT 1",
                    key[0],
                    rid,
                )
                if row is not None:
                    same = row["method"] == method and row["fingerprint"] in ("", digest)
                    if not same:
                        raise InvalidArgument.field(
                            "request_id",
                            "was already used for a different request",
                            reason="REQUEST_ID_REUSED",
                        )
                    return response_type.FromString(bytes(row["response"])), True
                response = await work()
                await self._pool.execute(
                    "INSERT INTO request_log (tenant, request_id, method, fingerprint, response) "
                    "VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                    key[0],
                    rid,
                    method,
                    digest,
                    response.SerializeToString(),
                )
                return response, False
        finally:
            if not lock.locked():
                self._locks.pop(key, None)

    async def purge(self, older_than_hours: float) -> int:
        """Forgets answers older than this; returns how many."""
        status: str = await self._pool.execute(
            "DELETE FROM request_log WHERE create_time < now() - make_interval(secs => $1)",
            older_than_hours * 3600,
        )
        return int(status.split()[-1])
