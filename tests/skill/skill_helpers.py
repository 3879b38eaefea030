"""SkillService fixtures: a real server on loopback over a fresh database, with the real
EmbeddingService, plus small builders for skills, tools and assignments."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2

from lightmind.config import AuthConfig
from lightmind.skill.v1 import skill_service_pb2 as pb
from lightmind.skill.v1 import skill_service_pb2_grpc as pb_grpc
from lightmind.testing import ServerHandle
from skill_svc.config import SkillConfig
from skill_svc.service import build


def skill_env(database_url: str, embedding_address: str, **extra: str) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "LIGHTMIND_EMBEDDING_ADDR": embedding_address,
        "LIGHTMIND_SKILL_PYTHON_MODULES": "skill_svc.builtins,skill_test_tools",
        "LIGHTMIND_SKILL_MCP_STDIO_COMMANDS": sys.executable,
        "LIGHTMIND_SKILL_DEFAULT_TIMEOUT_SECONDS": "10",
        **extra,
    }


@pytest.fixture
async def skill_config(database_url: str, embedding_server: ServerHandle) -> SkillConfig:
    return SkillConfig.from_env(skill_env(database_url, embedding_server.address))


@pytest.fixture
async def skill_server(skill_config: SkillConfig) -> AsyncIterator[ServerHandle]:
    handle = await ServerHandle.start("skill", lambda: build(skill_config))
    yield handle
    await handle.stop()


@pytest.fixture
async def stub(skill_server: ServerHandle) -> AsyncIterator[pb_grpc.SkillServiceStub]:
    async with grpc.aio.insecure_channel(skill_server.address) as channel:
        yield pb_grpc.SkillServiceStub(channel)


@pytest.fixture
async def two_tenants(
    skill_config: SkillConfig,
) -> AsyncIterator[tuple[pb_grpc.SkillServiceStub, list[tuple[str, str]], list[tuple[str, str]]]]:
    auth = AuthConfig(mode="api_key", keys={"key-a": "tenant-a", "key-b": "tenant-b"})
    handle = await ServerHandle.start("skill", lambda: build(skill_config), auth=auth)
    try:
        async with grpc.aio.insecure_channel(handle.address) as channel:
            yield (
                pb_grpc.SkillServiceStub(channel),
                [("authorization", "Bearer key-a")],
                [("authorization", "Bearer key-b")],
            )
    finally:
        await handle.stop()


def struct(value: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(value)
    return out


async def make_skill(
    stub: pb_grpc.SkillServiceStub, name: str, description: str = "", content: str = "", **kw: Any
) -> pb.Skill:
    return await stub.CreateSkill(
        pb.CreateSkillRequest(
            skill=pb.Skill(
                name=name,
                description=description or f"The {name} skill.",
                content=content or f"# {name}\nDo {name} things.",
            ),
            **kw,
        )
    )


def python_tool(
    name: str, callable_path: str, params: list[pb.ToolParameter], **kw: Any
) -> pb.Tool:
    return pb.Tool(
        name=name,
        description=kw.pop("description", f"The {name} tool."),
        python=pb.PythonImplementation(callable=callable_path),
        parameters=params,
        **kw,
    )


def param(name: str, kind: int, required: bool = True, **kw: Any) -> pb.ToolParameter:
    return pb.ToolParameter(name=name, type=kind, required=required, **kw)  # type: ignore[arg-type]


async def grant(
    stub: pb_grpc.SkillServiceStub,
    agent: str,
    skill: str,
    tool: str | None = None,
    level: int = pb.ACCESS_LEVEL_EXECUTE,
    **assign: Any,
) -> None:
    """Assigns ``skill`` to ``agent`` and (optionally) attaches ``tool`` to it."""
    if tool is not None:
        await stub.AttachTool(pb.AttachToolRequest(skill=skill, tool=tool, access_level=level))
    await stub.AssignSkill(pb.AssignSkillRequest(agent_id=agent, skill=skill, **assign))
