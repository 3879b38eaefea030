"""The interface every LLM back-end implements, and the messages it speaks.

A back-end takes an ``LlmRequest`` (messages in the OpenAI chat shape, tool definitions,
sampling options) and streams: zero or more ``str`` text deltas, then exactly one
``LlmResult`` (the whole text, the tool calls, the finish reason, token usage). Back-ends
raise ``lightmind.errors`` exceptions (``Unavailable`` when the model cannot be reached).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCallRequest:
    id: str
    name: str
    # The parsed arguments; None when the model sent something that is not a JSON object.
    arguments: dict[str, Any] | None
    raw_arguments: str = ""


@dataclass
class LlmMessage:
    role: str  # system, user, assistant, tool
    content: str = ""
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    tool_call_id: str = ""
    name: str = ""


@dataclass
class LlmRequest:
    model: str
    messages: list[LlmMessage]
    tools: list[ToolSpec] = field(default_factory=list)
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int = 512
    # When set, the reply must be a JSON object matching this schema (no tools).
    json_schema: dict[str, Any] | None = None


@dataclass
class LlmResult:
    text: str
    tool_calls: list[ToolCallRequest]
    finish_reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class LlmBackend(Protocol):
    name: str

    def complete(self, request: LlmRequest) -> AsyncIterator[str | LlmResult]:
        """Streams text deltas, then one LlmResult."""
        ...

    async def close(self) -> None: ...


def parse_arguments(raw: str) -> dict[str, Any] | None:
    import json

    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
