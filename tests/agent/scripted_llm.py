"""A scripted OpenAI-compatible chat-completions server on loopback (aiohttp).

Each POST /v1/chat/completions takes the next scripted reply: text, tool calls, an HTTP
error status, or a delay first. Streaming requests get Server-Sent Events chunks (text split
into pieces, tool calls, finish reason, usage, ``[DONE]``) like the real API. Every request
body is recorded so tests can assert what the agent sent to the model.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


def text(content: str, **kw: Any) -> dict[str, Any]:
    return {"content": content, **kw}


def call(call_id: str, name: str, arguments: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}], **kw}


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in items]}


@dataclass
class ScriptedLLM:
    script: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    _runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> ScriptedLLM:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def add(self, *replies: dict[str, Any]) -> None:
        self.script.extend(replies)

    def prompt_text(self, index: int) -> str:
        """Everything the agent sent in request ``index``, as one string."""
        return json.dumps(self.requests[index]["messages"])

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        if not self.script:
            return web.json_response({"error": {"message": "script exhausted"}}, status=500)
        reply = self.script.pop(0)
        if reply.get("delay"):
            await asyncio.sleep(reply["delay"])
        if reply.get("status"):
            return web.json_response(
                {"error": {"message": reply.get("message", "scripted failure")}},
                status=reply["status"],
            )
        content = reply.get("content")
        tool_calls = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for c in reply.get("tool_calls", [])
        ]
        finish = "tool_calls" if tool_calls else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if tool_calls:
                message["tool_calls"] = tool_calls
            return web.json_response(
                {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def send(choices: list[dict[str, Any]], **extra: Any) -> None:
            chunk = {
                "id": "chatcmpl-scripted",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body.get("model", "scripted"),
                "choices": choices,
                **extra,
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send([{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}])
        if content:
            words = content.split(" ")
            for i, word in enumerate(words):
                piece = word if i == len(words) - 1 else word + " "
                await send([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
        for index, tc in enumerate(tool_calls):
            args = tc["function"]["arguments"]
            half = len(args) // 2
            first = {
                "index": index,
                "id": tc["id"],
                "type": "function",
                "function": {"name": tc["function"]["name"], "arguments": args[:half]},
            }
            second = {"index": index, "function": {"arguments": args[half:]}}
            for fragment in (first, second):
                await send(
                    [{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": None}]
                )
        await send([{"index": 0, "delta": {}, "finish_reason": finish}])
        await send([], usage=usage)
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
