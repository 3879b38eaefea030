"""``lightmind up`` (what ``make up`` runs): every service on one machine, one command.

Starts the embedded PostgreSQL once (unless ``DATABASE_URL`` is set), then each service as
its own process with the database URL and the other services' addresses in its environment,
waits for each to report SERVING, prints how to call them with grpcurl, and on Ctrl-C or
SIGTERM stops them in reverse order (each drains its in-flight calls), then the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from lightmind.config import ClientConfig, DatabaseConfig, ServerConfig
from lightmind.embedded_pg import EmbeddedPostgres
from lightmind.process import ServiceProcess


@dataclass(frozen=True)
class ServiceEntry:
    name: str
    module: str
    prefix: str
    default_port: int
    uses_database: bool


SERVICES = (
    ServiceEntry("EmbeddingService", "embedding_svc", "LIGHTMIND_EMBEDDING", 50051, False),
    ServiceEntry("MemoryService", "memory_svc", "LIGHTMIND_MEMORY", 50052, True),
    ServiceEntry("SkillService", "skill_svc", "LIGHTMIND_SKILL", 50053, True),
    ServiceEntry("AgentService", "agent_svc", "LIGHTMIND_AGENT", 50054, True),
)


def available() -> list[ServiceEntry]:
    """The services this build contains (a package with a ``__main__``)."""
    return [s for s in SERVICES if importlib.util.find_spec(f"{s.module}.__main__") is not None]


async def up() -> int:
    services = available()
    env = dict(os.environ)
    database = DatabaseConfig.from_env(env)
    embedded: EmbeddedPostgres | None = None
    if any(s.uses_database for s in services) and database.url is None:
        embedded = EmbeddedPostgres(database.data_dir, database.embedded_port)
        print(f"starting embedded PostgreSQL in {database.data_dir} ...", flush=True)
        await asyncio.to_thread(embedded.ensure_running)
        env["DATABASE_URL"] = await embedded.create_database()
    clients = ClientConfig.from_env(env)
    started: list[ServiceProcess] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        for entry in services:
            server = ServerConfig.from_env(entry.name, entry.prefix, entry.default_port, env)
            host = "127.0.0.1" if server.host in ("0.0.0.0", "::", "[::]") else server.host
            address = f"{host}:{server.port}"
            process = ServiceProcess(entry.module, env, address)
            print(f"starting {entry.name} on {address} ...", flush=True)
            process.start()
            started.append(process)
            waiting = asyncio.create_task(process.wait_serving(wait_seconds=180))
            stopping = asyncio.create_task(stop.wait())
            done, _ = await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if stopping in done:
                waiting.cancel()
                return 130
            stopping.cancel()
            waiting.result()
        _print_banner(services, clients, env)
        while not stop.is_set():
            crashed = [p for p in started if p.proc is not None and p.proc.poll() is not None]
            if crashed:
                for p in crashed:
                    print(f"{p.module} exited with code {p.proc.returncode if p.proc else '?'}:")
                    print(p.stderr()[-3000:])
                return 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=1.0)
        return 0
    except TimeoutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        for p in started:
            print(p.stderr()[-3000:], file=sys.stderr)
        return 1
    finally:
        print("stopping ...", flush=True)
        for process in reversed(started):
            await asyncio.to_thread(process.stop)
        if embedded is not None:
            await asyncio.to_thread(embedded.stop)
        print("stopped.", flush=True)


def _print_banner(services: list[ServiceEntry], clients: ClientConfig, env: dict[str, str]) -> None:
    grpcurl = Path(sys.executable).parent / "grpcurl"
    lines = ["", "Lightmind is up:"]
    for entry in services:
        port = ServerConfig.from_env(entry.name, entry.prefix, entry.default_port, env).port
        lines.append(f"  {entry.name:<17} 127.0.0.1:{port}")
    lines += [
        "",
        "Try it with grpcurl:",
        f"  {grpcurl} -plaintext {clients.embedding_addr} list",
        f'  {grpcurl} -plaintext -d \'{{"texts": ["hello world"]}}\' \\',
        f"      {clients.embedding_addr} lightmind.embedding.v1.EmbeddingService/Embed",
        "",
        "Ctrl-C stops everything.",
    ]
    print("\n".join(lines), flush=True)
