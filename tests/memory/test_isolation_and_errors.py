"""Tenant and owner isolation, bad input, and outages of the database and EmbeddingService."""

from __future__ import annotations

import asyncio
import uuid

import grpc
import pytest
from google.protobuf import duration_pb2
from memory_helpers import (
    AGENT,
    AUTH,
    SESSION,
    USER,
    A,
    B,
    agent_memory,
    memory_env,
    session_memory,
    user_memory,
)

from lightmind.memory.v1 import memory_service_pb2 as pb
from lightmind.memory.v1 import memory_service_pb2_grpc as pb_grpc
from lightmind.testing import ServerHandle, error_details, free_port
from memory_svc.config import MemoryConfig
from memory_svc.service import build


async def test_tenants_never_see_each_other(memory) -> None:
    made = {
        "session": await memory.CreateMemory(session_memory("secret session A"), metadata=A),
        "user": await memory.CreateMemory(user_memory("secret user A"), metadata=A),
        "agent": await memory.CreateMemory(agent_memory("secret agent A"), metadata=A),
    }
    await memory.IngestDocument(
        pb.IngestDocumentRequest(document=pb.Document(source="a.md"), content="secret org A"),
        metadata=A,
    )
    searches = [
        pb.SearchMemoriesRequest(scope=pb.SCOPE_SESSION, session_id=SESSION, query="secret"),
        pb.SearchMemoriesRequest(scope=pb.SCOPE_USER, user_id=USER, query="secret"),
        pb.SearchMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id=AGENT, query="secret"),
        pb.SearchMemoriesRequest(scope=pb.SCOPE_ORGANIZATION, query="secret"),
    ]
    for request in searches:
        assert len((await memory.SearchMemories(request, metadata=A)).results) == 1
        assert list((await memory.SearchMemories(request, metadata=B)).results) == []
    context = await memory.RetrieveContext(
        pb.RetrieveContextRequest(query="secret", session_id=SESSION, user_id=USER, agent_id=AGENT),
        metadata=B,
    )
    assert list(context.items) == []
    for scope in (pb.SCOPE_SESSION, pb.SCOPE_USER, pb.SCOPE_AGENT, pb.SCOPE_ORGANIZATION):
        listed = await memory.ListMemories(pb.ListMemoriesRequest(scope=scope), metadata=B)
        assert list(listed.memories) == []
    assert list((await memory.ListDocuments(pb.ListDocumentsRequest(), metadata=B)).documents) == []
    for created in made.values():
        for call in (
            memory.GetMemory(pb.GetMemoryRequest(id=created.id), metadata=B),
            memory.DeleteMemory(pb.DeleteMemoryRequest(id=created.id), metadata=B),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call
            assert err.value.code() == grpc.StatusCode.NOT_FOUND
    # Same content in tenant B is B's own memory, not a dedup hit on A's.
    mine = await memory.CreateMemory(agent_memory("secret agent A"), metadata=B)
    assert mine.id != made["agent"].id
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await memory.ListMemories(pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT))
    assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_users_and_sessions_do_not_see_each_other(memory) -> None:
    other_user, other_session = str(uuid.uuid4()), str(uuid.uuid4())
    await memory.CreateMemory(user_memory("likes jazz", user_id=other_user), metadata=A)
    await memory.CreateMemory(
        session_memory("talked about jazz", session_id=other_session), metadata=A
    )
    mine = await memory.CreateMemory(user_memory("likes rock"), metadata=A)
    found = await memory.SearchMemories(
        pb.SearchMemoriesRequest(scope=pb.SCOPE_USER, user_id=USER, query="jazz", top_k=10),
        metadata=A,
    )
    assert [r.memory.id for r in found.results] == [mine.id]
    session = await memory.SearchMemories(
        pb.SearchMemoriesRequest(scope=pb.SCOPE_SESSION, session_id=SESSION, query="jazz"),
        metadata=A,
    )
    assert list(session.results) == []


def _with(req: pb.CreateMemoryRequest, **changes: object) -> pb.CreateMemoryRequest:
    for key, value in changes.items():
        if key == "embedding":
            req.embedding.extend(value)  # type: ignore[arg-type]
        elif key == "ttl":
            req.ttl.CopyFrom(value)  # type: ignore[arg-type]
        else:
            setattr(req.memory, key, value)
    return req


BAD_CREATES = [
    (pb.CreateMemoryRequest(), "memory"),
    (_with(agent_memory("x"), scope=pb.SCOPE_UNSPECIFIED), "memory.scope"),
    (_with(agent_memory("x"), scope=42), "memory.scope"),
    (_with(agent_memory("x"), scope=pb.SCOPE_ORGANIZATION), "memory.scope"),
    (_with(agent_memory("x"), agent_id=""), "memory.agent_id"),
    (_with(agent_memory("x"), agent_id="not-a-uuid"), "memory.agent_id"),
    (_with(agent_memory("x"), user_id=USER), "memory.user_id"),
    (_with(user_memory("x"), user_id=""), "memory.user_id"),
    (_with(session_memory("x"), session_id=""), "memory.session_id"),
    (agent_memory("   "), "memory.content"),
    (agent_memory("x" * 40_000), "memory.content"),
    (_with(agent_memory("x"), type=pb.MEMORY_TYPE_FACT), "memory.type"),
    (_with(agent_memory("x"), importance=1.5), "memory.importance"),
    (_with(agent_memory("x"), embedding=[0.1] * 10), "embedding"),
    (_with(agent_memory("x"), ttl=duration_pb2.Duration(seconds=5)), "ttl"),
    (_with(session_memory("x"), ttl=duration_pb2.Duration(seconds=-5)), "ttl"),
]


@pytest.mark.parametrize(("request_", "field"), BAD_CREATES)
async def test_bad_create_requests_name_the_field(memory, request_, field) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await memory.CreateMemory(request_, metadata=A)
    details = error_details(err.value)
    assert details.code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert details.fields == [field]
    assert details.domain == "memory.lightmind.dev"


async def test_bad_batch_rejects_everything(memory) -> None:
    batch = pb.BatchCreateMemoriesRequest(
        requests=[agent_memory("fine"), _with(agent_memory("bad"), agent_id="zzz")]
    )
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await memory.BatchCreateMemories(batch, metadata=A)
    assert error_details(err.value).fields == ["requests[1].memory.agent_id"]
    listed = await memory.ListMemories(pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT), metadata=A)
    assert list(listed.memories) == []


BAD_SEARCHES = [
    (pb.SearchMemoriesRequest(query="q"), "scope"),
    (pb.SearchMemoriesRequest(scope=pb.SCOPE_USER, query="q"), "user_id"),
    (pb.SearchMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id=AGENT), "query"),
    (pb.SearchMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id=AGENT, query="q", vector=[1.0]),
     "query"),
    (pb.SearchMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id=AGENT, vector=[1.0, 2.0]), "vector"),
    (pb.SearchMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id=AGENT, query="q", top_k=-1),
     "top_k"),
    (pb.SearchMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id=AGENT, query="q", top_k=10_000),
     "top_k"),
    (pb.SearchMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id=AGENT, query="q", min_score=2),
     "min_score"),
    (pb.SearchMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id="x", query="q"), "agent_id"),
    (pb.SearchMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id=AGENT, session_id=SESSION,
                              query="q"), "session_id"),
]  # fmt: skip


@pytest.mark.parametrize(("request_", "field"), BAD_SEARCHES)
async def test_bad_search_requests_name_the_field(memory, request_, field) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await memory.SearchMemories(request_, metadata=A)
    details = error_details(err.value)
    assert details.code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert details.fields == [field]


async def test_database_outage_is_unavailable_and_recovers(memory, pg) -> None:
    created = await memory.CreateMemory(agent_memory("survives the outage"), metadata=A)
    try:
        pg.stop("fast")
        for call in (
            lambda: memory.GetMemory(pb.GetMemoryRequest(id=created.id), metadata=A),
            lambda: memory.CreateMemory(agent_memory("during outage"), metadata=A),
        ):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call()
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        pg.start()
    # Pooled connections died with the server; the pool replaces them as calls fail.
    for _ in range(20):
        try:
            got = await memory.GetMemory(pb.GetMemoryRequest(id=created.id), metadata=A)
            break
        except grpc.aio.AioRpcError as exc:
            assert exc.code() == grpc.StatusCode.UNAVAILABLE
            await asyncio.sleep(0.2)
    assert got.content == "survives the outage"
    listed = await memory.ListMemories(pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT), metadata=A)
    assert [m.content for m in listed.memories] == ["survives the outage"]


async def test_embedding_outage_stores_nothing_and_recovers(database_url, embedding_config) -> None:
    from embedding_svc.service import build as build_embedding
    from lightmind import server
    from lightmind.config import AuthConfig, ServerConfig

    port = free_port()
    config = MemoryConfig.from_env(memory_env(database_url, f"127.0.0.1:{port}"))
    handle = await ServerHandle.start("memory", lambda: build(config), auth=AUTH)
    embedding = None
    try:
        async with grpc.aio.insecure_channel(handle.address) as channel:
            memory = pb_grpc.MemoryServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await memory.CreateMemory(agent_memory("needs a vector"), metadata=A)
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await memory.RetrieveContext(
                    pb.RetrieveContextRequest(query="anything", agent_id=AGENT), metadata=A
                )
            assert err.value.code() == grpc.StatusCode.UNAVAILABLE
            listed = await memory.ListMemories(
                pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT), metadata=A
            )
            assert list(listed.memories) == []  # reads still work; nothing half-written
            server_config = ServerConfig(
                "embedding", "127.0.0.1", port, 16 << 20, 1.0, "info", "text"
            )
            embedding = await server.start(
                server_config, AuthConfig(mode="off"), await build_embedding(embedding_config)
            )
            for _ in range(50):
                try:
                    made = await memory.CreateMemory(agent_memory("needs a vector"), metadata=A)
                    break
                except grpc.aio.AioRpcError as exc:
                    assert exc.code() == grpc.StatusCode.UNAVAILABLE
                    await asyncio.sleep(0.2)
            assert made.content == "needs a vector"
    finally:
        if embedding is not None:
            await embedding.stop(0)
        await handle.stop()
