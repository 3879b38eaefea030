"""Tenant isolation through AgentService: with API keys for two tenants on every service, what
one tenant creates (agents, sessions, messages, the session memories a turn writes through
MemoryService) is invisible and unmodifiable to the other."""

from __future__ import annotations

import grpc
import pytest
from agent_helpers import USER_A, agent_env
from google.protobuf import field_mask_pb2
from scripted_llm import ScriptedLLM, text

from agent_svc.config import AgentConfig
from agent_svc.service import build as build_agent
from lightmind.agent.v1 import agent_service_pb2 as pb
from lightmind.agent.v1 import agent_service_pb2_grpc as pb_grpc
from lightmind.config import AuthConfig
from lightmind.memory.v1 import memory_service_pb2 as mpb
from lightmind.memory.v1 import memory_service_pb2_grpc as mpb_grpc
from lightmind.testing import ServerHandle
from memory_svc.config import MemoryConfig
from memory_svc.service import build as build_memory
from skill_svc.config import SkillConfig
from skill_svc.service import build as build_skill

AUTH = AuthConfig(mode="api_key", keys={"key-a": "tenant-a", "key-b": "tenant-b"})
A = (("authorization", "Bearer key-a"),)
B = (("authorization", "Bearer key-b"),)


async def expect_not_found(call) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    assert info.value.code() == grpc.StatusCode.NOT_FOUND, info.value.details()


async def test_agents_sessions_messages_and_memories_stay_with_their_tenant(
    database_url: str, embedding_server: ServerHandle, scripted_llm: ScriptedLLM
) -> None:
    common = {"DATABASE_URL": database_url, "LIGHTMIND_EMBEDDING_ADDR": embedding_server.address}
    memory = await ServerHandle.start(
        "memory", lambda: build_memory(MemoryConfig.from_env(common)), auth=AUTH
    )
    skill = await ServerHandle.start(
        "skill", lambda: build_skill(SkillConfig.from_env(common)), auth=AUTH
    )
    env = agent_env(database_url, memory.address, skill.address, scripted_llm.base_url)
    agent_server = await ServerHandle.start(
        "agent", lambda: build_agent(AgentConfig.from_env(env)), auth=AUTH
    )
    try:
        async with (
            grpc.aio.insecure_channel(agent_server.address) as ach,
            grpc.aio.insecure_channel(memory.address) as mch,
        ):
            agents = pb_grpc.AgentServiceStub(ach)
            memories = mpb_grpc.MemoryServiceStub(mch)
            made = await agents.CreateAgent(
                pb.CreateAgentRequest(agent=pb.Agent(name="private", system_prompt="Hi.")),
                metadata=A,
            )
            session = await agents.CreateSession(
                pb.CreateSessionRequest(session=pb.Session(agent_id=made.agent_id, user_id=USER_A)),
                metadata=A,
            )
            scripted_llm.add(text("Noted: your locker code is 1234."))
            events = [
                e
                async for e in agents.Chat(
                    pb.ChatRequest(session_id=session.session_id, message="My locker is 1234."),
                    metadata=A,
                )
            ]
            assert events[-1].HasField("final_answer")

            # Tenant B sees none of it, by id or by listing.
            await expect_not_found(
                agents.GetAgent(pb.GetAgentRequest(agent=made.agent_id), metadata=B)
            )
            assert not (await agents.ListAgents(pb.ListAgentsRequest(), metadata=B)).agents
            await expect_not_found(
                agents.GetSession(pb.GetSessionRequest(session_id=session.session_id), metadata=B)
            )
            await expect_not_found(
                agents.ListMessages(
                    pb.ListMessagesRequest(session_id=session.session_id), metadata=B
                )
            )
            with pytest.raises(grpc.aio.AioRpcError) as info:
                async for _ in agents.Chat(
                    pb.ChatRequest(session_id=session.session_id, message="What is my code?"),
                    metadata=B,
                ):
                    pass
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
            # ... and cannot change or delete it.
            await expect_not_found(
                agents.UpdateAgent(
                    pb.UpdateAgentRequest(
                        agent=pb.Agent(agent_id=made.agent_id, name="stolen"),
                        update_mask=field_mask_pb2.FieldMask(paths=["name"]),
                    ),
                    metadata=B,
                )
            )
            await expect_not_found(
                agents.DeleteAgent(pb.DeleteAgentRequest(agent=made.agent_id), metadata=B)
            )
            # The turn's session memories were written for tenant A only (the agent forwarded
            # A's credentials to MemoryService).
            search = mpb.SearchMemoriesRequest(
                scope=mpb.SCOPE_SESSION,
                session_id=session.session_id,
                agent_id=made.agent_id,
                query="locker code",
            )
            mine = await memories.SearchMemories(search, metadata=A)
            assert any("1234" in r.memory.content for r in mine.results)
            theirs = await memories.SearchMemories(search, metadata=B)
            assert not theirs.results
            # Tenant A still has everything.
            got = await agents.GetAgent(pb.GetAgentRequest(agent=made.agent_id), metadata=A)
            assert got.name == "private"
            assert (
                len(
                    (
                        await agents.ListMessages(
                            pb.ListMessagesRequest(session_id=session.session_id), metadata=A
                        )
                    ).messages
                )
                == 2
            )
    finally:
        await agent_server.stop()
        await skill.stop()
        await memory.stop()
