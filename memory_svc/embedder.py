"""MemoryService's client of EmbeddingService, through its gRPC contract only.

Every call carries a deadline (``ClientConfig.call_timeout_seconds``) and the caller's
credentials (``forward_metadata()``), so EmbeddingService sees the same tenant. Model facts
(dimensions, maximum tokens) come from ``ListModels`` and are cached once known; when
EmbeddingService is down the failure surfaces as UNAVAILABLE (``lightmind.errors.classify``)
and the next call tries again. Large inputs are split into batches sent concurrently.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from lightmind.embedding.v1 import embedding_service_pb2 as epb
from lightmind.embedding.v1 import embedding_service_pb2_grpc as epb_grpc
from lightmind.errors import FailedPrecondition, InvalidArgument
from lightmind.tenancy import forward_metadata

# Every memory table stores vector(384); a model of another size needs its own tables.
STORED_DIMENSIONS = 384
# Texts per CountTokens call (EmbeddingService's default per-request limit is 256).
COUNT_BATCH = 256


@dataclass(frozen=True)
class ModelInfo:
    name: str
    dimensions: int
    max_tokens: int


class Embedder:
    def __init__(
        self,
        channel: grpc.aio.Channel,
        *,
        default_model: str,
        timeout: float,
        batch: int,
        concurrency: int,
    ) -> None:
        self._stub = epb_grpc.EmbeddingServiceStub(channel)
        self._channel = channel
        self._default = default_model
        self._timeout = timeout
        self._batch = batch
        self._slots = asyncio.Semaphore(concurrency)
        self._models: dict[str, ModelInfo] = {}
        self._default_name: str | None = None

    async def close(self) -> None:
        await self._channel.close(None)

    async def _load_models(self) -> None:
        reply = await self._stub.ListModels(
            epb.ListModelsRequest(), timeout=self._timeout, metadata=forward_metadata()
        )
        models = {m.name: ModelInfo(m.name, m.dimensions, m.max_tokens) for m in reply.models}
        default = self._default or next((m.name for m in reply.models if m.default), "")
        self._models = models
        self._default_name = default

    async def model(self, name: str = "", *, field: str = "embedding_model") -> ModelInfo:
        """The model a request means (its own or the default), checked to be storable."""
        if not self._models:
            await self._load_models()
        wanted = name or self._default_name or ""
        info = self._models.get(wanted)
        if info is None:
            await self._load_models()  # a model may have been added since
            info = self._models.get(wanted)
        if info is None:
            known = ", ".join(sorted(self._models)) or "none"
            if name:
                raise InvalidArgument.field(
                    field, f"EmbeddingService has no model {name!r}; loaded: {known}"
                )
            raise FailedPrecondition(
                f"the configured embedding model {wanted!r} is not loaded; loaded: {known}",
                reason="MODEL_NOT_LOADED",
            )
        if info.dimensions != STORED_DIMENSIONS:
            raise InvalidArgument.field(
                field,
                f"model {info.name!r} makes {info.dimensions}-dimensional vectors; this "
                f"service stores {STORED_DIMENSIONS}",
            )
        return info

    async def embed(
        self, texts: Sequence[str], *, model: ModelInfo, query: bool
    ) -> list[list[float]]:
        """One vector per text, in order. Batches go out concurrently (bounded)."""
        input_type = epb.INPUT_TYPE_QUERY if query else epb.INPUT_TYPE_DOCUMENT

        async def one(batch: Sequence[str]) -> list[list[float]]:
            async with self._slots:
                reply = await self._stub.Embed(
                    epb.EmbedRequest(texts=batch, input_type=input_type, model=model.name),
                    timeout=self._timeout,
                    metadata=forward_metadata(),
                )
            return [list(e.values) for e in reply.embeddings]

        batches = [texts[i : i + self._batch] for i in range(0, len(texts), self._batch)]
        results = await asyncio.gather(*(one(b) for b in batches))
        return [vec for part in results for vec in part]

    async def count_tokens(self, texts: Sequence[str], *, model: ModelInfo) -> list[int]:
        """Token counts (special tokens included) of document texts, in order."""

        async def one(batch: Sequence[str]) -> list[int]:
            async with self._slots:
                reply = await self._stub.CountTokens(
                    epb.CountTokensRequest(
                        texts=batch, input_type=epb.INPUT_TYPE_DOCUMENT, model=model.name
                    ),
                    timeout=self._timeout,
                    metadata=forward_metadata(),
                )
            return [c.token_count for c in reply.counts]

        batches = [texts[i : i + COUNT_BATCH] for i in range(0, len(texts), COUNT_BATCH)]
        results = await asyncio.gather(*(one(b) for b in batches))
        return [n for part in results for n in part]
