"""The dynamic batch queue: one task merges concurrent requests into inference batches.

Callers ``submit`` a request's encoded texts and await the returned future. One worker task
owns the queue: when texts arrive it waits up to ``max_wait`` for more, takes a FIFO window
of pending texts, drops those whose request was cancelled or whose deadline passed, sorts the
window by length (less padding) and carves it into batches capped by padded tokens
(``rows × longest``) and by count. Inference runs on one dedicated thread, never on the event
loop; while it runs, new requests keep queueing. Admission is bounded: a request that would
take the queue past ``max_queue_texts`` fails at once with RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from embedding_svc.backend import Matrix, l2_normalize
from embedding_svc.tokenize import Encoded
from lightmind import metrics
from lightmind.errors import DeadlineExceeded, ResourceExhausted, Unavailable

log = logging.getLogger("lightmind.embedding.batcher")


@dataclass(frozen=True)
class BatchLimits:
    max_batch_size: int
    max_batch_tokens: int
    max_wait_seconds: float
    max_queue_texts: int


@dataclass
class BatchOutcome:
    """What a request gets back: vectors in input order plus where its time went."""

    vectors: Matrix
    queue_seconds: float
    inference_seconds: float
    largest_batch: int


@dataclass
class _Job:
    texts: Sequence[Encoded]
    normalize: bool
    deadline: float | None
    future: asyncio.Future[BatchOutcome]
    enqueued: float
    rows: list[Matrix | None] = field(default_factory=list)
    remaining: int = 0
    started: float | None = None
    inference_seconds: float = 0.0
    largest_batch: int = 0
    failed: bool = False

    def dead(self, now: float) -> bool:
        if self.failed or self.future.done():
            return True
        if self.deadline is not None and now > self.deadline:
            self.failed = True
            self.future.set_exception(DeadlineExceeded("deadline passed while queued"))
            return True
        return False


@dataclass
class BatcherStats:
    batches: int = 0
    texts: int = 0
    padded_tokens: int = 0
    real_tokens: int = 0
    largest_batch: int = 0
    skipped_texts: int = 0


class Batcher:
    def __init__(
        self, run: Callable[[Sequence[Encoded]], Matrix], limits: BatchLimits, name: str = ""
    ) -> None:
        self._run = run
        self._name = name
        self._limits = limits
        self._pending: collections.deque[tuple[_Job, int]] = collections.deque()
        self._wakeup = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inference")
        self._worker: asyncio.Task[None] | None = None
        self._closed = False
        self.stats = BatcherStats()

    @property
    def queued_texts(self) -> int:
        return len(self._pending)

    def start(self) -> None:
        self._worker = asyncio.get_running_loop().create_task(self._loop(), name="batcher")

    def submit(
        self, texts: Sequence[Encoded], *, normalize: bool, deadline: float | None
    ) -> asyncio.Future[BatchOutcome]:
        if self._closed:
            raise Unavailable("the embedding service is shutting down")
        if len(self._pending) + len(texts) > self._limits.max_queue_texts:
            raise ResourceExhausted(
                f"the embedding queue is full ({len(self._pending)} texts waiting); retry later",
                reason="QUEUE_FULL",
            )
        loop = asyncio.get_running_loop()
        job = _Job(
            texts=texts,
            normalize=normalize,
            deadline=deadline,
            future=loop.create_future(),
            enqueued=time.perf_counter(),
            rows=[None] * len(texts),
            remaining=len(texts),
        )
        self._pending.extend((job, i) for i in range(len(texts)))
        metrics.EMBED_QUEUE_DEPTH.labels(self._name).set(len(self._pending))
        self._wakeup.set()
        return job.future

    async def _loop(self) -> None:
        limits = self._limits
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            if len(self._pending) < limits.max_batch_size and limits.max_wait_seconds > 0:
                # Give concurrent callers a moment to join this batch.
                await asyncio.sleep(limits.max_wait_seconds)
            while self._pending:
                window = self._take_window()
                for batch in self._carve(window):
                    await self._infer(batch)

    def _take_window(self) -> list[tuple[_Job, int]]:
        # A FIFO window a few batches deep: sorting inside it cuts padding, and taking
        # windows in arrival order keeps long texts from being passed over forever.
        size = self._limits.max_batch_size * 4
        now = time.perf_counter()
        window: list[tuple[_Job, int]] = []
        while self._pending and len(window) < size:
            job, index = self._pending.popleft()
            if job.dead(now):
                self.stats.skipped_texts += 1
                continue
            window.append((job, index))
        window.sort(key=lambda item: item[0].texts[item[1]].length)
        metrics.EMBED_QUEUE_DEPTH.labels(self._name).set(len(self._pending))
        return window

    def _carve(self, window: list[tuple[_Job, int]]) -> list[list[tuple[_Job, int]]]:
        batches: list[list[tuple[_Job, int]]] = []
        current: list[tuple[_Job, int]] = []
        for item in window:
            length = item[0].texts[item[1]].length
            # Sorted ascending, so this item is the batch's longest.
            if current and (
                len(current) >= self._limits.max_batch_size
                or (len(current) + 1) * length > self._limits.max_batch_tokens
            ):
                batches.append(current)
                current = []
            current.append(item)
        if current:
            batches.append(current)
        return batches

    async def _infer(self, batch: list[tuple[_Job, int]]) -> None:
        now = time.perf_counter()
        batch = [item for item in batch if not item[0].dead(now)]
        if not batch:
            return
        encoded = [job.texts[index] for job, index in batch]
        for job, _ in batch:
            if job.started is None:
                job.started = now
        loop = asyncio.get_running_loop()
        try:
            vectors = await loop.run_in_executor(self._executor, self._run, encoded)
        except Exception as exc:
            log.exception("inference failed for a batch of %d", len(batch))
            for job, _ in batch:
                if not job.failed and not job.future.done():
                    job.failed = True
                    job.future.set_exception(exc)
            return
        elapsed = time.perf_counter() - now
        self._record(encoded)
        for job in {id(job): job for job, _ in batch}.values():
            job.inference_seconds += elapsed
            job.largest_batch = max(job.largest_batch, len(batch))
        for row, (job, index) in enumerate(batch):
            if job.failed or job.future.done():
                continue
            job.rows[index] = vectors[row]
            job.remaining -= 1
            if job.remaining == 0:
                self._finish(job)

    def _record(self, encoded: list[Encoded]) -> None:
        stats = self.stats
        stats.batches += 1
        stats.texts += len(encoded)
        stats.largest_batch = max(stats.largest_batch, len(encoded))
        padded = len(encoded) * max(e.length for e in encoded)
        stats.real_tokens += sum(e.length for e in encoded)
        stats.padded_tokens += padded
        metrics.EMBED_BATCH_SIZE.labels(self._name).observe(len(encoded))
        metrics.EMBED_BATCH_TOKENS.labels(self._name).observe(padded)

    def _finish(self, job: _Job) -> None:
        matrix = np.stack([row for row in job.rows if row is not None])
        if job.normalize:
            matrix = l2_normalize(matrix)
        started = job.started if job.started is not None else job.enqueued
        job.future.set_result(
            BatchOutcome(
                vectors=matrix,
                queue_seconds=started - job.enqueued,
                inference_seconds=job.inference_seconds,
                largest_batch=job.largest_batch,
            )
        )

    async def close(self) -> None:
        self._closed = True
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        while self._pending:
            job, _ = self._pending.popleft()
            if not job.future.done():
                job.future.set_exception(Unavailable("the embedding service stopped"))
        self._executor.shutdown(wait=True)
