"""MemoryService configuration, from ``LIGHTMIND_MEMORY_*`` environment variables.

Shared settings (listen address, auth, database, addresses of the other services and the
deadline on calls to them) come from ``lightmind.config``; this module adds the memory
service's own limits and defaults. Every variable and its default is listed in docs/memory.md.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from lightmind.config import (
    AuthConfig,
    ClientConfig,
    ConfigError,
    DatabaseConfig,
    ServerConfig,
    env_float,
    env_int,
    env_str,
)

PREFIX = "LIGHTMIND_MEMORY"


@dataclass(frozen=True)
class MemoryConfig:
    server: ServerConfig
    auth: AuthConfig
    database: DatabaseConfig
    clients: ClientConfig
    # Model used when a request names none; empty means EmbeddingService's default.
    embedding_model: str
    session_ttl_seconds: float
    max_session_ttl_seconds: float
    sweep_interval_seconds: float
    chunk_tokens: int
    chunk_overlap_tokens: int
    max_content_bytes: int
    max_document_bytes: int
    max_batch: int
    max_top_k: int
    embed_batch: int
    embed_concurrency: int
    hnsw_ef_search: int
    exact_search_threshold: int
    page_token_secret: bytes
    request_log_hours: float

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> MemoryConfig:
        env = os.environ if env is None else env
        chunk = env_int(env, f"{PREFIX}_CHUNK_TOKENS", 512, minimum=16, maximum=8192)
        overlap = env_int(env, f"{PREFIX}_CHUNK_OVERLAP_TOKENS", 50, minimum=0)
        if overlap >= chunk:
            raise ConfigError(
                f"{PREFIX}_CHUNK_OVERLAP_TOKENS={overlap} must be below "
                f"{PREFIX}_CHUNK_TOKENS={chunk}"
            )
        ttl = env_float(env, f"{PREFIX}_SESSION_TTL_SECONDS", 3600.0, minimum=1)
        max_ttl = env_float(env, f"{PREFIX}_MAX_SESSION_TTL_SECONDS", 30 * 86400.0, minimum=1)
        if ttl > max_ttl:
            raise ConfigError(
                f"{PREFIX}_SESSION_TTL_SECONDS={ttl} exceeds {PREFIX}_MAX_SESSION_TTL_SECONDS"
            )
        secret = env_str(env, f"{PREFIX}_PAGE_TOKEN_SECRET", "")
        return cls(
            server=ServerConfig.from_env("memory", PREFIX, 50052, env),
            auth=AuthConfig.from_env(env),
            database=DatabaseConfig.from_env(env),
            clients=ClientConfig.from_env(env),
            embedding_model=env_str(env, f"{PREFIX}_EMBEDDING_MODEL", ""),
            session_ttl_seconds=ttl,
            max_session_ttl_seconds=max_ttl,
            sweep_interval_seconds=env_float(
                env, f"{PREFIX}_SWEEP_INTERVAL_SECONDS", 60.0, minimum=0.05
            ),
            chunk_tokens=chunk,
            chunk_overlap_tokens=overlap,
            max_content_bytes=env_int(env, f"{PREFIX}_MAX_CONTENT_BYTES", 32 * 1024, minimum=1),
            max_document_bytes=env_int(
                env, f"{PREFIX}_MAX_DOCUMENT_BYTES", 8 * 1024 * 1024, minimum=1
            ),
            max_batch=env_int(env, f"{PREFIX}_MAX_BATCH", 1000, minimum=1),
            max_top_k=env_int(env, f"{PREFIX}_MAX_TOP_K", 100, minimum=1),
            embed_batch=env_int(env, f"{PREFIX}_EMBED_BATCH", 32, minimum=1),
            embed_concurrency=env_int(env, f"{PREFIX}_EMBED_CONCURRENCY", 4, minimum=1),
            hnsw_ef_search=env_int(env, f"{PREFIX}_HNSW_EF_SEARCH", 100, minimum=1, maximum=1000),
            exact_search_threshold=env_int(
                env, f"{PREFIX}_EXACT_SEARCH_THRESHOLD", 2000, minimum=0
            ),
            # Without a configured secret, page tokens are valid for this process only.
            page_token_secret=secret.encode() if secret else secrets.token_bytes(32),
            request_log_hours=env_float(env, f"{PREFIX}_REQUEST_LOG_HOURS", 24.0, minimum=0.01),
        )
