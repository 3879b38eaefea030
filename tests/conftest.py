"""Fixtures shared by every test: a real PostgreSQL with pgvector, a real EmbeddingService.

One embedded PostgreSQL server runs for the whole session (fsync off, in a temp directory);
each test that asks for ``database_url`` gets a database of its own, dropped afterwards. One
EmbeddingService with the real offline ONNX model runs in-process for the session.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import grpc
import pytest

from embedding_svc.config import EmbeddingConfig
from embedding_svc.service import build as build_embedding
from lightmind.embedded_pg import EmbeddedPostgres
from lightmind.embedding.v1 import embedding_service_pb2_grpc as embedding_grpc
from lightmind.testing import ServerHandle, free_port


@pytest.fixture(scope="session")
def pg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres(
        Path(tmp_path_factory.mktemp("pg")), free_port(), database="postgres", fsync=False
    )
    server.ensure_running()
    yield server
    server.stop("immediate")


@pytest.fixture
async def database_url(pg: EmbeddedPostgres) -> AsyncIterator[str]:
    """A fresh, empty database for one test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(pg.url("postgres"))
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    yield pg.url(name)
    if pg.running_port() is None:
        return  # a test stopped the server and left it down
    conn = await asyncpg.connect(pg.url("postgres"))
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def embedding_config() -> EmbeddingConfig:
    return EmbeddingConfig.from_env({"LIGHTMIND_EMBEDDING_MAX_WAIT_MS": "5"})


@pytest.fixture(scope="session")
async def embedding_server(embedding_config: EmbeddingConfig) -> AsyncIterator[ServerHandle]:
    handle = await ServerHandle.start("embedding", lambda: build_embedding(embedding_config))
    yield handle
    await handle.stop()


@pytest.fixture
async def embedding_stub(
    embedding_server: ServerHandle,
) -> AsyncIterator[embedding_grpc.EmbeddingServiceStub]:
    async with grpc.aio.insecure_channel(embedding_server.address) as channel:
        yield embedding_grpc.EmbeddingServiceStub(channel)
