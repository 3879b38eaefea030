"""The migration runner: ordered, recorded, idempotent, safe against edits and races."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from lightmind.db import Migration, MigrationError, migrate, open_pool

M1 = Migration(1, "0001_init.sql", "CREATE TABLE thing (id int PRIMARY KEY, v vector(3));")
M2 = Migration(2, "0002_more.sql", "ALTER TABLE thing ADD COLUMN note text;")


async def test_applies_in_order_once(database_url: str) -> None:
    pool = await open_pool(database_url, schema="demo", migrations=[M1, M2])
    try:
        async with pool.acquire() as conn:
            await conn.execute("INSERT INTO thing VALUES (1, '[1,2,3]', 'x')")
            assert await conn.fetchval("SELECT count(*) FROM demo.schema_migrations") == 2
            # Vectors decode through the pool's codec.
            row = await conn.fetchrow("SELECT v FROM thing")
            assert row["v"].to_list() == [1.0, 2.0, 3.0]
            assert await migrate(conn, "demo", [M1, M2]) == 0
    finally:
        await pool.close()


async def test_edited_migration_is_refused(database_url: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await migrate(conn, "demo", [M1])
        edited = Migration(1, "0001_init.sql", M1.sql + " -- changed")
        with pytest.raises(MigrationError, match="edited"):
            await migrate(conn, "demo", [edited])
    finally:
        await conn.close()


async def test_unknown_applied_migration_is_refused(database_url: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await migrate(conn, "demo", [M1, M2])
        with pytest.raises(MigrationError, match="does not know"):
            await migrate(conn, "demo", [M1])
    finally:
        await conn.close()


async def test_concurrent_runners_apply_each_migration_once(database_url: str) -> None:
    conns = [await asyncpg.connect(database_url) for _ in range(4)]
    try:
        await conns[0].execute("CREATE EXTENSION IF NOT EXISTS vector")
        applied = await asyncio.gather(*(migrate(c, "race", [M1, M2]) for c in conns))
        assert sorted(applied) == [0, 0, 0, 2]
    finally:
        for c in conns:
            await c.close()


def test_invalid_schema_name_is_refused() -> None:
    with pytest.raises(ValueError, match="schema"):
        asyncio.run(migrate(None, "bad; DROP", []))  # type: ignore[arg-type]
