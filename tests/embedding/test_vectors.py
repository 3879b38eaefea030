"""The service's vectors are the model's: compared with an independent in-process computation."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from embedding_svc.models import REGISTRY, locate
from lightmind.embedding.v1 import embedding_service_pb2 as pb

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "PostgreSQL stores vectors with the pgvector extension.",
    "How do I reset my password?",
    "Lightmind gives agents memory, skills and an orchestration loop.",
]


def reference_vectors(texts: list[str]) -> np.ndarray:
    """all-MiniLM-L6-v2 as sentence-transformers computes it: one text at a time, mean pooling
    over the attention mask, L2 normalization. Written independently of embedding_svc."""
    spec = REGISTRY["all-minilm-l6-v2-int8"]
    files = locate(spec, model_dir=__import__("pathlib").Path("/nonexistent"))
    tokenizer = Tokenizer.from_file(str(files.tokenizer))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=256)
    session = ort.InferenceSession(str(files.onnx), providers=["CPUExecutionProvider"])
    rows = []
    for text in texts:
        enc = tokenizer.encode(text)
        ids = np.array([enc.ids], dtype=np.int64)
        mask = np.array([enc.attention_mask], dtype=np.int64)
        types = np.array([enc.type_ids], dtype=np.int64)
        (hidden,) = session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        )
        vec = (hidden[0] * mask[0][:, None]).sum(axis=0) / mask[0].sum()
        rows.append(vec / np.linalg.norm(vec))
    return np.array(rows)


def as_matrix(response: pb.EmbedResponse) -> np.ndarray:
    return np.array([list(e.values) for e in response.embeddings], dtype=np.float32)


async def test_vectors_match_reference_computation(embedding_stub) -> None:
    response = await embedding_stub.Embed(pb.EmbedRequest(texts=SENTENCES))
    got = as_matrix(response)
    want = reference_vectors(SENTENCES)
    assert got.shape == (len(SENTENCES), 384)
    assert response.dimensions == 384 and response.model == "all-minilm-l6-v2-int8"
    cosines = (got * want).sum(axis=1) / (
        np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1)
    )
    assert cosines.min() >= 0.9999, cosines


async def test_stored_vector_regression(embedding_stub) -> None:
    """Pins the model's output: a changed tokenizer, pooling or model file shows up here."""
    response = await embedding_stub.Embed(
        pb.EmbedRequest(texts=["The quick brown fox jumps over the lazy dog."])
    )
    first = list(response.embeddings[0].values[:6])
    pinned = PINNED_FOX
    assert first == pytest.approx(pinned, abs=2e-4)
    assert response.embeddings[0].token_count == 12


async def test_related_pair_scores_above_unrelated_pair(embedding_stub) -> None:
    response = await embedding_stub.Embed(
        pb.EmbedRequest(
            texts=[
                "How can I change my account password?",
                "Steps to reset the password of your account",
                "The recipe needs two cups of flour and an egg.",
            ]
        )
    )
    a, b, c = as_matrix(response)
    assert float(a @ b) > float(a @ c) + 0.3


async def test_vectors_are_unit_length_unless_normalize_is_off(embedding_stub) -> None:
    on = await embedding_stub.Embed(pb.EmbedRequest(texts=SENTENCES[:2]))
    off = await embedding_stub.Embed(pb.EmbedRequest(texts=SENTENCES[:2], normalize=False))
    assert np.allclose(np.linalg.norm(as_matrix(on), axis=1), 1.0, atol=1e-5)
    raw = as_matrix(off)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0, atol=1e-3)
    normalized = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    assert np.allclose(normalized, as_matrix(on), atol=1e-5)


async def test_truncation_is_reported(embedding_stub) -> None:
    long_text = "memory " * 400
    response = await embedding_stub.Embed(pb.EmbedRequest(texts=[long_text, "short"]))
    assert response.embeddings[0].truncated
    assert response.embeddings[0].token_count == 402
    assert not response.embeddings[1].truncated
    # A cut text embeds like its first 256 tokens.
    assert len(response.embeddings[0].values) == 384


async def test_query_input_type_uses_the_model_prefix() -> None:
    """The tokenizer prepends a model's query prefix to QUERY inputs only (BGE's spec)."""
    from embedding_svc.tokenize import TextTokenizer

    spec = REGISTRY["bge-small-en-v1.5"]
    minilm = REGISTRY["all-minilm-l6-v2-int8"]
    files = locate(minilm, model_dir=__import__("pathlib").Path("/nonexistent"))
    # Same WordPiece vocabulary as BGE's, so the MiniLM tokenizer.json stands in here.
    tokenizer = TextTokenizer(spec, files.tokenizer)
    [as_query] = tokenizer.count(["what is pgvector"], query=True)
    [as_doc] = tokenizer.count(["what is pgvector"], query=False)
    raw = Tokenizer.from_file(str(files.tokenizer))
    raw.no_padding()
    prefix_tokens = len(raw.encode(spec.query_prefix, add_special_tokens=False).ids)
    assert as_query == as_doc + prefix_tokens


# First values of the vector for the fox sentence, all-minilm-l6-v2-int8, recorded 2026-11-21.
PINNED_FOX = [0.041831, 0.058665, 0.051349, 0.075391, 0.025781, -0.037471]
