"""The memory-search built-in tool: a skill's tools can look things up in MemoryService.

``search_memory`` searches one scope for the caller: session memories of the calling session,
the calling user's long-term memories, the calling agent's own memories, or the tenant's
knowledge base. Owners always come from the execution context (the ExecuteTool caller), never
from the model's arguments, so a tool call cannot read another user's memories. The call goes
through the MemoryService contract with a deadline and the caller's credentials.
"""

from __future__ import annotations

from typing import Any

import grpc

from lightmind.channels import open_channel
from lightmind.config import ClientConfig
from lightmind.memory.v1 import memory_service_pb2 as mpb
from lightmind.memory.v1 import memory_service_pb2_grpc as mpb_grpc
from lightmind.tenancy import forward_metadata
from skill_svc.executors.base import ExecutionContext, ToolFailure

_SCOPES = {
    "session": mpb.SCOPE_SESSION,
    "user": mpb.SCOPE_USER,
    "agent": mpb.SCOPE_AGENT,
    "organization": mpb.SCOPE_ORGANIZATION,
}
MAX_RESULTS = 20


class _Client:
    """One lazily opened channel to MemoryService per process."""

    stub: mpb_grpc.MemoryServiceAsyncStub | None = None
    timeout: float = 30.0

    @classmethod
    def get(cls) -> mpb_grpc.MemoryServiceAsyncStub:
        if cls.stub is None:
            clients = ClientConfig.from_env()
            channel = open_channel(clients.memory_addr, tls_ca_file=clients.tls_ca_file)
            cls.stub = mpb_grpc.MemoryServiceStub(channel)
            cls.timeout = clients.call_timeout_seconds
        return cls.stub


async def search_memory(
    query: str, scope: str = "user", top_k: int = 5, *, context: ExecutionContext
) -> dict[str, Any]:
    """Memories relevant to ``query`` in one scope, best first, for the calling agent/user."""
    if scope not in _SCOPES:
        raise ToolFailure(f"scope must be one of {', '.join(_SCOPES)}, not {scope!r}")
    if not query.strip():
        raise ToolFailure("query must not be empty")
    request = mpb.SearchMemoriesRequest(
        scope=_SCOPES[scope], query=query, top_k=max(1, min(top_k, MAX_RESULTS))
    )
    if scope == "session":
        if not context.session_id:
            raise ToolFailure("session scope needs a session: the caller gave none")
        request.session_id, request.agent_id = context.session_id, context.agent_id
    elif scope == "user":
        if not context.user_id:
            raise ToolFailure("user scope needs a user: the caller gave none")
        request.user_id, request.agent_id = context.user_id, context.agent_id
    elif scope == "agent":
        request.agent_id = context.agent_id
    try:
        reply = await _Client.get().SearchMemories(
            request,
            timeout=min(_Client.timeout, context.timeout_seconds),
            metadata=forward_metadata(),
        )
    except grpc.aio.AioRpcError as exc:
        # Unavailability is worth a retry; anything else is for the model to read.
        raise ToolFailure(
            f"memory search failed: {exc.code().name}: {exc.details()}",
            retryable=exc.code()
            in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED),
        ) from None
    return {
        "scope": scope,
        "results": [
            {"content": r.memory.content, "score": round(r.score, 4), "id": r.memory.id}
            for r in reply.results
        ],
    }
