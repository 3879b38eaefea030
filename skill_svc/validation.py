"""Request validation for skills and tools: every bad field is named, nothing is stored.

Each ``check_*`` collects all violations of a resource before raising one InvalidArgument, so
a client fixes a request in one round trip. Implementation details are checked by the
executor that will run them (allow-listed module, URL host, MCP command).
"""

from __future__ import annotations

from typing import Any

from lightmind.errors import FieldViolation, InvalidArgument
from lightmind.skill.v1 import skill_service_pb2 as pb
from skill_svc import convert
from skill_svc.executors.mcp_server import McpExecutor
from skill_svc.executors.python import PythonExecutor
from skill_svc.executors.rest import RestExecutor
from skill_svc.schema import (
    DESCRIPTION_MAX,
    TOOL_DESCRIPTION_MAX,
    VERSION_MAX,
    Parameter,
    check_parameters,
    check_schema,
    check_skill_name,
    check_tool_name,
    is_uuid,
    raise_if,
)

SKILL_FIELDS = (
    "name",
    "description",
    "content",
    "parent_skill_id",
    "version",
    "license",
    "metadata",
    "active",
)
TOOL_FIELDS = (
    "name",
    "description",
    "implementation",
    "parameters",
    "output_schema",
    "annotations",
    "required_access_level",
    "version",
    "active",
)


def mask_paths(paths: list[str], allowed: tuple[str, ...], aliases: dict[str, str]) -> list[str]:
    if not paths or paths == ["*"]:
        return [p for p in allowed if p != "active"]
    out: list[str] = []
    bad: list[FieldViolation] = []
    for i, path in enumerate(paths):
        path = aliases.get(path.split(".")[0], path)
        if path not in allowed:
            bad.append(
                FieldViolation(
                    f"update_mask.paths[{i}]",
                    f"{path!r} cannot be updated; use one of {', '.join(allowed)}",
                )
            )
        elif path not in out:
            out.append(path)
    raise_if(bad)
    return out


def check_request_id(request_id: str) -> None:
    if request_id and not is_uuid(request_id):
        raise InvalidArgument.field("request_id", "must be a UUID")


def check_skill(skill: pb.Skill, fields: list[str], max_content: int) -> None:
    v: list[FieldViolation | None] = []
    if "name" in fields:
        v.append(check_skill_name(skill.name, "skill.name"))
    if "description" in fields:
        if not skill.description.strip():
            v.append(FieldViolation("skill.description", "is required"))
        elif len(skill.description) > DESCRIPTION_MAX:
            v.append(
                FieldViolation("skill.description", f"must be at most {DESCRIPTION_MAX} characters")
            )
    if "content" in fields:
        if not skill.content.strip():
            v.append(FieldViolation("skill.content", "is required"))
        elif len(skill.content.encode()) > max_content:
            v.append(FieldViolation("skill.content", f"must be at most {max_content} bytes"))
    if "parent_skill_id" in fields and skill.parent_skill_id and not is_uuid(skill.parent_skill_id):
        v.append(FieldViolation("skill.parent_skill_id", "must be a skill id (UUID)"))
    if "version" in fields and len(skill.version) > VERSION_MAX:
        v.append(FieldViolation("skill.version", f"must be at most {VERSION_MAX} characters"))
    raise_if(v)


class ToolChecker:
    def __init__(self, python: PythonExecutor, rest: RestExecutor, mcp: McpExecutor) -> None:
        self.python = python
        self.rest = rest
        self.mcp = mcp

    def check(
        self, tool: pb.Tool, fields: list[str]
    ) -> tuple[str, dict[str, Any], list[Parameter]]:
        v: list[FieldViolation | None] = []
        if "name" in fields:
            v.append(check_tool_name(tool.name, "tool.name"))
        if "description" in fields:
            if not tool.description.strip():
                v.append(FieldViolation("tool.description", "is required"))
            elif len(tool.description) > TOOL_DESCRIPTION_MAX:
                v.append(
                    FieldViolation(
                        "tool.description", f"must be at most {TOOL_DESCRIPTION_MAX} characters"
                    )
                )
        params = [convert.parameter_from_proto(p) for p in tool.parameters]
        if "parameters" in fields:
            v.extend(check_parameters(params, "tool.parameters"))
        if "output_schema" in fields and tool.HasField("output_schema"):
            v.append(check_schema(convert.dict_of(tool.output_schema), "tool.output_schema"))
        if "version" in fields and len(tool.version) > VERSION_MAX:
            v.append(FieldViolation("tool.version", f"must be at most {VERSION_MAX} characters"))
        if (
            "required_access_level" in fields
            and tool.required_access_level not in pb.AccessLevel.values()
        ):
            v.append(FieldViolation("tool.required_access_level", "unknown value"))
        raise_if(v)
        kind, impl = convert.implementation_from_proto(tool)
        if "implementation" in fields:
            self.check_implementation(kind, impl)
        return kind, impl, params

    def check_implementation(self, kind: str, impl: dict[str, Any]) -> None:
        if kind == "":
            raise InvalidArgument.field(
                "tool.implementation", "set one of python, rest, mcp_server, script"
            )
        if kind == "python":
            self.python.check(impl["callable"], "tool.python.callable")
        elif kind == "rest":
            self.rest.check(impl, "tool.rest")
        elif kind == "mcp_server":
            self.mcp.check(impl["server"], "tool.mcp_server.server")
        elif kind == "script" and not impl["content"].strip():
            raise InvalidArgument.field("tool.script.content", "is required")
