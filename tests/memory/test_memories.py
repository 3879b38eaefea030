"""Creating, reading, updating, deleting and listing memories of each scope."""

from __future__ import annotations

import uuid

import grpc
import pytest
from google.protobuf import duration_pb2, field_mask_pb2
from memory_helpers import (
    AGENT,
    SESSION,
    USER,
    A,
    agent_memory,
    session_memory,
    unit_vectors,
    user_memory,
)

from lightmind.memory.v1 import memory_service_pb2 as pb
from lightmind.testing import error_details


async def test_create_in_each_scope_and_get_back(memory) -> None:
    s = await memory.CreateMemory(session_memory("We are debugging the login page."), metadata=A)
    u = await memory.CreateMemory(
        user_memory("The user prefers Python.", type=pb.MEMORY_TYPE_PREFERENCE), metadata=A
    )
    a = await memory.CreateMemory(agent_memory("Answer briefly."), metadata=A)
    assert s.scope == pb.SCOPE_SESSION and s.session_id == SESSION and s.agent_id == AGENT
    assert s.HasField("expire_time") and s.expire_time.seconds > s.create_time.seconds
    assert u.type == pb.MEMORY_TYPE_PREFERENCE and u.user_id == USER
    assert a.type == pb.MEMORY_TYPE_LEARNING  # the agent scope's default
    for created in (s, u, a):
        assert created.embedding_model == "all-minilm-l6-v2-int8"
        got = await memory.GetMemory(pb.GetMemoryRequest(id=created.id), metadata=A)
        assert got == created


async def test_identical_content_for_same_owner_returns_existing(memory) -> None:
    first = await memory.CreateMemory(user_memory("Lives in Lisbon."), metadata=A)
    again = await memory.CreateMemory(user_memory("Lives in Lisbon."), metadata=A)
    other_user = await memory.CreateMemory(
        user_memory("Lives in Lisbon.", user_id=str(uuid.uuid4())), metadata=A
    )
    assert again.id == first.id
    assert other_user.id != first.id
    listed = await memory.ListMemories(
        pb.ListMemoriesRequest(scope=pb.SCOPE_USER, user_id=USER), metadata=A
    )
    assert [m.id for m in listed.memories] == [first.id]


async def test_session_ttl_is_honoured(memory) -> None:
    req = session_memory("short lived")
    req.ttl.CopyFrom(duration_pb2.Duration(seconds=120))
    created = await memory.CreateMemory(req, metadata=A)
    assert 119 <= created.expire_time.seconds - created.create_time.seconds <= 121


async def test_update_with_mask_and_etag(memory) -> None:
    created = await memory.CreateMemory(user_memory("Likes tea."), metadata=A)
    changed = await memory.UpdateMemory(
        pb.UpdateMemoryRequest(
            memory=pb.Memory(id=created.id, content="Likes coffee.", etag=created.etag),
            update_mask=field_mask_pb2.FieldMask(paths=["content"]),
        ),
        metadata=A,
    )
    assert changed.content == "Likes coffee." and changed.etag != created.etag
    # The vector was recomputed: a search for coffee finds it with a high score.
    found = await memory.SearchMemories(
        pb.SearchMemoriesRequest(scope=pb.SCOPE_USER, user_id=USER, query="coffee"), metadata=A
    )
    assert found.results[0].memory.id == created.id
    assert found.results[0].similarity > 0.5
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await memory.UpdateMemory(
            pb.UpdateMemoryRequest(
                memory=pb.Memory(id=created.id, importance=0.2, etag=created.etag),
                update_mask=field_mask_pb2.FieldMask(paths=["importance"]),
            ),
            metadata=A,
        )
    assert err.value.code() == grpc.StatusCode.ABORTED
    unchanged = await memory.GetMemory(pb.GetMemoryRequest(id=created.id), metadata=A)
    assert unchanged.importance == 1.0 and unchanged.content == "Likes coffee."


async def test_update_rejects_paths_the_scope_lacks(memory) -> None:
    created = await memory.CreateMemory(agent_memory("State: idle."), metadata=A)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await memory.UpdateMemory(
            pb.UpdateMemoryRequest(
                memory=pb.Memory(id=created.id),
                update_mask=field_mask_pb2.FieldMask(paths=["expire_time"]),
            ),
            metadata=A,
        )
    details = error_details(err.value)
    assert details.code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.fields == ["update_mask.paths[0]"]


async def test_delete_then_not_found(memory) -> None:
    created = await memory.CreateMemory(agent_memory("Temporary."), metadata=A)
    with pytest.raises(grpc.aio.AioRpcError) as stale:
        await memory.DeleteMemory(pb.DeleteMemoryRequest(id=created.id, etag='"999"'), metadata=A)
    assert stale.value.code() == grpc.StatusCode.ABORTED
    await memory.DeleteMemory(pb.DeleteMemoryRequest(id=created.id), metadata=A)
    for call in (
        memory.GetMemory(pb.GetMemoryRequest(id=created.id), metadata=A),
        memory.DeleteMemory(pb.DeleteMemoryRequest(id=created.id), metadata=A),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call
        assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_list_pages_and_refuses_tampered_token(memory) -> None:
    vectors = unit_vectors(7)
    batch = pb.BatchCreateMemoriesRequest(
        requests=[
            pb.CreateMemoryRequest(
                memory=pb.Memory(scope=pb.SCOPE_AGENT, agent_id=AGENT, content=f"note {i}"),
                embedding=vectors[i].tolist(),
            )
            for i in range(7)
        ]
    )
    created = await memory.BatchCreateMemories(batch, metadata=A)
    assert [m.content for m in created.memories] == [f"note {i}" for i in range(7)]
    seen: list[str] = []
    tokens: list[str] = []
    token = ""
    pages = 0
    while True:
        page = await memory.ListMemories(
            pb.ListMemoriesRequest(
                scope=pb.SCOPE_AGENT, agent_id=AGENT, page_size=3, page_token=token
            ),
            metadata=A,
        )
        seen += [m.id for m in page.memories]
        pages += 1
        token = page.next_page_token
        if not token:
            break
        tokens.append(token)
    first_token = tokens[0]
    assert pages == 3 and sorted(seen) == sorted(m.id for m in created.memories)
    tampered = first_token[:-2] + ("A" if first_token[-2] != "A" else "B") + first_token[-1]
    for bad, request in (
        (tampered, pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id=AGENT)),
        ("not-a-token", pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id=AGENT)),
        # A valid token replayed with other filters.
        (first_token, pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT)),
    ):
        request.page_token = bad
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await memory.ListMemories(request, metadata=A)
        details = error_details(err.value)
        assert details.code == grpc.StatusCode.INVALID_ARGUMENT
        assert details.fields == ["page_token"]


async def test_request_id_makes_create_idempotent(memory) -> None:
    rid = str(uuid.uuid4())
    req = agent_memory("Persona: patient teacher.", type=pb.MEMORY_TYPE_PERSONA)
    req.request_id = rid
    first = await memory.CreateMemory(req, metadata=A)
    await memory.DeleteMemory(pb.DeleteMemoryRequest(id=first.id), metadata=A)
    repeat = await memory.CreateMemory(req, metadata=A)
    assert repeat == first  # the first answer, not a new memory
    listed = await memory.ListMemories(pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT), metadata=A)
    assert list(listed.memories) == []


async def test_promote_session_memory_to_user_memory(memory) -> None:
    source = await memory.CreateMemory(
        session_memory("The user's cat is called Miso.", user_id=USER), metadata=A
    )
    promoted = await memory.PromoteMemory(
        pb.PromoteMemoryRequest(id=source.id, target_scope=pb.SCOPE_USER, type=pb.MEMORY_TYPE_FACT),
        metadata=A,
    )
    assert promoted.scope == pb.SCOPE_USER and promoted.user_id == USER
    assert promoted.source_memory_id == source.id and promoted.content == source.content
    assert not promoted.HasField("expire_time")
    found = await memory.SearchMemories(
        pb.SearchMemoriesRequest(scope=pb.SCOPE_USER, user_id=USER, query="name of the cat"),
        metadata=A,
    )
    assert found.results[0].memory.id == promoted.id
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await memory.PromoteMemory(
            pb.PromoteMemoryRequest(id=promoted.id, target_scope=pb.SCOPE_AGENT), metadata=A
        )
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
