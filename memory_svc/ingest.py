"""Knowledge-base ingestion: validate, chunk by tokens, embed in batches, store atomically.

The content hash (SHA-256) is checked first, so re-ingesting known content costs one query
and stores nothing. Otherwise the text is chunked with the model's tokenizer (through
EmbeddingService.CountTokens, see ``memory_svc.chunker``), the chunks are embedded in
concurrent batches, and document plus chunks are written in one transaction. The streaming
variant concatenates its pieces (bounded by LIGHTMIND_MEMORY_MAX_DOCUMENT_BYTES) and then
takes the same path. Document reads, listing and deletion live here too.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Sequence

import asyncpg

from lightmind.errors import InvalidArgument
from lightmind.memory.v1 import memory_service_pb2 as pb
from lightmind.pagination import PageTokens
from lightmind.tenancy import current_tenant
from memory_svc import convert, documents
from memory_svc.chunker import chunk_text
from memory_svc.config import MemoryConfig
from memory_svc.embedder import Embedder
from memory_svc.filters import Params, compile_filter
from memory_svc.pagination import Cursor, decode_cursor, encode_cursor, page_size


class Ingestor:
    def __init__(self, config: MemoryConfig, pool: asyncpg.Pool, embedder: Embedder) -> None:
        self._config = config
        self._pool = pool
        self._embedder = embedder

    def _chunking(self, options: pb.ChunkingOptions, max_tokens: int) -> tuple[int, int]:
        if options.chunk_tokens < 0:
            raise InvalidArgument.field("chunking.chunk_tokens", "must not be negative")
        chunk = min(options.chunk_tokens or self._config.chunk_tokens, max_tokens)
        if chunk < 8:
            raise InvalidArgument.field("chunking.chunk_tokens", "must be at least 8")
        if options.HasField("overlap_tokens"):
            overlap = options.overlap_tokens
            if overlap < 0 or overlap >= chunk:
                raise InvalidArgument.field(
                    "chunking.overlap_tokens", f"must be between 0 and {chunk - 1}"
                )
        else:
            overlap = min(self._config.chunk_overlap_tokens, chunk // 4)
        return chunk, overlap

    async def ingest(self, request: pb.IngestDocumentRequest) -> pb.IngestDocumentResponse:
        if not request.HasField("document"):
            raise InvalidArgument.field("document", "is required")
        doc = request.document
        if doc.id:
            raise InvalidArgument.field("document.id", "is assigned by the server; leave it empty")
        kb = convert.knowledge_base(doc.knowledge_base, "document.knowledge_base")
        source = convert.label(doc.source, "document.source")
        title = convert.label(doc.title, "document.title")
        text = convert.content(request.content, "content", self._config.max_document_bytes)
        model = await self._embedder.model(request.embedding_model)
        chunk_tokens, overlap = self._chunking(request.chunking, model.max_tokens)
        digest = hashlib.sha256(text.encode()).hexdigest()
        async with self._pool.acquire() as conn:
            existing = await documents.find_by_hash(conn, kb, model.name, digest)
        if existing is not None:
            return pb.IngestDocumentResponse(
                document=convert.document_pb(existing), already_existed=True
            )

        async def count(texts: Sequence[str]) -> list[int]:
            return await self._embedder.count_tokens(list(texts), model=model)

        chunking = await chunk_text(
            text, chunk_tokens=chunk_tokens, overlap_tokens=overlap, count=count
        )
        vectors = await self._embedder.embed(
            [c.text for c in chunking.chunks], model=model, query=False
        )
        new = documents.NewDocument(
            knowledge_base=kb,
            source=source,
            title=title,
            content_hash=digest,
            content_length=len(text),
            token_count=chunking.token_count,
            chunk_tokens=chunk_tokens,
            overlap_tokens=overlap,
            embedding_model=model.name,
            metadata=convert.metadata(doc.metadata),
        )
        async with self._pool.acquire() as conn:
            row, created = await documents.insert_document(conn, new, chunking.chunks, vectors)
        return pb.IngestDocumentResponse(
            document=convert.document_pb(row), already_existed=not created
        )

    async def collect(
        self, messages: AsyncIterator[pb.IngestDocumentStreamRequest]
    ) -> pb.IngestDocumentRequest:
        """Joins a stream's pieces into one IngestDocumentRequest."""
        request: pb.IngestDocumentRequest | None = None
        pieces: list[str] = []
        size = 0
        index = 0
        async for message in messages:
            if request is None:
                if not message.HasField("document"):
                    raise InvalidArgument.field(
                        "document", "is required in the first message of the stream"
                    )
                request = pb.IngestDocumentRequest(
                    document=message.document,
                    chunking=message.chunking,
                    embedding_model=message.embedding_model,
                    request_id=message.request_id,
                )
            size += len(message.content.encode())
            if size > self._config.max_document_bytes:
                raise InvalidArgument.field(
                    "content",
                    f"the document exceeds {self._config.max_document_bytes} bytes "
                    f"(at message {index})",
                    reason="CONTENT_TOO_LARGE",
                )
            pieces.append(message.content)
            index += 1
        if request is None:
            raise InvalidArgument.field("document", "the stream carried no message")
        request.content = "".join(pieces)
        return request

    async def get(self, request: pb.GetDocumentRequest) -> pb.Document:
        doc_id = convert.required_uuid(request.id, "id")
        async with self._pool.acquire() as conn:
            return convert.document_pb(await documents.get_document(conn, doc_id))

    async def delete(self, doc_id: str) -> None:
        async with self._pool.acquire() as conn:
            await documents.delete_document(conn, doc_id)

    async def list(
        self, request: pb.ListDocumentsRequest, tokens: PageTokens
    ) -> pb.ListDocumentsResponse:
        kb = (
            convert.knowledge_base(request.knowledge_base, "knowledge_base")
            if request.knowledge_base
            else ""
        )
        limit = page_size(request.page_size)
        params = Params([current_tenant()])
        filter_sql = (
            compile_filter(request.filter, params, alias="m")
            if request.HasField("filter")
            else None
        )
        scope = "|".join(
            [
                current_tenant(),
                "ListDocuments",
                kb,
                request.filter.SerializeToString(deterministic=True).hex(),
            ]
        )
        cursor = decode_cursor(tokens, request.page_token, scope) if request.page_token else None
        async with self._pool.acquire() as conn:
            rows = await documents.list_documents(conn, kb, filter_sql, params, cursor, limit + 1)
        response = pb.ListDocumentsResponse(
            documents=[convert.document_pb(r) for r in rows[:limit]]
        )
        if len(rows) > limit:
            last = rows[limit - 1]
            response.next_page_token = encode_cursor(
                tokens, Cursor(last["create_time"], str(last["id"])), scope
            )
        return response
