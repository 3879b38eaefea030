"""ListModels, CountTokens and the bidirectional EmbedStream."""

from __future__ import annotations

import grpc
import numpy as np

from lightmind.embedding.v1 import embedding_service_pb2 as pb


async def test_list_models_describes_the_default(embedding_stub) -> None:
    response = await embedding_stub.ListModels(pb.ListModelsRequest())
    [model] = response.models
    assert model.name == "all-minilm-l6-v2-int8" and model.default
    assert model.dimensions == 384 and model.max_tokens == 256
    assert model.pooling == pb.POOLING_MEAN and model.query_prefix == ""


async def test_count_tokens(embedding_stub) -> None:
    response = await embedding_stub.CountTokens(
        pb.CountTokensRequest(texts=["hello world", "word " * 300])
    )
    assert [c.token_count for c in response.counts] == [4, 302]
    assert [c.exceeds_max for c in response.counts] == [False, True]
    assert response.max_tokens == 256


async def test_embed_stream_answers_every_message_and_survives_a_bad_one(embedding_stub) -> None:
    async def messages():
        for i in range(6):
            yield pb.EmbedStreamRequest(id=f"m{i}", texts=[f"text {i}", f"other {i}"])
        yield pb.EmbedStreamRequest(id="bad", texts=["ok", ""])
        yield pb.EmbedStreamRequest(id="last", texts=["the end"])

    replies = {r.id: r async for r in embedding_stub.EmbedStream(messages())}
    assert set(replies) == {"m0", "m1", "m2", "m3", "m4", "m5", "bad", "last"}
    assert replies["bad"].WhichOneof("result") == "error"
    assert replies["bad"].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert replies["bad"].error.field == "texts[1]"
    single = await embedding_stub.Embed(pb.EmbedRequest(texts=["text 3", "other 3"]))
    streamed = replies["m3"].response
    a = np.array([list(e.values) for e in streamed.embeddings])
    b = np.array([list(e.values) for e in single.embeddings])
    assert np.allclose(a, b, atol=1e-5)
