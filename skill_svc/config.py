"""SkillService configuration, from ``LIGHTMIND_SKILL_*`` (and shared) environment variables.

Every variable, its default and its meaning is listed in docs/skill.md. The executors' safety
limits (allow-lists, sandbox limits, response sizes) live here so they are validated once at
start-up and can be tightened per deployment without code changes.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from lightmind.config import (
    AuthConfig,
    ClientConfig,
    ConfigError,
    DatabaseConfig,
    ServerConfig,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_str,
)

PREFIX = "LIGHTMIND_SKILL"


def _default_script_python() -> str:
    # The sandbox drops to an unprivileged uid, which must be able to execute the interpreter;
    # a distribution python under /usr is, a pyenv build under /root usually is not.
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(candidate):
            return candidate
    return shutil.which("python3") or sys.executable


@dataclass(frozen=True)
class SandboxConfig:
    """Limits of the ``script`` executor's sandboxed subprocess."""

    python: str
    isolation: str  # "required": refuse to run without namespaces; "best_effort": run anyway
    uid_base: int
    cpu_seconds: int
    memory_mb: int
    file_size_mb: int
    open_files: int
    processes: int
    output_bytes: int


@dataclass(frozen=True)
class SkillConfig:
    server: ServerConfig
    auth: AuthConfig
    database: DatabaseConfig
    clients: ClientConfig
    default_timeout_seconds: float
    max_timeout_seconds: float
    max_content_bytes: int
    python_modules: tuple[str, ...]
    rest_allowed_hosts: tuple[str, ...]
    rest_max_response_bytes: int
    mcp_stdio_commands: tuple[str, ...]
    sandbox: SandboxConfig
    request_ttl_hours: int
    page_token_secret: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> SkillConfig:
        env = os.environ if env is None else env
        default_timeout = env_float(env, f"{PREFIX}_DEFAULT_TIMEOUT_SECONDS", 30.0, minimum=0.01)
        max_timeout = env_float(env, f"{PREFIX}_MAX_TIMEOUT_SECONDS", 300.0, minimum=0.01)
        if default_timeout > max_timeout:
            raise ConfigError(
                f"{PREFIX}_DEFAULT_TIMEOUT_SECONDS={default_timeout} exceeds "
                f"{PREFIX}_MAX_TIMEOUT_SECONDS={max_timeout}"
            )
        python = env_str(env, f"{PREFIX}_SCRIPT_PYTHON", _default_script_python())
        if not os.path.isabs(python):
            raise ConfigError(f"{PREFIX}_SCRIPT_PYTHON={python!r}: expected an absolute path")
        return cls(
            server=ServerConfig.from_env("skill", PREFIX, 50053, env),
            auth=AuthConfig.from_env(env),
            database=DatabaseConfig.from_env(env),
            clients=ClientConfig.from_env(env),
            default_timeout_seconds=default_timeout,
            max_timeout_seconds=max_timeout,
            max_content_bytes=env_int(env, f"{PREFIX}_MAX_CONTENT_BYTES", 256 * 1024, minimum=1024),
            python_modules=env_list(
                env, f"{PREFIX}_PYTHON_MODULES", ("skill_svc.builtins", "skill_svc.memory_tools")
            ),
            rest_allowed_hosts=env_list(env, f"{PREFIX}_REST_ALLOWED_HOSTS", ("*",)),
            rest_max_response_bytes=env_int(
                env, f"{PREFIX}_REST_MAX_RESPONSE_BYTES", 1024 * 1024, minimum=1
            ),
            mcp_stdio_commands=env_list(env, f"{PREFIX}_MCP_STDIO_COMMANDS", ()),
            sandbox=SandboxConfig(
                python=python,
                isolation=env_choice(
                    env,
                    f"{PREFIX}_SCRIPT_ISOLATION",
                    "required",
                    ("required", "best_effort"),
                ),
                uid_base=env_int(env, f"{PREFIX}_SCRIPT_UID_BASE", 61000, minimum=1000),
                cpu_seconds=env_int(env, f"{PREFIX}_SCRIPT_CPU_SECONDS", 10, minimum=1),
                memory_mb=env_int(env, f"{PREFIX}_SCRIPT_MEMORY_MB", 256, minimum=32),
                file_size_mb=env_int(env, f"{PREFIX}_SCRIPT_FILE_SIZE_MB", 16, minimum=1),
                open_files=env_int(env, f"{PREFIX}_SCRIPT_OPEN_FILES", 64, minimum=16),
                processes=env_int(env, f"{PREFIX}_SCRIPT_PROCESSES", 16, minimum=1),
                output_bytes=env_int(
                    env, f"{PREFIX}_SCRIPT_OUTPUT_BYTES", 1024 * 1024, minimum=1024
                ),
            ),
            request_ttl_hours=env_int(env, f"{PREFIX}_REQUEST_TTL_HOURS", 24, minimum=1),
            page_token_secret=env_str(env, f"{PREFIX}_PAGE_TOKEN_SECRET", ""),
        )
