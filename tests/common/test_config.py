"""Configuration is read from the environment and refused with a message naming the variable."""

from __future__ import annotations

import pytest

from embedding_svc.config import EmbeddingConfig
from lightmind.config import AuthConfig, ConfigError, DatabaseConfig, ServerConfig


def test_defaults() -> None:
    config = EmbeddingConfig.from_env({})
    assert config.server.port == 50051
    assert config.server.host == "127.0.0.1"
    assert config.models == ("all-minilm-l6-v2-int8",)
    assert config.default_model == "all-minilm-l6-v2-int8"
    assert AuthConfig.from_env({}).mode == "off"
    assert DatabaseConfig.from_env({}).url is None


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"LIGHTMIND_EMBEDDING_PORT": "eighty"}, "LIGHTMIND_EMBEDDING_PORT"),
        ({"LIGHTMIND_EMBEDDING_PORT": "70000"}, "LIGHTMIND_EMBEDDING_PORT"),
        ({"LIGHTMIND_EMBEDDING_MODELS": "nope"}, "LIGHTMIND_EMBEDDING_MODELS"),
        (
            {"LIGHTMIND_EMBEDDING_DEFAULT_MODEL": "bge-small-en-v1.5"},
            "LIGHTMIND_EMBEDDING_DEFAULT_MODEL",
        ),
        ({"LIGHTMIND_EMBEDDING_MAX_BATCH_TOKENS": "100"}, "LIGHTMIND_EMBEDDING_MAX_BATCH_TOKENS"),
        ({"LIGHTMIND_EMBEDDING_MAX_QUEUE_TEXTS": "10"}, "LIGHTMIND_EMBEDDING_MAX_QUEUE_TEXTS"),
        ({"LIGHTMIND_LOG_LEVEL": "loud"}, "LIGHTMIND_LOG_LEVEL"),
        ({"LIGHTMIND_AUTH": "api_key"}, "LIGHTMIND_AUTH"),
        ({"LIGHTMIND_API_KEYS": "justakey"}, "LIGHTMIND_API_KEYS"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        EmbeddingConfig.from_env(env)


def test_bad_database_url() -> None:
    with pytest.raises(ConfigError, match="DATABASE_URL"):
        DatabaseConfig.from_env({"DATABASE_URL": "mysql://x"})


def test_api_keys_map_to_tenants() -> None:
    auth = AuthConfig.from_env(
        {"LIGHTMIND_AUTH": "api_key", "LIGHTMIND_API_KEYS": "acme=k1, globex=k2"}
    )
    assert auth.keys == {"k1": "acme", "k2": "globex"}


def test_server_address_brackets_ipv6() -> None:
    config = ServerConfig.from_env("x", "LIGHTMIND_X", 1, {"LIGHTMIND_HOST": "::"})
    assert config.address == "[::]:1"
