"""The memory-search built-in: a tool call searches MemoryService for the calling user only."""

from __future__ import annotations

import uuid

import grpc
import pytest
from skill_helpers import grant, make_skill, param, python_tool, skill_env, struct

from lightmind.memory.v1 import memory_service_pb2 as mpb
from lightmind.memory.v1 import memory_service_pb2_grpc as mpb_grpc
from lightmind.skill.v1 import skill_service_pb2 as pb
from lightmind.skill.v1 import skill_service_pb2_grpc as pb_grpc
from lightmind.testing import ServerHandle
from memory_svc.config import MemoryConfig
from memory_svc.service import build as build_memory
from skill_svc import memory_tools
from skill_svc.config import SkillConfig
from skill_svc.service import build as build_skill


async def test_search_memory_tool_reads_only_the_callers_memories(
    database_url: str, embedding_server: ServerHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory_env = {
        "DATABASE_URL": database_url,
        "LIGHTMIND_EMBEDDING_ADDR": embedding_server.address,
    }
    memory = await ServerHandle.start(
        "memory", lambda: build_memory(MemoryConfig.from_env(memory_env))
    )
    monkeypatch.setenv("LIGHTMIND_MEMORY_ADDR", memory.address)
    monkeypatch.setattr(memory_tools._Client, "stub", None)
    skill_config = SkillConfig.from_env(
        skill_env(
            database_url,
            embedding_server.address,
            LIGHTMIND_SKILL_PYTHON_MODULES="skill_svc.memory_tools",
        )
    )
    skill = await ServerHandle.start("skill", lambda: build_skill(skill_config))
    try:
        async with (
            grpc.aio.insecure_channel(memory.address) as mch,
            grpc.aio.insecure_channel(skill.address) as sch,
        ):
            memories = mpb_grpc.MemoryServiceStub(mch)
            agent, alice, bob = (str(uuid.uuid4()) for _ in range(3))
            for user, fact in [
                (alice, "Alice is allergic to peanuts."),
                (alice, "Alice prefers window seats on flights."),
                (bob, "Bob is allergic to shellfish."),
            ]:
                await memories.CreateMemory(
                    mpb.CreateMemoryRequest(
                        memory=mpb.Memory(
                            scope=mpb.SCOPE_USER, agent_id=agent, user_id=user, content=fact
                        )
                    )
                )
            stub = pb_grpc.SkillServiceStub(sch)
            await make_skill(stub, "recall")
            await stub.CreateTool(
                pb.CreateToolRequest(
                    tool=python_tool(
                        "search_memory",
                        "skill_svc.memory_tools.search_memory",
                        [
                            param("query", pb.PARAMETER_TYPE_STRING),
                            param("scope", pb.PARAMETER_TYPE_STRING, required=False),
                        ],
                        annotations=pb.ToolAnnotations(read_only_hint=True),
                    )
                )
            )
            await grant(stub, agent, "recall", "search_memory")
            result = await stub.ExecuteTool(
                pb.ExecuteToolRequest(
                    tool="search_memory",
                    arguments=struct({"query": "what food allergies are there?"}),
                    caller=pb.Caller(agent_id=agent, user_id=alice),
                )
            )
            assert not result.is_error, result
            found = [r["content"] for r in result.structured_content["results"]]
            assert found[0] == "Alice is allergic to peanuts."
            assert all("Bob" not in text for text in found)

            # Without a user the user scope is refused, for the model to read.
            anonymous = await stub.ExecuteTool(
                pb.ExecuteToolRequest(
                    tool="search_memory",
                    arguments=struct({"query": "allergies"}),
                    caller=pb.Caller(agent_id=agent),
                )
            )
            assert anonymous.is_error
    finally:
        await skill.stop()
        await memory.stop()
