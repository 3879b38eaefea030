"""A load run: 200 concurrent clients of mixed operations against the stack, as processes.

Only RESOURCE_EXHAUSTED is an acceptable error; afterwards every acknowledged write is read
back. LIGHTMIND_LOAD_SECONDS sets the length (default 60), LIGHTMIND_LOAD_REPORT a file to
write the figures to; they are also printed (pytest -s).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import time
import uuid
from collections import defaultdict
from pathlib import Path

import grpc
import numpy as np
from google.protobuf import struct_pb2
from stack import Stack

from lightmind.memory.v1 import memory_service_pb2 as mpb
from lightmind.memory.v1 import memory_service_pb2_grpc as mpb_grpc
from lightmind.skill.v1 import skill_service_pb2 as spb
from lightmind.skill.v1 import skill_service_pb2_grpc as spb_grpc

CLIENTS = 200
SECONDS = float(os.environ.get("LIGHTMIND_LOAD_SECONDS", "60"))
AGENT = str(uuid.uuid4())
TOPICS = ["billing", "travel", "hardware", "security", "holidays", "payroll", "onboarding"]
MIX = [
    ("create_text", 12),
    ("create_vector", 18),
    ("search_vector", 30),
    ("search_text", 8),
    ("get", 12),
    ("list", 10),
    ("execute_tool", 10),
]


def random_unit(rng: np.random.Generator) -> list[float]:
    v = rng.standard_normal(384)
    return (v / np.linalg.norm(v)).astype(float).tolist()


async def prepare_skill(stub: spb_grpc.SkillServiceStub) -> None:
    await stub.CreateSkill(
        spb.CreateSkillRequest(
            skill=spb.Skill(name="arithmetic", description="Do arithmetic.", content="# Math")
        ),
        timeout=60,
    )
    await stub.CreateTool(
        spb.CreateToolRequest(
            tool=spb.Tool(
                name="calculate",
                description="Evaluate an arithmetic expression.",
                python=spb.PythonImplementation(callable="skill_svc.builtins.calculate"),
                parameters=[
                    spb.ToolParameter(
                        name="expression", type=spb.PARAMETER_TYPE_STRING, required=True
                    )
                ],
                annotations=spb.ToolAnnotations(read_only_hint=True),
            )
        ),
        timeout=60,
    )
    await stub.AttachTool(spb.AttachToolRequest(skill="arithmetic", tool="calculate"), timeout=60)
    await stub.AssignSkill(spb.AssignSkillRequest(agent_id=AGENT, skill="arithmetic"), timeout=60)


async def test_two_hundred_clients_mixed_operations(stack: Stack) -> None:
    await stack.start("embedding", "memory", "skill")
    acknowledged: dict[str, str] = {}
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    unexpected: list[str] = []
    options = [("grpc.max_concurrent_streams", 1000)]
    async with (
        grpc.aio.insecure_channel(stack.address("memory"), options=options) as mch,
        grpc.aio.insecure_channel(stack.address("skill"), options=options) as sch,
    ):
        memory = mpb_grpc.MemoryServiceStub(mch)
        skills = spb_grpc.SkillServiceStub(sch)
        await prepare_skill(skills)
        ends = time.monotonic() + SECONDS
        names = [name for name, _ in MIX]
        weights = [weight for _, weight in MIX]

        async def client(number: int) -> None:
            rng = random.Random(number)
            vectors = np.random.default_rng(number)
            user = str(uuid.uuid5(uuid.NAMESPACE_URL, f"load-user-{number}"))
            mine: list[tuple[str, str]] = []
            n = 0
            while time.monotonic() < ends:
                op = rng.choices(names, weights)[0]
                n += 1
                started = time.perf_counter()
                try:
                    if op in ("create_text", "create_vector"):
                        content = f"client {number} note {n} about {rng.choice(TOPICS)}"
                        made = await memory.CreateMemory(
                            mpb.CreateMemoryRequest(
                                memory=mpb.Memory(
                                    scope=mpb.SCOPE_USER,
                                    agent_id=AGENT,
                                    user_id=user,
                                    content=content,
                                ),
                                embedding=random_unit(vectors) if op == "create_vector" else [],
                            ),
                            timeout=90,
                        )
                        acknowledged[made.id] = content
                        mine.append((made.id, content))
                    elif op == "search_vector":
                        await memory.SearchMemories(
                            mpb.SearchMemoriesRequest(
                                scope=mpb.SCOPE_USER,
                                user_id=user,
                                vector=random_unit(vectors),
                                top_k=5,
                            ),
                            timeout=90,
                        )
                    elif op == "search_text":
                        await memory.SearchMemories(
                            mpb.SearchMemoriesRequest(
                                scope=mpb.SCOPE_USER,
                                user_id=user,
                                query=f"what do I know about {rng.choice(TOPICS)}?",
                                top_k=5,
                            ),
                            timeout=90,
                        )
                    elif op == "get":
                        if not mine:
                            continue
                        memory_id, content = rng.choice(mine)
                        got = await memory.GetMemory(mpb.GetMemoryRequest(id=memory_id), timeout=90)
                        if got.content != content:
                            unexpected.append(f"get {memory_id}: content changed")
                    elif op == "list":
                        await memory.ListMemories(
                            mpb.ListMemoriesRequest(
                                scope=mpb.SCOPE_USER, user_id=user, page_size=10
                            ),
                            timeout=90,
                        )
                    else:
                        args = struct_pb2.Struct()
                        args.update({"expression": f"{n} * {number} + 1"})
                        result = await skills.ExecuteTool(
                            spb.ExecuteToolRequest(
                                tool="calculate",
                                arguments=args,
                                caller=spb.Caller(agent_id=AGENT, user_id=user),
                            ),
                            timeout=90,
                        )
                        if result.is_error:
                            unexpected.append(f"calculate failed: {result}")
                except grpc.aio.AioRpcError as exc:
                    if exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                        errors[op] += 1
                        await asyncio.sleep(0.1)
                        continue
                    unexpected.append(f"{op}: {exc.code().name}: {exc.details()}")
                    continue
                latencies[op].append(time.perf_counter() - started)

        began = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(CLIENTS)))
        elapsed = time.perf_counter() - began

        # Every acknowledged write reads back with its content.
        checks = asyncio.Semaphore(50)

        async def read_back(memory_id: str, content: str) -> None:
            async with checks:
                got = await memory.GetMemory(mpb.GetMemoryRequest(id=memory_id), timeout=60)
                if got.content != content:
                    unexpected.append(f"read back {memory_id}: content differs")

        await asyncio.gather(*(read_back(i, c) for i, c in acknowledged.items()))

    total = sum(len(v) for v in latencies.values())
    report = {
        "clients": CLIENTS,
        "seconds": round(elapsed, 1),
        "operations": total,
        "throughput_ops_per_s": round(total / elapsed, 1),
        "acknowledged_writes": len(acknowledged),
        "resource_exhausted": dict(errors),
        "per_operation": {
            op: {
                "count": len(values),
                "p50_ms": round(statistics.median(values) * 1000, 1),
                "p99_ms": round(sorted(values)[max(0, int(len(values) * 0.99) - 1)] * 1000, 1),
            }
            for op, values in sorted(latencies.items())
            if values
        },
    }
    print(json.dumps(report, indent=2))
    if os.environ.get("LIGHTMIND_LOAD_REPORT"):
        target = Path(os.environ["LIGHTMIND_LOAD_REPORT"])
        await asyncio.to_thread(target.write_text, json.dumps(report, indent=2))
    assert not unexpected, unexpected[:10]
    assert acknowledged and total > CLIENTS
    assert set(latencies) == {name for name, _ in MIX}
