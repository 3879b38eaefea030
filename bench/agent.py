"""AgentService benchmark: the overhead of one turn, excluding LLM time.

Runs EmbeddingService, MemoryService, SkillService and AgentService in-process on an embedded
PostgreSQL, with a scripted OpenAI-compatible LLM on loopback that answers instantly. Every
measured turn makes one tool call: the model calls `calculate` (the session loaded the
`math` skill in a warm-up turn), then answers. Per turn it reports wall time seen by the
client, minus the time spent waiting for the LLM (HTTP to the scripted server included), and
the share of each dependency from the turn's own timings (stored in the answer's metadata).

    .venv/bin/python bench/agent.py [--turns 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import grpc
from google.protobuf import json_format

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "agent"))

from scripted_llm import ScriptedLLM, call, text  # noqa: E402

from agent_svc.config import AgentConfig  # noqa: E402
from agent_svc.service import build as build_agent  # noqa: E402
from embedding_svc.config import EmbeddingConfig  # noqa: E402
from embedding_svc.service import build as build_embedding  # noqa: E402
from lightmind.agent.v1 import agent_service_pb2 as pb  # noqa: E402
from lightmind.agent.v1 import agent_service_pb2_grpc as pb_grpc  # noqa: E402
from lightmind.embedded_pg import EmbeddedPostgres  # noqa: E402
from lightmind.skill.v1 import skill_service_pb2 as spb  # noqa: E402
from lightmind.skill.v1 import skill_service_pb2_grpc as spb_grpc  # noqa: E402
from lightmind.testing import ServerHandle, free_port  # noqa: E402
from memory_svc.config import MemoryConfig  # noqa: E402
from memory_svc.service import build as build_memory  # noqa: E402
from skill_svc.config import SkillConfig  # noqa: E402
from skill_svc.service import build as build_skill  # noqa: E402


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def setup_skill(stub: spb_grpc.SkillServiceStub, agent_id: str) -> None:
    await stub.CreateTool(
        spb.CreateToolRequest(
            tool=spb.Tool(
                name="calculate",
                description="Evaluates an arithmetic expression.",
                python=spb.PythonImplementation(callable="skill_svc.builtins:calculate"),
                parameters=[
                    spb.ToolParameter(
                        name="expression", type=spb.PARAMETER_TYPE_STRING, required=True
                    )
                ],
                annotations=spb.ToolAnnotations(read_only_hint=True),
            )
        )
    )
    await stub.CreateSkill(
        spb.CreateSkillRequest(
            skill=spb.Skill(name="math", description="Arithmetic.", content="Use calculate.")
        )
    )
    await stub.AttachTool(spb.AttachToolRequest(skill="math", tool="calculate"))
    await stub.AssignSkill(spb.AssignSkillRequest(agent_id=agent_id, skill="math"))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="lightmind-bench-agent-"))
    pg = EmbeddedPostgres(tmp / "pg", free_port(), database="bench", fsync=False)
    await asyncio.to_thread(pg.ensure_running)
    import asyncpg

    conn = await asyncpg.connect(pg.url("postgres"))
    try:
        await conn.execute("CREATE DATABASE bench")
    finally:
        await conn.close()
    url = pg.url("bench")
    handles: list[ServerHandle] = []
    llm = await ScriptedLLM().start()
    try:
        embedding = await ServerHandle.start(
            "embedding", lambda: build_embedding(EmbeddingConfig.from_env({}))
        )
        handles.append(embedding)
        common = {"DATABASE_URL": url, "LIGHTMIND_EMBEDDING_ADDR": embedding.address}
        memory = await ServerHandle.start(
            "memory", lambda: build_memory(MemoryConfig.from_env(common))
        )
        skill = await ServerHandle.start("skill", lambda: build_skill(SkillConfig.from_env(common)))
        handles += [memory, skill]
        agent_env = {
            **common,
            "LIGHTMIND_MEMORY_ADDR": memory.address,
            "LIGHTMIND_SKILL_ADDR": skill.address,
            "LIGHTMIND_LLM_BASE_URL": llm.base_url,
            "LIGHTMIND_LLM_MODEL": "scripted",
        }
        agent_handle = await ServerHandle.start(
            "agent", lambda: build_agent(AgentConfig.from_env(agent_env))
        )
        handles.append(agent_handle)
        async with (
            grpc.aio.insecure_channel(agent_handle.address) as achan,
            grpc.aio.insecure_channel(skill.address) as schan,
        ):
            stub = pb_grpc.AgentServiceStub(achan)
            agent = await stub.CreateAgent(pb.CreateAgentRequest(agent=pb.Agent(name="bench")))
            await setup_skill(spb_grpc.SkillServiceStub(schan), agent.agent_id)
            session = await stub.CreateSession(
                pb.CreateSessionRequest(session=pb.Session(agent_id=agent.agent_id))
            )

            async def turn(i: int, load: bool = False) -> tuple[float, dict[str, float]]:
                first = call(f"l{i}", "load_skill", {"name": "math"}) if load else None
                if first:
                    llm.add(first)
                llm.add(call(f"c{i}", "calculate", {"expression": f"{i} * 2"}), text(f"{i * 2}"))
                started = time.perf_counter()
                events = [
                    e
                    async for e in stub.Chat(
                        pb.ChatRequest(session_id=session.session_id, message=f"{i} times 2?")
                    )
                ]
                wall = (time.perf_counter() - started) * 1000
                assert events[-1].HasField("final_answer"), events[-1]
                page = await stub.ListMessages(
                    pb.ListMessagesRequest(session_id=session.session_id, page_size=1000)
                )
                meta = json_format.MessageToDict(page.messages[-1].metadata)
                return wall, meta["turn_timings_ms"]

            await turn(0, load=True)
            for i in range(1, 6):  # warm-up
                await turn(i)
            overhead: list[float] = []
            shares: dict[str, list[float]] = {}
            for i in range(6, 6 + args.turns):
                wall, timings = await turn(i)
                llm_ms = timings.get("llm", 0.0)
                overhead.append(wall - llm_ms)
                for key, value in timings.items():
                    if key != "llm":
                        shares.setdefault(key, []).append(value)
        total = statistics.mean(overhead)
        result = {
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
            "turns": args.turns,
            "overhead_p50_ms": round(pct(overhead, 0.5), 2),
            "overhead_p99_ms": round(pct(overhead, 0.99), 2),
            "overhead_mean_ms": round(total, 2),
            "mean_ms_by_dependency": {k: round(statistics.mean(v), 2) for k, v in shares.items()},
            "share_of_overhead": {
                k: f"{100 * statistics.mean(v) / total:.0f}%" for k, v in shares.items()
            },
        }
        result["share_of_overhead"]["agent (own work, gRPC, rest)"] = (
            f"{100 * (total - sum(statistics.mean(v) for v in shares.values())) / total:.0f}%"
        )
        print(json.dumps(result, indent=2))
        if args.json:
            await asyncio.to_thread(Path(args.json).write_text, json.dumps(result, indent=2))
    finally:
        for handle in reversed(handles):
            await handle.stop()
        await llm.stop()
        await asyncio.to_thread(pg.stop, "immediate")


if __name__ == "__main__":
    asyncio.run(main())
