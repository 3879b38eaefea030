"""Operations every service has: API keys from a hashed keys file, TLS, per-tenant rate
limits, Prometheus metrics and trace propagation across a hop."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import grpc
import pytest
import trustme

from embedding_svc.service import build as build_embedding
from lightmind import server, tracing
from lightmind.apikeys import KeyFile
from lightmind.channels import open_channel
from lightmind.config import AuthConfig, ServerConfig
from lightmind.embedding.v1 import embedding_service_pb2 as pb
from lightmind.embedding.v1 import embedding_service_pb2_grpc as pb_grpc
from lightmind.testing import error_details, free_port

LIGHTMIND = str(Path(sys.executable).parent / "lightmind")


def config(**overrides: object) -> ServerConfig:
    base = ServerConfig("embedding", "127.0.0.1", 0, 1 << 24, 1.0, "info", "text")
    return ServerConfig(**{**base.__dict__, **overrides})  # type: ignore[arg-type]


async def test_keys_file_create_use_and_revoke(tmp_path: Path, embedding_config) -> None:
    keys_file = tmp_path / "keys.json"
    created = await asyncio.to_thread(
        subprocess.run,
        [LIGHTMIND, "keys", "--file", str(keys_file), "create", "--tenant", "acme"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    assert key.startswith("lm_")
    stored = keys_file.read_text()
    assert key not in stored  # only the digest is kept
    key_id = json.loads(stored)["keys"][0]["id"]

    auth = AuthConfig(mode="api_key", keys_file=keys_file)
    running = await server.start(config(), auth, await build_embedding(embedding_config))
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = pb_grpc.EmbeddingServiceStub(channel)
            bearer = (("authorization", f"Bearer {key}"),)
            reply = await stub.CountTokens(pb.CountTokensRequest(texts=["hi"]), metadata=bearer)
            assert reply.counts[0].token_count == 3
            KeyFile(keys_file).revoke(key_id)
            await asyncio.sleep(1.2)  # the index re-reads a changed file at most once a second
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.CountTokens(pb.CountTokensRequest(texts=["hi"]), metadata=bearer)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert error_details(info.value).reason == "API_KEY_INVALID"
    finally:
        await running.stop(0)


def test_hashed_keys_in_the_environment() -> None:
    from lightmind.apikeys import digest
    from lightmind.tenancy import TenantResolver

    resolver = TenantResolver(
        AuthConfig(mode="api_key", keys={f"sha256:{digest('secret-1')}": "acme", "plain": "b"})
    )
    assert resolver.resolve([("authorization", "Bearer secret-1")])[0] == "acme"
    assert resolver.resolve([("authorization", "plain")])[0] == "b"
    from lightmind.errors import Unauthenticated

    with pytest.raises(Unauthenticated):
        resolver.resolve([("authorization", f"Bearer sha256:{digest('secret-1')}")])


async def test_tls(tmp_path: Path, embedding_config) -> None:
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file, ca_file = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    ca.cert_pem.write_to_path(str(ca_file))
    running = await server.start(
        config(tls_cert_file=cert_file, tls_key_file=key_file),
        AuthConfig(mode="off"),
        await build_embedding(embedding_config),
    )
    try:
        address = f"127.0.0.1:{running.port}"
        async with open_channel(address, tls_ca_file=ca_file) as channel:
            reply = await pb_grpc.EmbeddingServiceStub(channel).CountTokens(
                pb.CountTokensRequest(texts=["over tls"]), timeout=10
            )
            assert reply.counts[0].token_count > 0
        async with grpc.aio.insecure_channel(address) as plain:
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await pb_grpc.EmbeddingServiceStub(plain).CountTokens(
                    pb.CountTokensRequest(texts=["x"]), timeout=5
                )
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await running.stop(0)


async def test_rate_limit_per_tenant(embedding_config) -> None:
    auth = AuthConfig(mode="api_key", keys={"ka": "a", "kb": "b"})
    running = await server.start(
        config(rate_limit_rps=0.5, rate_limit_burst=3),
        auth,
        await build_embedding(embedding_config),
    )
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = pb_grpc.EmbeddingServiceStub(channel)
            request = pb.CountTokensRequest(texts=["x"])
            for _ in range(3):
                await stub.CountTokens(request, metadata=(("authorization", "ka"),))
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.CountTokens(request, metadata=(("authorization", "ka"),))
            err = error_details(info.value)
            assert err.code == grpc.StatusCode.RESOURCE_EXHAUSTED and err.reason == "RATE_LIMITED"
            # Another tenant has its own bucket.
            await stub.CountTokens(request, metadata=(("authorization", "kb"),))
    finally:
        await running.stop(0)


def test_rate_limiter_refills() -> None:
    from lightmind.ratelimit import RateLimiter

    now = [0.0]
    limiter = RateLimiter(rate=2.0, burst=2, clock=lambda: now[0])
    assert limiter.allow("t") == 0 and limiter.allow("t") == 0
    assert limiter.allow("t") == pytest.approx(0.5)
    now[0] += 0.5
    assert limiter.allow("t") == 0


async def test_metrics_endpoint(embedding_server) -> None:
    from lightmind import metrics

    port = free_port()
    assert metrics.start_exporter(port, "127.0.0.1")
    async with grpc.aio.insecure_channel(embedding_server.address) as channel:
        stub = pb_grpc.EmbeddingServiceStub(channel)
        await stub.Embed(pb.EmbedRequest(texts=["count me", "and me"]))
        with pytest.raises(grpc.aio.AioRpcError):
            await stub.Embed(pb.EmbedRequest())
    body = await asyncio.to_thread(
        lambda: (
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        )
    )
    assert 'lightmind_rpc_requests_total{code="OK",method="Embed",service="embedding"}' in body
    assert 'code="INVALID_ARGUMENT",method="Embed"' in body
    assert "lightmind_rpc_latency_seconds_bucket" in body
    assert 'lightmind_embedding_batch_size_count{model="all-minilm-l6-v2-int8"}' in body
    assert "lightmind_embedding_queue_depth" in body


async def test_trace_context_crosses_the_hop(embedding_config) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_provider(provider)
    try:
        running = await server.start(
            config(), AuthConfig(mode="off"), await build_embedding(embedding_config)
        )
        try:
            async with open_channel(f"127.0.0.1:{running.port}") as channel:
                await pb_grpc.EmbeddingServiceStub(channel).CountTokens(
                    pb.CountTokensRequest(texts=["trace me"])
                )
        finally:
            await running.stop(0)
    finally:
        tracing.use_provider(None)
    spans = [s for s in exporter.get_finished_spans() if "CountTokens" in s.name]
    kinds = {s.kind.name: s for s in spans}
    assert {"CLIENT", "SERVER"} <= set(kinds)
    client, server_span = kinds["CLIENT"], kinds["SERVER"]
    assert server_span.context.trace_id == client.context.trace_id
    assert server_span.parent is not None and server_span.parent.span_id == client.context.span_id
