"""Proto ↔ record conversion: the only module that knows both shapes.

Implementations are stored as JSON (``implementation_type`` + ``implementation``) and
rebuilt into the proto's oneof here; parameters, annotations and access levels likewise.
JSON values cross into protobuf Structs (whose numbers are doubles) through ``struct_of`` and
come back through ``schema.integral`` so 3 stays 3.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format, struct_pb2, timestamp_pb2

from lightmind.etags import format_etag
from lightmind.skill.v1 import skill_service_pb2 as pb
from skill_svc.records import Assignment, Dependency, Grant, SkillRecord, ToolRecord
from skill_svc.schema import Parameter, integral

LEVELS = {
    pb.ACCESS_LEVEL_READ: "read",
    pb.ACCESS_LEVEL_WRITE: "write",
    pb.ACCESS_LEVEL_EXECUTE: "execute",
}
LEVEL_ENUM = {v: k for k, v in LEVELS.items()}
PARAM_TYPES = {
    pb.PARAMETER_TYPE_STRING: "string",
    pb.PARAMETER_TYPE_NUMBER: "number",
    pb.PARAMETER_TYPE_INTEGER: "integer",
    pb.PARAMETER_TYPE_BOOLEAN: "boolean",
    pb.PARAMETER_TYPE_OBJECT: "object",
    pb.PARAMETER_TYPE_ARRAY: "array",
}
PARAM_ENUM = {v: k for k, v in PARAM_TYPES.items()}
TRANSPORTS = {pb.MCP_TRANSPORT_STDIO: "stdio", pb.MCP_TRANSPORT_STREAMABLE_HTTP: "streamable_http"}
TRANSPORT_ENUM = {v: k for k, v in TRANSPORTS.items()}


def struct_of(value: Mapping[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(dict(value))
    return out


def dict_of(message: struct_pb2.Struct) -> dict[str, Any]:
    result: dict[str, Any] = integral(json_format.MessageToDict(message))
    return result


def value_of(message: struct_pb2.Value) -> Any:
    return integral(json_format.MessageToDict(message))


def timestamp(value: Any) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromDatetime(value)
    return ts


def etag(version: int) -> str:
    return format_etag(version)


def skill_to_proto(
    s: SkillRecord, grants: list[Grant] | None = None, deps: list[Dependency] | None = None
) -> pb.Skill:
    return pb.Skill(
        skill_id=s.skill_id,
        name=s.name,
        description=s.description,
        content=s.content,
        parent_skill_id=s.parent_skill_id,
        version=s.version,
        license=s.license,
        metadata=s.metadata,
        active=s.active,
        etag=etag(s.aggregate_version),
        create_time=timestamp(s.create_ts),
        update_time=timestamp(s.update_ts),
        update_user=s.update_user,
        tools=[grant_to_proto(g) for g in grants or []],
        dependencies=[dependency_to_proto(d) for d in deps or []],
    )


def grant_to_proto(g: Grant) -> pb.SkillTool:
    return pb.SkillTool(
        skill_id=g.skill_id,
        tool_id=g.tool_id,
        tool_name=g.tool_name,
        access_level=LEVEL_ENUM[g.access_level],
        config=struct_of(g.config),
        etag=etag(g.aggregate_version),
    )


def dependency_to_proto(d: Dependency) -> pb.SkillDependency:
    return pb.SkillDependency(
        skill_id=d.skill_id,
        depends_on_skill_id=d.depends_on_skill_id,
        depends_on_skill_name=d.depends_on_name,
        required=d.required,
    )


def assignment_to_proto(a: Assignment) -> pb.AgentSkill:
    return pb.AgentSkill(
        agent_id=a.agent_id,
        skill_id=a.skill_id,
        skill_name=a.skill_name,
        config=struct_of(a.config),
        priority=a.priority,
        sequence=a.sequence,
        timeout_seconds=a.timeout_seconds,
        max_retries=a.max_retries,
        allowed_users=a.allowed_users,
        active=True,
        etag=etag(a.aggregate_version),
        update_time=timestamp(a.update_ts),
    )


def parameter_from_proto(p: pb.ToolParameter) -> Parameter:
    return Parameter(
        name=p.name,
        type=PARAM_TYPES.get(p.type, ""),
        required=p.required,
        default=value_of(p.default_value) if p.HasField("default_value") else None,
        description=p.description,
        validation_schema=dict_of(p.validation_schema) if p.HasField("validation_schema") else None,
        order=p.order,
    )


def parameter_to_proto(p: Parameter) -> pb.ToolParameter:
    out = pb.ToolParameter(
        name=p.name,
        type=PARAM_ENUM[p.type],
        required=p.required,
        description=p.description,
        order=p.order,
    )
    if p.default is not None:
        json_format.ParseDict(p.default, out.default_value)
    if p.validation_schema is not None:
        out.validation_schema.update(dict(p.validation_schema))
    return out


def annotations_from_proto(a: pb.ToolAnnotations) -> dict[str, Any]:
    found = {
        "title": a.title,
        "read_only_hint": a.read_only_hint,
        "destructive_hint": a.destructive_hint,
        "idempotent_hint": a.idempotent_hint,
        "open_world_hint": a.open_world_hint,
    }
    return {k: v for k, v in found.items() if v}


def annotations_to_proto(a: Mapping[str, Any]) -> pb.ToolAnnotations:
    return pb.ToolAnnotations(
        title=a.get("title", ""),
        read_only_hint=bool(a.get("read_only_hint")),
        destructive_hint=bool(a.get("destructive_hint")),
        idempotent_hint=bool(a.get("idempotent_hint")),
        open_world_hint=bool(a.get("open_world_hint")),
    )


def server_from_proto(s: pb.McpServer) -> dict[str, Any]:
    return {
        "name": s.name,
        "transport": TRANSPORTS.get(s.transport, ""),
        "command": s.command,
        "args": list(s.args),
        "env": dict(s.env),
        "url": s.url,
        "headers": dict(s.headers),
    }


def server_to_proto(s: Mapping[str, Any]) -> pb.McpServer:
    return pb.McpServer(
        name=s.get("name", ""),
        transport=TRANSPORT_ENUM.get(s.get("transport", ""), pb.MCP_TRANSPORT_UNSPECIFIED),
        command=s.get("command", ""),
        args=s.get("args", []),
        env=s.get("env", {}),
        url=s.get("url", ""),
        headers=s.get("headers", {}),
    )


def implementation_from_proto(t: pb.Tool) -> tuple[str, dict[str, Any]]:
    """("" , {}) when the oneof is not set."""
    kind = t.WhichOneof("implementation")
    if kind == "python":
        return "python", {"callable": t.python.callable}
    if kind == "rest":
        return "rest", {
            "method": t.rest.method.upper(),
            "url_template": t.rest.url_template,
            "headers": dict(t.rest.headers),
            "timeout_seconds": t.rest.timeout_seconds,
        }
    if kind == "mcp_server":
        return "mcp_server", {
            "server": server_from_proto(t.mcp_server.server),
            "tool_name": t.mcp_server.tool_name,
        }
    if kind == "script":
        return "script", {"content": t.script.content}
    return "", {}


def tool_to_proto(t: ToolRecord) -> pb.Tool:
    out = pb.Tool(
        tool_id=t.tool_id,
        name=t.name,
        description=t.description,
        parameters=[parameter_to_proto(p) for p in t.parameters],
        annotations=annotations_to_proto(t.annotations),
        required_access_level=LEVEL_ENUM.get(
            t.explicit_access_level or "", pb.ACCESS_LEVEL_UNSPECIFIED
        ),
        version=t.version,
        active=t.active,
        etag=etag(t.aggregate_version),
        create_time=timestamp(t.create_ts),
        update_time=timestamp(t.update_ts),
        update_user=t.update_user,
        input_schema=struct_of(t.input_schema),
    )
    impl = t.implementation
    if t.implementation_type == "python":
        out.python.callable = impl["callable"]
    elif t.implementation_type == "rest":
        out.rest.CopyFrom(
            pb.RestImplementation(
                method=impl["method"],
                url_template=impl["url_template"],
                headers=impl.get("headers", {}),
                timeout_seconds=impl.get("timeout_seconds", 0),
            )
        )
    elif t.implementation_type == "mcp_server":
        out.mcp_server.CopyFrom(
            pb.McpServerImplementation(
                server=server_to_proto(impl["server"]), tool_name=impl.get("tool_name", "")
            )
        )
    elif t.implementation_type == "script":
        out.script.content = impl["content"]
    if t.output_schema is not None:
        out.output_schema.update(t.output_schema)
    return out


def tool_definition(t: ToolRecord) -> pb.ToolDefinition:
    out = pb.ToolDefinition(
        name=t.name,
        title=t.annotations.get("title", ""),
        description=t.description,
        input_schema=struct_of(t.input_schema),
        annotations=annotations_to_proto(t.annotations),
    )
    if t.output_schema is not None:
        out.output_schema.update(t.output_schema)
    return out
