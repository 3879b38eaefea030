"""The shared bootstrap: health, reflection with grpcurl, auth, error mapping, graceful stop."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from lightmind import server
from lightmind.config import AuthConfig, ServerConfig
from lightmind.embedding.v1 import embedding_service_pb2 as pb
from lightmind.embedding.v1 import embedding_service_pb2_grpc as pb_grpc
from lightmind.errors import NotFound
from lightmind.server import ServiceDefinition
from lightmind.testing import ServerHandle, ServiceProcess, error_details, free_port

GRPCURL = str(Path(sys.executable).parent / "grpcurl")
EMBED = "lightmind.embedding.v1.EmbeddingService"


def grpcurl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [GRPCURL, "-plaintext", *args], capture_output=True, text=True, timeout=60, check=False
    )


async def test_grpcurl_lists_describes_and_calls(embedding_server: ServerHandle) -> None:
    address = embedding_server.address
    listed = await asyncio.to_thread(grpcurl, address, "list")
    assert listed.returncode == 0, listed.stderr
    assert EMBED in listed.stdout.split()
    assert "grpc.health.v1.Health" in listed.stdout

    described = await asyncio.to_thread(grpcurl, address, "describe", EMBED)
    assert described.returncode == 0, described.stderr
    assert "rpc Embed ( .lightmind.embedding.v1.EmbedRequest )" in described.stdout
    message = await asyncio.to_thread(
        grpcurl, address, "describe", "lightmind.embedding.v1.EmbedRequest"
    )
    assert "repeated string texts = 1;" in message.stdout

    body = json.dumps({"texts": ["hello from grpcurl"], "inputType": "INPUT_TYPE_QUERY"})
    called = await asyncio.to_thread(grpcurl, "-d", body, address, f"{EMBED}/Embed")
    assert called.returncode == 0, called.stderr
    reply = json.loads(called.stdout)
    assert len(reply["embeddings"][0]["values"]) == 384
    assert reply["model"] == "all-minilm-l6-v2-int8"

    bad = await asyncio.to_thread(grpcurl, "-d", '{"texts": []}', address, f"{EMBED}/Embed")
    assert bad.returncode != 0
    assert "InvalidArgument" in bad.stderr and "texts" in bad.stderr


async def test_health_is_not_serving_until_warm() -> None:
    warm = asyncio.Event()
    release = asyncio.Event()

    async def warmup() -> None:
        warm.set()
        await release.wait()

    definition = ServiceDefinition(
        service_names=["test.Slow"], error_domain="test", register=lambda s: None, warmup=warmup
    )
    config = ServerConfig("slow", "127.0.0.1", free_port(), 1 << 20, 1.0, "info", "text")
    starting = asyncio.create_task(server.start(config, AuthConfig(mode="off"), definition))
    await warm.wait()
    # The port is bound and answers health checks, but reports NOT_SERVING until warm.
    async with grpc.aio.insecure_channel(f"127.0.0.1:{config.port}") as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for name in ("", "test.Slow"):
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=name))
            assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
        release.set()
        running = await starting
        reply = await stub.Check(health_pb2.HealthCheckRequest(service="test.Slow"))
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        await running.stop()


class Boom(pb_grpc.EmbeddingServiceServicer):
    async def ListModels(self, request, context):  # type: ignore[no-untyped-def]
        raise RuntimeError("secret internal detail")

    async def CountTokens(self, request, context):  # type: ignore[no-untyped-def]
        raise NotFound("no such thing", reason="THING_NOT_FOUND")


async def _boom() -> ServiceDefinition:
    return ServiceDefinition(
        service_names=[EMBED],
        error_domain="boom.test",
        register=lambda s: pb_grpc.add_EmbeddingServiceServicer_to_server(Boom(), s),
    )


async def test_unexpected_errors_are_internal_and_generic() -> None:
    handle = await ServerHandle.start("boom", _boom)
    try:
        async with grpc.aio.insecure_channel(handle.address) as channel:
            stub = pb_grpc.EmbeddingServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.ListModels(pb.ListModelsRequest())
            err = error_details(info.value)
            assert err.code == grpc.StatusCode.INTERNAL
            assert "secret" not in err.message
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.CountTokens(pb.CountTokensRequest())
            err = error_details(info.value)
            assert (err.code, err.reason, err.domain) == (
                grpc.StatusCode.NOT_FOUND,
                "THING_NOT_FOUND",
                "boom.test",
            )
    finally:
        await handle.stop()


async def test_api_key_auth() -> None:
    auth = AuthConfig(mode="api_key", keys={"key-a": "acme"})
    handle = await ServerHandle.start("boom", _boom, auth=auth)
    try:
        async with grpc.aio.insecure_channel(handle.address) as channel:
            stub = pb_grpc.EmbeddingServiceStub(channel)
            for metadata in [(), (("authorization", "Bearer wrong"),)]:
                with pytest.raises(grpc.aio.AioRpcError) as info:
                    await stub.CountTokens(pb.CountTokensRequest(), metadata=metadata)
                assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.CountTokens(
                    pb.CountTokensRequest(), metadata=(("authorization", "Bearer key-a"),)
                )
            assert info.value.code() == grpc.StatusCode.NOT_FOUND  # got past auth
            # Health answers without a key (probes).
            health = health_pb2_grpc.HealthStub(channel)
            reply = await health.Check(health_pb2.HealthCheckRequest())
            assert reply.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        await handle.stop()


async def test_sigterm_drains_in_flight_calls_and_exits_cleanly(tmp_path: Path) -> None:
    port = free_port()
    service = ServiceProcess(
        "embedding_svc",
        {"LIGHTMIND_EMBEDDING_PORT": str(port), "LIGHTMIND_SHUTDOWN_GRACE_SECONDS": "20"},
        f"127.0.0.1:{port}",
    )
    service.start()
    await service.wait_serving()
    async with grpc.aio.insecure_channel(service.address) as channel:
        stub = pb_grpc.EmbeddingServiceStub(channel)
        texts = [f"in flight text number {i} " * 20 for i in range(200)]
        in_flight = [
            asyncio.ensure_future(stub.Embed(pb.EmbedRequest(texts=texts))) for _ in range(3)
        ]
        await asyncio.sleep(0.3)
        assert service.proc is not None
        os.kill(service.proc.pid, signal.SIGTERM)
        replies = await asyncio.gather(*in_flight)
        assert all(len(r.embeddings) == 200 for r in replies)
        code = await asyncio.to_thread(service.proc.wait, 60)
    assert code == 0, service.stderr()
    log = service.stderr()
    assert "draining" in log and "stopped" in log
