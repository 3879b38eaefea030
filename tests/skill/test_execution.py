"""ExecuteTool: python built-ins, schema violations, permissions and access levels, timeouts,
retries only for idempotent tools, request-id replay, and the REST executor against a real
HTTP server on loopback."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import grpc
import pytest
from skill_helpers import grant, make_skill, param, python_tool, struct

from lightmind.skill.v1 import skill_service_pb2 as pb
from lightmind.testing import error_details


def call(tool: str, args: dict, agent: str = "agent", **kw) -> pb.ExecuteToolRequest:
    return pb.ExecuteToolRequest(
        tool=tool,
        arguments=struct(args),
        caller=pb.Caller(agent_id=agent, **kw.pop("caller", {})),
        **kw,
    )


async def setup_builtin_tools(stub) -> None:
    await make_skill(stub, "math-help")
    await stub.CreateTool(
        pb.CreateToolRequest(
            tool=python_tool(
                "calculate",
                "skill_svc.builtins.calculate",
                [param("expression", pb.PARAMETER_TYPE_STRING)],
                annotations=pb.ToolAnnotations(read_only_hint=True),
            )
        )
    )
    await stub.CreateTool(
        pb.CreateToolRequest(
            tool=python_tool(
                "current_time",
                "skill_svc.builtins.current_time",
                [
                    param(
                        "timezone",
                        pb.PARAMETER_TYPE_STRING,
                        required=False,
                        default_value=__import__(
                            "google.protobuf.struct_pb2", fromlist=["Value"]
                        ).Value(string_value="UTC"),
                    )
                ],
                annotations=pb.ToolAnnotations(read_only_hint=True),
            )
        )
    )
    await grant(stub, "agent", "math-help", "calculate", level=pb.ACCESS_LEVEL_READ)
    await stub.AttachTool(pb.AttachToolRequest(skill="math-help", tool="current_time"))


async def test_builtin_python_tools(stub) -> None:
    await setup_builtin_tools(stub)
    result = await stub.ExecuteTool(call("calculate", {"expression": "(2 + 3) * sqrt(16) / 4"}))
    assert not result.is_error and result.attempts == 1
    assert dict(result.structured_content)["value"] == 5
    assert json.loads(result.content[0].text.text)["value"] == 5
    result = await stub.ExecuteTool(call("current_time", {"timezone": "Asia/Tokyo"}))
    assert result.structured_content["utc_offset"] == "+0900"
    result = await stub.ExecuteTool(call("current_time", {}))  # default filled in
    assert result.structured_content["timezone"] == "UTC"
    # Failures the model should read come back as results, not gRPC errors.
    result = await stub.ExecuteTool(
        call("calculate", {"expression": "__import__('os').system('id')"})
    )
    assert result.is_error and "unsupported" in result.content[0].text.text
    result = await stub.ExecuteTool(call("calculate", {"expression": "9 ** 999"}))
    assert result.is_error and "too large" in result.content[0].text.text
    result = await stub.ExecuteTool(call("current_time", {"timezone": "Mars/Base"}))
    assert result.is_error and "unknown time zone" in result.content[0].text.text


async def test_schema_violations_are_all_listed(stub) -> None:
    await make_skill(stub, "s")
    await stub.CreateTool(
        pb.CreateToolRequest(
            tool=python_tool(
                "echo",
                "skill_test_tools.echo",
                [
                    param(
                        "text", pb.PARAMETER_TYPE_STRING, validation_schema=struct({"maxLength": 5})
                    ),
                    param(
                        "times", pb.PARAMETER_TYPE_INTEGER, validation_schema=struct({"minimum": 1})
                    ),
                ],
            )
        )
    )
    await grant(stub, "agent", "s", "echo")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ExecuteTool(call("echo", {"text": "too long text", "times": 0, "extra": 1}))
    details = error_details(info.value)
    assert details.code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.reason == "ARGUMENTS_INVALID"
    assert sorted(details.fields) == ["arguments.extra", "arguments.text", "arguments.times"]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ExecuteTool(call("echo", {"times": "3"}))
    assert sorted(error_details(info.value).fields) == ["arguments.text", "arguments.times"]
    ok = await stub.ExecuteTool(call("echo", {"text": "ab", "times": 2}))
    assert ok.structured_content["text"] == "abab" and ok.structured_content["agent"] == "agent"


async def test_permissions(stub) -> None:
    await make_skill(stub, "reader")
    await make_skill(stub, "private")
    await stub.CreateTool(
        pb.CreateToolRequest(
            tool=python_tool(
                "wipe",
                "skill_test_tools.echo",
                [param("text", pb.PARAMETER_TYPE_STRING)],
                annotations=pb.ToolAnnotations(destructive_hint=True),
            )
        )
    )
    args = {"text": "x"}
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ExecuteTool(call("wipe", args))
    assert error_details(info.value).reason == "TOOL_NOT_GRANTED"
    await grant(stub, "agent", "reader", "wipe", level=pb.ACCESS_LEVEL_WRITE)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ExecuteTool(call("wipe", args))
    details = error_details(info.value)
    assert details.code == grpc.StatusCode.PERMISSION_DENIED
    assert details.reason == "ACCESS_LEVEL_INSUFFICIENT"  # destructive needs EXECUTE
    await stub.AttachTool(
        pb.AttachToolRequest(skill="reader", tool="wipe", access_level=pb.ACCESS_LEVEL_EXECUTE)
    )
    assert not (await stub.ExecuteTool(call("wipe", args))).is_error
    # Restricted to a user list: other users are refused.
    await grant(stub, "agent-2", "private", "wipe", allowed_users=["alice"])
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ExecuteTool(call("wipe", args, agent="agent-2", caller={"user_id": "bob"}))
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    ok = await stub.ExecuteTool(call("wipe", args, agent="agent-2", caller={"user_id": "alice"}))
    assert not ok.is_error
    # A deleted skill no longer grants anything.
    await stub.DeleteSkill(pb.DeleteSkillRequest(skill="reader"))
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ExecuteTool(call("wipe", args))
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED


async def test_timeout_from_the_assignment(stub) -> None:
    await make_skill(stub, "slow")
    await stub.CreateTool(
        pb.CreateToolRequest(
            tool=python_tool(
                "sleep", "skill_test_tools.slow", [param("seconds", pb.PARAMETER_TYPE_NUMBER)]
            )
        )
    )
    await grant(stub, "agent", "slow", "sleep", timeout_seconds=1)
    result = await stub.ExecuteTool(call("sleep", {"seconds": 30}))
    assert result.is_error and "timed out after 1s" in result.content[0].text.text
    assert (await stub.ExecuteTool(call("sleep", {"seconds": 0}))).structured_content[
        "result"
    ] == "done"


async def test_request_id_replays_the_first_result(stub) -> None:
    await make_skill(stub, "c")
    await stub.CreateTool(
        pb.CreateToolRequest(
            tool=python_tool(
                "count", "skill_test_tools.count", [param("key", pb.PARAMETER_TYPE_STRING)]
            )
        )
    )
    await grant(stub, "agent", "c", "count")
    key = uuid.uuid4().hex
    rid = str(uuid.uuid4())
    first = await stub.ExecuteTool(call("count", {"key": key}, request_id=rid))
    again = await stub.ExecuteTool(call("count", {"key": key}, request_id=rid))
    assert first.structured_content["result"] == 1 and not first.replayed
    assert again.structured_content["result"] == 1 and again.replayed
    assert again.execution_id == first.execution_id == rid
    fresh = await stub.ExecuteTool(call("count", {"key": key}))
    assert fresh.structured_content["result"] == 2
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ExecuteTool(call("count", {"key": "other"}, request_id=rid))
    assert error_details(info.value).fields == ["request_id"]


class Backend(BaseHTTPRequestHandler):
    """A small REST service: /items/{id}, /flaky (fails twice then answers), /big, /slow."""

    hits: ClassVar[dict[str, int]] = {}

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        Backend.hits[path] = Backend.hits.get(path, 0) + 1
        if path.startswith("/items/"):
            self._send(
                200,
                json.dumps(
                    {
                        "id": path.split("/")[-1],
                        "query": query,
                        "auth": self.headers.get("x-api-key"),
                    }
                ).encode(),
            )
        elif path.startswith("/flaky"):
            if Backend.hits[path] <= 2:
                self._send(503, b"try again")
            else:
                self._send(200, b'{"ok": true}')
        elif path == "/big":
            self._send(200, b"x" * 3_000_000, "text/plain")
        elif path == "/missing":
            self._send(404, b"no such thing", "text/plain")
        else:
            self._send(200, b"plain text answer", "text/plain")

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = json.loads(self.rfile.read(length))
        self._send(201, json.dumps({"received": body}).encode())


@pytest.fixture
def backend() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Backend.hits = {}
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def rest_tool(name: str, method: str, url: str, params: list, **kw) -> pb.Tool:
    return pb.Tool(
        name=name,
        description=f"REST tool {name}.",
        rest=pb.RestImplementation(method=method, url_template=url, headers=kw.pop("headers", {})),
        parameters=params,
        **kw,
    )


async def test_rest_executor_against_a_real_server(stub, backend) -> None:
    await make_skill(stub, "api")
    s = pb.PARAMETER_TYPE_STRING
    tools = [
        rest_tool(
            "get_item",
            "GET",
            backend + "/items/{item_id}",
            [param("item_id", s), param("fields", s, required=False)],
            headers={"x-api-key": "k1"},
        ),
        rest_tool("create_item", "POST", backend + "/items", [param("title", s)]),
        rest_tool("big", "GET", backend + "/big", []),
        rest_tool("missing", "GET", backend + "/missing", []),
        rest_tool("text", "GET", backend + "/text", []),
    ]
    for tool in tools:
        await stub.CreateTool(pb.CreateToolRequest(tool=tool))
        await grant(stub, "agent", "api", tool.name)
    got = await stub.ExecuteTool(call("get_item", {"item_id": "a/b 1", "fields": "name"}))
    assert dict(got.structured_content) == {"id": "a%2Fb%201", "query": "fields=name", "auth": "k1"}
    posted = await stub.ExecuteTool(call("create_item", {"title": "hello"}))
    assert posted.structured_content["received"]["title"] == "hello"
    big = await stub.ExecuteTool(call("big", {}))
    assert big.is_error and "exceeded the limit" in big.content[0].text.text
    missing = await stub.ExecuteTool(call("missing", {}))
    assert missing.is_error and missing.content[0].text.text == "HTTP 404: no such thing"
    text = await stub.ExecuteTool(call("text", {}))
    assert text.content[0].text.text == "plain text answer" and not text.HasField(
        "structured_content"
    )


async def test_retries_only_for_idempotent_tools(stub, backend) -> None:
    await make_skill(stub, "api")
    await stub.CreateTool(
        pb.CreateToolRequest(
            tool=rest_tool(
                "flaky_read",
                "GET",
                backend + "/flaky/read",
                [],
                annotations=pb.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
            )
        )
    )
    await stub.CreateTool(
        pb.CreateToolRequest(tool=rest_tool("flaky_write", "GET", backend + "/flaky/write", []))
    )
    await grant(stub, "agent", "api", "flaky_read", max_retries=3)
    await stub.AttachTool(
        pb.AttachToolRequest(skill="api", tool="flaky_write", access_level=pb.ACCESS_LEVEL_WRITE)
    )
    read = await stub.ExecuteTool(call("flaky_read", {}))
    assert not read.is_error and read.attempts == 3
    assert Backend.hits["/flaky/read"] == 3
    write = await stub.ExecuteTool(call("flaky_write", {}))
    assert write.is_error and write.attempts == 1 and "HTTP 503" in write.content[0].text.text
    assert Backend.hits["/flaky/write"] == 1


async def test_rest_host_allow_list(database_url, embedding_server) -> None:
    from skill_helpers import skill_env

    from lightmind.testing import ServerHandle
    from skill_svc.config import SkillConfig
    from skill_svc.service import build

    config = SkillConfig.from_env(
        skill_env(
            database_url,
            embedding_server.address,
            LIGHTMIND_SKILL_REST_ALLOWED_HOSTS="api.example.com",
        )
    )
    handle = await ServerHandle.start("skill", lambda: build(config))
    try:
        async with grpc.aio.insecure_channel(handle.address) as channel:
            from lightmind.skill.v1 import skill_service_pb2_grpc as pb_grpc

            stub = pb_grpc.SkillServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.CreateTool(
                    pb.CreateToolRequest(tool=rest_tool("x", "GET", "http://127.0.0.1:9/x", []))
                )
            details = error_details(info.value)
            assert details.fields == ["tool.rest.url_template"]
            assert details.reason == "REST_HOST_NOT_ALLOWED"
    finally:
        await handle.stop()
    await asyncio.sleep(0)


async def test_tool_executions_and_pool_use_are_in_the_metrics(stub) -> None:
    from prometheus_client import REGISTRY

    def sample(outcome: str) -> float:
        value = REGISTRY.get_sample_value(
            "lightmind_tool_executions_total", {"type": "python", "outcome": outcome}
        )
        return value or 0.0

    await setup_builtin_tools(stub)
    ok, failed = sample("ok"), sample("tool_error")
    await stub.ExecuteTool(call("calculate", {"expression": "1 + 1"}))
    await stub.ExecuteTool(call("calculate", {"expression": "1 / 0"}))
    assert sample("ok") == ok + 1 and sample("tool_error") == failed + 1
    idle = REGISTRY.get_sample_value(
        "lightmind_db_pool_connections", {"service": "skill", "state": "idle"}
    )
    assert idle is not None and idle >= 0
