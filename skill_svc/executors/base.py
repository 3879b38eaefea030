"""The executor interface and the shapes every executor shares.

An executor turns (tool, validated arguments, context) into a ``ToolOutcome``: a JSON value
and/or text and images, and whether it is an error the model should read. Failures the model
should see are raised as ``ToolFailure`` (``retryable`` when another attempt could succeed,
e.g. a timeout or an HTTP 503); the runner turns them into ``is_error`` results. Anything
else an executor raises is a bug or an infrastructure problem and becomes a gRPC error.
Executors must clean up (kill processes, close connections) when they are cancelled, since
the runner enforces timeouts by cancellation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from skill_svc.records import ToolRecord


class ToolFailure(Exception):
    """The tool failed in a way the model should be told about."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


@dataclass(frozen=True)
class ExecutionContext:
    tenant: str
    agent_id: str
    user_id: str
    session_id: str
    timeout_seconds: float
    # The agent's assignment config and the skill's grant config, for python tools.
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolOutcome:
    # A JSON value; None when the tool produced only text/images.
    value: Any = None
    text: str | None = None
    images: list[tuple[bytes, str]] = field(default_factory=list)
    is_error: bool = False


class Executor(Protocol):
    async def run(
        self, tool: ToolRecord, arguments: dict[str, Any], context: ExecutionContext
    ) -> ToolOutcome: ...
