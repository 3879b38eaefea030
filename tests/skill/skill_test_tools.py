"""Python tools the SkillService tests register through the allow-list (not a test module)."""

from __future__ import annotations

import asyncio
from typing import Any

CALLS: dict[str, int] = {}


def echo(text: str, times: int = 1, context: Any = None) -> dict[str, Any]:
    return {"text": text * times, "agent": getattr(context, "agent_id", None)}


def boom(reason: str) -> None:
    raise RuntimeError(reason)


async def slow(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "done"


def count(key: str) -> int:
    CALLS[key] = CALLS.get(key, 0) + 1
    return CALLS[key]
