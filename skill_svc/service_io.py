"""Import and export RPCs: MCP servers' tool lists in, Agent Skills folders in and out.

ImportMcpTools turns each MCP tool's inputSchema back into parameters: every top-level
property becomes one parameter (its JSON type — the first non-null one when a list is given,
"string" when none is — its description and default), and the property's remaining keywords
become the parameter's validation schema. Root-level ``$defs`` are not carried over, so a
property that uses ``$ref`` loses that constraint. ImportSkills embeds every description in
one batch and writes all skills in one transaction: an import is all or nothing.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import mcp_types

from lightmind.errors import AlreadyExists, FailedPrecondition, FieldViolation, InvalidArgument
from lightmind.skill.v1 import skill_service_pb2 as pb
from lightmind.tenancy import current_tenant
from skill_svc import agent_skills, convert
from skill_svc.embeddings import skill_text, tool_text
from skill_svc.schema import PARAM_TYPES, Parameter, check_skill_name, check_tool_name, raise_if
from skill_svc.validation import check_request_id

if TYPE_CHECKING:
    from lightmind.server import Context
    from skill_svc.service import SkillServicer

log = logging.getLogger("lightmind.skill.io")
MCP_LIST_TIMEOUT_SECONDS = 30.0


def parameters_from_schema(schema: dict[str, Any]) -> list[Parameter]:
    required = set(schema.get("required") or [])
    params: list[Parameter] = []
    for order, (name, prop) in enumerate((schema.get("properties") or {}).items()):
        prop = dict(prop) if isinstance(prop, dict) else {}
        kind = prop.pop("type", None)
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        if kind not in PARAM_TYPES:
            kind = "string"
        description = str(prop.pop("description", ""))
        default = prop.pop("default", None)
        prop.pop("title", None)
        params.append(
            Parameter(
                name=name,
                type=kind,
                required=name in required,
                default=default,
                description=description,
                validation_schema=prop or None,
                order=order,
            )
        )
    return params


async def import_mcp_tools(
    svc: SkillServicer, request: pb.ImportMcpToolsRequest, context: Context
) -> pb.ImportMcpToolsResponse:
    server = convert.server_from_proto(request.server)
    svc.checker.mcp.check(server, "server")
    check_request_id(request.request_id)
    if request.access_level not in pb.AccessLevel.values():
        raise InvalidArgument.field("access_level", "unknown value")

    async def make() -> pb.ImportMcpToolsResponse:
        try:
            listed = await asyncio.wait_for(
                svc.checker.mcp.list_tools(server), MCP_LIST_TIMEOUT_SECONDS
            )
        except Exception as exc:
            log.warning("listing MCP tools failed", exc_info=exc)
            raise FailedPrecondition(
                f"server: could not list the MCP server's tools: {type(exc).__name__}: {exc}",
                reason="MCP_SERVER_UNREACHABLE",
            ) from None
        wanted = set(request.tool_names)
        chosen: list[mcp_types.Tool] = [t for t in listed if not wanted or t.name in wanted]
        missing = wanted - {t.name for t in listed}
        if missing:
            raise InvalidArgument.field("tool_names", f"the server has no tools {sorted(missing)}")
        names = [request.name_prefix + t.name for t in chosen]
        raise_if(check_tool_name(n, f"tool_names[{n}]") for n in names)
        skill_id = await svc.repo.skill_id(request.skill) if request.skill else None
        model, vectors = await svc.embedder.documents(
            [tool_text(n, t.description or n) for n, t in zip(names, chosen, strict=True)]
        )
        tool_ids: list[str] = []
        async with svc.repo.pool.acquire() as conn, conn.transaction():
            for name, tool, vector in zip(names, chosen, vectors, strict=True):
                annotations = {}
                if tool.annotations is not None:
                    annotations = {
                        k: v
                        for k, v in tool.annotations.model_dump().items()
                        if v
                        and k
                        in (
                            "title",
                            "read_only_hint",
                            "destructive_hint",
                            "idempotent_hint",
                            "open_world_hint",
                        )
                    }
                fields: dict[str, Any] = dict(
                    name=name,
                    description=tool.description or name,
                    implementation_type="mcp_server",
                    implementation={"server": server, "tool_name": tool.name},
                    output_schema=tool.output_schema,
                    annotations=annotations,
                    required_access_level=None,
                    version="1.0.0",
                    parameters=parameters_from_schema(dict(tool.input_schema or {})),
                    embedding=vector,
                    model=model,
                )
                existing = await conn.fetchval(
                    "SELECT tool_id FROM tool_t WHERE host_id = $1 AND name = $2",
                    current_tenant(),
                    name,
                )
                if existing is None:
                    tool_id = await svc.repo.insert_tool(conn, **fields)
                elif not request.overwrite:
                    raise AlreadyExists(
                        f"tool_names: a tool named {name!r} already exists; set overwrite",
                        reason="TOOL_ALREADY_EXISTS",
                    )
                else:
                    tool_id = str(existing)
                    params = fields.pop("parameters")
                    fields["description_embedding"] = fields.pop("embedding")
                    fields["embedding_model"] = fields.pop("model")
                    fields["active"] = True
                    await svc.repo.update_tool(conn, tool_id, fields, None)
                    await svc.repo.replace_parameters(conn, tool_id, params)
                tool_ids.append(tool_id)
        if skill_id is not None:
            level = convert.LEVELS.get(request.access_level, "read")
            for tool_id in tool_ids:
                await svc.relations.attach(skill_id, tool_id, level, {})
        tools = await svc.repo.get_tools(tool_ids)
        return pb.ImportMcpToolsResponse(tools=[convert.tool_to_proto(t) for t in tools])

    return await svc._once("ImportMcpTools", request, pb.ImportMcpToolsResponse, make)


async def import_skills(
    svc: SkillServicer, request: pb.ImportSkillsRequest, context: Context
) -> pb.ImportSkillsResponse:
    check_request_id(request.request_id)
    files = [(f.path, f.content) for f in request.files]
    if request.zip_archive:
        files += agent_skills.files_from_zip(request.zip_archive)
    if not files:
        raise InvalidArgument.field("files", "give files or a zip_archive")
    found = agent_skills.folders(files)
    problems: list[FieldViolation | None] = []
    for i, folder in enumerate(found):
        where = f"files[{folder.folder or '.'}/SKILL.md]"
        problems.append(check_skill_name(folder.name, f"{where}.name"))
        if not folder.description:
            problems.append(FieldViolation(f"{where}.description", "is required"))
        elif len(folder.description) > 500:
            problems.append(
                FieldViolation(f"{where}.description", "must be at most 500 characters")
            )
        if not folder.body.strip():
            problems.append(FieldViolation(f"{where}.body", "is empty"))
        if i != [f.name for f in found].index(folder.name):
            problems.append(FieldViolation(f"{where}.name", "is used by two folders"))
    raise_if(problems)

    async def make() -> pb.ImportSkillsResponse:
        model, vectors = await svc.embedder.documents(
            [skill_text(f.name, f.description) for f in found]
        )
        skill_ids: list[str] = []
        async with svc.repo.pool.acquire() as conn, conn.transaction():
            for folder, vector in zip(found, vectors, strict=True):
                existing = await conn.fetchval(
                    "SELECT skill_id FROM skill_t WHERE host_id = $1 AND name = $2",
                    current_tenant(),
                    folder.name,
                )
                if existing is None:
                    skill_id = await svc.repo.insert_skill(
                        conn,
                        name=folder.name,
                        description=folder.description,
                        content=folder.body,
                        parent_skill_id="",
                        version=folder.metadata.get("version", ""),
                        license=folder.license,
                        metadata=folder.metadata,
                        embedding=vector,
                        model=model,
                    )
                elif not request.overwrite:
                    raise AlreadyExists(
                        f"files: a skill named {folder.name!r} already exists; set overwrite",
                        reason="SKILL_ALREADY_EXISTS",
                    )
                else:
                    skill_id = str(existing)
                    await svc.repo.update_skill(
                        conn,
                        skill_id,
                        {
                            "description": folder.description,
                            "content_markdown": folder.body,
                            "license": folder.license,
                            "metadata": folder.metadata,
                            "description_embedding": vector,
                            "embedding_model": model,
                            "active": True,
                        },
                        None,
                    )
                await svc.repo.replace_skill_files(conn, skill_id, folder.files)
                skill_ids.append(skill_id)
        return pb.ImportSkillsResponse(skills=[await svc._skill_proto(s) for s in skill_ids])

    return await svc._once("ImportSkills", request, pb.ImportSkillsResponse, make)


async def export_skill(
    svc: SkillServicer, request: pb.ExportSkillRequest, context: Context
) -> pb.ExportSkillResponse:
    skill_id = await svc.repo.skill_id(request.skill)
    record = await svc.repo.get_skill(skill_id)
    text = agent_skills.render_skill_md(
        record.name, record.description, record.content, record.license, record.metadata
    )
    files = [(f"{record.name}/SKILL.md", text.encode())]
    files += [
        (f"{record.name}/{path}", content) for path, content in await svc.repo.skill_files(skill_id)
    ]
    return pb.ExportSkillResponse(
        files=[pb.SkillFile(path=p, content=c) for p, c in files],
        zip_archive=agent_skills.to_zip(files),
    )
