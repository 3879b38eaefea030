"""ExecuteTool's core: permission, argument validation, timeout, retries, result shaping.

Permission: the tool must be granted, with an access level at least the tool's required level,
by a skill the agent may use for this user — an assigned, available skill or one of its
required dependencies (those are loaded with it, so the model sees their tools). The timeout
and retries come from the assignment the best grant comes through (highest priority first).
Only idempotent (or read-only) tools are retried, and only after a retryable failure; a
timeout is retryable. The result always carries the model-readable text: the JSON of the
structured value, the tool's own text, or the error message.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from lightmind.errors import PermissionDenied
from lightmind.tenancy import current_tenant
from skill_svc.executors.base import ExecutionContext, Executor, ToolFailure, ToolOutcome
from skill_svc.records import Assignment, Grant, ToolRecord
from skill_svc.relations import AgentView
from skill_svc.schema import level_rank, validate_arguments

log = logging.getLogger("lightmind.skill.runner")

MAX_RETRIES = 10
BACKOFF_SECONDS = 0.05


@dataclass
class RunResult:
    outcome: ToolOutcome
    attempts: int
    duration_ms: float


@dataclass(frozen=True)
class Permit:
    assignment: Assignment
    config: dict[str, Any]


def authorize(
    view: AgentView,
    tool: ToolRecord,
    tool_grants: list[Grant],
    user_id: str,
    via_skill_id: str | None,
) -> Permit:
    """The assignment (and merged config) a call runs under, from the tool's active grants;
    PERMISSION_DENIED when no usable skill grants enough access."""
    reachable = view.reachable(user_id)
    if via_skill_id is not None:
        if via_skill_id not in reachable:
            raise PermissionDenied(
                f"skill: agent {view.agent_id!r} may not use this skill",
                reason="SKILL_NOT_USABLE",
            )
        allowed = set(view.closure(via_skill_id))
        reachable = {k: v for k, v in reachable.items() if k in allowed}
    grants = [g for g in tool_grants if g.skill_id in reachable]
    need = tool.required_access_level
    sufficient = [g for g in grants if level_rank(g.access_level) >= level_rank(need)]
    if not sufficient:
        if grants:
            best = max(grants, key=lambda g: level_rank(g.access_level))
            raise PermissionDenied(
                f"tool: {tool.name!r} needs {need} access; agent {view.agent_id!r} holds only "
                f"{best.access_level}",
                reason="ACCESS_LEVEL_INSUFFICIENT",
                metadata={"required": need, "granted": best.access_level},
            )
        raise PermissionDenied(
            f"tool: agent {view.agent_id!r} holds no usable skill granting {tool.name!r}",
            reason="TOOL_NOT_GRANTED",
        )
    order = {a.skill_id: i for i, a in enumerate(view.assignments)}
    best_grant = min(sufficient, key=lambda g: order.get(reachable[g.skill_id].skill_id, 0))
    assignment = reachable[best_grant.skill_id]
    return Permit(assignment, {**assignment.config, **best_grant.config})


async def run_tool(
    executor: Executor,
    tool: ToolRecord,
    arguments: dict[str, Any],
    context: ExecutionContext,
    max_retries: int,
) -> RunResult:
    filled = validate_arguments(tool.input_schema, arguments)
    retries = min(max_retries, MAX_RETRIES) if tool.idempotent else 0
    started = time.perf_counter()
    attempt = 0
    while True:
        attempt += 1
        try:
            outcome = await asyncio.wait_for(
                executor.run(tool, filled, context), context.timeout_seconds
            )
            break
        except TimeoutError:
            failure = ToolFailure(
                f"the tool timed out after {context.timeout_seconds:g}s", retryable=True
            )
        except ToolFailure as exc:
            failure = exc
        if not failure.retryable or attempt > retries:
            outcome = ToolOutcome(text=failure.message, is_error=True)
            break
        log.info(
            "retrying %s for tenant %s after: %s", tool.name, current_tenant(), failure.message
        )
        await asyncio.sleep(BACKOFF_SECONDS * 2 ** (attempt - 1))
    return RunResult(outcome, attempt, (time.perf_counter() - started) * 1000)


def model_text(outcome: ToolOutcome) -> str | None:
    if outcome.text is not None:
        return outcome.text
    if outcome.value is not None:
        return json.dumps(outcome.value, ensure_ascii=False, default=str)
    return None
