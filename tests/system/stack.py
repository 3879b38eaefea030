"""The services as real processes on loopback, for failure and load tests."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field

from lightmind.process import ServiceProcess
from lightmind.testing import free_port

MODULES = {"embedding": "embedding_svc", "memory": "memory_svc", "skill": "skill_svc"}
PREFIX = {
    "embedding": "LIGHTMIND_EMBEDDING",
    "memory": "LIGHTMIND_MEMORY",
    "skill": "LIGHTMIND_SKILL",
}


@dataclass
class Stack:
    database_url: str
    extra_env: Mapping[str, str] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    processes: dict[str, ServiceProcess] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ports = {name: free_port() for name in MODULES}

    def address(self, name: str) -> str:
        return f"127.0.0.1:{self.ports[name]}"

    def env(self) -> dict[str, str]:
        env = {
            "DATABASE_URL": self.database_url,
            "LIGHTMIND_LOG_LEVEL": "warning",
            "LIGHTMIND_EMBEDDING_ADDR": self.address("embedding"),
            "LIGHTMIND_MEMORY_ADDR": self.address("memory"),
            "LIGHTMIND_SKILL_ADDR": self.address("skill"),
            "LIGHTMIND_CALL_TIMEOUT_SECONDS": "60",
            "LIGHTMIND_SHUTDOWN_GRACE_SECONDS": "30",
        }
        for name, prefix in PREFIX.items():
            env[f"{prefix}_PORT"] = str(self.ports[name])
            env[f"{prefix}_METRICS_PORT"] = "0"
        return {**env, **self.extra_env}

    async def start(self, *names: str) -> None:
        for name in names:
            process = ServiceProcess(MODULES[name], self.env(), self.address(name))
            process.start()
            self.processes[name] = process
            await process.wait_serving(wait_seconds=120)

    async def stop(self, name: str) -> int | None:
        process = self.processes.pop(name)
        return await asyncio.to_thread(process.stop)

    async def stop_all(self) -> None:
        for name in list(self.processes)[::-1]:
            await self.stop(name)
