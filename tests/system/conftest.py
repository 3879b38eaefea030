"""Fixtures for system tests: the services as separate processes over a fresh database."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from stack import Stack


@pytest.fixture
async def stack(database_url: str) -> AsyncIterator[Stack]:
    running = Stack(database_url)
    yield running
    await running.stop_all()
