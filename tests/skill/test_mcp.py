"""The mcp_server executor and ImportMcpTools against a real MCP server process, over stdio
and over streamable HTTP."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from skill_helpers import grant, make_skill, struct

from lightmind.skill.v1 import skill_service_pb2 as pb
from lightmind.testing import error_details, free_port

SERVER = str(Path(__file__).with_name("mcp_demo_server.py"))


def stdio_server() -> pb.McpServer:
    return pb.McpServer(
        name="demo", transport=pb.MCP_TRANSPORT_STDIO, command=sys.executable, args=[SERVER]
    )


def call(tool: str, args: dict) -> pb.ExecuteToolRequest:
    return pb.ExecuteToolRequest(
        tool=tool, arguments=struct(args), caller=pb.Caller(agent_id="agent")
    )


async def test_import_and_call_over_stdio(stub) -> None:
    await make_skill(stub, "demo")
    imported = await stub.ImportMcpTools(
        pb.ImportMcpToolsRequest(
            server=stdio_server(),
            name_prefix="demo_",
            skill="demo",
            access_level=pb.ACCESS_LEVEL_EXECUTE,
        )
    )
    by_name = {t.name: t for t in imported.tools}
    assert sorted(by_name) == ["demo_add", "demo_fail", "demo_shout"]
    add = by_name["demo_add"]
    assert [(p.name, p.type, p.required) for p in add.parameters] == [
        ("a", pb.PARAMETER_TYPE_INTEGER, True),
        ("b", pb.PARAMETER_TYPE_INTEGER, True),
    ]
    assert add.annotations.read_only_hint and add.mcp_server.tool_name == "add"
    await grant(stub, "agent", "demo")
    result = await stub.ExecuteTool(call("demo_add", {"a": 2, "b": 40}))
    assert not result.is_error
    assert result.structured_content["result"] == 42
    shout = await stub.ExecuteTool(call("demo_shout", {"text": "hi"}))
    assert shout.content[0].text.text == "HI"
    failed = await stub.ExecuteTool(call("demo_fail", {"reason": "broken on purpose"}))
    assert failed.is_error and "broken on purpose" in failed.content[0].text.text
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ExecuteTool(call("demo_add", {"a": "two", "b": 1}))
    assert error_details(info.value).fields == ["arguments.a"]
    # Importing again without overwrite is refused; with it, the tools are refreshed.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ImportMcpTools(
            pb.ImportMcpToolsRequest(server=stdio_server(), name_prefix="demo_", tool_names=["add"])
        )
    assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
    again = await stub.ImportMcpTools(
        pb.ImportMcpToolsRequest(
            server=stdio_server(), name_prefix="demo_", tool_names=["add"], overwrite=True
        )
    )
    assert [t.name for t in again.tools] == ["demo_add"] and again.tools[0].etag == "2"


async def test_stdio_command_must_be_allowed(stub) -> None:
    server = pb.McpServer(transport=pb.MCP_TRANSPORT_STDIO, command="/bin/sh", args=["-c", "id"])
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ImportMcpTools(pb.ImportMcpToolsRequest(server=server))
    details = error_details(info.value)
    assert details.fields == ["server.command"] and details.reason == "MCP_COMMAND_NOT_ALLOWED"


@pytest.fixture
def http_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        for _ in range(200):
            try:
                httpx.get(url, timeout=0.5)
                break
            except httpx.TransportError:
                if proc.poll() is not None:
                    raise RuntimeError("the MCP server exited") from None
                import time

                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


async def test_import_and_call_over_streamable_http(stub, http_server) -> None:
    await make_skill(stub, "remote")
    server = pb.McpServer(transport=pb.MCP_TRANSPORT_STREAMABLE_HTTP, url=http_server)
    imported = await stub.ImportMcpTools(
        pb.ImportMcpToolsRequest(server=server, tool_names=["add"], skill="remote")
    )
    assert [t.name for t in imported.tools] == ["add"]
    await grant(stub, "agent", "remote")
    result = await stub.ExecuteTool(call("add", {"a": 1, "b": 2}))
    assert result.structured_content["result"] == 3


async def test_unreachable_server(stub) -> None:
    server = pb.McpServer(
        transport=pb.MCP_TRANSPORT_STREAMABLE_HTTP, url=f"http://127.0.0.1:{free_port()}/mcp"
    )
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ImportMcpTools(pb.ImportMcpToolsRequest(server=server))
    assert error_details(info.value).reason == "MCP_SERVER_UNREACHABLE"
    await asyncio.sleep(0)
