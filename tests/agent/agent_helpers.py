"""Shared pieces of the AgentService tests: the Stack of stubs and small helpers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.protobuf import struct_pb2
from scripted_llm import ScriptedLLM

from lightmind.agent.v1 import agent_service_pb2 as pb
from lightmind.agent.v1 import agent_service_pb2_grpc as pb_grpc
from lightmind.memory.v1 import memory_service_pb2_grpc as mpb_grpc
from lightmind.skill.v1 import skill_service_pb2 as spb
from lightmind.skill.v1 import skill_service_pb2_grpc as spb_grpc
from lightmind.testing import ServerHandle

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
