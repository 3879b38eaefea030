"""The gRPC front of MemoryService: validation, embedding, storage, retrieval.

Handlers validate every field first (INVALID_ARGUMENT naming it), then embed through
EmbeddingService, then write; nothing is stored when embedding fails. Mutations that carry a
``request_id`` are answered from the request log on repeats. Errors are raised as
``lightmind.errors`` exceptions; the shared interceptor maps them (database and
EmbeddingService outages become UNAVAILABLE). Document ingestion lives in
``memory_svc.ingest``; this module wires everything together in ``build``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import asyncpg
import grpc
from google.protobuf import empty_pb2
from google.protobuf.message import Message

from lightmind import metrics
from lightmind.channels import open_channel
from lightmind.db import open_database
from lightmind.errors import FailedPrecondition, InvalidArgument
from lightmind.memory.v1 import memory_service_pb2 as pb
from lightmind.memory.v1 import memory_service_pb2_grpc as pb_grpc
from lightmind.pagination import PageTokens
from lightmind.requestlog import RequestLog
from lightmind.server import Context, ServiceDefinition
from lightmind.tenancy import current_tenant
from memory_svc import convert, repository
from memory_svc.config import MemoryConfig
from memory_svc.embedder import Embedder, ModelInfo
from memory_svc.filters import Params, compile_filter
from memory_svc.ingest import Ingestor
from memory_svc.pagination import Cursor, decode_cursor, encode_cursor, page_size
from memory_svc.scopes import AGENT, ORGANIZATION, SESSION, SPECS, USER, ScopeSpec
from memory_svc.search import Hit, Query, Tuning, search
from memory_svc.sweeper import Sweeper

log = logging.getLogger("lightmind.memory")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["MemoryService"].full_name
ERROR_DOMAIN = "memory.lightmind.dev"
DEFAULT_TOP_K = 10
DEFAULT_LIMITS = {"session": 10, "user": 5, "agent": 3, "organization": 5}
MASK_PATHS = ("content", "type", "importance", "metadata", "expire_time")

M = TypeVar("M", bound=Message)


class MemoryServicer(pb_grpc.MemoryServiceServicer):
    def __init__(self, config: MemoryConfig, pool: asyncpg.Pool, embedder: Embedder) -> None:
        self._config = config
        self._pool = pool
        self._embedder = embedder
        self._tokens = PageTokens(config.page_token_secret)
        self._tuning = Tuning(config.hnsw_ef_search, config.exact_search_threshold)
        self._ingestor = Ingestor(config, pool, embedder)
        self._requests = RequestLog(pool)

    # -- helpers ----------------------------------------------------------------------

    def _expiry(self, request: pb.CreateMemoryRequest, field: str) -> datetime:
        now = datetime.now(UTC)
        if request.memory.HasField("expire_time"):
            if request.HasField("ttl"):
                raise InvalidArgument.field(
                    f"{field}ttl", "set ttl or memory.expire_time, not both"
                )
            expiry = request.memory.expire_time.ToDatetime(tzinfo=UTC)
            if expiry <= now:
                raise InvalidArgument.field(f"{field}memory.expire_time", "must be in the future")
            return expiry
        seconds = self._config.session_ttl_seconds
        if request.HasField("ttl"):
            seconds = request.ttl.ToTimedelta().total_seconds()
            if seconds <= 0:
                raise InvalidArgument.field(f"{field}ttl", "must be positive")
        if seconds > self._config.max_session_ttl_seconds:
            raise InvalidArgument.field(
                f"{field}ttl",
                f"at most {self._config.max_session_ttl_seconds:.0f} seconds",
            )
        return now + timedelta(seconds=seconds)

    def _validate_create(
        self, request: pb.CreateMemoryRequest, prefix: str = ""
    ) -> tuple[ScopeSpec, repository.NewMemory, list[float] | None]:
        mem = request.memory
        if not request.HasField("memory"):
            raise InvalidArgument.field(f"{prefix}memory", "is required")
        spec = convert.scope_spec(mem.scope, f"{prefix}memory.scope", writable=True)
        owners: dict[str, str | None] = {}
        for owner in ("session_id", "agent_id", "user_id"):
            value = getattr(mem, owner)
            name = f"{prefix}memory.{owner}"
            if owner not in spec.owners:
                if value:
                    raise InvalidArgument.field(name, f"{spec.name} memories have no {owner}")
                continue
            owners[owner] = convert.uuid_field(value, name, required=owner in spec.required)
        text = convert.content(
            mem.content, f"{prefix}memory.content", self._config.max_content_bytes
        )
        mtype = convert.memory_type(spec, mem.type, f"{prefix}memory.type")
        importance = (
            convert.importance(mem.importance, f"{prefix}memory.importance")
            if mem.HasField("importance")
            else 1.0
        )
        expiry = None
        if spec is SESSION:
            expiry = self._expiry(request, prefix)
        elif request.HasField("ttl") or mem.HasField("expire_time"):
            raise InvalidArgument.field(
                f"{prefix}ttl", "only session memories expire; clear ttl and expire_time"
            )
        vector = (
            convert.vector(request.embedding, f"{prefix}embedding")
            if len(request.embedding)
            else None
        )
        row = repository.NewMemory(
            content=text,
            embedding=[],
            embedding_model="",
            owners=owners,
            memory_type=mtype,
            importance=importance,
            metadata=convert.metadata(mem.metadata),
            expire_time=expiry,
        )
        return spec, row, vector

    async def _create_many(
        self, requests: list[pb.CreateMemoryRequest], prefix: Callable[[int], str]
    ) -> list[pb.Memory]:
        validated = [self._validate_create(r, prefix(i)) for i, r in enumerate(requests)]
        models: list[ModelInfo] = []
        for i, r in enumerate(requests):
            models.append(
                await self._embedder.model(r.embedding_model, field=f"{prefix(i)}embedding_model")
            )
        # Embed what came without a vector, one batch per model; nothing is stored on failure.
        pending: dict[str, list[int]] = {}
        for i, (_, row, vec) in enumerate(validated):
            row.embedding_model = models[i].name
            if vec is not None:
                row.embedding = vec
            else:
                pending.setdefault(models[i].name, []).append(i)
        for indexes in pending.values():
            vectors = await self._embedder.embed(
                [validated[i][1].content for i in indexes], model=models[indexes[0]], query=False
            )
            for i, vec in zip(indexes, vectors, strict=True):
                validated[i][1].embedding = vec
        by_scope: dict[int, list[int]] = {}
        for i, (spec, _, _) in enumerate(validated):
            by_scope.setdefault(spec.scope, []).append(i)
        results: list[pb.Memory | None] = [None] * len(requests)
        async with self._pool.acquire() as conn, conn.transaction():
            for scope, indexes in by_scope.items():
                rows = await repository.insert_memories(
                    conn, SPECS[scope], [validated[i][1] for i in indexes]
                )
                for i, row in zip(indexes, rows, strict=True):
                    results[i] = convert.memory_pb(row)
        return [r for r in results if r is not None]

    # -- memories ---------------------------------------------------------------------

    async def CreateMemory(self, request: pb.CreateMemoryRequest, context: Context) -> pb.Memory:
        async def work() -> pb.Memory:
            (memory,) = await self._create_many([request], lambda i: "")
            return memory

        return await self._requests.once("CreateMemory", request, pb.Memory, work)

    async def BatchCreateMemories(
        self, request: pb.BatchCreateMemoriesRequest, context: Context
    ) -> pb.BatchCreateMemoriesResponse:
        if not request.requests:
            raise InvalidArgument.field("requests", "must contain at least one request")
        if len(request.requests) > self._config.max_batch:
            raise InvalidArgument.field(
                "requests", f"at most {self._config.max_batch} memories per batch"
            )

        async def work() -> pb.BatchCreateMemoriesResponse:
            memories = await self._create_many(list(request.requests), lambda i: f"requests[{i}].")
            return pb.BatchCreateMemoriesResponse(memories=memories)

        return await self._requests.once(
            "BatchCreateMemories", request, pb.BatchCreateMemoriesResponse, work
        )

    async def GetMemory(self, request: pb.GetMemoryRequest, context: Context) -> pb.Memory:
        memory_id = convert.required_uuid(request.id, "id")
        async with self._pool.acquire() as conn:
            return convert.memory_pb(await repository.get_memory(conn, memory_id))

    def _changes(self, spec: ScopeSpec, request: pb.UpdateMemoryRequest) -> dict[str, Any]:
        mem = request.memory
        paths = list(request.update_mask.paths) if request.HasField("update_mask") else []
        replace_all = paths == ["*"]
        if not paths:
            paths = [
                p
                for p in MASK_PATHS
                if (p == "content" and mem.content)
                or (p == "type" and mem.type)
                or (p in ("importance", "metadata", "expire_time") and mem.HasField(p))  # type: ignore[arg-type]
            ]
        elif replace_all:
            paths = [p for p in MASK_PATHS if p in spec.mutable]
        changes: dict[str, Any] = {}
        for i, path in enumerate(paths):
            if path not in MASK_PATHS:
                raise InvalidArgument.field(
                    f"update_mask.paths[{i}]",
                    f"{path!r} cannot be updated; updatable: {', '.join(MASK_PATHS)}",
                )
            if path not in spec.mutable:
                raise InvalidArgument.field(
                    f"update_mask.paths[{i}]", f"{spec.name} memories have no {path}"
                )
            column = spec.mutable[path]
            if path == "content":
                changes[column] = convert.content(
                    mem.content, "memory.content", self._config.max_content_bytes
                )
            elif path == "type":
                changes[column] = convert.memory_type(spec, mem.type, "memory.type")
            elif path == "importance":
                changes[column] = (
                    convert.importance(mem.importance, "memory.importance")
                    if mem.HasField("importance")
                    else 1.0
                )
            elif path == "metadata":
                changes[column] = convert.metadata(mem.metadata)
            elif path == "expire_time":
                if not mem.HasField("expire_time"):
                    if replace_all:
                        continue
                    raise InvalidArgument.field("memory.expire_time", "is required by the mask")
                expiry = mem.expire_time.ToDatetime(tzinfo=UTC)
                if expiry <= datetime.now(UTC):
                    raise InvalidArgument.field("memory.expire_time", "must be in the future")
                changes[column] = expiry
        return changes

    async def UpdateMemory(self, request: pb.UpdateMemoryRequest, context: Context) -> pb.Memory:
        if not request.HasField("memory"):
            raise InvalidArgument.field("memory", "is required")
        memory_id = convert.required_uuid(request.memory.id, "memory.id")

        async def work() -> pb.Memory:
            async with self._pool.acquire() as conn:
                row = await repository.get_memory(conn, memory_id)
            spec = repository.writable_spec(row)
            changes = self._changes(spec, request)
            repository.check_etag(row, request.memory.etag, "memory.etag")
            if not changes:
                return convert.memory_pb(row)
            if "content" in changes and changes["content"] != row["content"]:
                model = await self._embedder.model(row["embedding_model"])
                (changes["embedding"],) = await self._embedder.embed(
                    [changes["content"]], model=model, query=False
                )
            async with self._pool.acquire() as conn:
                updated = await repository.update_memory(
                    conn, spec, memory_id, row["version"], changes
                )
            return convert.memory_pb(updated)

        return await self._requests.once("UpdateMemory", request, pb.Memory, work)

    async def DeleteMemory(
        self, request: pb.DeleteMemoryRequest, context: Context
    ) -> empty_pb2.Empty:
        memory_id = convert.required_uuid(request.id, "id")

        async def work() -> empty_pb2.Empty:
            async with self._pool.acquire() as conn:
                row = await repository.get_memory(conn, memory_id)
                spec = repository.writable_spec(row)
                repository.check_etag(row, request.etag, "etag")
                await repository.delete_memory(conn, spec, memory_id)
            return empty_pb2.Empty()

        return await self._requests.once("DeleteMemory", request, empty_pb2.Empty, work)

    def _owner_filters(
        self, spec: ScopeSpec, request: Any, required: tuple[str, ...] = ()
    ) -> dict[str, str]:
        owners: dict[str, str] = {}
        for owner in ("session_id", "agent_id", "user_id"):
            value = getattr(request, owner)
            if owner not in spec.owners:
                if value:
                    raise InvalidArgument.field(owner, f"{spec.name} memories have no {owner}")
                continue
            parsed = convert.uuid_field(value, owner, required=owner in required)
            if parsed is not None:
                owners[owner] = parsed
        return owners

    async def ListMemories(
        self, request: pb.ListMemoriesRequest, context: Context
    ) -> pb.ListMemoriesResponse:
        spec = convert.scope_spec(request.scope, "scope")
        owners = self._owner_filters(spec, request)
        kbs = [
            convert.knowledge_base(kb, f"knowledge_bases[{i}]")
            for i, kb in enumerate(request.knowledge_bases)
        ]
        if kbs and spec is not ORGANIZATION:
            raise InvalidArgument.field("knowledge_bases", "only for ORGANIZATION scope")
        limit = page_size(request.page_size)
        params = Params([current_tenant()])
        filter_sql = (
            compile_filter(request.filter, params, alias="m")
            if request.HasField("filter")
            else None
        )
        token_scope = "|".join(
            [
                current_tenant(),
                "ListMemories",
                str(spec.scope),
                repr(sorted(owners.items())),
                repr(kbs),
                request.filter.SerializeToString(deterministic=True).hex(),
            ]
        )
        cursor = (
            decode_cursor(self._tokens, request.page_token, token_scope)
            if request.page_token
            else None
        )
        async with self._pool.acquire() as conn:
            rows = await repository.list_memories(
                conn, spec, owners, filter_sql, params, cursor, limit + 1, kbs
            )
        response = pb.ListMemoriesResponse(memories=[convert.memory_pb(r) for r in rows[:limit]])
        if len(rows) > limit:
            last = rows[limit - 1]
            response.next_page_token = encode_cursor(
                self._tokens, Cursor(last["create_time"], str(last["id"])), token_scope
            )
        return response

    # -- search -----------------------------------------------------------------------

    def _top_k(self, value: int, field: str, default: int) -> int:
        if value < 0:
            raise InvalidArgument.field(field, "must not be negative")
        if value > self._config.max_top_k:
            raise InvalidArgument.field(field, f"at most {self._config.max_top_k}")
        return value or default

    @staticmethod
    def _min_score(value: float) -> float | None:
        if not -1.0 <= value <= 1.0:
            raise InvalidArgument.field("min_score", "must be between -1 and 1")
        return value if value else None

    async def SearchMemories(
        self, request: pb.SearchMemoriesRequest, context: Context
    ) -> pb.SearchMemoriesResponse:
        spec = convert.scope_spec(request.scope, "scope")
        required = {
            pb.SCOPE_SESSION: ("session_id",),
            pb.SCOPE_USER: ("user_id",),
            pb.SCOPE_AGENT: ("agent_id",),
        }
        owners = self._owner_filters(spec, request, required.get(spec.scope, ()))
        kbs = [
            convert.knowledge_base(kb, f"knowledge_bases[{i}]")
            for i, kb in enumerate(request.knowledge_bases)
        ]
        if kbs and spec is not ORGANIZATION:
            raise InvalidArgument.field("knowledge_bases", "only for ORGANIZATION scope")
        has_vector = len(request.vector) > 0
        if bool(request.query.strip()) == has_vector:
            raise InvalidArgument.field("query", "give exactly one of query and vector")
        if request.hybrid and not request.query.strip():
            raise InvalidArgument.field("hybrid", "hybrid search needs a query text")
        if len(request.query.encode()) > self._config.max_content_bytes:
            raise InvalidArgument.field("query", "too long")
        k = self._top_k(request.top_k, "top_k", DEFAULT_TOP_K)
        min_score = self._min_score(request.min_score)
        if request.HasField("filter"):
            compile_filter(request.filter, Params(), alias="m")  # validate before embedding
        model = await self._embedder.model(request.embedding_model)
        if has_vector:
            vec = convert.vector(request.vector, "vector")
        else:
            (vec,) = await self._embedder.embed([request.query], model=model, query=True)
        query = Query(
            spec=spec,
            vector=vec,
            model=model.name,
            owners=owners,
            k=k,
            filter=request.filter if request.HasField("filter") else None,
            knowledge_bases=kbs,
            text=request.query if request.hybrid else "",
        )
        async with self._pool.acquire() as conn:
            hits = await search(conn, query, self._tuning, min_score)
        return pb.SearchMemoriesResponse(
            results=[
                pb.ScoredMemory(
                    memory=convert.memory_pb(h.row), score=h.score, similarity=h.similarity
                )
                for h in hits
            ],
            embedding_model=model.name,
        )

    async def RetrieveContext(
        self, request: pb.RetrieveContextRequest, context: Context
    ) -> pb.RetrieveContextResponse:
        if not request.query.strip():
            raise InvalidArgument.field("query", "must not be empty")
        if len(request.query.encode()) > self._config.max_content_bytes:
            raise InvalidArgument.field("query", "too long")
        session = convert.uuid_field(request.session_id, "session_id")
        agent = convert.uuid_field(request.agent_id, "agent_id")
        user = convert.uuid_field(request.user_id, "user_id")
        limits = {}
        for name, default in DEFAULT_LIMITS.items():
            value = getattr(request.limits, name)
            limits[name] = (
                self._top_k(value, f"limits.{name}", 0)
                if request.limits.HasField(name)  # type: ignore[arg-type]
                else default
            )
        kbs = [
            convert.knowledge_base(kb, f"knowledge_bases[{i}]")
            for i, kb in enumerate(request.knowledge_bases)
        ]
        min_score = self._min_score(request.min_score)
        if request.max_results < 0:
            raise InvalidArgument.field("max_results", "must not be negative")
        flt = request.filter if request.HasField("filter") else None
        if flt is not None:
            compile_filter(flt, Params(), alias="m")
        model = await self._embedder.model(request.embedding_model)
        started = time.perf_counter()
        (vec,) = await self._embedder.embed([request.query], model=model, query=True)
        embedded = time.perf_counter()
        plans: list[tuple[ScopeSpec, dict[str, str], int]] = []
        if session and limits["session"]:
            plans.append((SESSION, {"session_id": session}, limits["session"]))
        if user and limits["user"]:
            plans.append((USER, {"user_id": user}, limits["user"]))
        if agent and limits["agent"]:
            plans.append((AGENT, {"agent_id": agent}, limits["agent"]))
        if limits["organization"]:
            plans.append((ORGANIZATION, {}, limits["organization"]))

        async def one(spec: ScopeSpec, owners: dict[str, str], k: int) -> list[Hit]:
            q = Query(spec, vec, model.name, owners, k, flt, kbs if spec is ORGANIZATION else ())
            async with self._pool.acquire() as conn:
                return await search(conn, q, self._tuning, min_score)

        found = await asyncio.gather(*(one(*plan) for plan in plans))
        items: list[tuple[float, pb.Scope.ValueType, Hit]] = []
        for (spec, _, _), hits in zip(plans, found, strict=True):
            for hit in hits:
                weight = 0.5 + 0.5 * float(hit.row["importance"])
                items.append((hit.similarity * weight, spec.scope, hit))
        items.sort(key=lambda item: (-item[0], item[1], str(item[2].row["id"])))
        seen: set[str] = set()
        merged: list[pb.ContextItem] = []
        for score, scope, hit in items:
            if hit.row["content"] in seen:
                continue
            seen.add(hit.row["content"])
            row = hit.row
            source = (
                f"{row['source'] or row['document_id']}#{row['chunk_index']}"
                if scope == pb.SCOPE_ORGANIZATION
                else f"memories/{row['id']}"
            )
            merged.append(
                pb.ContextItem(
                    scope=scope,
                    score=score,
                    similarity=hit.similarity,
                    source=source,
                    memory=convert.memory_pb(row),
                )
            )
        if request.max_results:
            merged = merged[: request.max_results]
        accessed = [i.memory.id for i in merged if i.scope == pb.SCOPE_USER]
        if accessed:
            async with self._pool.acquire() as conn:
                touched = await repository.record_access(conn, accessed)
            for item in merged:
                if item.memory.id in touched:
                    count, when = touched[item.memory.id]
                    item.memory.access_count = count
                    item.memory.last_access_time.FromDatetime(when)
        return pb.RetrieveContextResponse(
            items=merged,
            embedding_model=model.name,
            embed_ms=(embedded - started) * 1000,
            search_ms=(time.perf_counter() - embedded) * 1000,
        )

    # -- promotion ----------------------------------------------------------------------

    async def PromoteMemory(self, request: pb.PromoteMemoryRequest, context: Context) -> pb.Memory:
        memory_id = convert.required_uuid(request.id, "id")
        if request.target_scope not in (pb.SCOPE_USER, pb.SCOPE_AGENT):
            raise InvalidArgument.field("target_scope", "must be SCOPE_USER or SCOPE_AGENT")
        target = SPECS[request.target_scope]
        mtype = convert.memory_type(target, request.type, "type")
        requested_user = convert.uuid_field(request.user_id, "user_id")
        if requested_user and target is not USER:
            raise InvalidArgument.field("user_id", "only for target_scope SCOPE_USER")
        if request.HasField("importance"):
            convert.importance(request.importance, "importance")

        async def work() -> pb.Memory:
            async with self._pool.acquire() as conn:
                source = await repository.get_memory(conn, memory_id)
                if source["scope"] != pb.SCOPE_SESSION:
                    raise FailedPrecondition(
                        "id: only session memories can be promoted", reason="NOT_SESSION_MEMORY"
                    )
                owners: dict[str, str | None] = {"agent_id": str(source["agent_id"])}
                if target is USER:
                    own = str(source["user_id"]) if source["user_id"] else None
                    if own and requested_user and own != requested_user:
                        raise InvalidArgument.field(
                            "user_id", "differs from the session memory's user"
                        )
                    user = requested_user or own
                    if user is None:
                        raise InvalidArgument.field(
                            "user_id", "is required: the session memory has no user"
                        )
                    owners["user_id"] = user
                importance = (
                    request.importance
                    if request.HasField("importance")
                    else float(source["importance"])
                )
                row = await repository.promote(
                    conn, source, target, owners, mtype or "", importance
                )
            return convert.memory_pb(row)

        return await self._requests.once("PromoteMemory", request, pb.Memory, work)

    # -- documents (delegated) ----------------------------------------------------------

    async def IngestDocument(
        self, request: pb.IngestDocumentRequest, context: Context
    ) -> pb.IngestDocumentResponse:
        return await self._requests.once(
            "IngestDocument",
            request,
            pb.IngestDocumentResponse,
            lambda: self._ingestor.ingest(request),
        )

    async def IngestDocumentStream(
        self, request_iterator: Any, context: Context
    ) -> pb.IngestDocumentResponse:
        request = await self._ingestor.collect(request_iterator)
        return await self.IngestDocument(request, context)

    async def GetDocument(self, request: pb.GetDocumentRequest, context: Context) -> pb.Document:
        return await self._ingestor.get(request)

    async def ListDocuments(
        self, request: pb.ListDocumentsRequest, context: Context
    ) -> pb.ListDocumentsResponse:
        return await self._ingestor.list(request, self._tokens)

    async def DeleteDocument(
        self, request: pb.DeleteDocumentRequest, context: Context
    ) -> empty_pb2.Empty:
        doc_id = convert.required_uuid(request.id, "id")

        async def work() -> empty_pb2.Empty:
            await self._ingestor.delete(doc_id)
            return empty_pb2.Empty()

        return await self._requests.once("DeleteDocument", request, empty_pb2.Empty, work)


async def build(config: MemoryConfig) -> ServiceDefinition:
    """Opens the database (migrating it) and the EmbeddingService channel; starts the sweeper."""
    pool = await open_database(
        config.database, schema="memory", migrations_package="memory_svc.migrations"
    )
    metrics.track_pool("memory", pool.get_size, pool.get_idle_size)
    channel = open_channel(
        config.clients.embedding_addr,
        tls_ca_file=config.clients.tls_ca_file,
        max_message_bytes=64 * 1024 * 1024,
    )
    embedder = Embedder(
        channel,
        default_model=config.embedding_model,
        timeout=config.clients.call_timeout_seconds,
        batch=config.embed_batch,
        concurrency=config.embed_concurrency,
    )
    servicer = MemoryServicer(config, pool, embedder)
    sweeper = Sweeper(pool, config.sweep_interval_seconds, config.request_log_hours)

    async def warmup() -> None:
        try:
            await embedder.model()
        except grpc.aio.AioRpcError as exc:
            # Not fatal: memory reads work without it, and the model is looked up again on
            # the first call that needs it.
            log.warning("EmbeddingService not reachable at start-up: %s", exc.details())
        sweeper.start()

    async def close() -> None:
        await sweeper.stop()
        await embedder.close()
        await pool.close()

    return ServiceDefinition(
        service_names=[SERVICE_NAME],
        error_domain=ERROR_DOMAIN,
        register=lambda server: pb_grpc.add_MemoryServiceServicer_to_server(servicer, server),
        warmup=warmup,
        closers=[close],
    )
