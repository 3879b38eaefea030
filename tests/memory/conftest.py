"""Fixtures for MemoryService tests: a real server per test on a fresh database, talking to
the session's real EmbeddingService, with API-key auth for two tenants."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest
from memory_helpers import AUTH, memory_env

from lightmind.memory.v1 import memory_service_pb2_grpc as pb_grpc
from lightmind.testing import ServerHandle
from memory_svc.config import MemoryConfig
from memory_svc.service import build

StartMemory = Callable[..., Any]


@pytest.fixture
async def start_memory(
    database_url: str, embedding_server: ServerHandle
) -> AsyncIterator[StartMemory]:
    """Starts a MemoryService with extra env overrides; stopped after the test."""
    handles: list[ServerHandle] = []
    channels: list[grpc.aio.Channel] = []

    async def start(**extra: str) -> pb_grpc.MemoryServiceStub:
        env = memory_env(database_url, embedding_server.address, **extra)
        config = MemoryConfig.from_env(env)
        handle = await ServerHandle.start("memory", lambda: build(config), auth=AUTH)
        handles.append(handle)
        channel = grpc.aio.insecure_channel(handle.address)
        channels.append(channel)
        return pb_grpc.MemoryServiceStub(channel)

    yield start
    for channel in channels:
        await channel.close()
    for handle in handles:
        await handle.stop()


@pytest.fixture
async def memory(start_memory: StartMemory) -> pb_grpc.MemoryServiceStub:
    stub: pb_grpc.MemoryServiceStub = await start_memory()
    return stub
