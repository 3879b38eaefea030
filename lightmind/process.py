"""Running a service as its own process and waiting for it to report SERVING.

Used by the ``lightmind up`` launcher and by tests that need a real process (signals,
restarts). A service's output goes to a log file, never to an unread pipe that could fill up
and block it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


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
        handle, self.log_path = tempfile.mkstemp(prefix=f"{module}-", suffix=".log")
        os.close(handle)

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
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
        with open(self.log_path, "rb") as log:
            return log.read().decode(errors="replace")
