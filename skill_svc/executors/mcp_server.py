"""The ``mcp_server`` executor: calls a tool on an MCP server with the official ``mcp`` SDK.

Two transports: stdio (the server is a local process; its command must be on
LIGHTMIND_SKILL_MCP_STDIO_COMMANDS, and it gets only PATH plus the tool's own env) and
streamable HTTP. Each call opens a session, initializes, calls the tool and closes — simple
and stateless; a stdio server therefore starts once per call. ``list_tools`` backs
ImportMcpTools. MCP results map one to one: content blocks (text, images), structured
content, isError; a protocol or connection failure is a retryable tool failure.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from typing import Any

import mcp_types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from lightmind.errors import InvalidArgument
from skill_svc.executors.base import ExecutionContext, ToolFailure, ToolOutcome
from skill_svc.records import ToolRecord

TRANSPORTS = ("stdio", "streamable_http")


class McpExecutor:
    def __init__(self, stdio_commands: tuple[str, ...]) -> None:
        self._stdio_commands = stdio_commands

    def stdio_allowed(self, command: str) -> bool:
        if "*" in self._stdio_commands:
            return True
        resolved = shutil.which(command) or command
        return command in self._stdio_commands or resolved in self._stdio_commands

    def check(self, server: dict[str, Any], field: str) -> None:
        transport = server.get("transport")
        if transport not in TRANSPORTS:
            raise InvalidArgument.field(f"{field}.transport", "must be STDIO or STREAMABLE_HTTP")
        if transport == "stdio":
            command = server.get("command", "")
            if not command:
                raise InvalidArgument.field(f"{field}.command", "is required for STDIO")
            if not self.stdio_allowed(command):
                raise InvalidArgument.field(
                    f"{field}.command",
                    f"{command!r} is not in LIGHTMIND_SKILL_MCP_STDIO_COMMANDS",
                    reason="MCP_COMMAND_NOT_ALLOWED",
                )
        elif not str(server.get("url", "")).startswith(("http://", "https://")):
            raise InvalidArgument.field(f"{field}.url", "must be an http(s) URL")

    @contextlib.asynccontextmanager
    async def session(self, server: dict[str, Any]) -> AsyncIterator[ClientSession]:
        if server["transport"] == "stdio":
            if not self.stdio_allowed(server["command"]):
                raise ToolFailure(f"MCP command {server['command']!r} is no longer allowed")
            params = StdioServerParameters(
                command=server["command"],
                args=list(server.get("args") or []),
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(server.get("env") or {})},
            )
            # The server's stderr goes to ours (the service log), as a stdio server's logs do.
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                yield session
        else:
            http = create_mcp_http_client(headers=dict(server.get("headers") or {}))
            async with (
                http,
                streamable_http_client(server["url"], http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                yield session

    async def list_tools(self, server: dict[str, Any]) -> list[mcp_types.Tool]:
        tools: list[mcp_types.Tool] = []
        async with self.session(server) as session:
            cursor: str | None = None
            while True:
                params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await session.list_tools(params=params)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools

    async def run(
        self, tool: ToolRecord, arguments: dict[str, Any], context: ExecutionContext
    ) -> ToolOutcome:
        impl = tool.implementation
        name = impl.get("tool_name") or tool.name
        try:
            async with self.session(impl["server"]) as session:
                result = await session.call_tool(name, arguments)
        except ToolFailure:
            raise
        except Exception as exc:
            # Connection refused, the process died, a JSON-RPC error: the model reads it.
            raise ToolFailure(
                f"the MCP server failed: {type(exc).__name__}: {exc}", retryable=True
            ) from None
        return to_outcome(result)


def to_outcome(result: mcp_types.CallToolResult) -> ToolOutcome:
    texts: list[str] = []
    images: list[tuple[bytes, str]] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            texts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            images.append((base64.b64decode(block.data), block.mime_type))
    return ToolOutcome(
        value=result.structured_content,
        text="\n".join(texts) if texts else None,
        images=images,
        is_error=bool(result.is_error),
    )
