"""Stored chat messages -> the LLM's message list, repaired so every provider accepts it.

Chat APIs require each assistant tool call to be answered by a tool message right after
it. A window of recent messages can start in the middle of such a group, and a cancelled or
interrupted turn can leave calls unanswered; ``build_history`` drops orphaned tool messages
and answers dangling calls with a synthetic "did not complete" note, except for the calls
of ``open_message_id`` (the step a resumed turn is about to complete).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import Any

from agent_svc.llm.base import LlmMessage, ToolCallRequest

NOT_COMPLETED = "(no result: this call did not complete)"


def calls_of(row: Any) -> list[ToolCallRequest]:
    calls: list[ToolCallRequest] = []
    for raw in row["tool_calls"] or []:
        arguments = raw.get("arguments")
        calls.append(
            ToolCallRequest(
                id=str(raw.get("id", "")),
                name=str(raw.get("name", "")),
                arguments=arguments if isinstance(arguments, dict) else None,
                raw_arguments=str(raw.get("raw_arguments", "")) or json.dumps(arguments),
            )
        )
    return calls


def call_to_json(call: ToolCallRequest) -> dict[str, Any]:
    return {
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "raw_arguments": call.raw_arguments if call.arguments is None else "",
    }


def build_history(
    rows: Sequence[Any], open_message_id: uuid.UUID | None = None
) -> list[LlmMessage]:
    out: list[LlmMessage] = []
    pending: dict[str, str] = {}  # call id -> tool name, of the last assistant message
    keep_open = False

    def flush() -> None:
        if not keep_open:
            for call_id, name in pending.items():
                out.append(LlmMessage("tool", NOT_COMPLETED, tool_call_id=call_id, name=name))
        pending.clear()

    for row in rows:
        role = row["role"]
        if role == "tool":
            call_id = row["tool_call_id"]
            if call_id in pending:
                name = pending.pop(call_id)
                out.append(LlmMessage("tool", row["content"], tool_call_id=call_id, name=name))
            continue  # an orphan: its assistant message is outside the window
        flush()
        keep_open = False
        if role == "assistant":
            calls = calls_of(row)
            out.append(LlmMessage("assistant", row["content"], tool_calls=calls))
            pending = {c.id: c.name for c in calls}
            keep_open = open_message_id is not None and row["id"] == open_message_id
        elif role == "user":
            out.append(LlmMessage("user", row["content"]))
        # Stored system notes are for people reading the transcript, not for the model.
    flush()
    return out
