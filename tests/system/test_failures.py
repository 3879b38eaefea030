"""Failures a deployment meets: the database restarting under traffic, EmbeddingService down,
and SIGTERM under load. Each checks that errors are clean and no acknowledged write is lost or
half-written."""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid

import asyncpg
import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from stack import Stack

from lightmind.embedded_pg import EmbeddedPostgres
from lightmind.memory.v1 import memory_service_pb2 as mpb
from lightmind.memory.v1 import memory_service_pb2_grpc as mpb_grpc
from lightmind.skill.v1 import skill_service_pb2 as spb
from lightmind.skill.v1 import skill_service_pb2_grpc as spb_grpc

AGENT = str(uuid.uuid4())


def user_memory(
    user: str, content: str, vector: list[float] | None = None
) -> mpb.CreateMemoryRequest:
    return mpb.CreateMemoryRequest(
        memory=mpb.Memory(scope=mpb.SCOPE_USER, agent_id=AGENT, user_id=user, content=content),
        embedding=vector or [],
    )


def unit_vector(seed: int) -> list[float]:
    import numpy as np

    v = np.random.default_rng(seed).standard_normal(384)
    return (v / np.linalg.norm(v)).astype(float).tolist()


async def count_rows(database_url: str, table: str) -> int:
    conn = await asyncpg.connect(database_url)
    try:
        return int(await conn.fetchval(f"SELECT count(*) FROM memory.{table}"))
    finally:
        await conn.close()


async def test_database_restart_during_traffic(stack: Stack, pg: EmbeddedPostgres) -> None:
    await stack.start("embedding", "memory")
    acknowledged: dict[str, str] = {}
    errors: list[grpc.StatusCode] = []
    stop = asyncio.Event()
    user = str(uuid.uuid4())

    async with grpc.aio.insecure_channel(stack.address("memory")) as channel:
        stub = mpb_grpc.MemoryServiceStub(channel)

        async def writer(worker: int) -> None:
            n = 0
            while not stop.is_set():
                n += 1
                content = f"fact {worker}-{n}"
                try:
                    made = await stub.CreateMemory(
                        user_memory(user, content, unit_vector(worker * 100_000 + n)), timeout=20
                    )
                    acknowledged[made.id] = content
                except grpc.aio.AioRpcError as exc:
                    errors.append(exc.code())
                    await asyncio.sleep(0.05)

        writers = [asyncio.create_task(writer(w)) for w in range(8)]
        await asyncio.sleep(1.5)
        before_outage = len(acknowledged)
        await asyncio.to_thread(pg.stop, "fast")
        try:
            await asyncio.sleep(2.0)
            during = len(errors)
        finally:
            await asyncio.to_thread(pg.start)
        # Writes succeed again once the database is back.
        deadline = time.monotonic() + 60
        resumed_at = len(acknowledged)
        while len(acknowledged) < resumed_at + 20:
            assert time.monotonic() < deadline, f"no recovery; errors: {set(errors)}"
            await asyncio.sleep(0.2)
        stop.set()
        await asyncio.gather(*writers)

        assert before_outage > 0 and during > 0
        assert set(errors) <= {grpc.StatusCode.UNAVAILABLE}, set(errors)
        for memory_id, content in acknowledged.items():
            got = await stub.GetMemory(mpb.GetMemoryRequest(id=memory_id), timeout=20)
            assert got.content == content
    conn = await asyncpg.connect(stack.database_url)
    try:
        rows = await conn.fetch(
            "SELECT id::text AS id, embedding IS NULL AS missing FROM memory.user_memories"
        )
    finally:
        await conn.close()
    stored = {r["id"] for r in rows}
    assert set(acknowledged) <= stored
    assert not any(r["missing"] for r in rows)  # nothing half-written


async def test_embedding_service_down_fails_writes_cleanly(stack: Stack) -> None:
    await stack.start("embedding", "memory", "skill")
    user = str(uuid.uuid4())
    async with (
        grpc.aio.insecure_channel(stack.address("memory")) as mch,
        grpc.aio.insecure_channel(stack.address("skill")) as sch,
    ):
        memory = mpb_grpc.MemoryServiceStub(mch)
        skills = spb_grpc.SkillServiceStub(sch)
        await memory.CreateMemory(user_memory(user, "stored while all is well"), timeout=30)
        memories_before = await count_rows(stack.database_url, "user_memories")

        await stack.stop("embedding")
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await memory.CreateMemory(
                user_memory(user, "written while embedding is down"), timeout=30
            )
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await skills.CreateSkill(
                spb.CreateSkillRequest(
                    skill=spb.Skill(name="orphan", description="never stored", content="# x")
                ),
                timeout=30,
            )
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        assert await count_rows(stack.database_url, "user_memories") == memories_before
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await skills.GetSkill(spb.GetSkillRequest(skill="orphan"), timeout=30)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        # Reads that need no embedding keep working.
        listed = await memory.ListMemories(
            mpb.ListMemoriesRequest(scope=mpb.SCOPE_USER, user_id=user), timeout=30
        )
        assert len(listed.memories) == 1

        await stack.start("embedding")
        deadline = time.monotonic() + 30
        while True:
            try:
                await memory.CreateMemory(user_memory(user, "written after recovery"), timeout=30)
                break
            except grpc.aio.AioRpcError as exc:
                assert exc.code() == grpc.StatusCode.UNAVAILABLE
                assert time.monotonic() < deadline
                await asyncio.sleep(0.5)


async def test_sigterm_under_load_drains_and_refuses_new_calls(stack: Stack) -> None:
    await stack.start("embedding", "memory")
    user = str(uuid.uuid4())
    async with grpc.aio.insecure_channel(stack.address("memory")) as channel:
        stub = mpb_grpc.MemoryServiceStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        statuses: list[int] = []

        async def watch() -> None:
            try:
                async for reply in health.Watch(health_pb2.HealthCheckRequest()):
                    statuses.append(reply.status)
            except grpc.aio.AioRpcError:
                pass

        watcher = asyncio.create_task(watch())
        # Text memories: each needs an embedding, so calls are in flight for a while.
        in_flight = [
            asyncio.ensure_future(
                stub.CreateMemory(user_memory(user, f"in flight {i} " * 30), timeout=60)
            )
            for i in range(24)
        ]
        await asyncio.sleep(0.3)
        process = stack.processes["memory"].proc
        assert process is not None
        os.kill(process.pid, signal.SIGTERM)
        results = await asyncio.gather(*in_flight, return_exceptions=True)
        # Calls the server had accepted complete; any it had not yet accepted are refused
        # cleanly with UNAVAILABLE, never cut off half-done.
        done = [r for r in results if isinstance(r, mpb.Memory)]
        refused = [r for r in results if not isinstance(r, mpb.Memory)]
        assert done, "no in-flight call completed"
        for error in refused:
            assert isinstance(error, grpc.aio.AioRpcError), error
            assert error.code() == grpc.StatusCode.UNAVAILABLE
        code = await asyncio.to_thread(process.wait, 60)
        assert code == 0
        await asyncio.wait_for(watcher, 10)
        assert statuses[0] == health_pb2.HealthCheckResponse.SERVING
        assert health_pb2.HealthCheckResponse.NOT_SERVING in statuses
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.CreateMemory(user_memory(user, "after shutdown"), timeout=5)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    stack.processes.pop("memory")
    conn = await asyncpg.connect(stack.database_url)
    try:
        stored = {
            r["id"] for r in await conn.fetch("SELECT id::text AS id FROM memory.user_memories")
        }
    finally:
        await conn.close()
    assert {m.id for m in done} <= stored
