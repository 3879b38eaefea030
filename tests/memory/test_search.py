"""Search: filtered kNN returns k rows when k exist, metadata filters, hybrid, expiry."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import grpc
import numpy as np
import pytest
from google.protobuf import json_format, struct_pb2
from memory_helpers import AGENT, SESSION, USER, A, agent_memory, session_memory, unit_vectors

from lightmind.memory.v1 import memory_service_pb2 as pb
from lightmind.testing import error_details

BIG_USER = str(uuid.uuid4())
SMALL_USER = str(uuid.uuid4())


def clustered(n: int, seed: int) -> np.ndarray:
    """Vectors all near one direction, so every owner's rows compete for the same graph area."""
    rng = np.random.default_rng(seed)
    centre = rng.normal(size=384)
    v = centre + 0.3 * rng.normal(size=(n, 384))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


async def load_user_vectors(memory, user: str, vectors: np.ndarray, tag: str) -> list[str]:
    ids: list[str] = []
    for start in range(0, len(vectors), 500):
        reply = await memory.BatchCreateMemories(
            pb.BatchCreateMemoriesRequest(
                requests=[
                    pb.CreateMemoryRequest(
                        memory=pb.Memory(
                            scope=pb.SCOPE_USER,
                            agent_id=AGENT,
                            user_id=user,
                            content=f"{tag} memory {start + i}",
                        ),
                        embedding=vec.tolist(),
                    )
                    for i, vec in enumerate(vectors[start : start + 500])
                ]
            ),
            metadata=A,
        )
        ids += [m.id for m in reply.memories]
    return ids


async def test_owner_with_few_rows_among_many_gets_k_results(start_memory) -> None:
    memory = await start_memory()
    vectors = clustered(2506, seed=1)
    await load_user_vectors(memory, BIG_USER, vectors[:2500], "big")
    small_ids = await load_user_vectors(memory, SMALL_USER, vectors[2500:], "small")
    query = vectors[0]  # right in the big user's crowd
    sims = vectors[2500:] @ query
    expected = [small_ids[i] for i in np.argsort(-sims)[:5]]
    # Default settings take the exact path for a small owner; threshold 0 forces the HNSW
    # index with iterative scans (and the exact fallback if those come up short).
    forced_index = await start_memory(
        LIGHTMIND_MEMORY_EXACT_SEARCH_THRESHOLD="0", LIGHTMIND_MEMORY_HNSW_EF_SEARCH="10"
    )
    for stub in (memory, forced_index):
        reply = await stub.SearchMemories(
            pb.SearchMemoriesRequest(
                scope=pb.SCOPE_USER, user_id=SMALL_USER, vector=query.tolist(), top_k=5
            ),
            metadata=A,
        )
        assert [r.memory.id for r in reply.results] == expected
        assert all(r.memory.user_id == SMALL_USER for r in reply.results)
        scores = [r.similarity for r in reply.results]
        assert scores == sorted(scores, reverse=True)
        assert scores[0] == pytest.approx(float(sims.max()), abs=1e-4)
    # The big owner, through the index: exactly top_k rows, close to brute force.
    reply = await forced_index.SearchMemories(
        pb.SearchMemoriesRequest(
            scope=pb.SCOPE_USER, user_id=BIG_USER, vector=query.tolist(), top_k=20
        ),
        metadata=A,
    )
    assert len(reply.results) == 20
    assert {r.memory.user_id for r in reply.results} == {BIG_USER}


def struct(data: dict) -> struct_pb2.Struct:
    s = struct_pb2.Struct()
    s.update(data)
    return s


def value(v: object) -> struct_pb2.Value:
    return json_format.ParseDict(v, struct_pb2.Value())


DOCS = {
    "billing-high": {"topic": "billing", "priority": 3, "meta": {"lang": "en"}},
    "billing-low": {"topic": "billing", "priority": 1, "meta": {"lang": "de"}},
    "shipping": {"topic": "shipping", "priority": 2, "flag": None},
    "plain": {},
}


async def seed_metadata(memory) -> dict[str, str]:
    ids = {}
    vectors = unit_vectors(len(DOCS), seed=3)
    for (name, meta), vec in zip(DOCS.items(), vectors, strict=True):
        req = agent_memory(name, metadata=struct(meta))
        req.embedding.extend(vec.tolist())
        ids[(await memory.CreateMemory(req, metadata=A)).id] = name
    return ids


FILTERS = [
    (pb.MetadataFilter(equals=pb.EqualsCondition(key="topic", value=value("billing"))),
     {"billing-high", "billing-low"}),
    (pb.MetadataFilter(equals=pb.EqualsCondition(key="priority", value=value(3))),
     {"billing-high"}),
    (pb.MetadataFilter(equals=pb.EqualsCondition(key="meta.lang", value=value("de"))),
     {"billing-low"}),
    (pb.MetadataFilter(in_set=pb.InCondition(key="topic", values=[value("shipping"), value("x")])),
     {"shipping"}),
    (pb.MetadataFilter(range=pb.RangeCondition(key="priority", gte=value(2))),
     {"billing-high", "shipping"}),
    (pb.MetadataFilter(range=pb.RangeCondition(key="priority", gt=value(1), lt=value(3))),
     {"shipping"}),
    (pb.MetadataFilter(exists=pb.ExistsCondition(key="flag")), {"shipping"}),
    (pb.MetadataFilter(negate=pb.MetadataFilter(
        equals=pb.EqualsCondition(key="topic", value=value("billing")))),
     {"shipping", "plain"}),
    (pb.MetadataFilter(all_of=pb.FilterGroup(filters=[
        pb.MetadataFilter(equals=pb.EqualsCondition(key="topic", value=value("billing"))),
        pb.MetadataFilter(range=pb.RangeCondition(key="priority", lte=value(1))),
    ])), {"billing-low"}),
    (pb.MetadataFilter(any_of=pb.FilterGroup(filters=[
        pb.MetadataFilter(equals=pb.EqualsCondition(key="meta.lang", value=value("en"))),
        pb.MetadataFilter(exists=pb.ExistsCondition(key="flag")),
    ])), {"billing-high", "shipping"}),
]  # fmt: skip


async def test_metadata_filters_in_list_and_search(memory) -> None:
    ids = await seed_metadata(memory)
    probe = unit_vectors(1, seed=99)[0].tolist()
    for flt, expected in FILTERS:
        listed = await memory.ListMemories(
            pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT, filter=flt), metadata=A
        )
        assert {ids[m.id] for m in listed.memories} == expected, flt
        found = await memory.SearchMemories(
            pb.SearchMemoriesRequest(
                scope=pb.SCOPE_AGENT, agent_id=AGENT, vector=probe, filter=flt, top_k=10
            ),
            metadata=A,
        )
        assert {ids[r.memory.id] for r in found.results} == expected, flt


INJECTIONS = [
    "topic'); DROP TABLE agent_memories; --",
    'topic" = "x" OR 1=1 --',
    "topic}' OR '1'='1",
    "$1",
]


async def test_sql_injection_through_keys_and_values_is_inert(memory, database_url) -> None:
    ids = await seed_metadata(memory)
    for attack in INJECTIONS:
        for flt in (
            pb.MetadataFilter(equals=pb.EqualsCondition(key=attack, value=value("billing"))),
            pb.MetadataFilter(equals=pb.EqualsCondition(key="topic", value=value(attack))),
            pb.MetadataFilter(in_set=pb.InCondition(key=attack, values=[value(attack)])),
            pb.MetadataFilter(exists=pb.ExistsCondition(key=attack)),
            pb.MetadataFilter(range=pb.RangeCondition(key=attack, gt=value(attack))),
        ):
            listed = await memory.ListMemories(
                pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT, filter=flt), metadata=A
            )
            assert list(listed.memories) == []
    everything = await memory.ListMemories(pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT), metadata=A)
    assert {m.id for m in everything.memories} == set(ids)
    conn = await asyncpg.connect(database_url)
    try:
        count = await conn.fetchval("SELECT count(*) FROM memory.agent_memories")
    finally:
        await conn.close()
    assert count == len(DOCS)


BAD_FILTERS = [
    (pb.MetadataFilter(), "filter"),
    (pb.MetadataFilter(equals=pb.EqualsCondition(key="", value=value(1))), "filter.equals.key"),
    (pb.MetadataFilter(equals=pb.EqualsCondition(key="a..b", value=value(1))),
     "filter.equals.key"),
    (pb.MetadataFilter(equals=pb.EqualsCondition(key="a")), "filter.equals.value"),
    (pb.MetadataFilter(in_set=pb.InCondition(key="a")), "filter.in_set.values"),
    (pb.MetadataFilter(range=pb.RangeCondition(key="a")), "filter.range"),
    (pb.MetadataFilter(range=pb.RangeCondition(key="a", gt=value(1), lt=value("z"))),
     "filter.range"),
    (pb.MetadataFilter(range=pb.RangeCondition(key="a", gt=value(True))), "filter.range.gt"),
    (pb.MetadataFilter(all_of=pb.FilterGroup()), "filter.all_of.filters"),
    (pb.MetadataFilter(any_of=pb.FilterGroup(filters=[
        pb.MetadataFilter(exists=pb.ExistsCondition(key="ok")),
        pb.MetadataFilter(equals=pb.EqualsCondition(key="", value=value(1))),
    ])), "filter.any_of.filters[1].equals.key"),
]  # fmt: skip


@pytest.mark.parametrize(("flt", "field"), BAD_FILTERS)
async def test_bad_filters_name_the_field(memory, flt, field) -> None:
    for call in (
        memory.ListMemories(pb.ListMemoriesRequest(scope=pb.SCOPE_AGENT, filter=flt), metadata=A),
        memory.SearchMemories(
            pb.SearchMemoriesRequest(
                scope=pb.SCOPE_AGENT, agent_id=AGENT, query="anything", filter=flt
            ),
            metadata=A,
        ),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call
        details = error_details(err.value)
        assert details.code == grpc.StatusCode.INVALID_ARGUMENT
        assert details.fields == [field]


async def test_text_query_ranks_the_relevant_memory_first(memory) -> None:
    texts = [
        "The user is allergic to peanuts.",
        "The deployment runs on Kubernetes in eu-west-1.",
        "Meeting notes: the quarterly budget was approved.",
    ]
    for text in texts:
        await memory.CreateMemory(agent_memory(text), metadata=A)
    for query, want in (
        ("which food allergies does the user have?", texts[0]),
        ("where is the cluster deployed", texts[1]),
    ):
        reply = await memory.SearchMemories(
            pb.SearchMemoriesRequest(scope=pb.SCOPE_AGENT, agent_id=AGENT, query=query, top_k=3),
            metadata=A,
        )
        assert reply.results[0].memory.content == want
        hybrid = await memory.SearchMemories(
            pb.SearchMemoriesRequest(
                scope=pb.SCOPE_AGENT, agent_id=AGENT, query=query, top_k=3, hybrid=True
            ),
            metadata=A,
        )
        assert hybrid.results[0].memory.content == want
    strict = await memory.SearchMemories(
        pb.SearchMemoriesRequest(
            scope=pb.SCOPE_AGENT, agent_id=AGENT, query="peanut allergy", min_score=0.99
        ),
        metadata=A,
    )
    assert list(strict.results) == []


async def test_expired_session_memories_never_appear_and_are_swept(
    start_memory, database_url
) -> None:
    memory = await start_memory(LIGHTMIND_MEMORY_SWEEP_INTERVAL_SECONDS="0.1")
    live = await memory.CreateMemory(session_memory("The build is green again."), metadata=A)
    gone = await memory.CreateMemory(session_memory("The build is red."), metadata=A)
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute(
            "UPDATE memory.session_memories SET expire_time = now() - interval '1 second' "
            "WHERE id = $1",
            uuid.UUID(gone.id),
        )
        search = await memory.SearchMemories(
            pb.SearchMemoriesRequest(
                scope=pb.SCOPE_SESSION, session_id=SESSION, query="is the build red?", top_k=10
            ),
            metadata=A,
        )
        assert [r.memory.id for r in search.results] == [live.id]
        context = await memory.RetrieveContext(
            pb.RetrieveContextRequest(query="build red", session_id=SESSION), metadata=A
        )
        assert [i.memory.id for i in context.items] == [live.id]
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await memory.GetMemory(pb.GetMemoryRequest(id=gone.id), metadata=A)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
        for _ in range(100):  # the sweeper runs every 0.1 s
            remaining = await conn.fetchval(
                "SELECT count(*) FROM memory.session_memories WHERE id = $1", uuid.UUID(gone.id)
            )
            if remaining == 0:
                break
            await asyncio.sleep(0.1)
        assert remaining == 0
        assert await conn.fetchval("SELECT count(*) FROM memory.session_memories") == 1
        # Creating the expired text again gives a fresh, live memory.
        again = await memory.CreateMemory(session_memory("The build is red."), metadata=A)
        assert again.expire_time.seconds > again.create_time.seconds
    finally:
        await conn.close()


async def test_iterative_index_scan_fills_k_under_a_selective_metadata_filter(
    database_url,
) -> None:
    """The index path itself (no exact fallback): with a filter matching 6 of 2,506 rows the
    planner picks the HNSW index; a plain scan finds too few, the iterative scan finds k."""
    from google.protobuf import struct_pb2

    from lightmind.db import load_migrations, open_pool
    from memory_svc import repository, search
    from memory_svc.scopes import USER as USER_SCOPE

    pool = await open_pool(
        database_url, schema="memory", migrations=load_migrations("memory_svc.migrations")
    )
    try:
        vectors = clustered(2506, seed=1)
        rows = [
            repository.NewMemory(
                content=f"m{i}",
                embedding=vectors[i].tolist(),
                embedding_model="m",
                owners={"agent_id": AGENT, "user_id": USER},
                memory_type="fact",
                metadata={"tag": "rare" if i >= 2500 else "common"},
            )
            for i in range(2506)
        ]
        rare = pb.MetadataFilter(
            equals=pb.EqualsCondition(key="tag", value=struct_pb2.Value(string_value="rare"))
        )
        query = search.Query(USER_SCOPE, vectors[0].tolist(), "m", {"user_id": USER}, 5, rare)
        async with pool.acquire() as conn:
            await repository.insert_memories(conn, USER_SCOPE, rows)
            await conn.execute("ANALYZE user_memories")
            found = await search._approximate(conn, query, 5, ef_search=10)
            params = search.Params(["default"])
            vec = params.add(search.Vector(vectors[0].tolist()))
            where = search._where(query, params, with_filter=True)
            naive_sql = (
                f"SELECT m.id FROM user_memories m WHERE {where} "
                f"ORDER BY m.embedding <=> {vec} LIMIT 5"
            )
            plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + naive_sql, *params.values))
            naive = await conn.fetch(naive_sql, *params.values)
    finally:
        await pool.close()
    assert "user_memories_embedding" in plan  # the HNSW index really is in use
    assert len(naive) < 5  # what mem0/LangGraph-style post-filtering returns
    assert [r["content"] for r in found] and len(found) == 5
    assert {r["content"] for r in found} <= {f"m{i}" for i in range(2500, 2506)}
