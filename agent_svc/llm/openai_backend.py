"""Any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, llama.cpp server).

Uses the ``openai`` SDK with the configured base URL, key and timeout. The SDK retries
connection errors, 408/409/429 and 5xx answers with exponential backoff (honouring
``Retry-After``) up to ``LIGHTMIND_LLM_MAX_RETRIES`` times. With streaming on, text deltas are
passed on as they arrive and tool-call fragments are assembled by index. Failures become
``lightmind.errors``: an unreachable endpoint, a timeout or a persistent 5xx/429 is
UNAVAILABLE naming the URL; a refused key is FAILED_PRECONDITION; a request the endpoint
rejects (unknown model, bad tool schema) is FAILED_PRECONDITION with the endpoint's message.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import openai

from agent_svc.config import LlmConfig
from agent_svc.llm.base import LlmRequest, LlmResult, ToolCallRequest, parse_arguments
from agent_svc.llm.messages import to_openai_message, to_openai_tool
from lightmind.errors import FailedPrecondition, LightmindError, Unavailable


class OpenAIBackend:
    name = "openai"

    def __init__(self, config: LlmConfig) -> None:
        self._config = config
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url,
            api_key=config.api_key,
            timeout=config.timeout_seconds,
            max_retries=config.max_retries,
        )

    async def close(self) -> None:
        await self._client.close()

    def _kwargs(self, request: LlmRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": [to_openai_message(m) for m in request.messages],
            "max_tokens": request.max_tokens,
        }
        if request.tools:
            kwargs["tools"] = [to_openai_tool(t) for t in request.tools]
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.top_p is not None:
            kwargs["top_p"] = request.top_p
        if request.json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": request.json_schema},
            }
        return kwargs

    async def complete(self, request: LlmRequest) -> AsyncIterator[str | LlmResult]:
        try:
            if self._config.stream:
                async for item in self._stream(request):
                    yield item
            else:
                yield await self._once(request)
        except openai.APIError as exc:
            raise self._translate(exc) from exc

    async def _once(self, request: LlmRequest) -> LlmResult:
        response = await self._client.chat.completions.create(**self._kwargs(request))
        if not response.choices:
            return LlmResult("", [], "stop")
        choice = response.choices[0]
        calls = [
            ToolCallRequest(
                c.id,
                c.function.name,
                parse_arguments(c.function.arguments),
                c.function.arguments,
            )
            for c in (choice.message.tool_calls or [])
            if c.type == "function"
        ]
        usage = response.usage
        return LlmResult(
            choice.message.content or "",
            calls,
            choice.finish_reason or "stop",
            usage.prompt_tokens if usage else 0,
            usage.completion_tokens if usage else 0,
        )

    async def _stream(self, request: LlmRequest) -> AsyncIterator[str | LlmResult]:
        stream = await self._client.chat.completions.create(
            **self._kwargs(request), stream=True, stream_options={"include_usage": True}
        )
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        finish = "stop"
        prompt_tokens = completion_tokens = 0
        async with stream:
            async for chunk in stream:
                if chunk.usage is not None:
                    prompt_tokens = chunk.usage.prompt_tokens
                    completion_tokens = chunk.usage.completion_tokens
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                        yield delta.content
                    for fragment in delta.tool_calls or []:
                        slot = calls.setdefault(fragment.index, {"id": "", "name": "", "args": ""})
                        if fragment.id:
                            slot["id"] = fragment.id
                        if fragment.function is not None:
                            if fragment.function.name:
                                slot["name"] += fragment.function.name
                            if fragment.function.arguments:
                                slot["args"] += fragment.function.arguments
                    if choice.finish_reason:
                        finish = choice.finish_reason
        tool_calls = [
            ToolCallRequest(
                slot["id"] or f"call_{index}",
                slot["name"],
                parse_arguments(slot["args"]),
                slot["args"],
            )
            for index, slot in sorted(calls.items())
        ]
        yield LlmResult("".join(text), tool_calls, finish, prompt_tokens, completion_tokens)

    def _translate(self, exc: openai.APIError) -> LightmindError:
        where = self._config.base_url
        if isinstance(exc, openai.APITimeoutError):
            return Unavailable(
                f"the LLM at {where} did not answer within {self._config.timeout_seconds:g}s",
                reason="LLM_UNAVAILABLE",
            )
        if isinstance(exc, openai.APIConnectionError):
            return Unavailable(
                f"the LLM at {where} is unreachable ({exc.__cause__ or exc}); check "
                "LIGHTMIND_LLM_BASE_URL or start the model server",
                reason="LLM_UNAVAILABLE",
            )
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return FailedPrecondition(
                f"the LLM at {where} refused the API key (LIGHTMIND_LLM_API_KEY)",
                reason="LLM_AUTH_FAILED",
            )
        if isinstance(exc, openai.APIStatusError):
            if exc.status_code == 429 or exc.status_code >= 500:
                return Unavailable(
                    f"the LLM at {where} answered HTTP {exc.status_code} after "
                    f"{self._config.max_retries} retries: {_message(exc)}",
                    reason="LLM_UNAVAILABLE",
                )
            return FailedPrecondition(
                f"the LLM at {where} rejected the request (HTTP {exc.status_code}): "
                f"{_message(exc)}",
                reason="LLM_REQUEST_REJECTED",
            )
        return Unavailable(f"the LLM at {where} failed: {exc}", reason="LLM_UNAVAILABLE")


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and "message" in error:
            return str(error["message"])[:500]
        return json.dumps(body)[:500]
    return str(exc.message)[:500]
