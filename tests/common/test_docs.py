"""The README documents every environment variable the code reads."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("lightmind", "embedding_svc", "memory_svc", "skill_svc", "agent_svc")
# Prefixes passed to ServerConfig.from_env; their ports are documented as LIGHTMIND_<SERVICE>_PORT.
SERVICE_PREFIXES = {
    "LIGHTMIND_EMBEDDING",
    "LIGHTMIND_MEMORY",
    "LIGHTMIND_SKILL",
    "LIGHTMIND_AGENT",
    "LIGHTMIND_LLM",
}


def variables_read() -> set[str]:
    found: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "/v1/" in path.as_posix():
                continue  # generated stubs
            source = path.read_text()
            constants = dict(re.findall(r'^(\w*PREFIX)\s*=\s*"(LIGHTMIND_[A-Z_]+)"', source, re.M))
            found |= set(re.findall(r'"(LIGHTMIND_[A-Z0-9_]+)"', source))
            for name, suffix in re.findall(r'f"\{(\w*PREFIX)\}_([A-Z0-9_]+)"', source):
                if name in constants:
                    found.add(f"{constants[name]}_{suffix}")
    return found - SERVICE_PREFIXES


def test_every_variable_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    read = variables_read()
    assert len(read) > 60  # the scan itself works
    missing = sorted(v for v in read if f"`{v}`" not in readme)
    assert not missing, f"read by the code but not documented in README.md: {missing}"
