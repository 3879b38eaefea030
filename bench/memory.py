"""MemoryService benchmark, one run, services as separate processes (as in production).

Loads 100,000 user memories (1,000 users x 100) through BatchCreateMemories with
client-provided vectors from a clustered synthetic distribution, plus 100,000 organization
chunks, then measures through gRPC:

  (i)   per-user search (SearchMemories, USER scope, by vector, top 10): p50, p99, recall@10
  (ii)  organization-wide search (ORGANIZATION scope, by vector, top 10): p50, p99, recall@10
  (iii) RetrieveContext with a text query: p50, and its ratio to one Embed call of the same
        query measured in the same run
  (iv)  IngestDocument throughput (chunks/s) against EmbeddingService's own Embed throughput
        on the same chunk texts

Recall is against exact brute force computed in numpy. The organization chunks are written
with SQL (documents plus chunks, vectors included) because the API embeds documents itself and
has no vector import for them; their search goes through gRPC like everything else.

    .venv/bin/python bench/memory.py [--users 1000] [--per-user 100] [--chunks 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import platform
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg
import grpc
import numpy as np
from pgvector import Vector
from pgvector.asyncpg import register_vector

from lightmind.embedded_pg import EmbeddedPostgres
from lightmind.embedding.v1 import embedding_service_pb2 as epb
from lightmind.embedding.v1 import embedding_service_pb2_grpc as epb_grpc
from lightmind.memory.v1 import memory_service_pb2 as pb
from lightmind.memory.v1 import memory_service_pb2_grpc as pb_grpc
from lightmind.testing import ServiceProcess, free_port

DIMS = 384
AGENT = str(uuid.uuid4())
MODEL = "all-minilm-l6-v2-int8"
_VOCABULARY = (
    "policy employee expense report receipt travel vacation benefit contract invoice "
    "customer order shipping refund account password security incident review budget "
    "the a of to and in is for on with as by at from that this be are was it or an which"
)
WORDS = _VOCABULARY.split()


def clustered(rng: np.random.Generator, centres: np.ndarray, n: int, noise: float) -> np.ndarray:
    picks = rng.integers(0, len(centres), size=n)
    v = centres[picks] + noise * rng.normal(size=(n, DIMS)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, DIMS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def load_users(
    stub: pb_grpc.MemoryServiceStub, users: list[str], vectors: np.ndarray, per_user: int
) -> float:
    started = time.perf_counter()
    batch = 1000
    slots = asyncio.Semaphore(2)

    async def send(start: int) -> None:
        requests = []
        for row in range(start, min(start + batch, len(vectors))):
            requests.append(
                pb.CreateMemoryRequest(
                    memory=pb.Memory(
                        scope=pb.SCOPE_USER,
                        agent_id=AGENT,
                        user_id=users[row // per_user],
                        content=f"memory {row} of user {row // per_user}",
                    ),
                    embedding=vectors[row].tolist(),
                    embedding_model=MODEL,
                )
            )
        async with slots:
            await stub.BatchCreateMemories(
                pb.BatchCreateMemoriesRequest(requests=requests), timeout=600
            )

    await asyncio.gather(*(send(s) for s in range(0, len(vectors), batch)))
    return time.perf_counter() - started


async def load_chunks(url: str, vectors: np.ndarray) -> float:
    started = time.perf_counter()
    conn = await asyncpg.connect(url, server_settings={"search_path": "memory, public"})
    await register_vector(conn)
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=json.loads, schema="pg_catalog")
    per_doc = 1000
    for start in range(0, len(vectors), per_doc):
        doc = uuid.uuid4()
        part = vectors[start : start + per_doc]
        async with conn.transaction():
            await conn.execute(
                "INSERT INTO documents (tenant, id, knowledge_base, source, content_hash, "
                "content_length, token_count, chunk_count, chunk_tokens, overlap_tokens, "
                "embedding_model) VALUES ('default', $1, 'default', $2, $3, 0, 0, $4, 256, 50, $5)",
                doc,
                f"doc-{start // per_doc}.md",
                hashlib.sha256(str(doc).encode()).hexdigest(),
                len(part),
                MODEL,
            )
            await conn.execute(
                "INSERT INTO document_chunks (tenant, id, document_id, knowledge_base, source, "
                "chunk_index, content, embedding, embedding_model) "
                "SELECT 'default', gen_random_uuid(), $1, 'default', $2, c.i, c.t, c.e, $3 "
                "FROM unnest($4::integer[], $5::text[], $6::vector[]) AS c(i, t, e)",
                doc,
                f"doc-{start // per_doc}.md",
                MODEL,
                list(range(len(part))),
                [f"chunk {start + i}" for i in range(len(part))],
                [Vector(v) for v in part],
            )
    await conn.execute("VACUUM ANALYZE document_chunks")
    await conn.execute("VACUUM ANALYZE user_memories")
    await conn.close()
    return time.perf_counter() - started


async def timed(coro) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    result = await coro
    return (time.perf_counter() - started) * 1000, result


def make_document(rng: random.Random, sentences: int) -> str:
    return " ".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))).capitalize() + "."
        for _ in range(sentences)
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--per-user", type=int, default=100)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rng = np.random.default_rng(42)
    results: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    }

    tmp = Path(tempfile.mkdtemp(prefix="lightmind-bench-"))
    pg = EmbeddedPostgres(tmp / "pg", free_port(), database="bench", fsync=False)
    await asyncio.to_thread(pg.ensure_running)
    url = await pg.create_database("bench")
    emb_port, mem_port = free_port(), free_port()
    embedding = ServiceProcess(
        "embedding_svc",
        {"LIGHTMIND_EMBEDDING_PORT": str(emb_port), "LIGHTMIND_LOG_LEVEL": "warning"},
        f"127.0.0.1:{emb_port}",
    )
    memory = ServiceProcess(
        "memory_svc",
        {
            "LIGHTMIND_MEMORY_PORT": str(mem_port),
            "DATABASE_URL": url,
            "LIGHTMIND_EMBEDDING_ADDR": f"127.0.0.1:{emb_port}",
            "LIGHTMIND_LOG_LEVEL": "warning",
            "LIGHTMIND_MAX_MESSAGE_BYTES": str(64 << 20),
        },
        f"127.0.0.1:{mem_port}",
    )
    embedding.start()
    memory.start()
    try:
        await embedding.wait_serving(120)
        await memory.wait_serving(120)
        options = [("grpc.max_send_message_length", 64 << 20)]
        async with (
            grpc.aio.insecure_channel(memory.address, options=options) as mch,
            grpc.aio.insecure_channel(embedding.address) as ech,
        ):
            stub = pb_grpc.MemoryServiceStub(mch)
            estub = epb_grpc.EmbeddingServiceStub(ech)

            # -- load ------------------------------------------------------------------
            centres = unit(rng, 200)
            n_users = args.users * args.per_user
            users = [str(uuid.uuid4()) for _ in range(args.users)]
            # Each user's memories come from a few clusters shared with other users.
            user_vecs = np.empty((n_users, DIMS), dtype=np.float32)
            for u in range(args.users):
                own = centres[rng.choice(len(centres), size=3, replace=False)]
                user_vecs[u * args.per_user : (u + 1) * args.per_user] = clustered(
                    rng, own, args.per_user, 0.08
                )
            chunk_vecs = clustered(rng, centres, args.chunks, 0.08)
            secs = await load_users(stub, users, user_vecs, args.per_user)
            results["load_user_memories_per_s"] = round(n_users / secs)
            print(f"loaded {n_users} user memories in {secs:.1f}s ({n_users / secs:.0f}/s)")
            secs = await load_chunks(url, chunk_vecs)
            results["load_chunks_sql_per_s"] = round(args.chunks / secs)
            print(f"loaded {args.chunks} chunks (SQL) in {secs:.1f}s")

            # -- (i) per-user search -----------------------------------------------------
            lat, recalls = [], []
            for _ in range(args.queries):
                u = int(rng.integers(args.users))
                own = user_vecs[u * args.per_user : (u + 1) * args.per_user]
                q = own[int(rng.integers(args.per_user))] + 0.05 * unit(rng, 1)[0]
                q /= np.linalg.norm(q)
                truth = set(np.argsort(-(own @ q))[:10].tolist())
                ms, reply = await timed(
                    stub.SearchMemories(
                        pb.SearchMemoriesRequest(
                            scope=pb.SCOPE_USER, user_id=users[u], vector=q.tolist(), top_k=10
                        )
                    )
                )
                got = {int(r.memory.content.split()[1]) - u * args.per_user for r in reply.results}
                lat.append(ms)
                recalls.append(len(got & truth) / 10)
            results["user_search"] = {
                "p50_ms": round(pct(lat, 0.5), 2),
                "p99_ms": round(pct(lat, 0.99), 2),
                "recall_at_10": round(statistics.mean(recalls), 4),
            }
            print("(i) per-user search", results["user_search"])

            # -- (ii) organization-wide search ------------------------------------------
            lat, recalls = [], []
            for _ in range(args.queries):
                q = clustered(rng, centres, 1, 0.08)[0]
                truth = set(np.argsort(-(chunk_vecs @ q))[:10].tolist())
                ms, reply = await timed(
                    stub.SearchMemories(
                        pb.SearchMemoriesRequest(
                            scope=pb.SCOPE_ORGANIZATION, vector=q.tolist(), top_k=10
                        )
                    )
                )
                got = {int(r.memory.content.split()[1]) for r in reply.results}
                lat.append(ms)
                recalls.append(len(got & truth) / 10)
            results["org_search"] = {
                "p50_ms": round(pct(lat, 0.5), 2),
                "p99_ms": round(pct(lat, 0.99), 2),
                "recall_at_10": round(statistics.mean(recalls), 4),
            }
            print("(ii) organization search", results["org_search"])

            # -- (iii) RetrieveContext vs one Embed ----------------------------------------
            session = str(uuid.uuid4())
            await stub.BatchCreateMemories(
                pb.BatchCreateMemoriesRequest(
                    requests=[
                        pb.CreateMemoryRequest(
                            memory=pb.Memory(
                                scope=pb.SCOPE_SESSION,
                                session_id=session,
                                agent_id=AGENT,
                                user_id=users[0],
                                content=f"turn {i}: we discussed the travel expense policy",
                            )
                        )
                        for i in range(20)
                    ]
                )
            )
            query = "How many days do I have to file my travel expense report?"
            embed_lat, ctx_lat = [], []
            for _ in range(args.queries):
                ms, _ = await timed(
                    estub.Embed(epb.EmbedRequest(texts=[query], input_type=epb.INPUT_TYPE_QUERY))
                )
                embed_lat.append(ms)
                ms, _ = await timed(
                    stub.RetrieveContext(
                        pb.RetrieveContextRequest(
                            query=query, session_id=session, user_id=users[0], agent_id=AGENT
                        )
                    )
                )
                ctx_lat.append(ms)
            results["retrieve_context"] = {
                "p50_ms": round(pct(ctx_lat, 0.5), 2),
                "p99_ms": round(pct(ctx_lat, 0.99), 2),
                "embed_p50_ms": round(pct(embed_lat, 0.5), 2),
                "ratio_to_embed": round(pct(ctx_lat, 0.5) / pct(embed_lat, 0.5), 2),
            }
            print("(iii) RetrieveContext", results["retrieve_context"])

            # -- (iv) ingestion throughput -------------------------------------------------
            text = make_document(random.Random(3), 1500)
            ms, reply = await timed(
                stub.IngestDocument(
                    pb.IngestDocumentRequest(
                        document=pb.Document(source="bench.md", knowledge_base="bench"),
                        content=text,
                    ),
                    timeout=600,
                )
            )
            doc = reply.document
            listed = await stub.ListMemories(
                pb.ListMemoriesRequest(
                    scope=pb.SCOPE_ORGANIZATION, knowledge_bases=["bench"], page_size=1000
                )
            )
            chunk_texts = [m.content for m in listed.memories]
            started = time.perf_counter()
            await asyncio.gather(
                *(
                    estub.Embed(epb.EmbedRequest(texts=chunk_texts[i : i + 32]))
                    for i in range(0, len(chunk_texts), 32)
                )
            )
            embed_secs = time.perf_counter() - started
            results["ingest"] = {
                "chunks": doc.chunk_count,
                "tokens_per_chunk": doc.chunk_tokens,
                "ingest_chunks_per_s": round(doc.chunk_count / (ms / 1000), 1),
                "embed_chunks_per_s": round(len(chunk_texts) / embed_secs, 1),
            }
            results["ingest"]["ratio"] = round(  # type: ignore[index]
                results["ingest"]["ingest_chunks_per_s"]  # type: ignore[index]
                / results["ingest"]["embed_chunks_per_s"],  # type: ignore[index]
                2,
            )
            print("(iv) ingestion", results["ingest"])
    finally:
        memory.stop()
        embedding.stop()
        pg.stop("immediate")
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
