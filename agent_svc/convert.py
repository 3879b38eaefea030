"""Validation of request fields and conversion between stored rows and protos.

Validators raise ``InvalidArgument`` naming the offending field (``agent.chat_options.top_p``)
and return plain values ready for the repository; the ``*_proto`` functions turn rows back
into messages, with the etag derived from the row's version.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from google.protobuf import json_format, struct_pb2

from agent_svc import continuity
from lightmind.agent.v1 import agent_service_pb2 as pb
from lightmind.errors import InvalidArgument
from lightmind.etags import format_etag

NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
MAX_DESCRIPTION = 2000
MAX_MODEL = 200
MAX_TITLE = 200
MAX_KNOWLEDGE_BASES = 100
MEMORY_SCOPES = ("session", "user", "agent", "organization")


def uuid_field(value: str, field: str, *, required: bool = False) -> uuid.UUID | None:
    if not value:
        if required:
            raise InvalidArgument.field(field, "is required")
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidArgument.field(field, f"{value[:60]!r} is not a UUID") from None


def required_uuid(value: str, field: str) -> uuid.UUID:
    parsed = uuid_field(value, field, required=True)
    assert parsed is not None
    return parsed


def struct_dict(value: struct_pb2.Struct) -> dict[str, Any]:
    result: dict[str, Any] = json_format.MessageToDict(value)
    return result


def agent_values(agent: pb.Agent, paths: set[str] | None, prefix: str = "agent") -> dict[str, Any]:
    """The repository values of ``agent`` for the columns in ``paths`` (None: all)."""

    def want(path: str) -> bool:
        return paths is None or path in paths

    out: dict[str, Any] = {}
    if want("name"):
        if not agent.name:
            raise InvalidArgument.field(f"{prefix}.name", "is required")
        if not NAME.match(agent.name):
            raise InvalidArgument.field(
                f"{prefix}.name", "use 1-64 letters, digits, '_', '-' or '.'"
            )
        if uuid_like(agent.name):
            raise InvalidArgument.field(f"{prefix}.name", "must not look like a UUID")
        out["name"] = agent.name
    if want("description"):
        if len(agent.description) > MAX_DESCRIPTION:
            raise InvalidArgument.field(
                f"{prefix}.description", f"at most {MAX_DESCRIPTION} characters"
            )
        out["description"] = agent.description
    if want("system_prompt"):
        out["system_prompt"] = agent.system_prompt
    if want("model"):
        if len(agent.model) > MAX_MODEL:
            raise InvalidArgument.field(f"{prefix}.model", f"at most {MAX_MODEL} characters")
        out["model"] = agent.model
    if want("chat_options"):
        out["chat_options"] = chat_options(agent.chat_options, f"{prefix}.chat_options")
    if want("knowledge_bases"):
        bases = list(agent.knowledge_bases)
        if len(bases) > MAX_KNOWLEDGE_BASES:
            raise InvalidArgument.field(
                f"{prefix}.knowledge_bases", f"at most {MAX_KNOWLEDGE_BASES}"
            )
        for i, base in enumerate(bases):
            if not base.strip() or len(base) > 200:
                raise InvalidArgument.field(
                    f"{prefix}.knowledge_bases[{i}]", "must be 1-200 characters"
                )
        out["knowledge_bases"] = bases
    if want("memory_limits"):
        limits: dict[str, int] = {}
        for scope in MEMORY_SCOPES:
            if agent.memory_limits.HasField(scope):  # type: ignore[arg-type]
                value = getattr(agent.memory_limits, scope)
                if not 0 <= value <= 100:
                    raise InvalidArgument.field(
                        f"{prefix}.memory_limits.{scope}", "must be between 0 and 100"
                    )
                limits[scope] = value
        out["memory_limits"] = limits
    if want("max_iterations"):
        if not 0 <= agent.max_iterations <= 50:
            raise InvalidArgument.field(f"{prefix}.max_iterations", "must be between 0 and 50")
        out["max_iterations"] = agent.max_iterations
    if want("extract_facts"):
        out["extract_facts"] = agent.extract_facts
    if want("metadata"):
        out["metadata"] = struct_dict(agent.metadata)
    return out


def chat_options(options: pb.ChatOptions, field: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if options.HasField("temperature"):
        if not 0 <= options.temperature <= 2:
            raise InvalidArgument.field(f"{field}.temperature", "must be between 0 and 2")
        out["temperature"] = options.temperature
    if options.HasField("top_p"):
        if not 0 < options.top_p <= 1:
            raise InvalidArgument.field(f"{field}.top_p", "must be in (0, 1]")
        out["top_p"] = options.top_p
    if options.max_tokens:
        if not 0 < options.max_tokens <= 1_000_000:
            raise InvalidArgument.field(f"{field}.max_tokens", "must be between 1 and 1000000")
        out["max_tokens"] = options.max_tokens
    return out


def uuid_like(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def agent_proto(row: Any) -> pb.Agent:
    agent = pb.Agent(
        agent_id=str(row["id"]),
        name=row["name"],
        description=row["description"],
        system_prompt=row["system_prompt"],
        model=row["model"],
        knowledge_bases=list(row["knowledge_bases"]),
        max_iterations=row["max_iterations"],
        extract_facts=row["extract_facts"],
        etag=format_etag(row["version"]),
    )
    options = row["chat_options"] or {}
    if "temperature" in options:
        agent.chat_options.temperature = options["temperature"]
    if "top_p" in options:
        agent.chat_options.top_p = options["top_p"]
    agent.chat_options.max_tokens = int(options.get("max_tokens", 0))
    for scope, value in (row["memory_limits"] or {}).items():
        setattr(agent.memory_limits, scope, int(value))
    agent.metadata.update(row["metadata"] or {})
    agent.create_time.FromDatetime(row["created_at"])
    agent.update_time.FromDatetime(row["updated_at"])
    return agent


def session_proto(row: Any) -> pb.Session:
    snapshot = continuity.parse(row["continuity"])
    session = pb.Session(
        session_id=str(row["id"]),
        agent_id=str(row["agent_id"]),
        user_id=str(row["user_id"]) if row["user_id"] else "",
        title=row["title"],
        state=pb.SESSION_STATE_AWAITING_CLARIFICATION
        if snapshot.awaiting
        else pb.SESSION_STATE_ACTIVE,
        pending_question=snapshot.pending.question if snapshot.pending else "",
        loaded_skills=list(snapshot.loaded_skills),
        etag=format_etag(row["version"]),
    )
    session.metadata.update(row["metadata"] or {})
    session.create_time.FromDatetime(row["created_at"])
    session.update_time.FromDatetime(row["updated_at"])
    return session


ROLES = {
    "user": pb.ROLE_USER,
    "assistant": pb.ROLE_ASSISTANT,
    "system": pb.ROLE_SYSTEM,
    "tool": pb.ROLE_TOOL,
}


def message_proto(row: Any) -> pb.Message:
    message = pb.Message(
        message_id=str(row["id"]),
        session_id=str(row["session_id"]),
        turn_id=str(row["turn_id"]) if row["turn_id"] else "",
        role=ROLES[row["role"]],
        content=row["content"],
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
    )
    for raw in row["tool_calls"] or []:
        call = message.tool_calls.add(call_id=str(raw.get("id", "")), name=str(raw.get("name", "")))
        if isinstance(raw.get("arguments"), dict):
            call.arguments.update(raw["arguments"])
    message.metadata.update(row["metadata"] or {})
    message.create_time.FromDatetime(row["created_at"])
    return message
