"""EmbeddingService benchmark: the service against raw onnxruntime, in one run.

(a) baseline: raw in-process onnxruntime on the same model and texts, fixed batches of 32 in
    arrival order (the ceiling); (b) the service, one client sending batches of 64;
(c) 32 concurrent clients each sending one text at a time, with p50/p99 latency;
(d) tokens per second for each. Texts are a realistic mix of 10 to 200 tokens. Figures are
reported as ratios to (a), measured in the same run, because machines here are noisy.

    .venv/bin/python bench/embedding.py [--texts 512] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import time
from pathlib import Path

import grpc
import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from embedding_svc.models import REGISTRY, locate
from lightmind.embedding.v1 import embedding_service_pb2 as pb
from lightmind.embedding.v1 import embedding_service_pb2_grpc as pb_grpc
from lightmind.process import ServiceProcess
from lightmind.testing import free_port

WORDS = [
    *[
        "memory",
        "agent",
        "vector",
        "search",
        "skill",
        "tool",
        "session",
        "user",
        "knowledge",
        "document",
        "chunk",
    ],
    *[
        "retrieval",
        "embedding",
        "model",
        "query",
        "answer",
        "context",
        "prompt",
        "database",
        "index",
        "postgres",
    ],
    *[
        "the",
        "a",
        "of",
        "to",
        "and",
        "in",
        "is",
        "for",
        "on",
        "with",
        "as",
        "by",
        "at",
        "from",
        "that",
        "this",
        "be",
        "are",
        "was",
        "it",
        "or",
        "an",
    ],
    *[
        "customer",
        "order",
        "invoice",
        "shipping",
        "payment",
        "refund",
        "account",
        "password",
        "reset",
        "email",
    ],
    *[
        "meeting",
        "calendar",
        "schedule",
        "project",
        "deadline",
        "report",
        "summary",
        "budget",
        "forecast",
    ],
]


def make_texts(n: int, seed: int = 7) -> list[str]:
    """Texts whose token counts spread from about 10 to about 200."""
    rng = random.Random(seed)
    texts = []
    for _ in range(n):
        words = rng.randint(8, 190)
        texts.append(" ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + ".")
    return texts


def raw_baseline(texts: list[str], batch: int, sorted_cap_tokens: int = 0) -> tuple[float, int]:
    """Seconds and real tokens for raw onnxruntime: fixed batches in arrival order, or, with
    ``sorted_cap_tokens``, texts sorted by length and cut into batches of at most that many
    padded tokens (the service's own policy, so the two differ only by the service's cost)."""
    spec = REGISTRY["all-minilm-l6-v2-int8"]
    files = locate(spec, Path("models"))
    tokenizer = Tokenizer.from_file(str(files.tokenizer))
    tokenizer.enable_truncation(max_length=spec.max_tokens)
    tokenizer.enable_padding()
    options = ort.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(str(files.onnx), options, providers=["CPUExecutionProvider"])
    tokens = 0
    started = time.perf_counter()
    for group in _groups(tokenizer, texts, batch, sorted_cap_tokens):
        encodings = tokenizer.encode_batch(group)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.zeros_like(ids)
        (hidden,) = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        )
        pooled = (hidden * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
        tokens += int(mask.sum())
    return time.perf_counter() - started, tokens


def _groups(tokenizer: Tokenizer, texts: list[str], batch: int, cap: int) -> list[list[str]]:
    if not cap:
        return [texts[i : i + batch] for i in range(0, len(texts), batch)]
    # Measured inside the timed region on purpose: the service tokenizes too.
    lengths = [sum(e.attention_mask) for e in tokenizer.encode_batch(texts)]
    order = sorted(range(len(texts)), key=lambda i: lengths[i])
    groups: list[list[str]] = [[]]
    longest = 0
    for i in order:
        longest_if_added = max(longest, lengths[i])
        if groups[-1] and (len(groups[-1]) >= 64 or (len(groups[-1]) + 1) * longest_if_added > cap):
            groups.append([])
            longest_if_added = lengths[i]
        groups[-1].append(texts[i])
        longest = longest_if_added
    return groups


async def one_client_batches(
    stub: pb_grpc.EmbeddingServiceStub, texts: list[str], batch: int
) -> tuple[float, int]:
    tokens = 0
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        reply = await stub.Embed(pb.EmbedRequest(texts=texts[i : i + batch]))
        tokens += sum(min(e.token_count, 256) for e in reply.embeddings)
    return time.perf_counter() - started, tokens


async def concurrent_singles(
    stub: pb_grpc.EmbeddingServiceStub, texts: list[str], clients: int
) -> tuple[float, int, list[float], list[int]]:
    queue = list(enumerate(texts))
    latencies: list[float] = []
    batches: list[int] = []
    tokens = 0

    async def client() -> None:
        nonlocal tokens
        while queue:
            _, text = queue.pop()
            t0 = time.perf_counter()
            reply = await stub.Embed(pb.EmbedRequest(texts=[text]))
            latencies.append(time.perf_counter() - t0)
            batches.append(reply.timings.largest_batch)
            tokens += min(reply.embeddings[0].token_count, 256)

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return time.perf_counter() - started, tokens, latencies, batches


async def run_service_phases(texts: list[str]) -> dict[str, float]:
    port = free_port()
    service = ServiceProcess(
        "embedding_svc",
        {"LIGHTMIND_EMBEDDING_PORT": str(port), "LIGHTMIND_LOG_LEVEL": "warning"},
        f"127.0.0.1:{port}",
    )
    service.start()
    try:
        await service.wait_serving()
        async with grpc.aio.insecure_channel(service.address) as channel:
            stub = pb_grpc.EmbeddingServiceStub(channel)
            await one_client_batches(stub, texts[:128], 64)  # warm-up
            b_seconds, b_tokens = await one_client_batches(stub, texts, 64)
            c_seconds, c_tokens, latencies, batches = await concurrent_singles(stub, texts, 32)
    finally:
        service.stop()
    latencies.sort()
    return {
        "b_seconds": b_seconds,
        "b_tokens": b_tokens,
        "c_seconds": c_seconds,
        "c_tokens": c_tokens,
        "c_p50_ms": statistics.median(latencies) * 1000,
        "c_p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
        "c_mean_batch": float(statistics.mean(batches)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--texts", type=int, default=512)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    texts = make_texts(args.texts)

    raw_baseline(texts[:64], 32)  # warm-up
    a_seconds, a_tokens = raw_baseline(texts, 32)
    a2_seconds, _ = raw_baseline(texts, 32, sorted_cap_tokens=2048)
    service = asyncio.run(run_service_phases(texts))
    n = len(texts)
    a_rate = n / a_seconds
    a2_rate = n / a2_seconds
    b_rate = n / service["b_seconds"]
    c_rate = n / service["c_seconds"]
    machine = (
        f"{platform.machine()}, {os.cpu_count()} cores, "
        f"{platform.python_implementation()} {platform.python_version()}"
    )
    figures = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine,
        "texts": n,
        "a_raw_texts_per_s": round(a_rate, 1),
        "a_raw_tokens_per_s": round(a_tokens / a_seconds),
        "a2_raw_sorted_texts_per_s": round(a2_rate, 1),
        "a2_ratio": round(a2_rate / a_rate, 3),
        "b_batch64_texts_per_s": round(b_rate, 1),
        "b_tokens_per_s": round(service["b_tokens"] / service["b_seconds"]),
        "b_ratio": round(b_rate / a_rate, 3),
        "c_32clients_texts_per_s": round(c_rate, 1),
        "c_tokens_per_s": round(service["c_tokens"] / service["c_seconds"]),
        "c_ratio": round(c_rate / a_rate, 3),
        "c_p50_ms": round(service["c_p50_ms"], 1),
        "c_p99_ms": round(service["c_p99_ms"], 1),
        "c_mean_batch": round(service["c_mean_batch"], 1),
    }
    print(json.dumps(figures, indent=2))
    rows = [
        ("(a) raw onnxruntime, batches of 32", a_rate, a_tokens / a_seconds, "1.00"),
        (
            "(a2) raw, sorted, <=2048 padded tok",
            a2_rate,
            a_tokens / a2_seconds,
            f"{a2_rate / a_rate:.2f} x a; the service's policy without the service",
        ),
        (
            "(b) service, 1 client x 64/batch",
            b_rate,
            figures["b_tokens_per_s"],
            f"{b_rate / a_rate:.2f} x a, {b_rate / a2_rate:.2f} x a2; target >= 0.90 x a",
        ),
        (
            "(c) service, 32 clients x 1 text",
            c_rate,
            figures["c_tokens_per_s"],
            f"{c_rate / a_rate:.2f} x a, {c_rate / a2_rate:.2f} x a2; target >= 0.70 x a",
        ),
    ]
    for label, rate, tokens, ratio in rows:
        print(f"{label:<36} {rate:8.1f} texts/s {float(tokens):9.0f} tokens/s  ({ratio})")
    print(
        f"    (c) latency p50 {figures['c_p50_ms']} ms, p99 {figures['c_p99_ms']} ms, "
        f"mean batch {figures['c_mean_batch']} texts"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
