"""Helpers for tests and benchmarks that run real services on loopback.

``free_port`` finds an unused TCP port; ``ServerHandle`` starts one service's real gRPC server
in-process on port 0 (through the same bootstrap ``python -m <service>`` uses) and stops it;
``ServiceProcess`` runs a service as a separate process, as in production, and waits until its
health check reports SERVING.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lightmind import server
from lightmind.config import AuthConfig, ServerConfig


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class ServerHandle:
    running: server.RunningServer

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.running.port}"

    async def stop(self, grace: float = 0) -> None:
        await self.running.stop(grace)

    @classmethod
    async def start(
        cls,
        name: str,
        build: Callable[[], Awaitable[server.ServiceDefinition]],
        auth: AuthConfig | None = None,
    ) -> ServerHandle:
        config = ServerConfig(
            service_name=name,
            host="127.0.0.1",
            port=0,
            max_message_bytes=16 * 1024 * 1024,
            grace_seconds=1.0,
            log_level="info",
            log_format="text",
        )
        definition = await build()
        running = await server.start(config, auth or AuthConfig(mode="off"), definition)
        return cls(running)


async def wait_serving(address: str, wait_seconds: float = 60.0) -> None:
    """Polls grpc.health.v1 until the server reports SERVING."""
    deadline = time.monotonic() + wait_seconds
    async with grpc.aio.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while True:
            try:
                reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.aio.AioRpcError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"{address} did not become SERVING in {wait_seconds}s")
            await asyncio.sleep(0.2)


class ServiceProcess:
    """A service run as ``python -m <module>`` with the given environment."""

    def __init__(self, module: str, env: Mapping[str, str], address: str) -> None:
        self.module = module
        self.address = address
        self._env = {**os.environ, **env}
        self.proc: subprocess.Popen[bytes] | None = None
        # The log goes to a file, not a pipe: a pipe nobody reads would block the service.
        self._log = tempfile.NamedTemporaryFile(prefix=f"{module}-", suffix=".log", delete=False)
        self._log.close()

    def start(self) -> None:
        with open(self._log.name, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.module],
                env=self._env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    async def wait_serving(self, wait_seconds: float = 60.0) -> None:
        try:
            await wait_serving(self.address, wait_seconds)
        except TimeoutError:
            self.stop()
            raise

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def stderr(self) -> str:
        """Everything the service has logged so far."""
        with open(self._log.name, "rb") as log:
            return log.read().decode(errors="replace")


@dataclass
class ErrorDetails:
    code: grpc.StatusCode
    message: str
    reason: str
    domain: str
    fields: list[str]


def error_details(exc: grpc.aio.AioRpcError) -> ErrorDetails:
    """Unpacks the google.rpc.Status a Lightmind service attaches to an error."""
    from google.rpc import error_details_pb2, status_pb2

    reason = domain = ""
    fields: list[str] = []
    trailing: Any = exc.trailing_metadata() or ()
    for key, value in trailing:
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            bad = error_details_pb2.BadRequest()
            if detail.Unpack(info):
                reason, domain = info.reason, info.domain
            elif detail.Unpack(bad):
                fields.extend(v.field for v in bad.field_violations)
    return ErrorDetails(exc.code(), exc.details() or "", reason, domain, fields)
