"""The EmbeddingService client SkillService embeds descriptions and queries with.

Descriptions are embedded as DOCUMENT inputs, queries as QUERY inputs (so BGE's query prefix
is applied where the model has one). Every call carries a deadline and the caller's
credentials, so the tenant follows the request. The vector column is 384-dimensional; a model
of another size is refused at start-up rather than at the first write.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from lightmind.embedding.v1 import embedding_service_pb2 as epb
from lightmind.embedding.v1 import embedding_service_pb2_grpc as epb_grpc
from lightmind.errors import FailedPrecondition
from lightmind.tenancy import forward_metadata

DIMENSIONS = 384


class Embedder:
    def __init__(self, address: str, timeout_seconds: float) -> None:
        self._channel = grpc.aio.insecure_channel(address)
        self._stub = epb_grpc.EmbeddingServiceStub(self._channel)
        self._timeout = timeout_seconds

    async def _embed(self, texts: Sequence[str], kind: int) -> tuple[str, list[list[float]]]:
        response = await self._stub.Embed(
            epb.EmbedRequest(texts=list(texts), input_type=kind),  # type: ignore[arg-type]
            timeout=self._timeout,
            metadata=forward_metadata(),
        )
        if response.dimensions != DIMENSIONS:
            raise FailedPrecondition(
                f"the embedding model {response.model!r} makes {response.dimensions}-dimensional "
                f"vectors; SkillService stores {DIMENSIONS}",
                reason="EMBEDDING_DIMENSIONS",
            )
        return response.model, [list(e.values) for e in response.embeddings]

    async def documents(self, texts: Sequence[str]) -> tuple[str, list[list[float]]]:
        return await self._embed(texts, epb.INPUT_TYPE_DOCUMENT)

    async def query(self, text: str) -> tuple[str, list[float]]:
        model, vectors = await self._embed([text], epb.INPUT_TYPE_QUERY)
        return model, vectors[0]

    async def close(self) -> None:
        await self._channel.close(None)


def skill_text(name: str, description: str) -> str:
    """What is embedded for a skill: its name in words, then its description."""
    return f"{name.replace('-', ' ')}: {description}"


def tool_text(name: str, description: str) -> str:
    words = name.replace("_", " ").replace("-", " ").replace(".", " ")
    return f"{words}: {description}"
