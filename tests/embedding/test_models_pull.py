"""`lightmind models pull`: a clear refusal without the hub, a working model from a mirror."""

from __future__ import annotations

import asyncio
import functools
import http.server
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest

from embedding_svc.config import EmbeddingConfig
from embedding_svc.models import REGISTRY, locate
from embedding_svc.service import build
from lightmind.embedding.v1 import embedding_service_pb2 as pb
from lightmind.embedding.v1 import embedding_service_pb2_grpc as pb_grpc
from lightmind.testing import ServerHandle, free_port

LIGHTMIND = str(Path(sys.executable).parent / "lightmind")


def test_pull_says_plainly_when_the_hub_is_unreachable(tmp_path: Path) -> None:
    port = free_port()  # nothing listens here
    result = subprocess.run(
        [
            LIGHTMIND,
            "models",
            "pull",
            "bge-small-en-v1.5",
            "--model-dir",
            str(tmp_path),
            "--endpoint",
            f"http://127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "cannot reach the Hugging Face hub" in result.stderr
    assert not list((tmp_path / "bge-small-en-v1.5").glob("*"))  # no half files


def test_pull_refuses_packaged_and_unknown_models(tmp_path: Path) -> None:
    for name, expected in [
        ("all-minilm-l6-v2-int8", "ships in Python packages"),
        ("nope", "unknown model"),
    ]:
        result = subprocess.run(
            [LIGHTMIND, "models", "pull", name, "--model-dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 2 and expected in result.stderr


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[str]:
    """A loopback stand-in for the hub. It serves the offline model's files under BGE's
    repository paths (same vocabulary, same graph inputs), which is enough to exercise the
    download and the bge-small-en-v1.5 code path (CLS pooling, query prefix) end to end."""
    minilm = locate(REGISTRY["all-minilm-l6-v2-int8"], tmp_path / "none")
    root = tmp_path / "hub" / "BAAI" / "bge-small-en-v1.5" / "resolve" / "main"
    (root / "onnx").mkdir(parents=True)
    shutil.copyfile(minilm.onnx, root / "onnx" / "model.onnx")
    shutil.copyfile(minilm.tokenizer, root / "tokenizer.json")
    handler = functools.partial(
        http.server.SimpleHTTPRequestHandler, directory=str(tmp_path / "hub")
    )
    handler.log_message = lambda *a: None  # type: ignore[method-assign]
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


async def test_pulled_model_is_served_through_the_same_code_path(
    tmp_path: Path, mirror: str
) -> None:
    model_dir = tmp_path / "models"
    result = await asyncio.to_thread(
        subprocess.run,
        [
            LIGHTMIND,
            "models",
            "pull",
            "bge-small-en-v1.5",
            "--model-dir",
            str(model_dir),
            "--endpoint",
            mirror,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (model_dir / "bge-small-en-v1.5" / "model.onnx").is_file()

    config = EmbeddingConfig.from_env(
        {
            "LIGHTMIND_MODEL_DIR": str(model_dir),
            "LIGHTMIND_EMBEDDING_MODELS": "bge-small-en-v1.5,all-minilm-l6-v2-int8",
        }
    )
    handle = await ServerHandle.start("embedding", lambda: build(config))
    try:
        async with grpc.aio.insecure_channel(handle.address) as channel:
            stub = pb_grpc.EmbeddingServiceStub(channel)
            models = {m.name: m for m in (await stub.ListModels(pb.ListModelsRequest())).models}
            bge = models["bge-small-en-v1.5"]
            assert bge.default and bge.pooling == pb.POOLING_CLS and bge.max_tokens == 512
            assert bge.query_prefix.startswith("Represent this sentence")
            text = "what is a vector database"
            doc = await stub.Embed(pb.EmbedRequest(texts=[text]))
            query = await stub.Embed(pb.EmbedRequest(texts=[text], input_type=pb.INPUT_TYPE_QUERY))
            mean = await stub.Embed(pb.EmbedRequest(texts=[text], model="all-minilm-l6-v2-int8"))
            assert doc.model == "bge-small-en-v1.5"
            # The query prefix adds tokens and changes the vector; CLS differs from mean pooling.
            assert query.embeddings[0].token_count > doc.embeddings[0].token_count
            v_doc, v_query, v_mean = (np.array(r.embeddings[0].values) for r in (doc, query, mean))
            assert float(v_doc @ v_query) < 0.999
            assert float(v_doc @ v_mean) < 0.999
    finally:
        await handle.stop()
