"""Conversions between ``LlmMessage`` and the OpenAI chat-completions wire shape."""

from __future__ import annotations

import json
from typing import Any

from agent_svc.llm.base import LlmMessage, ToolSpec


def to_openai_message(message: LlmMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": call.raw_arguments
                    if call.arguments is None
                    else json.dumps(call.arguments),
                },
            }
            for call in message.tool_calls
        ]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
    return out


def to_openai_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters or {"type": "object", "properties": {}},
        },
    }
