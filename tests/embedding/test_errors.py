"""Every bad input gets a clear status that names the field."""

from __future__ import annotations

import grpc
import pytest

from lightmind.embedding.v1 import embedding_service_pb2 as pb
from lightmind.testing import error_details


async def call_error(coro) -> object:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await coro
    return error_details(info.value)


async def test_empty_list(embedding_stub) -> None:
    err = await call_error(embedding_stub.Embed(pb.EmbedRequest()))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.fields == ["texts"]
    assert err.domain == "embedding.lightmind.dev"


async def test_empty_text_names_its_index(embedding_stub) -> None:
    err = await call_error(embedding_stub.Embed(pb.EmbedRequest(texts=["ok", "  ", "fine", ""])))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.fields == ["texts[1]", "texts[3]"]
    assert err.reason == "EMPTY_TEXT"


async def test_too_many_texts(embedding_stub, embedding_config) -> None:
    texts = ["x"] * (embedding_config.max_texts + 1)
    err = await call_error(embedding_stub.Embed(pb.EmbedRequest(texts=texts)))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.reason == "TOO_MANY_TEXTS" and err.fields == ["texts"]


async def test_too_many_bytes(embedding_stub, embedding_config) -> None:
    big = "a" * (embedding_config.max_request_bytes // 2 + 10)
    err = await call_error(embedding_stub.Embed(pb.EmbedRequest(texts=[big, big])))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.reason == "REQUEST_TOO_LARGE"


async def test_over_long_text_with_truncate_off(embedding_stub) -> None:
    long_text = "token " * 300
    err = await call_error(
        embedding_stub.Embed(pb.EmbedRequest(texts=["short", long_text], truncate=False))
    )
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.fields == ["texts[1]"]
    assert "302 tokens" in err.message


async def test_unknown_model(embedding_stub) -> None:
    err = await call_error(embedding_stub.Embed(pb.EmbedRequest(texts=["x"], model="gpt-embed")))
    assert err.code == grpc.StatusCode.NOT_FOUND
    assert err.reason == "MODEL_NOT_FOUND"
    assert "model" in err.message and "gpt-embed" in err.message


async def test_unknown_input_type(embedding_stub) -> None:
    err = await call_error(embedding_stub.Embed(pb.EmbedRequest(texts=["x"], input_type=9)))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.fields == ["input_type"]


async def test_count_tokens_validates_like_embed(embedding_stub) -> None:
    err = await call_error(embedding_stub.CountTokens(pb.CountTokensRequest(texts=[""])))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.fields == ["texts[0]"]


async def test_expired_deadline_is_respected(embedding_stub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await embedding_stub.Embed(pb.EmbedRequest(texts=["x" * 50] * 200), timeout=0.0001)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
