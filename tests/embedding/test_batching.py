"""Dynamic batching: concurrent callers share inference batches and get the same vectors."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from embedding_svc.backend import l2_normalize
from embedding_svc.batcher import Batcher, BatchLimits
from embedding_svc.tokenize import Encoded
from lightmind.embedding.v1 import embedding_service_pb2 as pb
from lightmind.errors import DeadlineExceeded, ResourceExhausted

TEXTS = [f"sentence number {i} about {'memory ' * (i % 7)}retrieval" for i in range(32)]


def matrix(response: pb.EmbedResponse) -> np.ndarray:
    return np.array([list(e.values) for e in response.embeddings], dtype=np.float32)


async def test_concurrent_requests_are_merged_and_match_unbatched(embedding_stub) -> None:
    alone = [await embedding_stub.Embed(pb.EmbedRequest(texts=[t])) for t in TEXTS[:8]]
    assert all(r.timings.largest_batch == 1 for r in alone)

    together = await asyncio.gather(
        *(embedding_stub.Embed(pb.EmbedRequest(texts=[t])) for t in TEXTS)
    )
    # At least one request rode in a batch with others.
    assert max(r.timings.largest_batch for r in together) > 1
    for single, merged in zip(alone, together[:8], strict=True):
        a, b = matrix(single)[0], matrix(merged)[0]
        assert float(a @ b) >= 0.9999


async def test_timings_are_reported(embedding_stub) -> None:
    response = await embedding_stub.Embed(pb.EmbedRequest(texts=TEXTS[:4]))
    t = response.timings
    assert t.inference_ms > 0 and t.tokenize_ms > 0 and t.queue_ms >= 0
    assert t.total_ms >= t.inference_ms
    assert 1 <= t.largest_batch <= 4


def fake_encoded(length: int) -> Encoded:
    ids = np.arange(length, dtype=np.int64)
    return Encoded(ids=ids, type_ids=np.zeros_like(ids), token_count=length, truncated=False)


class RecordingModel:
    """A pure-logic stand-in for the ONNX backend: row i of a batch is [length, batch size]."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.gate = asyncio.Event()

    def __call__(self, batch):
        self.batches.append([e.length for e in batch])
        return np.array([[float(e.length), float(len(batch))] for e in batch], dtype=np.float32)


async def test_batches_are_capped_by_tokens_and_count_and_sorted_by_length() -> None:
    model = RecordingModel()
    limits = BatchLimits(
        max_batch_size=4, max_batch_tokens=100, max_wait_seconds=0.01, max_queue_texts=100
    )
    batcher = Batcher(model, limits)
    batcher.start()
    try:
        lengths = [50, 5, 40, 6, 7, 8, 9, 30]
        futures = [
            batcher.submit([fake_encoded(n)], normalize=False, deadline=None) for n in lengths
        ]
        outcomes = await asyncio.gather(*futures)
    finally:
        await batcher.close()
    for batch in model.batches:
        assert len(batch) <= 4
        assert len(batch) * max(batch) <= 100
        assert batch == sorted(batch)
    # Each caller got its own row back.
    for n, outcome in zip(lengths, outcomes, strict=True):
        assert outcome.vectors[0][0] == n


async def test_full_queue_is_refused_at_once() -> None:
    model = RecordingModel()
    limits = BatchLimits(
        max_batch_size=4, max_batch_tokens=1000, max_wait_seconds=10, max_queue_texts=5
    )
    batcher = Batcher(model, limits)  # not started: nothing drains the queue
    batcher.submit([fake_encoded(3)] * 4, normalize=False, deadline=None)
    with pytest.raises(ResourceExhausted):
        batcher.submit([fake_encoded(3)] * 2, normalize=False, deadline=None)
    await batcher.close()


async def test_cancelled_and_expired_requests_are_skipped() -> None:
    model = RecordingModel()
    limits = BatchLimits(
        max_batch_size=8, max_batch_tokens=1000, max_wait_seconds=0, max_queue_texts=100
    )
    batcher = Batcher(model, limits)
    cancelled = batcher.submit([fake_encoded(11)], normalize=False, deadline=None)
    expired = batcher.submit([fake_encoded(12)], normalize=False, deadline=0.0)
    alive = batcher.submit([fake_encoded(13)], normalize=True, deadline=None)
    cancelled.cancel()
    batcher.start()
    try:
        outcome = await alive
        with pytest.raises(DeadlineExceeded):
            await expired
    finally:
        await batcher.close()
    assert model.batches == [[13]]
    assert batcher.stats.skipped_texts == 2
    assert np.allclose(outcome.vectors, l2_normalize(np.array([[13.0, 1.0]], dtype=np.float32)))
