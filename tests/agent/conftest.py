"""AgentService fixtures: real MemoryService, SkillService and AgentService servers on
loopback over one fresh database, the session's real EmbeddingService, and a scripted
OpenAI-compatible LLM server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from scripted_llm import ScriptedLLM

from agent_svc.config import AgentConfig
from agent_svc.service import build as build_agent
from lightmind.agent.v1 import agent_service_pb2 as pb
from lightmind.agent.v1 import agent_service_pb2_grpc as pb_grpc
from lightmind.memory.v1 import memory_service_pb2_grpc as mpb_grpc
from lightmind.skill.v1 import skill_service_pb2 as spb
from lightmind.skill.v1 import skill_service_pb2_grpc as spb_grpc
from lightmind.testing import ServerHandle
from memory_svc.config import MemoryConfig
from memory_svc.service import build as build_memory
from skill_svc.config import SkillConfig
from skill_svc.service import build as build_skill

USER_A = "7a1f2a52-3c1e-4c9a-9a57-1b1d7e0a00a1"
USER_B = "7a1f2a52-3c1e-4c9a-9a57-1b1d7e0a00b2"


@dataclass
class Stack:
    agent: pb_grpc.AgentServiceStub
    skill: spb_grpc.SkillServiceStub
    memory: mpb_grpc.MemoryServiceStub
    llm: ScriptedLLM
    database_url: str
    handles: list[ServerHandle] = field(default_factory=list)

    async def new_agent(self, name: str = "helper", **kw: Any) -> pb.Agent:
        return await self.agent.CreateAgent(
            pb.CreateAgentRequest(
                agent=pb.Agent(name=name, system_prompt="You are a test agent.", **kw)
            )
        )

    async def new_session(self, agent: pb.Agent, user_id: str = USER_A) -> pb.Session:
        return await self.agent.CreateSession(
            pb.CreateSessionRequest(session=pb.Session(agent_id=agent.agent_id, user_id=user_id))
        )

    async def chat(self, session: pb.Session, message: str, **kw: Any) -> list[pb.ChatResponse]:
        stream = self.agent.Chat(
            pb.ChatRequest(session_id=session.session_id, message=message, **kw)
        )
        return [event async for event in stream]

    async def messages(self, session: pb.Session) -> list[pb.Message]:
        page = await self.agent.ListMessages(
            pb.ListMessagesRequest(session_id=session.session_id, page_size=1000)
        )
        return list(page.messages)

    async def math_skill(self, agent: pb.Agent) -> None:
        """A skill `math` granting the built-in `calculate` tool, assigned to ``agent``."""
        await self.skill.CreateTool(
            spb.CreateToolRequest(
                tool=spb.Tool(
                    name="calculate",
                    description="Evaluates an arithmetic expression.",
                    python=spb.PythonImplementation(callable="skill_svc.builtins:calculate"),
                    parameters=[
                        spb.ToolParameter(
                            name="expression", type=spb.PARAMETER_TYPE_STRING, required=True
                        )
                    ],
                    annotations=spb.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
                )
            )
        )
        await self.skill.CreateSkill(
            spb.CreateSkillRequest(
                skill=spb.Skill(
                    name="math",
                    description="Arithmetic with a calculator.",
                    content="Use the calculate tool for any arithmetic.",
                )
            )
        )
        await self.skill.AttachTool(spb.AttachToolRequest(skill="math", tool="calculate"))
        await self.skill.AssignSkill(spb.AssignSkillRequest(agent_id=agent.agent_id, skill="math"))


def kinds(events: list[pb.ChatResponse]) -> list[str]:
    return [str(e.WhichOneof("event")) for e in events]


def struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


def agent_env(database_url: str, memory: str, skill: str, llm: str, **extra: str) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "LIGHTMIND_MEMORY_ADDR": memory,
        "LIGHTMIND_SKILL_ADDR": skill,
        "LIGHTMIND_CALL_TIMEOUT_SECONDS": "10",
        "LIGHTMIND_LLM_BASE_URL": llm,
        "LIGHTMIND_LLM_MODEL": "scripted",
        "LIGHTMIND_LLM_MAX_RETRIES": "0",
        "LIGHTMIND_LLM_TIMEOUT_SECONDS": "10",
        **extra,
    }


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
