"""The background task that deletes expired session memories (and old request-log rows).

Searches already filter expired rows out, so the sweeper only reclaims space; it runs every
``LIGHTMIND_MEMORY_SWEEP_INTERVAL_SECONDS`` across all tenants and keeps going through
database outages (logging them) until the service stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import asyncpg

from lightmind.requestlog import RequestLog
from memory_svc import repository

log = logging.getLogger("lightmind.memory.sweeper")


class Sweeper:
    def __init__(self, pool: asyncpg.Pool, interval_seconds: float, request_log_hours: float):
        self._pool = pool
        self._interval = interval_seconds
        self._log_hours = request_log_hours
        self._task: asyncio.Task[None] | None = None
        self.swept = 0  # total rows deleted, for tests and logs

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="memory-sweeper")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def sweep_once(self) -> int:
        async with self._pool.acquire() as conn:
            deleted = await repository.sweep_expired(conn)
        await RequestLog(self._pool).purge(self._log_hours)
        self.swept += deleted
        if deleted:
            log.info("swept %d expired session memories", deleted)
        return deleted

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.sweep_once()
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                log.warning("sweep failed, will retry: %s", exc)
