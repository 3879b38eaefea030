"""The script executor's sandbox: scripts that try the network, write outside their
directory, loop forever or print without end are all stopped; a well-behaved one works."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from skill_helpers import grant, make_skill, struct

from lightmind.skill.v1 import skill_service_pb2 as pb

ECHO = """
import json, sys
args = json.load(sys.stdin)
open("scratch.txt", "w").write("ok")  # its own directory is writable
files = sorted(__import__("os").listdir("."))
print(json.dumps({"sum": args["a"] + args["b"], "cwd_files": files}))
"""
NETWORK = """
import socket
socket.create_connection(("127.0.0.1", {port}), timeout=3)
print("connected")
"""
WRITE_OUTSIDE = """
for path in ["{target}", "/dev/shm/{name}", "/var/tmp/{name}"]:
    try:
        open(path, "w").write("escaped")
        print("wrote " + path)
    except OSError as exc:
        print("refused " + path + ": " + exc.strerror)
"""
FOREVER = "while True:\n    pass\n"
FLOOD = "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"
ENVIRONMENT = "import json, os\nprint(json.dumps(sorted(os.environ)))\n"


def script_tool(name: str, content: str, params: list[pb.ToolParameter] = ()) -> pb.Tool:
    return pb.Tool(
        name=name,
        description=f"Script {name}.",
        script=pb.ScriptImplementation(content=content),
        parameters=list(params),
    )


def call(tool: str, args: dict | None = None) -> pb.ExecuteToolRequest:
    return pb.ExecuteToolRequest(
        tool=tool, arguments=struct(args or {}), caller=pb.Caller(agent_id="agent")
    )


async def add(stub, name: str, content: str, params=(), **assign) -> None:
    await stub.CreateTool(pb.CreateToolRequest(tool=script_tool(name, content, params)))
    await grant(stub, "agent", "scripts", name, **assign)


@pytest.fixture
async def scripts(stub):
    await make_skill(stub, "scripts")
    return stub


async def test_script_reads_stdin_and_answers_json(scripts) -> None:
    integer = pb.PARAMETER_TYPE_INTEGER
    await add(
        scripts,
        "adder",
        ECHO,
        [pb.ToolParameter(name=n, type=integer, required=True) for n in "ab"],
    )
    result = await scripts.ExecuteTool(call("adder", {"a": 2, "b": 3}))
    assert not result.is_error, result.content
    assert result.structured_content["sum"] == 5
    assert list(result.structured_content["cwd_files"]) == ["main.py", "scratch.txt"]


async def test_script_has_no_network(scripts) -> None:
    # A real listener on loopback: reachable from the test, not from the sandbox.
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        await add(scripts, "net", NETWORK.format(port=listener.getsockname()[1]))
        result = await scripts.ExecuteTool(call("net"))
    finally:
        listener.close()
    assert result.is_error
    assert "connected" not in result.content[0].text.text
    assert "Network is unreachable" in result.content[0].text.text


async def test_script_cannot_write_outside_its_directory(scripts, tmp_path) -> None:
    os.chmod(tmp_path, 0o777)  # even a world-writable directory is out of reach
    name = f"escape-{uuid.uuid4().hex}"
    target = tmp_path / name
    await add(scripts, "escape", WRITE_OUTSIDE.format(target=target, name=name))
    result = await scripts.ExecuteTool(call("escape"))
    text = result.content[0].text.text
    assert "wrote" not in text and text.count("refused") == 3, text
    assert not target.exists()
    for leftover in (f"/dev/shm/{name}", f"/var/tmp/{name}"):
        assert not Path(leftover).exists()  # noqa: ASYNC240


async def test_infinite_loop_is_stopped(scripts) -> None:
    await add(scripts, "forever", FOREVER, timeout_seconds=1)
    result = await scripts.ExecuteTool(call("forever"))
    assert result.is_error and "timed out" in result.content[0].text.text


async def test_huge_output_is_stopped(scripts) -> None:
    await add(scripts, "flood", FLOOD)
    result = await scripts.ExecuteTool(call("flood"))
    assert result.is_error and "more than 1048576 bytes" in result.content[0].text.text


async def test_environment_is_stripped(scripts) -> None:
    os.environ["LIGHTMIND_TEST_SECRET"] = "hunter2"
    try:
        await add(scripts, "env", ENVIRONMENT)
        result = await scripts.ExecuteTool(call("env"))
    finally:
        del os.environ["LIGHTMIND_TEST_SECRET"]
    assert list(result.structured_content["result"]) == ["HOME", "LANG", "PATH", "TMPDIR"]
