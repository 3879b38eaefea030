"""A client in a second language: the Node.js example calls a live EmbeddingService."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from lightmind.embedding.v1 import embedding_service_pb2 as pb

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "node"

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None, reason="node/npm not installed"
)


def run(*args: str, cwd: Path = EXAMPLE, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


async def test_node_client_embeds(embedding_server, embedding_stub) -> None:
    if not (EXAMPLE / "node_modules" / "@grpc" / "grpc-js").is_dir():
        installed = await asyncio.to_thread(
            run, "npm", "install", "--silent", "--no-audit", "--no-fund"
        )
        assert installed.returncode == 0, installed.stderr
    text = "How do I reset my password?"
    result = await asyncio.to_thread(run, "node", "embed.js", embedding_server.address, text)
    assert result.returncode == 0, result.stderr
    reply = json.loads(result.stdout)
    assert reply["model"] == "all-minilm-l6-v2-int8" and reply["dimensions"] == 384
    [embedding] = reply["embeddings"]
    assert embedding["length"] == 384
    direct = await embedding_stub.Embed(
        pb.EmbedRequest(texts=[text], input_type=pb.INPUT_TYPE_QUERY)
    )
    assert embedding["token_count"] == direct.embeddings[0].token_count
    assert np.allclose(embedding["first"], list(direct.embeddings[0].values[:3]), atol=1e-6)
