"""Helpers for tests and benchmarks that run real services on loopback.

``free_port`` finds an unused TCP port; ``ServerHandle`` starts one service's real gRPC server
in-process on port 0 (through the same bootstrap ``python -m <service>`` uses) and stops it;
``error_details`` unpacks the rich status of a failed call. ``ServiceProcess`` (from
``lightmind.process``) runs a service as a separate process.
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc

from lightmind import server
from lightmind.config import AuthConfig, ServerConfig
from lightmind.process import ServiceProcess, wait_serving

__all__ = [
    "ErrorDetails",
    "ServerHandle",
    "ServiceProcess",
    "error_details",
    "free_port",
    "wait_serving",
]


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
