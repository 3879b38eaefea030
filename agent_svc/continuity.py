"""The session's one canonical continuity snapshot, and the normalization of older shapes.

A session stores a single JSON envelope ``{"kind": "agent_continuity", "version": 2,
"state": {...}}``. ``state`` holds ``status`` (``fresh`` or ``awaiting_clarification``),
``mode`` (``resume_after_clarification`` while a question is pending), the pending action
(type ``ask_user``, its tool call id, the skill that owned the step, the question, and its
status) and the skills loaded in the session. Version 1 snapshots (a flat object with
``awaiting_clarification``, ``pending_call_id``, ``question``, ``skill``) are upgraded on read;
anything unreadable (another kind, a future version, garbage, or no snapshot at all) reads as
a fresh session, so an old or damaged row never stops a conversation.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("lightmind.agent")

KIND = "agent_continuity"
VERSION = 2
FRESH = "fresh"
AWAITING = "awaiting_clarification"
RESUME_MODE = "resume_after_clarification"


@dataclass(frozen=True)
class PendingAction:
    """The ``ask_user`` call the next user message answers."""

    call_id: str
    question: str
    owner_skill: str = ""
    type: str = "ask_user"
    status: str = "pending"


@dataclass(frozen=True)
class Continuity:
    status: str = FRESH
    pending: PendingAction | None = None
    loaded_skills: tuple[str, ...] = field(default_factory=tuple)
    turn_id: str = ""

    @property
    def awaiting(self) -> bool:
        return self.status == AWAITING and self.pending is not None

    def to_json(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "status": self.status,
            "mode": RESUME_MODE if self.awaiting else "",
            "loaded_skills": list(self.loaded_skills),
            "turn_id": self.turn_id,
            "pending_action": None,
        }
        if self.pending is not None:
            state["pending_action"] = {
                "type": self.pending.type,
                "call_id": self.pending.call_id,
                "owner_skill": self.pending.owner_skill,
                "question": self.pending.question,
                "status": self.pending.status,
            }
        return {"kind": KIND, "version": VERSION, "state": state}


def _skills(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, str) and v)


def parse(raw: Any) -> Continuity:
    """Reads any stored snapshot; never raises."""
    if not isinstance(raw, dict) or not raw:
        return Continuity()
    if "kind" not in raw:
        return _from_v1(raw)
    if raw.get("kind") != KIND or raw.get("version") != VERSION:
        log.warning(
            "unknown continuity snapshot kind=%r version=%r; starting fresh",
            raw.get("kind"),
            raw.get("version"),
        )
        return Continuity()
    state = raw.get("state")
    if not isinstance(state, dict):
        return Continuity()
    loaded = _skills(state.get("loaded_skills"))
    pending_raw = state.get("pending_action")
    pending = None
    if (
        isinstance(pending_raw, dict)
        and isinstance(pending_raw.get("call_id"), str)
        and pending_raw["call_id"]
        and pending_raw.get("status", "pending") == "pending"
    ):
        pending = PendingAction(
            call_id=pending_raw["call_id"],
            question=str(pending_raw.get("question") or ""),
            owner_skill=str(pending_raw.get("owner_skill") or ""),
        )
    status = AWAITING if state.get("status") == AWAITING and pending is not None else FRESH
    return Continuity(status, pending if status == AWAITING else None, loaded, "")


def _from_v1(raw: dict[str, Any]) -> Continuity:
    """Version 1: ``{"awaiting_clarification", "pending_call_id", "question", "skill",
    "loaded_skills"}``."""
    loaded = _skills(raw.get("loaded_skills"))
    call_id = raw.get("pending_call_id")
    if raw.get("awaiting_clarification") and isinstance(call_id, str) and call_id:
        pending = PendingAction(
            call_id=call_id,
            question=str(raw.get("question") or ""),
            owner_skill=str(raw.get("skill") or ""),
        )
        return Continuity(AWAITING, pending, loaded)
    return Continuity(FRESH, None, loaded)
