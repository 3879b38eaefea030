"""PostgreSQL access every storage-owning service shares: pool, codecs, migrations.

``open_database`` turns a ``DatabaseConfig`` into a ready ``asyncpg`` pool: it starts (or
joins) the embedded server when no ``DATABASE_URL`` is set, makes sure the ``vector``
extension exists, runs the service's migrations under an advisory lock, and registers the
pgvector and JSONB codecs in the pool's ``init`` hook so every connection speaks them.

Migrations are the ``NNNN_name.sql`` files of a package, applied in order, each in its own
transaction, recorded with a checksum in ``<schema>.schema_migrations``. An applied file
that was edited afterwards stops start-up: write a new migration instead.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

import asyncpg
from pgvector.asyncpg import register_vector

from lightmind.config import DatabaseConfig

log = logging.getLogger("lightmind.db")

_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


class MigrationError(RuntimeError):
    """The migrations on disk and those recorded in the database disagree."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def load_migrations(package: str) -> list[Migration]:
    """The ``NNNN_name.sql`` files of ``package``, ordered by version (no gaps, no twins)."""
    found: list[Migration] = []
    for entry in importlib.resources.files(package).iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), entry.name, entry.read_text()))
    found.sort(key=lambda m: m.version)
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise MigrationError(
                f"{package}: expected migration {expected:04d}, found {migration.name}"
            )
    return found


async def migrate(conn: asyncpg.Connection, schema: str, migrations: list[Migration]) -> int:
    """Applies pending migrations to ``schema``; returns how many were applied."""
    if not _SCHEMA_NAME.match(schema):
        raise ValueError(f"invalid schema name {schema!r}")
    applied_now = 0
    await conn.execute("SELECT pg_advisory_lock(hashtext($1))", f"lightmind.migrate.{schema}")
    try:
        await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        await conn.execute(
            f"""CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
                    version integer PRIMARY KEY,
                    name text NOT NULL,
                    checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        rows = await conn.fetch(f"SELECT version, name, checksum FROM {schema}.schema_migrations")
        applied = {row["version"]: row for row in rows}
        for migration in migrations:
            row = applied.get(migration.version)
            if row is not None:
                if row["checksum"] != migration.checksum:
                    raise MigrationError(
                        f"{schema}: applied migration {row['name']} was edited afterwards; "
                        "add a new migration instead"
                    )
                continue
            async with conn.transaction():
                await conn.execute(f"SET LOCAL search_path TO {schema}, public")
                await conn.execute(migration.sql)
                await conn.execute(
                    f"INSERT INTO {schema}.schema_migrations (version, name, checksum) "
                    "VALUES ($1, $2, $3)",
                    migration.version,
                    migration.name,
                    migration.checksum,
                )
            log.info("%s: applied migration %s", schema, migration.name)
            applied_now += 1
        unknown = sorted(set(applied) - {m.version for m in migrations})
        if unknown:
            raise MigrationError(
                f"{schema}: the database has migrations {unknown} this code does not know; "
                "is an older build running against a newer database?"
            )
    finally:
        await conn.execute("SELECT pg_advisory_unlock(hashtext($1))", f"lightmind.migrate.{schema}")
    return applied_now


async def _init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")


async def resolve_url(config: DatabaseConfig) -> str:
    """``DATABASE_URL`` if set; otherwise the embedded server's (started if needed)."""
    if config.url is not None:
        return config.url
    import asyncio

    from lightmind.embedded_pg import EmbeddedPostgres

    embedded = EmbeddedPostgres(config.data_dir, config.embedded_port)
    await asyncio.to_thread(embedded.ensure_running)
    return await embedded.create_database()


async def open_database(
    config: DatabaseConfig, *, schema: str, migrations_package: str
) -> asyncpg.Pool:
    """A migrated pool for one service's schema."""
    url = await resolve_url(config)
    return await open_pool(
        url,
        schema=schema,
        migrations=load_migrations(migrations_package),
        min_size=config.pool_min,
        max_size=config.pool_max,
        statement_timeout_ms=config.statement_timeout_ms,
    )


async def open_pool(
    url: str,
    *,
    schema: str,
    migrations: list[Migration],
    min_size: int = 1,
    max_size: int = 10,
    statement_timeout_ms: int = 30_000,
) -> asyncpg.Pool:
    conn = await asyncpg.connect(url)
    try:
        # Serialized: concurrent CREATE EXTENSION from two services can collide.
        await conn.execute("SELECT pg_advisory_lock(hashtext('lightmind.extensions'))")
        try:
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        finally:
            await conn.execute("SELECT pg_advisory_unlock(hashtext('lightmind.extensions'))")
        await migrate(conn, schema, migrations)
    finally:
        await conn.close()
    settings: dict[str, Any] = {
        "search_path": f"{schema}, public",
        "statement_timeout": str(statement_timeout_ms),
    }
    pool: asyncpg.Pool = await asyncpg.create_pool(
        url,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        server_settings=settings,
    )
    return pool
