"""AgentService fixtures: real MemoryService, SkillService and AgentService servers on
loopback over one fresh database, the session's real EmbeddingService, and a scripted
OpenAI-compatible LLM server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from agent_helpers import Stack, agent_env
from scripted_llm import ScriptedLLM

from agent_svc.config import AgentConfig
from agent_svc.service import build as build_agent
from lightmind.agent.v1 import agent_service_pb2_grpc as pb_grpc
from lightmind.memory.v1 import memory_service_pb2_grpc as mpb_grpc
from lightmind.skill.v1 import skill_service_pb2_grpc as spb_grpc
from lightmind.testing import ServerHandle
from memory_svc.config import MemoryConfig
from memory_svc.service import build as build_memory
from skill_svc.config import SkillConfig
from skill_svc.service import build as build_skill


@pytest.fixture
async def downstream(
    database_url: str, embedding_server: ServerHandle
) -> AsyncIterator[tuple[ServerHandle, ServerHandle]]:
    """Real MemoryService and SkillService on the test's database."""
    common = {
        "DATABASE_URL": database_url,
        "LIGHTMIND_EMBEDDING_ADDR": embedding_server.address,
        "LIGHTMIND_CALL_TIMEOUT_SECONDS": "10",
    }
    memory_config = MemoryConfig.from_env(common)
    skill_config = SkillConfig.from_env(common)
    memory = await ServerHandle.start("memory", lambda: build_memory(memory_config))
    skill = await ServerHandle.start("skill", lambda: build_skill(skill_config))
    yield memory, skill
    await skill.stop()
    await memory.stop()


@pytest.fixture
async def scripted_llm() -> AsyncIterator[ScriptedLLM]:
    llm = await ScriptedLLM().start()
    yield llm
    await llm.stop()


@pytest.fixture
async def start_stack(
    database_url: str,
    downstream: tuple[ServerHandle, ServerHandle],
    scripted_llm: ScriptedLLM,
) -> AsyncIterator[Any]:
    memory, skill = downstream
    handles: list[ServerHandle] = []
    channels: list[grpc.aio.Channel] = []

    async def start(**extra: str) -> Stack:
        env = agent_env(database_url, memory.address, skill.address, scripted_llm.base_url, **extra)
        config = AgentConfig.from_env(env)
        handle = await ServerHandle.start("agent", lambda: build_agent(config))
        handles.append(handle)
        chans = [grpc.aio.insecure_channel(h.address) for h in (handle, skill, memory)]
        channels.extend(chans)
        return Stack(
            pb_grpc.AgentServiceStub(chans[0]),
            spb_grpc.SkillServiceStub(chans[1]),
            mpb_grpc.MemoryServiceStub(chans[2]),
            scripted_llm,
            database_url,
            handles,
        )

    yield start
    for channel in channels:
        await channel.close()
    for handle in handles:
        await handle.stop()


@pytest.fixture
async def stack(start_stack: Any) -> Stack:
    result: Stack = await start_stack()
    return result
