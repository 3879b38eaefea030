"""EmbeddingService configuration, from ``LIGHTMIND_*`` environment variables."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from embedding_svc.models import DEFAULT_MODEL, REGISTRY
from lightmind.config import (
    AuthConfig,
    ConfigError,
    ServerConfig,
    env_float,
    env_int,
    env_list,
    env_str,
)


@dataclass(frozen=True)
class EmbeddingConfig:
    server: ServerConfig
    auth: AuthConfig
    models: tuple[str, ...]
    default_model: str
    model_dir: Path
    max_texts: int
    max_request_bytes: int
    max_batch_size: int
    max_batch_tokens: int
    max_wait_ms: float
    max_queue_texts: int
    intra_op_threads: int
    tokenizer_threads: int

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EmbeddingConfig:
        env = os.environ if env is None else env
        models = env_list(env, "LIGHTMIND_EMBEDDING_MODELS", (DEFAULT_MODEL,))
        for name in models:
            if name not in REGISTRY:
                raise ConfigError(
                    f"LIGHTMIND_EMBEDDING_MODELS: unknown model {name!r}; "
                    f"known: {', '.join(sorted(REGISTRY))}"
                )
        if not models:
            raise ConfigError("LIGHTMIND_EMBEDDING_MODELS: name at least one model")
        default = env_str(env, "LIGHTMIND_EMBEDDING_DEFAULT_MODEL", models[0])
        if default not in models:
            raise ConfigError(
                f"LIGHTMIND_EMBEDDING_DEFAULT_MODEL={default!r} is not among "
                f"LIGHTMIND_EMBEDDING_MODELS ({', '.join(models)})"
            )
        max_batch_size = env_int(env, "LIGHTMIND_EMBEDDING_MAX_BATCH_SIZE", 64, minimum=1)
        max_texts = env_int(env, "LIGHTMIND_EMBEDDING_MAX_TEXTS", 256, minimum=1)
        max_queue = env_int(env, "LIGHTMIND_EMBEDDING_MAX_QUEUE_TEXTS", 4096, minimum=1)
        if max_queue < max_texts:
            raise ConfigError(
                f"LIGHTMIND_EMBEDDING_MAX_QUEUE_TEXTS={max_queue} must be at least "
                f"LIGHTMIND_EMBEDDING_MAX_TEXTS={max_texts}"
            )
        longest = max(REGISTRY[name].max_tokens for name in models)
        max_batch_tokens = env_int(env, "LIGHTMIND_EMBEDDING_MAX_BATCH_TOKENS", 2048, minimum=1)
        if max_batch_tokens < longest:
            raise ConfigError(
                f"LIGHTMIND_EMBEDDING_MAX_BATCH_TOKENS={max_batch_tokens} is below the longest "
                f"text a loaded model accepts ({longest} tokens)"
            )
        return cls(
            server=ServerConfig.from_env("embedding", "LIGHTMIND_EMBEDDING", 50051, env),
            auth=AuthConfig.from_env(env),
            models=models,
            default_model=default,
            model_dir=Path(env_str(env, "LIGHTMIND_MODEL_DIR", "models")).expanduser().resolve(),
            max_texts=max_texts,
            max_request_bytes=env_int(
                env, "LIGHTMIND_EMBEDDING_MAX_REQUEST_BYTES", 1024 * 1024, minimum=1
            ),
            max_batch_size=max_batch_size,
            max_batch_tokens=max_batch_tokens,
            max_wait_ms=env_float(env, "LIGHTMIND_EMBEDDING_MAX_WAIT_MS", 2.0, minimum=0),
            max_queue_texts=max_queue,
            intra_op_threads=env_int(
                env, "LIGHTMIND_EMBEDDING_THREADS", os.cpu_count() or 1, minimum=1
            ),
            tokenizer_threads=env_int(env, "LIGHTMIND_EMBEDDING_TOKENIZER_THREADS", 2, minimum=1),
        )
