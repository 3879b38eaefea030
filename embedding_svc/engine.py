"""One loaded model: its tokenizer, ONNX backend and batch queue, behind two async calls.

``Engine.embed`` tokenizes on a worker thread (never on the event loop), refuses or cuts
over-long texts as asked, hands the encoded texts to the model's batcher and returns vectors
with per-text token counts and the request's timings. ``load_engines`` is the async factory
that builds every configured model fully before the server reports SERVING.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from embedding_svc.backend import Matrix, OnnxBackend
from embedding_svc.batcher import Batcher, BatchLimits
from embedding_svc.config import EmbeddingConfig
from embedding_svc.models import REGISTRY, ModelFiles, ModelSpec, locate
from embedding_svc.tokenize import TextTokenizer
from lightmind.errors import FieldViolation, InvalidArgument


@dataclass
class EmbedResult:
    vectors: Matrix
    token_counts: list[int]
    truncated: list[bool]
    tokenize_seconds: float
    queue_seconds: float
    inference_seconds: float
    largest_batch: int


class Engine:
    def __init__(
        self,
        spec: ModelSpec,
        files: ModelFiles,
        tokenizer: TextTokenizer,
        backend: OnnxBackend,
        batcher: Batcher,
        tokenize_pool: ThreadPoolExecutor,
    ) -> None:
        self.spec = spec
        self.files = files
        self.tokenizer = tokenizer
        self.backend = backend
        self.batcher = batcher
        self._tokenize_pool = tokenize_pool

    async def embed(
        self,
        texts: list[str],
        *,
        query: bool,
        normalize: bool,
        truncate: bool,
        deadline: float | None,
        field: str = "texts",
    ) -> EmbedResult:
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        encoded = await loop.run_in_executor(
            self._tokenize_pool, self.tokenizer.encode, texts, query
        )
        tokenized = time.perf_counter()
        if not truncate:
            too_long = [
                FieldViolation(
                    f"{field}[{i}]",
                    f"{e.token_count} tokens exceed {self.spec.name}'s maximum of "
                    f"{self.spec.max_tokens} and truncate is false",
                )
                for i, e in enumerate(encoded)
                if e.truncated
            ]
            if too_long:
                raise InvalidArgument(
                    f"{len(too_long)} text(s) too long: {too_long[0].field}: "
                    f"{too_long[0].description}",
                    violations=too_long,
                    reason="TEXT_TOO_LONG",
                )
        outcome = await self.batcher.submit(encoded, normalize=normalize, deadline=deadline)
        return EmbedResult(
            vectors=outcome.vectors,
            token_counts=[e.token_count for e in encoded],
            truncated=[e.truncated for e in encoded],
            tokenize_seconds=tokenized - started,
            queue_seconds=outcome.queue_seconds,
            inference_seconds=outcome.inference_seconds,
            largest_batch=outcome.largest_batch,
        )

    async def count(self, texts: list[str], *, query: bool) -> list[int]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._tokenize_pool, self.tokenizer.count, texts, query)

    async def close(self) -> None:
        await self.batcher.close()


async def load_engines(config: EmbeddingConfig) -> dict[str, Engine]:
    """Loads every configured model (files, tokenizer, ONNX session) and starts its batcher."""
    tokenize_pool = ThreadPoolExecutor(
        max_workers=config.tokenizer_threads, thread_name_prefix="tokenize"
    )
    limits = BatchLimits(
        max_batch_size=config.max_batch_size,
        max_batch_tokens=config.max_batch_tokens,
        max_wait_seconds=config.max_wait_ms / 1000,
        max_queue_texts=config.max_queue_texts,
    )
    engines: dict[str, Engine] = {}
    for name in config.models:
        spec = REGISTRY[name]
        files = locate(spec, config.model_dir)
        tokenizer = await asyncio.to_thread(TextTokenizer, spec, files.tokenizer)
        backend = await asyncio.to_thread(
            OnnxBackend, spec, files.onnx, intra_op_threads=config.intra_op_threads
        )
        batcher = Batcher(backend.run, limits, name)
        batcher.start()
        engines[name] = Engine(spec, files, tokenizer, backend, batcher, tokenize_pool)
    return engines
