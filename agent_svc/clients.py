"""Calls to MemoryService and SkillService, each with a deadline and the caller's credentials.

Every call passes ``timeout=LIGHTMIND_CALL_TIMEOUT_SECONDS`` and ``metadata=
forward_metadata()`` so the tenant follows the request, and adds its wall time to the turn's
``Timings`` (per service), which the benchmark and the stored message metadata report.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from lightmind.channels import open_channel
from lightmind.config import ClientConfig
from lightmind.memory.v1 import memory_service_pb2 as mpb
from lightmind.memory.v1 import memory_service_pb2_grpc as mpb_grpc
from lightmind.skill.v1 import skill_service_pb2 as spb
from lightmind.skill.v1 import skill_service_pb2_grpc as spb_grpc
from lightmind.tenancy import forward_metadata

T = TypeVar("T")


@dataclass
class Timings:
    """Milliseconds spent per dependency during one turn."""

    ms: dict[str, float] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)

    @contextmanager
    def measure(self, what: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.ms[what] = self.ms.get(what, 0.0) + (time.perf_counter() - started) * 1000
            self.calls[what] = self.calls.get(what, 0) + 1

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self.ms.items()}


class Downstream:
    """The memory and skill stubs on long-lived channels."""

    def __init__(self, clients: ClientConfig) -> None:
        self._timeout = clients.call_timeout_seconds
        self._memory_channel = open_channel(clients.memory_addr, tls_ca_file=clients.tls_ca_file)
        self._skill_channel = open_channel(clients.skill_addr, tls_ca_file=clients.tls_ca_file)
        self.memory = mpb_grpc.MemoryServiceStub(self._memory_channel)
        self.skill = spb_grpc.SkillServiceStub(self._skill_channel)

    async def close(self) -> None:
        await self._memory_channel.close(None)
        await self._skill_channel.close(None)

    async def _call(self, timings: Timings, what: str, call: Awaitable[T]) -> T:
        with timings.measure(what):
            return await call

    def _kw(self) -> dict[str, object]:
        return {"timeout": self._timeout, "metadata": forward_metadata()}

    async def retrieve(
        self, timings: Timings, request: mpb.RetrieveContextRequest
    ) -> mpb.RetrieveContextResponse:
        return await self._call(
            timings,
            "memory",
            self.memory.RetrieveContext(request, **self._kw()),  # type: ignore[arg-type]
        )

    async def store(
        self, timings: Timings, request: mpb.BatchCreateMemoriesRequest
    ) -> mpb.BatchCreateMemoriesResponse:
        return await self._call(
            timings,
            "memory",
            self.memory.BatchCreateMemories(request, **self._kw()),  # type: ignore[arg-type]
        )

    async def create_memory(self, timings: Timings, request: mpb.CreateMemoryRequest) -> mpb.Memory:
        return await self._call(
            timings,
            "memory",
            self.memory.CreateMemory(request, **self._kw()),  # type: ignore[arg-type]
        )

    async def catalog(
        self, timings: Timings, agent_id: str, user_id: str
    ) -> list[spb.SkillSummary]:
        skills: list[spb.SkillSummary] = []
        token = ""
        while True:
            request = spb.ListAgentSkillsRequest(
                agent_id=agent_id, user_id=user_id, page_size=1000, page_token=token
            )
            page = await self._call(
                timings,
                "skill",
                self.skill.ListAgentSkills(request, **self._kw()),  # type: ignore[arg-type]
            )
            skills.extend(page.skills)
            token = page.next_page_token
            if not token:
                return skills

    async def load_skill(
        self, timings: Timings, agent_id: str, user_id: str, skill: str
    ) -> spb.LoadSkillResponse:
        request = spb.LoadSkillRequest(agent_id=agent_id, skill=skill, user_id=user_id)
        return await self._call(
            timings,
            "skill",
            self.skill.LoadSkill(request, **self._kw()),  # type: ignore[arg-type]
        )

    async def execute(
        self, timings: Timings, request: spb.ExecuteToolRequest
    ) -> spb.ExecuteToolResponse:
        return await self._call(
            timings,
            "skill",
            self.skill.ExecuteTool(request, **self._kw()),  # type: ignore[arg-type]
        )
