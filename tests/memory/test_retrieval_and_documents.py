"""RetrieveContext across scopes, and knowledge-base ingestion."""

from __future__ import annotations

import itertools
import uuid

import grpc
import pytest
from memory_helpers import AGENT, SESSION, USER, A, agent_memory, session_memory, user_memory

from lightmind.embedding.v1 import embedding_service_pb2 as epb
from lightmind.memory.v1 import memory_service_pb2 as pb
from lightmind.testing import error_details

HANDBOOK = (
    "\n\n".join(
        f"Section {i}. "
        + " ".join(
            f"Policy {i}.{j}: employees must file expense reports within {j + 2} days and attach "
            f"receipts for every purchase above {10 * j} euros."
            for j in range(12)
        )
        for i in range(6)
    )
    + "\n\nVacation: every employee has 25 days of paid vacation per year."
)


async def test_retrieve_context_merges_scopes_with_labels(memory) -> None:
    await memory.CreateMemory(
        session_memory("We were just talking about the user's trip to Japan."), metadata=A
    )
    user_fact = await memory.CreateMemory(
        user_memory("The user is vegetarian and avoids fish."), metadata=A
    )
    await memory.CreateMemory(agent_memory("Recommend restaurants with photos."), metadata=A)
    await memory.CreateMemory(
        agent_memory("Unrelated: the office printer is on floor 3."), metadata=A
    )
    await memory.IngestDocument(
        pb.IngestDocumentRequest(
            document=pb.Document(source="food-guide.md"),
            content="Tokyo has many vegetarian restaurants, especially near temples.",
        ),
        metadata=A,
    )
    reply = await memory.RetrieveContext(
        pb.RetrieveContextRequest(
            query="Which restaurants in Tokyo suit the user's diet?",
            session_id=SESSION,
            user_id=USER,
            agent_id=AGENT,
        ),
        metadata=A,
    )
    scopes = {item.scope for item in reply.items}
    assert scopes == {pb.SCOPE_SESSION, pb.SCOPE_USER, pb.SCOPE_AGENT, pb.SCOPE_ORGANIZATION}
    scores = [item.score for item in reply.items]
    assert scores == sorted(scores, reverse=True)
    org = next(i for i in reply.items if i.scope == pb.SCOPE_ORGANIZATION)
    assert org.source == "food-guide.md#0"
    user_item = next(i for i in reply.items if i.scope == pb.SCOPE_USER)
    assert user_item.source == f"memories/{user_fact.id}"
    assert user_item.memory.access_count == 1
    again = await memory.GetMemory(pb.GetMemoryRequest(id=user_fact.id), metadata=A)
    assert again.access_count == 1 and again.HasField("last_access_time")
    # Per-call limits: 0 skips a scope; max_results caps the merged list.
    limited = await memory.RetrieveContext(
        pb.RetrieveContextRequest(
            query="restaurants",
            agent_id=AGENT,
            limits=pb.ScopeLimits(agent=1, organization=0),
            max_results=5,
        ),
        metadata=A,
    )
    assert [i.scope for i in limited.items] == [pb.SCOPE_AGENT]


async def test_ingest_chunks_by_model_tokens_and_is_idempotent(memory, embedding_stub) -> None:
    reply = await memory.IngestDocument(
        pb.IngestDocumentRequest(
            document=pb.Document(source="handbook.md", title="Handbook", knowledge_base="hr"),
            content=HANDBOOK,
            chunking=pb.ChunkingOptions(chunk_tokens=128, overlap_tokens=16),
        ),
        metadata=A,
    )
    doc = reply.document
    assert not reply.already_existed
    assert doc.chunk_tokens == 128 and doc.overlap_tokens == 16
    assert doc.chunk_count > 5
    chunks = await memory.ListMemories(
        pb.ListMemoriesRequest(scope=pb.SCOPE_ORGANIZATION, page_size=1000), metadata=A
    )
    assert len(chunks.memories) == doc.chunk_count
    texts = [m.content for m in sorted(chunks.memories, key=lambda m: m.chunk_index)]
    counts = await embedding_stub.CountTokens(epb.CountTokensRequest(texts=texts))
    assert max(c.token_count for c in counts.counts) <= 128
    assert max(c.token_count for c in counts.counts) > 100  # chunks are filled, not tiny
    # Overlap: each chunk starts with words the previous one ended with.
    for prev, nxt in itertools.pairwise(texts):
        assert prev.split()[-1] in nxt.split()[:20]
    assert "25 days of paid vacation" in texts[-1]
    again = await memory.IngestDocument(
        pb.IngestDocumentRequest(
            document=pb.Document(source="copy.md", knowledge_base="hr"), content=HANDBOOK
        ),
        metadata=A,
    )
    assert again.already_existed and again.document.id == doc.id
    found = await memory.SearchMemories(
        pb.SearchMemoriesRequest(
            scope=pb.SCOPE_ORGANIZATION,
            query="how many vacation days do I get?",
            knowledge_bases=["hr"],
            top_k=1,
        ),
        metadata=A,
    )
    assert "vacation" in found.results[0].memory.content
    assert found.results[0].memory.document_id == doc.id
    assert found.results[0].memory.source == "handbook.md"


async def test_streamed_ingest_then_get_list_delete(memory) -> None:
    pieces = [HANDBOOK[i : i + 1000] for i in range(0, len(HANDBOOK), 1000)]

    async def messages():
        yield pb.IngestDocumentStreamRequest(
            document=pb.Document(source="stream.md", knowledge_base="kb2"), content=pieces[0]
        )
        for piece in pieces[1:]:
            yield pb.IngestDocumentStreamRequest(content=piece)

    reply = await memory.IngestDocumentStream(messages(), metadata=A)
    doc = reply.document
    assert doc.content_length == len(HANDBOOK) and doc.chunk_count >= 2
    # Default chunking: 512 tokens, capped at the model's maximum (256 for MiniLM).
    assert doc.chunk_tokens == 256
    assert await memory.GetDocument(pb.GetDocumentRequest(id=doc.id), metadata=A) == doc
    listed = await memory.ListDocuments(pb.ListDocumentsRequest(knowledge_base="kb2"), metadata=A)
    assert [d.id for d in listed.documents] == [doc.id]
    await memory.DeleteDocument(pb.DeleteDocumentRequest(id=doc.id), metadata=A)
    chunks = await memory.ListMemories(
        pb.ListMemoriesRequest(scope=pb.SCOPE_ORGANIZATION), metadata=A
    )
    assert list(chunks.memories) == []
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await memory.GetDocument(pb.GetDocumentRequest(id=doc.id), metadata=A)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND


async def test_chunks_cannot_be_changed_as_memories(memory) -> None:
    reply = await memory.IngestDocument(
        pb.IngestDocumentRequest(document=pb.Document(source="a.md"), content="Some text."),
        metadata=A,
    )
    chunks = await memory.ListMemories(
        pb.ListMemoriesRequest(scope=pb.SCOPE_ORGANIZATION), metadata=A
    )
    chunk = chunks.memories[0]
    assert chunk.document_id == reply.document.id
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await memory.DeleteMemory(pb.DeleteMemoryRequest(id=chunk.id), metadata=A)
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION


BAD_INGEST = [
    (pb.IngestDocumentRequest(content="x"), "document"),
    (pb.IngestDocumentRequest(document=pb.Document(), content=" "), "content"),
    (pb.IngestDocumentRequest(document=pb.Document(knowledge_base="bad kb!"), content="x"),
     "document.knowledge_base"),
    (pb.IngestDocumentRequest(document=pb.Document(id=str(uuid.uuid4())), content="x"),
     "document.id"),
    (pb.IngestDocumentRequest(document=pb.Document(), content="x",
                              chunking=pb.ChunkingOptions(chunk_tokens=64, overlap_tokens=64)),
     "chunking.overlap_tokens"),
    (pb.IngestDocumentRequest(document=pb.Document(), content="x", embedding_model="nope"),
     "embedding_model"),
]  # fmt: skip


@pytest.mark.parametrize(("request_", "field"), BAD_INGEST)
async def test_bad_ingest_requests_name_the_field(memory, request_, field) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await memory.IngestDocument(request_, metadata=A)
    details = error_details(err.value)
    assert details.code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert details.fields == [field]
    listed = await memory.ListDocuments(pb.ListDocumentsRequest(), metadata=A)
    assert list(listed.documents) == []
