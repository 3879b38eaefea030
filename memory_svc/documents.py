"""SQL for ingested documents and their chunks (organization memory).

A document and all its chunks are written in one transaction, so a failure leaves nothing
behind. Ingestion is idempotent by (tenant, knowledge base, model, content hash): a second
ingestion of the same content finds the existing document, also when two race (the unique
index decides and the loser returns the winner's document).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import asyncpg
from pgvector import Vector

from lightmind.errors import NotFound
from lightmind.tenancy import current_tenant
from memory_svc.chunker import Chunk
from memory_svc.filters import Params
from memory_svc.pagination import Cursor, keyset_clause

# asyncpg ships no type information; rows are read by column name.
Record: TypeAlias = Any

_COLUMNS = (
    "id, knowledge_base, source, title, content_hash, content_length, token_count, "
    "chunk_count, chunk_tokens, overlap_tokens, embedding_model, metadata, create_time"
)


@dataclass(frozen=True)
class NewDocument:
    knowledge_base: str
    source: str
    title: str
    content_hash: str
    content_length: int
    token_count: int
    chunk_tokens: int
    overlap_tokens: int
    embedding_model: str
    metadata: dict[str, Any]


async def find_by_hash(
    conn: asyncpg.Connection, knowledge_base: str, model: str, digest: str
) -> Record | None:
    row: Record | None = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM documents WHERE tenant = $1 AND knowledge_base = $2 "
        "AND embedding_model = $3 AND content_hash = $4",
        current_tenant(),
        knowledge_base,
        model,
        digest,
    )
    return row


async def insert_document(
    conn: asyncpg.Connection,
    doc: NewDocument,
    chunks: Sequence[Chunk],
    vectors: Sequence[Sequence[float]],
) -> tuple[Record, bool]:
    """Stores the document and its chunks; returns (document, created)."""
    tenant = current_tenant()
    doc_id = str(uuid.uuid4())
    async with conn.transaction():
        row = await conn.fetchrow(
            "INSERT INTO documents (tenant, id, knowledge_base, source, title, content_hash, "
            "content_length, token_count, chunk_count, chunk_tokens, overlap_tokens, "
            "embedding_model, metadata) VALUES ($1, $2::uuid, $3, $4, $5, $6, $7, $8, $9, $10, "
            "$11, $12, $13) ON CONFLICT (tenant, knowledge_base, embedding_model, content_hash) "
            f"DO NOTHING RETURNING {_COLUMNS}",
            tenant,
            doc_id,
            doc.knowledge_base,
            doc.source,
            doc.title,
            doc.content_hash,
            doc.content_length,
            doc.token_count,
            len(chunks),
            doc.chunk_tokens,
            doc.overlap_tokens,
            doc.embedding_model,
            doc.metadata,
        )
        if row is None:
            existing = await find_by_hash(
                conn, doc.knowledge_base, doc.embedding_model, doc.content_hash
            )
            if existing is None:
                raise NotFound("the document was deleted while being ingested; retry")
            return existing, False
        ids = [uuid.uuid4() for _ in chunks]
        await conn.execute(
            "INSERT INTO document_chunks (tenant, id, document_id, knowledge_base, source, "
            "chunk_index, content, embedding, embedding_model, metadata) "
            "SELECT $1, c.id, $2::uuid, $3, $4, c.idx, c.content, c.embedding, $5, $6 "
            "FROM unnest($7::uuid[], $8::integer[], $9::text[], $10::vector[]) "
            "AS c(id, idx, content, embedding)",
            tenant,
            doc_id,
            doc.knowledge_base,
            doc.source,
            doc.embedding_model,
            doc.metadata,
            ids,
            [c.index for c in chunks],
            [c.text for c in chunks],
            [Vector(list(v)) for v in vectors],
        )
    return row, True


async def get_document(conn: asyncpg.Connection, doc_id: str) -> Record:
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM documents WHERE tenant = $1 AND id = $2::uuid",
        current_tenant(),
        doc_id,
    )
    if row is None:
        raise NotFound(f"id: no document {doc_id}", metadata={"field": "id"})
    result: Record = row
    return result


async def delete_document(conn: asyncpg.Connection, doc_id: str) -> None:
    status = await conn.execute(
        "DELETE FROM documents WHERE tenant = $1 AND id = $2::uuid", current_tenant(), doc_id
    )
    if status.split()[-1] == "0":
        raise NotFound(f"id: no document {doc_id}", metadata={"field": "id"})


async def list_documents(
    conn: asyncpg.Connection,
    knowledge_base: str,
    filter_sql: str | None,
    params: Params,
    cursor: Cursor | None,
    limit: int,
) -> list[Record]:
    where = ["m.tenant = $1"]
    if knowledge_base:
        where.append(f"m.knowledge_base = {params.add(knowledge_base)}")
    if filter_sql:
        where.append(filter_sql)
    if cursor is not None:
        where.append(keyset_clause(cursor, params.add))
    sql = (
        f"SELECT {_COLUMNS} FROM documents m WHERE {' AND '.join(where)} "
        f"ORDER BY m.create_time DESC, m.id DESC LIMIT {params.add(limit)}"
    )
    rows: list[Record] = await conn.fetch(sql, *params.values)
    return rows
