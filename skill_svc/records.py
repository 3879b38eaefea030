"""Plain records the repository returns and the service turns into protos.

Kept free of protobuf and asyncpg so the execution path and the pure rules can use them
without either; ``from_row`` helpers are the one place that knows the column names.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from skill_svc.schema import Parameter, input_schema, required_level


@dataclass(frozen=True)
class SkillRecord:
    skill_id: str
    name: str
    description: str
    content: str
    parent_skill_id: str
    version: str
    license: str
    metadata: dict[str, str]
    active: bool
    aggregate_version: int
    create_ts: dt.datetime
    update_ts: dt.datetime
    update_user: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> SkillRecord:
        return cls(
            skill_id=str(row["skill_id"]),
            name=row["name"],
            description=row["description"],
            content=row["content_markdown"],
            parent_skill_id=str(row["parent_skill_id"]) if row["parent_skill_id"] else "",
            version=row["version"],
            license=row["license"],
            metadata=dict(row["metadata"] or {}),
            active=row["active"],
            aggregate_version=row["aggregate_version"],
            create_ts=row["create_ts"],
            update_ts=row["update_ts"],
            update_user=row["update_user"],
        )


@dataclass(frozen=True)
class ToolRecord:
    tool_id: str
    name: str
    description: str
    implementation_type: str
    implementation: dict[str, Any]
    output_schema: dict[str, Any] | None
    annotations: dict[str, Any]
    explicit_access_level: str | None
    version: str
    active: bool
    aggregate_version: int
    create_ts: dt.datetime
    update_ts: dt.datetime
    update_user: str
    parameters: list[Parameter] = field(default_factory=list)

    @classmethod
    def from_row(cls, row: Mapping[str, Any], parameters: list[Parameter]) -> ToolRecord:
        return cls(
            tool_id=str(row["tool_id"]),
            name=row["name"],
            description=row["description"],
            implementation_type=row["implementation_type"],
            implementation=dict(row["implementation"]),
            output_schema=row["output_schema"],
            annotations=dict(row["annotations"] or {}),
            explicit_access_level=row["required_access_level"],
            version=row["version"],
            active=row["active"],
            aggregate_version=row["aggregate_version"],
            create_ts=row["create_ts"],
            update_ts=row["update_ts"],
            update_user=row["update_user"],
            parameters=parameters,
        )

    @property
    def input_schema(self) -> dict[str, Any]:
        return input_schema(self.parameters)

    @property
    def required_access_level(self) -> str:
        return required_level(self.explicit_access_level, self.annotations)

    @property
    def idempotent(self) -> bool:
        return bool(
            self.annotations.get("idempotent_hint") or self.annotations.get("read_only_hint")
        )


def parameter_from_row(row: Mapping[str, Any]) -> Parameter:
    return Parameter(
        name=row["name"],
        type=row["param_type"],
        required=row["required"],
        default=row["default_value"],
        description=row["description"],
        validation_schema=row["validation_schema"],
        order=row["order_index"],
    )


@dataclass(frozen=True)
class Assignment:
    agent_id: str
    skill_id: str
    skill_name: str
    config: dict[str, Any]
    priority: int
    sequence: int
    timeout_seconds: int
    max_retries: int
    allowed_users: list[str]
    aggregate_version: int
    update_ts: dt.datetime

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Assignment:
        return cls(
            agent_id=row["agent_def_id"],
            skill_id=str(row["skill_id"]),
            skill_name=row["name"],
            config=dict(row["config"] or {}),
            priority=row["priority"],
            sequence=row["sequence_id"],
            timeout_seconds=row["timeout_seconds"],
            max_retries=row["max_retries"],
            allowed_users=list(row["allowed_users"] or []),
            aggregate_version=row["aggregate_version"],
            update_ts=row["update_ts"],
        )

    def allows(self, user_id: str) -> bool:
        return not self.allowed_users or user_id in self.allowed_users


@dataclass(frozen=True)
class Grant:
    skill_id: str
    tool_id: str
    tool_name: str
    access_level: str
    config: dict[str, Any]
    aggregate_version: int


@dataclass(frozen=True)
class Dependency:
    skill_id: str
    depends_on_skill_id: str
    depends_on_name: str
    required: bool


@dataclass(frozen=True)
class GraphNode:
    """A skill as the agent view sees it: enough to decide availability and to list it."""

    skill_id: str
    name: str
    description: str
    active: bool
    required_deps: list[str]
