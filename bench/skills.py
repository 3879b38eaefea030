"""SkillService benchmark: ExecuteTool round trip, LoadSkill over a dependency chain,
DiscoverSkills over 1,000 skills. Run by hand: ``.venv/bin/python bench/skills.py``.

Everything is real and on loopback: an embedded PostgreSQL in a temporary directory, the
EmbeddingService with the offline ONNX model and SkillService, each its own process as in a
deployment, called through gRPC stubs exactly as a client would (``--in-process`` runs both
servers inside the benchmark process instead, sharing its event loop with the client).
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import struct_pb2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from embedding_svc.config import EmbeddingConfig
from embedding_svc.service import build as build_embedding
from lightmind.embedded_pg import EmbeddedPostgres
from lightmind.process import ServiceProcess
from lightmind.skill.v1 import skill_service_pb2 as pb
from lightmind.skill.v1 import skill_service_pb2_grpc as pb_grpc
from lightmind.testing import ServerHandle, free_port
from skill_svc.config import SkillConfig
from skill_svc.service import build as build_skill

TOPICS = [
    "email", "calendar", "weather", "invoices", "spreadsheets", "translation", "images",
    "databases", "code review", "travel", "recipes", "fitness", "music", "legal contracts",
    "tax forms", "shipping", "inventory", "customer support", "social media", "news",
]  # fmt: skip
VERBS = ["search", "summarise", "create", "update", "analyse", "export", "schedule", "compare"]


async def timed(n: int, call: Callable[[], Awaitable[Any]]) -> list[float]:
    for _ in range(min(20, n)):
        await call()  # warm-up
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def summary(name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"| {name} | {len(samples)} | {p50:.2f} | {p99:.2f} | {statistics.mean(ordered):.2f} |"


Stop = Callable[[], Awaitable[None]]


async def start_servers(database_url: str, *, in_process: bool) -> tuple[str, list[Stop]]:
    """EmbeddingService and SkillService, started: SkillService's address and the stoppers."""
    if in_process:
        embedding = await ServerHandle.start(
            "embedding", lambda: build_embedding(EmbeddingConfig.from_env({}))
        )
        config = SkillConfig.from_env(
            {
                "DATABASE_URL": database_url,
                "LIGHTMIND_EMBEDDING_ADDR": embedding.address,
                "LIGHTMIND_LOG_LEVEL": "warning",
            }
        )
        skill = await ServerHandle.start("skill", lambda: build_skill(config))
        return skill.address, [embedding.stop, skill.stop]
    ports = {"embedding": free_port(), "skill": free_port()}
    env = {
        "DATABASE_URL": database_url,
        "LIGHTMIND_LOG_LEVEL": "warning",
        "LIGHTMIND_EMBEDDING_PORT": str(ports["embedding"]),
        "LIGHTMIND_SKILL_PORT": str(ports["skill"]),
        "LIGHTMIND_EMBEDDING_METRICS_PORT": "0",
        "LIGHTMIND_SKILL_METRICS_PORT": "0",
        "LIGHTMIND_EMBEDDING_ADDR": f"127.0.0.1:{ports['embedding']}",
    }
    stops: list[Stop] = []
    for name, module in (("embedding", "embedding_svc"), ("skill", "skill_svc")):
        process = ServiceProcess(module, env, f"127.0.0.1:{ports[name]}")
        process.start()
        await process.wait_serving()

        async def stop(process: ServiceProcess = process) -> None:
            await asyncio.to_thread(process.stop)

        stops.append(stop)
    return f"127.0.0.1:{ports['skill']}", stops


async def main(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="lightmind-bench-"))
    pg = EmbeddedPostgres(tmp / "pg", free_port(), database="postgres", fsync=False)
    pg.ensure_running()
    skill_address, stops = await start_servers(pg.url("postgres"), in_process=args.in_process)
    rows = []
    try:
        async with grpc.aio.insecure_channel(skill_address) as channel:
            stub = pb_grpc.SkillServiceStub(channel)
            # ExecuteTool: in-process python tool.
            await stub.CreateSkill(
                pb.CreateSkillRequest(
                    skill=pb.Skill(name="math", description="Arithmetic.", content="# Math")
                )
            )
            await stub.CreateTool(
                pb.CreateToolRequest(
                    tool=pb.Tool(
                        name="calculate",
                        description="Evaluate arithmetic.",
                        python=pb.PythonImplementation(callable="skill_svc.builtins.calculate"),
                        parameters=[
                            pb.ToolParameter(
                                name="expression", type=pb.PARAMETER_TYPE_STRING, required=True
                            )
                        ],
                        annotations=pb.ToolAnnotations(read_only_hint=True),
                    )
                )
            )
            await stub.AttachTool(pb.AttachToolRequest(skill="math", tool="calculate"))
            await stub.AssignSkill(pb.AssignSkillRequest(agent_id="bench", skill="math"))
            arguments = struct_pb2.Struct()
            arguments.update({"expression": "(2 + 3) * 7"})
            request = pb.ExecuteToolRequest(
                tool="calculate", arguments=arguments, caller=pb.Caller(agent_id="bench")
            )
            rows.append(
                summary(
                    "ExecuteTool (python calculate)",
                    await timed(args.n, lambda: stub.ExecuteTool(request)),
                )
            )
            # LoadSkill over a three-deep required dependency chain, two tools per level.
            chain = ["level-1", "level-2", "level-3", "level-4"]
            for i, name in enumerate(chain):
                await stub.CreateSkill(
                    pb.CreateSkillRequest(
                        skill=pb.Skill(name=name, description=f"Chain {name}.", content="x " * 400)
                    )
                )
                for t in range(2):
                    tool = f"{name}-tool-{t}"
                    await stub.CreateTool(
                        pb.CreateToolRequest(
                            tool=pb.Tool(
                                name=tool,
                                description=f"Tool {tool}.",
                                python=pb.PythonImplementation(
                                    callable="skill_svc.builtins.current_time"
                                ),
                                parameters=[
                                    pb.ToolParameter(name="timezone", type=pb.PARAMETER_TYPE_STRING)
                                ],
                            )
                        )
                    )
                    await stub.AttachTool(pb.AttachToolRequest(skill=name, tool=tool))
                if i:
                    await stub.AddDependency(
                        pb.AddDependencyRequest(skill=chain[i - 1], depends_on=name, required=True)
                    )
            await stub.AssignSkill(pb.AssignSkillRequest(agent_id="bench", skill="level-1"))
            load = pb.LoadSkillRequest(agent_id="bench", skill="level-1")
            loaded = await stub.LoadSkill(load)
            assert len(loaded.tools) == 8 and len(loaded.dependencies) == 3
            rows.append(
                summary(
                    "LoadSkill (3-deep chain, 8 tools)",
                    await timed(args.n, lambda: stub.LoadSkill(load)),
                )
            )
            # DiscoverSkills over 1,000 skills, imported in batches of 100.
            created = 0
            while created < args.skills:
                files = []
                for _ in range(min(100, args.skills - created)):
                    topic = TOPICS[created % len(TOPICS)]
                    verb = VERBS[(created // len(TOPICS)) % len(VERBS)]
                    name = f"skill-{created}"
                    text = (
                        f"---\nname: {name}\ndescription: {verb.capitalize()} {topic} "
                        f"for the user (variant {created}).\n---\n# {name}\n"
                    )
                    files.append(pb.SkillFile(path=f"{name}/SKILL.md", content=text.encode()))
                    created += 1
                await stub.ImportSkills(pb.ImportSkillsRequest(files=files))
            queries = ["find my unpaid invoices", "what's the weather tomorrow", "translate this"]
            i = 0

            def discover() -> Awaitable[Any]:
                nonlocal i
                i += 1
                return stub.DiscoverSkills(
                    pb.DiscoverSkillsRequest(query=queries[i % len(queries)], top_k=5)
                )

            rows.append(
                summary(
                    f"DiscoverSkills ({args.skills} skills, top 5)", await timed(args.n, discover)
                )
            )
    finally:
        for stop in reversed(stops):
            await stop()
        pg.stop("immediate")
    where = "in-process servers" if args.in_process else "servers as separate processes"
    print(
        f"SkillService benchmark ({where}), {time.strftime('%Y-%m-%d')}, {platform.node()}, "
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}"
    )
    print("| call | n | p50 ms | p99 ms | mean ms |\n|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=500, help="calls per measurement")
    parser.add_argument("--skills", type=int, default=1000, help="skills for DiscoverSkills")
    parser.add_argument(
        "--in-process", action="store_true", help="run the servers in the benchmark process"
    )
    asyncio.run(main(parser.parse_args()))
