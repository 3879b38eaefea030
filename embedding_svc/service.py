"""The gRPC front of EmbeddingService: request validation, proto conversion, streaming.

Handlers validate every field before any work (empty list, empty text, too many texts or
bytes, unknown model, bad enum), translate the request's deadline for the batcher, and build
responses from the engine's results. Errors are raised as ``lightmind.errors`` exceptions;
the shared server interceptor turns them into statuses.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

from embedding_svc.config import EmbeddingConfig
from embedding_svc.engine import Engine, load_engines
from embedding_svc.models import Pooling
from lightmind.embedding.v1 import embedding_service_pb2 as pb
from lightmind.embedding.v1 import embedding_service_pb2_grpc as pb_grpc
from lightmind.errors import FieldViolation, InvalidArgument, LightmindError, NotFound, classify
from lightmind.server import Context, ServiceDefinition

log = logging.getLogger("lightmind.embedding")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["EmbeddingService"].full_name
ERROR_DOMAIN = "embedding.lightmind.dev"
# Requests of one EmbedStream processed at once; further messages wait (backpressure).
STREAM_CONCURRENCY = 8

_POOLING = {Pooling.CLS: pb.POOLING_CLS, Pooling.MEAN: pb.POOLING_MEAN}


class EmbeddingServicer(pb_grpc.EmbeddingServiceServicer):
    def __init__(self, config: EmbeddingConfig, engines: dict[str, Engine]) -> None:
        self._config = config
        self._engines = engines

    # -- validation -------------------------------------------------------------------

    def _engine(self, model: str) -> Engine:
        name = model or self._config.default_model
        engine = self._engines.get(name)
        if engine is None:
            raise NotFound(
                f"model: no model named {name!r} is loaded; loaded: "
                f"{', '.join(sorted(self._engines))}",
                reason="MODEL_NOT_FOUND",
                metadata={"field": "model", "model": name},
            )
        return engine

    def _check_texts(self, texts: list[str]) -> None:
        if not texts:
            raise InvalidArgument.field("texts", "must contain at least one text")
        if len(texts) > self._config.max_texts:
            raise InvalidArgument.field(
                "texts",
                f"{len(texts)} texts exceed the limit of {self._config.max_texts} per request",
                reason="TOO_MANY_TEXTS",
            )
        size = sum(len(t.encode()) for t in texts)
        if size > self._config.max_request_bytes:
            raise InvalidArgument.field(
                "texts",
                f"{size} bytes of text exceed the limit of {self._config.max_request_bytes} "
                "per request",
                reason="REQUEST_TOO_LARGE",
            )
        empty = [
            FieldViolation(f"texts[{i}]", "must not be empty")
            for i, t in enumerate(texts)
            if not t.strip()
        ]
        if empty:
            raise InvalidArgument(
                f"{empty[0].field}: must not be empty", violations=empty, reason="EMPTY_TEXT"
            )

    @staticmethod
    def _is_query(input_type: int) -> bool:
        if input_type not in pb.InputType.values():
            raise InvalidArgument.field("input_type", f"unknown value {input_type}")
        return input_type == pb.INPUT_TYPE_QUERY

    @staticmethod
    def _deadline(context: Context) -> float | None:
        remaining = context.time_remaining()
        return None if remaining is None else time.perf_counter() + remaining

    # -- RPCs -------------------------------------------------------------------------

    async def _embed(
        self,
        request: pb.EmbedRequest | pb.EmbedStreamRequest,
        deadline: float | None,
    ) -> pb.EmbedResponse:
        started = time.perf_counter()
        texts = list(request.texts)
        self._check_texts(texts)
        query = self._is_query(request.input_type)
        engine = self._engine(request.model)
        normalize = request.normalize if request.HasField("normalize") else engine.spec.normalize
        truncate = request.truncate if request.HasField("truncate") else True
        result = await engine.embed(
            texts, query=query, normalize=normalize, truncate=truncate, deadline=deadline
        )
        response = pb.EmbedResponse(model=engine.spec.name, dimensions=engine.spec.dimensions)
        for row, count, cut in zip(
            result.vectors, result.token_counts, result.truncated, strict=True
        ):
            response.embeddings.append(
                pb.Embedding(values=row.tolist(), token_count=count, truncated=cut)
            )
        response.timings.CopyFrom(
            pb.EmbedTimings(
                tokenize_ms=result.tokenize_seconds * 1000,
                queue_ms=result.queue_seconds * 1000,
                inference_ms=result.inference_seconds * 1000,
                total_ms=(time.perf_counter() - started) * 1000,
                largest_batch=result.largest_batch,
            )
        )
        return response

    async def Embed(self, request: pb.EmbedRequest, context: Context) -> pb.EmbedResponse:
        return await self._embed(request, self._deadline(context))

    async def EmbedStream(
        self,
        request_iterator: AsyncIterator[pb.EmbedStreamRequest],
        context: Context,
    ) -> AsyncIterator[pb.EmbedStreamResponse]:
        deadline = self._deadline(context)
        results: asyncio.Queue[pb.EmbedStreamResponse | None] = asyncio.Queue()
        slots = asyncio.Semaphore(STREAM_CONCURRENCY)
        tasks: set[asyncio.Task[None]] = set()

        async def one(message: pb.EmbedStreamRequest) -> None:
            try:
                response = await self._embed(message, deadline)
                await results.put(pb.EmbedStreamResponse(id=message.id, response=response))
            except Exception as exc:
                await results.put(pb.EmbedStreamResponse(id=message.id, error=_stream_error(exc)))
            finally:
                slots.release()

        async def reader() -> None:
            try:
                async for message in request_iterator:
                    await slots.acquire()
                    task = asyncio.create_task(one(message))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                if tasks:
                    await asyncio.gather(*tasks)
            finally:
                await results.put(None)

        reading = asyncio.create_task(reader())
        try:
            while (item := await results.get()) is not None:
                yield item
            await reading  # surfaces a failure of the request stream itself
        finally:
            reading.cancel()
            for task in list(tasks):
                task.cancel()

    async def ListModels(
        self, request: pb.ListModelsRequest, context: Context
    ) -> pb.ListModelsResponse:
        return pb.ListModelsResponse(
            models=[
                pb.Model(
                    name=engine.spec.name,
                    dimensions=engine.spec.dimensions,
                    max_tokens=engine.spec.max_tokens,
                    pooling=_POOLING[engine.spec.pooling],
                    query_prefix=engine.spec.query_prefix,
                    normalize=engine.spec.normalize,
                    default=name == self._config.default_model,
                    source=engine.files.source,
                )
                for name, engine in self._engines.items()
            ]
        )

    async def CountTokens(
        self, request: pb.CountTokensRequest, context: Context
    ) -> pb.CountTokensResponse:
        texts = list(request.texts)
        self._check_texts(texts)
        query = self._is_query(request.input_type)
        engine = self._engine(request.model)
        counts = await engine.count(texts, query=query)
        return pb.CountTokensResponse(
            counts=[
                pb.TokenCount(token_count=c, exceeds_max=c > engine.spec.max_tokens) for c in counts
            ],
            model=engine.spec.name,
            max_tokens=engine.spec.max_tokens,
        )


def _stream_error(exc: BaseException) -> pb.StreamError:
    err = classify(exc)
    if err is None:
        log.error("unexpected error in EmbedStream", exc_info=exc)
        err = LightmindError("internal error; see the server log")
    field = ""
    if isinstance(err, InvalidArgument) and err.violations:
        field = err.violations[0].field
    elif "field" in err.metadata:
        field = err.metadata["field"]
    return pb.StreamError(
        code=err.code.value[0], message=err.message, reason=err.reason, field=field
    )


async def build(config: EmbeddingConfig) -> ServiceDefinition:
    """Loads every model, then describes the service for the shared bootstrap."""
    engines = await load_engines(config)
    servicer = EmbeddingServicer(config, engines)

    async def warmup() -> None:
        for engine in engines.values():
            await engine.embed(
                ["warm-up"], query=True, normalize=True, truncate=True, deadline=None
            )

    async def close() -> None:
        for engine in engines.values():
            await engine.close()

    return ServiceDefinition(
        service_names=[SERVICE_NAME],
        error_domain=ERROR_DOMAIN,
        register=lambda server: pb_grpc.add_EmbeddingServiceServicer_to_server(servicer, server),
        warmup=warmup,
        closers=[close],
    )
