"""Shared constants and request builders for the MemoryService tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from lightmind.config import AuthConfig
from lightmind.memory.v1 import memory_service_pb2 as pb

KEY_A = "key-tenant-a"
KEY_B = "key-tenant-b"
AUTH = AuthConfig(mode="api_key", keys={KEY_A: "tenant-a", KEY_B: "tenant-b"})
A = (("authorization", f"Bearer {KEY_A}"),)
B = (("authorization", f"Bearer {KEY_B}"),)

AGENT = "6f1f2a52-3c1e-4c9a-9a57-1b1d7e0a0001"
USER = "6f1f2a52-3c1e-4c9a-9a57-1b1d7e0a0002"
SESSION = "6f1f2a52-3c1e-4c9a-9a57-1b1d7e0a0003"


def memory_env(database_url: str, embedding_addr: str, **extra: str) -> dict[str, str]:
    return {
        "DATABASE_URL": database_url,
        "LIGHTMIND_EMBEDDING_ADDR": embedding_addr,
        "LIGHTMIND_CALL_TIMEOUT_SECONDS": "10",
        "LIGHTMIND_DB_POOL_MAX": "8",
        **extra,
    }


def session_memory(content: str, **kw: Any) -> pb.CreateMemoryRequest:
    return pb.CreateMemoryRequest(
        memory=pb.Memory(
            scope=pb.SCOPE_SESSION,
            session_id=kw.pop("session_id", SESSION),
            agent_id=kw.pop("agent_id", AGENT),
            content=content,
            **kw,
        )
    )


def user_memory(content: str, user_id: str = USER, **kw: Any) -> pb.CreateMemoryRequest:
    return pb.CreateMemoryRequest(
        memory=pb.Memory(
            scope=pb.SCOPE_USER,
            agent_id=kw.pop("agent_id", AGENT),
            user_id=user_id,
            content=content,
            **kw,
        )
    )


def agent_memory(content: str, agent_id: str = AGENT, **kw: Any) -> pb.CreateMemoryRequest:
    return pb.CreateMemoryRequest(
        memory=pb.Memory(scope=pb.SCOPE_AGENT, agent_id=agent_id, content=content, **kw)
    )


def unit_vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)
