"""Configuration from environment variables, validated at start-up.

Every service builds one frozen dataclass from ``LIGHTMIND_*`` variables (plus
``DATABASE_URL``) through the typed readers here. A bad value stops start-up with a
``ConfigError`` that names the variable, what it got and what it expects. The settings every
service shares live in ``ServerConfig``, ``DatabaseConfig`` and ``AuthConfig``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


class ConfigError(ValueError):
    """An environment variable has a value the service cannot use."""


def _raw(env: Mapping[str, str], name: str) -> str | None:
    value = env.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def env_str(env: Mapping[str, str], name: str, default: str) -> str:
    value = _raw(env, name)
    return default if value is None else value


def env_int(
    env: Mapping[str, str],
    name: str,
    default: int,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    value = _raw(env, name)
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r}: expected a whole number") from None
    _check_range(name, number, minimum, maximum)
    return number


def env_float(
    env: Mapping[str, str],
    name: str,
    default: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
) -> float:
    value = _raw(env, name)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{name}={value!r}: expected a number") from None
    _check_range(name, number, minimum, maximum)
    return number


def env_bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    value = _raw(env, name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}={value!r}: expected true or false")


def env_choice(env: Mapping[str, str], name: str, default: str, choices: tuple[str, ...]) -> str:
    value = env_str(env, name, default).lower()
    if value not in choices:
        raise ConfigError(f"{name}={value!r}: expected one of {', '.join(choices)}")
    return value


def env_list(env: Mapping[str, str], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = _raw(env, name)
    if value is None:
        return default
    return tuple(item.strip() for item in value.split(",") if item.strip())


def _optional_file(env: Mapping[str, str], name: str) -> Path | None:
    value = _raw(env, name)
    if value is None:
        return None
    path = Path(value).expanduser()
    if not path.is_file():
        raise ConfigError(f"{name}={value!r}: no such file")
    return path


def _check_range(name: str, number: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and number < minimum:
        raise ConfigError(f"{name}={number}: must be at least {minimum}")
    if maximum is not None and number > maximum:
        raise ConfigError(f"{name}={number}: must be at most {maximum}")


@dataclass(frozen=True)
class ServerConfig:
    """How a service listens and shuts down. ``prefix`` is e.g. ``LIGHTMIND_EMBEDDING``."""

    service_name: str
    host: str
    port: int
    max_message_bytes: int
    grace_seconds: float
    log_level: str
    log_format: str
    # Prometheus exporter port for this service; 0 turns it off.
    metrics_port: int = 0
    # TLS: both set → the server listens with TLS only.
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    # Per-tenant request rate (requests/second, 0 = unlimited) and burst.
    rate_limit_rps: float = 0.0
    rate_limit_burst: int = 0
    # Tracing: off, console or otlp (OTEL_EXPORTER_OTLP_ENDPOINT says where).
    tracing: str = "off"

    @classmethod
    def from_env(
        cls,
        service_name: str,
        prefix: str,
        default_port: int,
        env: Mapping[str, str] | None = None,
    ) -> ServerConfig:
        env = os.environ if env is None else env
        cert = _optional_file(env, "LIGHTMIND_TLS_CERT_FILE")
        key = _optional_file(env, "LIGHTMIND_TLS_KEY_FILE")
        if (cert is None) != (key is None):
            raise ConfigError("LIGHTMIND_TLS_CERT_FILE and LIGHTMIND_TLS_KEY_FILE go together")
        rps = env_float(env, "LIGHTMIND_RATE_LIMIT_RPS", 0.0, minimum=0)
        return cls(
            service_name=service_name,
            host=env_str(env, "LIGHTMIND_HOST", "127.0.0.1"),
            port=env_int(env, f"{prefix}_PORT", default_port, minimum=0, maximum=65535),
            max_message_bytes=env_int(
                env, "LIGHTMIND_MAX_MESSAGE_BYTES", 16 * 1024 * 1024, minimum=1024
            ),
            grace_seconds=env_float(env, "LIGHTMIND_SHUTDOWN_GRACE_SECONDS", 10.0, minimum=0),
            log_level=env_choice(
                env, "LIGHTMIND_LOG_LEVEL", "info", ("debug", "info", "warning", "error")
            ),
            log_format=env_choice(env, "LIGHTMIND_LOG_FORMAT", "text", ("text", "json")),
            metrics_port=env_int(
                env, f"{prefix}_METRICS_PORT", default_port + 1000, minimum=0, maximum=65535
            ),
            tls_cert_file=cert,
            tls_key_file=key,
            rate_limit_rps=rps,
            rate_limit_burst=env_int(
                env, "LIGHTMIND_RATE_LIMIT_BURST", max(1, int(rps * 2)), minimum=1
            ),
            tracing=env_choice(env, "LIGHTMIND_TRACING", "off", ("off", "console", "otlp")),
        )

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"{host}:{self.port}"


@dataclass(frozen=True)
class AuthConfig:
    """API-key authentication. ``mode`` is ``off`` (every call is tenant ``default``) or
    ``api_key`` (the ``authorization`` metadata must carry a known key)."""

    mode: str
    # Key (or "sha256:<hex digest>" of a key) -> tenant, from LIGHTMIND_API_KEYS.
    keys: Mapping[str, str] = field(default_factory=dict)
    # A keys file written by `lightmind keys create` (hashed keys), re-read when it changes.
    keys_file: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> AuthConfig:
        env = os.environ if env is None else env
        mode = env_choice(env, "LIGHTMIND_AUTH", "off", ("off", "api_key"))
        keys: dict[str, str] = {}
        for entry in env_list(env, "LIGHTMIND_API_KEYS", ()):
            tenant, sep, key = entry.partition("=")
            if not sep or not tenant.strip() or not key.strip():
                raise ConfigError(
                    "LIGHTMIND_API_KEYS: expected comma-separated tenant=key pairs, "
                    f"got an entry {entry.split('=')[0]!r}=…"
                )
            keys[key.strip()] = tenant.strip()
        keys_file_value = _raw(env, "LIGHTMIND_API_KEYS_FILE")
        keys_file = Path(keys_file_value).expanduser().resolve() if keys_file_value else None
        if mode == "api_key" and not keys and keys_file is None:
            raise ConfigError(
                "LIGHTMIND_AUTH=api_key needs keys: set LIGHTMIND_API_KEYS_FILE "
                "(see `lightmind keys create`) or LIGHTMIND_API_KEYS"
            )
        return cls(mode=mode, keys=keys, keys_file=keys_file)


@dataclass(frozen=True)
class DatabaseConfig:
    """Where PostgreSQL is. With no ``DATABASE_URL`` an embedded server is started (or
    joined, if another service already started it) under ``data_dir``."""

    url: str | None
    data_dir: Path
    embedded_port: int
    pool_min: int
    pool_max: int
    statement_timeout_ms: int

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> DatabaseConfig:
        env = os.environ if env is None else env
        url = _raw(env, "DATABASE_URL")
        if url is not None and not url.startswith(("postgres://", "postgresql://")):
            raise ConfigError("DATABASE_URL: expected a postgresql:// URL")
        pool_min = env_int(env, "LIGHTMIND_DB_POOL_MIN", 1, minimum=0)
        pool_max = env_int(env, "LIGHTMIND_DB_POOL_MAX", 10, minimum=1)
        if pool_min > pool_max:
            raise ConfigError(
                f"LIGHTMIND_DB_POOL_MIN={pool_min} exceeds LIGHTMIND_DB_POOL_MAX={pool_max}"
            )
        return cls(
            url=url,
            data_dir=Path(env_str(env, "LIGHTMIND_DATA_DIR", "data")).expanduser().resolve(),
            embedded_port=env_int(
                env, "LIGHTMIND_EMBEDDED_PG_PORT", 54329, minimum=1, maximum=65535
            ),
            pool_min=pool_min,
            pool_max=pool_max,
            statement_timeout_ms=env_int(
                env, "LIGHTMIND_DB_STATEMENT_TIMEOUT_MS", 30_000, minimum=0
            ),
        )


@dataclass(frozen=True)
class ClientConfig:
    """How a service reaches the others: addresses and the deadline on every call."""

    embedding_addr: str
    memory_addr: str
    skill_addr: str
    agent_addr: str
    call_timeout_seconds: float
    # CA bundle that signs the services' certificates; set → calls use TLS.
    tls_ca_file: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ClientConfig:
        env = os.environ if env is None else env
        return cls(
            embedding_addr=env_str(env, "LIGHTMIND_EMBEDDING_ADDR", "127.0.0.1:50051"),
            memory_addr=env_str(env, "LIGHTMIND_MEMORY_ADDR", "127.0.0.1:50052"),
            skill_addr=env_str(env, "LIGHTMIND_SKILL_ADDR", "127.0.0.1:50053"),
            agent_addr=env_str(env, "LIGHTMIND_AGENT_ADDR", "127.0.0.1:50054"),
            call_timeout_seconds=env_float(
                env, "LIGHTMIND_CALL_TIMEOUT_SECONDS", 30.0, minimum=0.001
            ),
            tls_ca_file=_optional_file(env, "LIGHTMIND_TLS_CA_FILE"),
        )
