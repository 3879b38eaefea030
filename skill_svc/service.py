"""The gRPC front of SkillService: registry RPCs, progressive disclosure, discovery, execution.

Handlers validate, call the repository/relations, and convert records to protos. Mutations
that carry a ``request_id`` go through ``_once``: the first answer is stored (serialized) and
a repeat with the same id returns it; the same id with a different request is refused.
Import/export RPCs live in ``service_io``; ExecuteTool's permission and retry logic in
``runner``. Errors are raised as ``lightmind.errors``; the shared interceptor maps them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from google.protobuf import empty_pb2
from google.protobuf.message import Message

from lightmind import metrics
from lightmind.db import open_database
from lightmind.errors import FailedPrecondition, InvalidArgument, PermissionDenied
from lightmind.etags import parse_etag
from lightmind.pagination import PageTokens, page_size
from lightmind.requestlog import RequestLog
from lightmind.server import Context, ServiceDefinition
from lightmind.skill.v1 import skill_service_pb2 as pb
from lightmind.skill.v1 import skill_service_pb2_grpc as pb_grpc
from lightmind.tenancy import current_tenant
from skill_svc import convert, runner, service_io
from skill_svc.config import SkillConfig
from skill_svc.embeddings import Embedder, skill_text, tool_text
from skill_svc.executors.base import ExecutionContext, Executor
from skill_svc.executors.mcp_server import McpExecutor
from skill_svc.executors.python import PythonExecutor
from skill_svc.executors.rest import RestExecutor
from skill_svc.executors.script import ScriptExecutor
from skill_svc.records import ToolRecord
from skill_svc.relations import Relations
from skill_svc.repository import (
    SKILL_UPDATABLE,
    Repository,
)
from skill_svc.schema import is_uuid
from skill_svc.validation import (
    SKILL_FIELDS,
    TOOL_FIELDS,
    ToolChecker,
    check_request_id,
    check_skill,
    mask_paths,
)

log = logging.getLogger("lightmind.skill")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["SkillService"].full_name
ERROR_DOMAIN = "skill.lightmind.dev"
M = TypeVar("M", bound=Message)
IMPLEMENTATION_ALIASES = {k: "implementation" for k in ("python", "rest", "mcp_server", "script")}


def required(value: str, field: str) -> str:
    if not value:
        raise InvalidArgument.field(field, "is required")
    return value


class SkillServicer(pb_grpc.SkillServiceServicer):
    def __init__(
        self,
        config: SkillConfig,
        repo: Repository,
        relations: Relations,
        embedder: Embedder,
        executors: dict[str, Executor],
        checker: ToolChecker,
    ) -> None:
        self.config = config
        self.repo = repo
        self.relations = relations
        self.embedder = embedder
        self.executors = executors
        self.checker = checker
        self.tokens = PageTokens(config.page_token_secret)
        self.requests = RequestLog(repo.pool)

    # -- request-id replay ----------------------------------------------------------------

    async def _once(
        self,
        method: str,
        request: Any,
        response_type: type[M],
        make: Callable[[], Awaitable[M]],
    ) -> M:
        response, _ = await self._once_with(method, request, response_type, make)
        return response

    async def _once_with(
        self,
        method: str,
        request: Any,
        response_type: type[M],
        make: Callable[[], Awaitable[M]],
    ) -> tuple[M, bool]:
        """The answer and whether it was replayed from the request-id log."""
        return await self.requests.once_with_replay(method, request, response_type, make)

    # -- skills ---------------------------------------------------------------------------

    async def _skill_proto(self, skill_id: str) -> pb.Skill:
        record = await self.repo.get_skill(skill_id)
        grants = await self.relations.grants_of([skill_id], active_tools_only=False)
        deps = await self.relations.dependencies_of(skill_id)
        return convert.skill_to_proto(record, grants, deps)

    async def CreateSkill(self, request: pb.CreateSkillRequest, context: Context) -> pb.Skill:
        skill = request.skill
        check_skill(skill, list(SKILL_FIELDS), self.config.max_content_bytes)
        check_request_id(request.request_id)

        async def make() -> pb.Skill:
            model, [vector] = await self.embedder.documents(
                [skill_text(skill.name, skill.description)]
            )
            async with self.repo.pool.acquire() as conn, conn.transaction():
                skill_id = await self.repo.insert_skill(
                    conn,
                    name=skill.name,
                    description=skill.description,
                    content=skill.content,
                    parent_skill_id=skill.parent_skill_id,
                    version=skill.version,
                    license=skill.license,
                    metadata=dict(skill.metadata),
                    embedding=vector,
                    model=model,
                )
            return await self._skill_proto(skill_id)

        return await self._once("CreateSkill", request, pb.Skill, make)

    async def GetSkill(self, request: pb.GetSkillRequest, context: Context) -> pb.Skill:
        return await self._skill_proto(await self.repo.skill_id(request.skill))

    async def ListSkills(
        self, request: pb.ListSkillsRequest, context: Context
    ) -> pb.ListSkillsResponse:
        size = page_size(request.page_size, 50, 500)
        if request.parent_skill_id and not is_uuid(request.parent_skill_id):
            raise InvalidArgument.field("parent_skill_id", "must be a skill id (UUID)")
        scope = f"ListSkills|{request.show_inactive}|{request.parent_skill_id}"
        after = self.tokens.decode(request.page_token, scope) if request.page_token else None
        records = await self.repo.list_skills(
            after=str(after) if after is not None else None,
            limit=size + 1,
            show_inactive=request.show_inactive,
            parent_skill_id=request.parent_skill_id,
        )
        response = pb.ListSkillsResponse()
        for record in records[:size]:
            response.skills.append(convert.skill_to_proto(record))
        if len(records) > size:
            response.next_page_token = self.tokens.encode(records[size - 1].name, scope)
        return response

    async def UpdateSkill(self, request: pb.UpdateSkillRequest, context: Context) -> pb.Skill:
        skill = request.skill
        if not is_uuid(skill.skill_id):
            raise InvalidArgument.field("skill.skill_id", "must be the skill's id (UUID)")
        fields = mask_paths(list(request.update_mask.paths), SKILL_FIELDS, {})
        check_skill(skill, fields, self.config.max_content_bytes)
        expected = parse_etag(request.etag or skill.etag)
        check_request_id(request.request_id)

        async def make() -> pb.Skill:
            current = await self.repo.get_skill(skill.skill_id)
            values: dict[str, Any] = {}
            for path in fields:
                value: Any = getattr(skill, path)
                if path == "metadata":
                    value = dict(value)
                elif path == "parent_skill_id":
                    if value == skill.skill_id:
                        raise InvalidArgument.field("skill.parent_skill_id", "cannot be itself")
                    value = value or None
                elif path == "version":
                    value = value or "1.0.0"
                values[SKILL_UPDATABLE[path]] = value
            if "name" in fields or "description" in fields:
                name = skill.name if "name" in fields else current.name
                text = skill.description if "description" in fields else current.description
                model, [vector] = await self.embedder.documents([skill_text(name, text)])
                values["description_embedding"] = vector
                values["embedding_model"] = model
            async with self.repo.pool.acquire() as conn, conn.transaction():
                await self.repo.update_skill(conn, skill.skill_id, values, expected)
            return await self._skill_proto(skill.skill_id)

        return await self._once("UpdateSkill", request, pb.Skill, make)

    async def DeleteSkill(
        self, request: pb.DeleteSkillRequest, context: Context
    ) -> empty_pb2.Empty:
        expected = parse_etag(request.etag)
        check_request_id(request.request_id)

        async def make() -> empty_pb2.Empty:
            skill_id = await self.repo.skill_id(request.skill)
            async with self.repo.pool.acquire() as conn, conn.transaction():
                await self.repo.update_skill(conn, skill_id, {"active": False}, expected)
            return empty_pb2.Empty()

        return await self._once("DeleteSkill", request, empty_pb2.Empty, make)

    # -- tools ----------------------------------------------------------------------------

    async def CreateTool(self, request: pb.CreateToolRequest, context: Context) -> pb.Tool:
        tool = request.tool
        kind, impl, params = self.checker.check(tool, list(TOOL_FIELDS))
        check_request_id(request.request_id)

        async def make() -> pb.Tool:
            model, [vector] = await self.embedder.documents(
                [tool_text(tool.name, tool.description)]
            )
            async with self.repo.pool.acquire() as conn, conn.transaction():
                tool_id = await self.repo.insert_tool(
                    conn,
                    name=tool.name,
                    description=tool.description,
                    implementation_type=kind,
                    implementation=impl,
                    output_schema=convert.dict_of(tool.output_schema)
                    if tool.HasField("output_schema")
                    else None,
                    annotations=convert.annotations_from_proto(tool.annotations),
                    required_access_level=convert.LEVELS.get(tool.required_access_level),
                    version=tool.version,
                    parameters=params,
                    embedding=vector,
                    model=model,
                )
            return convert.tool_to_proto(await self.repo.get_tool(tool_id))

        return await self._once("CreateTool", request, pb.Tool, make)

    async def GetTool(self, request: pb.GetToolRequest, context: Context) -> pb.Tool:
        tool_id = await self.repo.tool_id(request.tool)
        return convert.tool_to_proto(await self.repo.get_tool(tool_id))

    async def ListTools(
        self, request: pb.ListToolsRequest, context: Context
    ) -> pb.ListToolsResponse:
        size = page_size(request.page_size, 50, 500)
        skill_id = await self.repo.skill_id(request.skill) if request.skill else ""
        scope = f"ListTools|{request.show_inactive}|{skill_id}"
        after = self.tokens.decode(request.page_token, scope) if request.page_token else None
        records = await self.repo.list_tools(
            after=str(after) if after is not None else None,
            limit=size + 1,
            show_inactive=request.show_inactive,
            skill_id=skill_id,
        )
        response = pb.ListToolsResponse(tools=[convert.tool_to_proto(t) for t in records[:size]])
        if len(records) > size:
            response.next_page_token = self.tokens.encode(records[size - 1].name, scope)
        return response

    async def UpdateTool(self, request: pb.UpdateToolRequest, context: Context) -> pb.Tool:
        tool = request.tool
        if not is_uuid(tool.tool_id):
            raise InvalidArgument.field("tool.tool_id", "must be the tool's id (UUID)")
        fields = mask_paths(list(request.update_mask.paths), TOOL_FIELDS, IMPLEMENTATION_ALIASES)
        kind, impl, params = self.checker.check(tool, fields)
        expected = parse_etag(request.etag or tool.etag)
        check_request_id(request.request_id)

        async def make() -> pb.Tool:
            current = await self.repo.get_tool(tool.tool_id)
            values: dict[str, Any] = {}
            for path in fields:
                if path == "implementation":
                    values["implementation_type"] = kind
                    values["implementation"] = impl
                elif path == "output_schema":
                    values["output_schema"] = (
                        convert.dict_of(tool.output_schema)
                        if tool.HasField("output_schema")
                        else None
                    )
                elif path == "annotations":
                    values["annotations"] = convert.annotations_from_proto(tool.annotations)
                elif path == "required_access_level":
                    values["required_access_level"] = convert.LEVELS.get(tool.required_access_level)
                elif path == "version":
                    values["version"] = tool.version or "1.0.0"
                elif path != "parameters":
                    values[path] = getattr(tool, path)
            if "name" in fields or "description" in fields:
                name = tool.name if "name" in fields else current.name
                text = tool.description if "description" in fields else current.description
                model, [vector] = await self.embedder.documents([tool_text(name, text)])
                values["description_embedding"] = vector
                values["embedding_model"] = model
            async with self.repo.pool.acquire() as conn, conn.transaction():
                await self.repo.update_tool(conn, tool.tool_id, values, expected)
                if "parameters" in fields:
                    await self.repo.replace_parameters(conn, tool.tool_id, params)
            return convert.tool_to_proto(await self.repo.get_tool(tool.tool_id))

        return await self._once("UpdateTool", request, pb.Tool, make)

    async def DeleteTool(self, request: pb.DeleteToolRequest, context: Context) -> empty_pb2.Empty:
        expected = parse_etag(request.etag)
        check_request_id(request.request_id)

        async def make() -> empty_pb2.Empty:
            tool_id = await self.repo.tool_id(request.tool)
            async with self.repo.pool.acquire() as conn, conn.transaction():
                await self.repo.update_tool(conn, tool_id, {"active": False}, expected)
            return empty_pb2.Empty()

        return await self._once("DeleteTool", request, empty_pb2.Empty, make)

    # -- relations ------------------------------------------------------------------------

    async def AssignSkill(self, request: pb.AssignSkillRequest, context: Context) -> pb.AgentSkill:
        required(request.agent_id, "agent_id")
        if len(request.agent_id) > 126:
            raise InvalidArgument.field("agent_id", "must be at most 126 characters")
        if request.timeout_seconds < 0:
            raise InvalidArgument.field("timeout_seconds", "must not be negative")
        if request.timeout_seconds > self.config.max_timeout_seconds:
            raise InvalidArgument.field(
                "timeout_seconds",
                f"must be at most {self.config.max_timeout_seconds:g} "
                "(LIGHTMIND_SKILL_MAX_TIMEOUT_SECONDS)",
            )
        if not 0 <= request.max_retries <= runner.MAX_RETRIES:
            raise InvalidArgument.field("max_retries", f"must be 0-{runner.MAX_RETRIES}")
        expected = parse_etag(request.etag)
        check_request_id(request.request_id)

        async def make() -> pb.AgentSkill:
            skill_id = await self.repo.skill_id(request.skill)
            assignment = await self.relations.assign(
                agent_id=request.agent_id,
                skill_id=skill_id,
                config=convert.dict_of(request.config),
                priority=request.priority,
                sequence=request.sequence,
                timeout_seconds=request.timeout_seconds,
                max_retries=request.max_retries,
                allowed_users=list(request.allowed_users),
                expected_version=expected,
            )
            return convert.assignment_to_proto(assignment)

        return await self._once("AssignSkill", request, pb.AgentSkill, make)

    async def UnassignSkill(
        self, request: pb.UnassignSkillRequest, context: Context
    ) -> empty_pb2.Empty:
        required(request.agent_id, "agent_id")
        check_request_id(request.request_id)

        async def make() -> empty_pb2.Empty:
            skill_id = await self.repo.skill_id(request.skill)
            await self.relations.unassign(request.agent_id, skill_id)
            return empty_pb2.Empty()

        return await self._once("UnassignSkill", request, empty_pb2.Empty, make)

    async def AttachTool(self, request: pb.AttachToolRequest, context: Context) -> pb.SkillTool:
        if request.access_level not in pb.AccessLevel.values():
            raise InvalidArgument.field("access_level", "unknown value")
        check_request_id(request.request_id)

        async def make() -> pb.SkillTool:
            skill_id = await self.repo.skill_id(request.skill)
            tool_id = await self.repo.tool_id(request.tool)
            grant = await self.relations.attach(
                skill_id,
                tool_id,
                convert.LEVELS.get(request.access_level, "read"),
                convert.dict_of(request.config),
            )
            return convert.grant_to_proto(grant)

        return await self._once("AttachTool", request, pb.SkillTool, make)

    async def DetachTool(self, request: pb.DetachToolRequest, context: Context) -> empty_pb2.Empty:
        check_request_id(request.request_id)

        async def make() -> empty_pb2.Empty:
            skill_id = await self.repo.skill_id(request.skill)
            tool_id = await self.repo.tool_id(request.tool)
            await self.relations.detach(skill_id, tool_id)
            return empty_pb2.Empty()

        return await self._once("DetachTool", request, empty_pb2.Empty, make)

    async def AddDependency(
        self, request: pb.AddDependencyRequest, context: Context
    ) -> pb.SkillDependency:
        check_request_id(request.request_id)

        async def make() -> pb.SkillDependency:
            skill_id = await self.repo.skill_id(request.skill)
            depends_on = await self.repo.skill_id(request.depends_on, field="depends_on")
            dep = await self.relations.add_dependency(skill_id, depends_on, request.required)
            return convert.dependency_to_proto(dep)

        return await self._once("AddDependency", request, pb.SkillDependency, make)

    async def RemoveDependency(
        self, request: pb.RemoveDependencyRequest, context: Context
    ) -> empty_pb2.Empty:
        check_request_id(request.request_id)

        async def make() -> empty_pb2.Empty:
            skill_id = await self.repo.skill_id(request.skill)
            depends_on = await self.repo.skill_id(request.depends_on, field="depends_on")
            await self.relations.remove_dependency(skill_id, depends_on)
            return empty_pb2.Empty()

        return await self._once("RemoveDependency", request, empty_pb2.Empty, make)

    # -- progressive disclosure -----------------------------------------------------------

    async def ListAgentSkills(
        self, request: pb.ListAgentSkillsRequest, context: Context
    ) -> pb.ListAgentSkillsResponse:
        required(request.agent_id, "agent_id")
        size = page_size(request.page_size, 100, 1000)
        scope = f"ListAgentSkills|{request.agent_id}|{request.user_id}"
        token = self.tokens.decode(request.page_token, scope) if request.page_token else 0
        offset = token if isinstance(token, int) and token >= 0 else 0
        view = await self.relations.agent_view(request.agent_id)
        usable = view.usable(request.user_id)
        response = pb.ListAgentSkillsResponse()
        for a in usable[offset : offset + size]:
            node = view.nodes[a.skill_id]
            response.skills.append(
                pb.SkillSummary(skill_id=a.skill_id, name=node.name, description=node.description)
            )
        if len(usable) > offset + size:
            response.next_page_token = self.tokens.encode(offset + size, scope)
        return response

    async def LoadSkill(
        self, request: pb.LoadSkillRequest, context: Context
    ) -> pb.LoadSkillResponse:
        required(request.agent_id, "agent_id")
        skill_id = await self.repo.skill_id(request.skill)
        view = await self.relations.agent_view(request.agent_id)
        if skill_id not in view.reachable(request.user_id):
            assigned = next((a for a in view.assignments if a.skill_id == skill_id), None)
            if assigned is not None:
                blocker = view.unavailable_because(skill_id)
                if blocker is not None:
                    what = (
                        "it" if blocker.skill_id == skill_id else f"its dependency {blocker.name!r}"
                    )
                    raise FailedPrecondition(
                        f"skill: {request.skill!r} is unavailable: {what} is inactive",
                        reason="SKILL_UNAVAILABLE",
                        metadata={"inactive_skill": blocker.name},
                    )
                raise PermissionDenied(
                    f"skill: user {request.user_id!r} may not use {request.skill!r} through "
                    f"agent {request.agent_id!r}",
                    reason="USER_NOT_ALLOWED",
                )
            raise PermissionDenied(
                f"skill: agent {request.agent_id!r} has no usable skill {request.skill!r}",
                reason="SKILL_NOT_ASSIGNED",
            )
        closure = view.closure(skill_id)
        grants = await self.relations.grants_of(closure, active_tools_only=True)
        tool_ids = list(dict.fromkeys(g.tool_id for g in grants))
        tools = await self.repo.get_tools(tool_ids)
        record = await self.repo.get_skill(skill_id)
        return pb.LoadSkillResponse(
            skill=pb.SkillSummary(
                skill_id=skill_id, name=record.name, description=record.description
            ),
            content=record.content,
            tools=[convert.tool_definition(t) for t in tools],
            dependencies=[
                pb.SkillSummary(
                    skill_id=s, name=view.nodes[s].name, description=view.nodes[s].description
                )
                for s in closure[:-1]
            ],
            version=record.version,
        )

    # -- discovery ------------------------------------------------------------------------

    async def _discover(
        self, table: str, query: str, top_k: int, agent_id: str, user_id: str, min_score: float
    ) -> tuple[str, list[tuple[str, float]]]:
        if not query.strip():
            raise InvalidArgument.field("query", "is required")
        if not 0 <= top_k <= 100:
            raise InvalidArgument.field("top_k", "must be 0-100")
        restrict: list[str] | None = None
        if agent_id:
            reachable = list((await self.relations.agent_view(agent_id)).reachable(user_id))
            if table == "tool_t":
                grants = await self.relations.grants_of(reachable, active_tools_only=True)
                reachable = list(dict.fromkeys(g.tool_id for g in grants))
            restrict = reachable
            if not restrict:
                model, _ = await self.embedder.query(query)
                return model, []
        model, vector = await self.embedder.query(query)
        found = await self.relations.search(table, vector, model, top_k or 5, restrict)
        found.sort(key=lambda item: -item[1])
        # 0 (unset) means no threshold: cosine similarities can be negative.
        return model, [(i, s) for i, s in found if not min_score or s >= min_score]

    async def DiscoverSkills(
        self, request: pb.DiscoverSkillsRequest, context: Context
    ) -> pb.DiscoverSkillsResponse:
        model, found = await self._discover(
            "skill_t",
            request.query,
            request.top_k,
            request.agent_id,
            request.user_id,
            request.min_score,
        )
        response = pb.DiscoverSkillsResponse(model=model)
        records = {s.skill_id: s for s in await self.repo.get_skills([i for i, _ in found])}
        for skill_id, score in found:
            record = records[skill_id]
            response.results.append(
                pb.ScoredSkill(
                    skill=pb.SkillSummary(
                        skill_id=skill_id, name=record.name, description=record.description
                    ),
                    score=score,
                )
            )
        return response

    async def DiscoverTools(
        self, request: pb.DiscoverToolsRequest, context: Context
    ) -> pb.DiscoverToolsResponse:
        model, found = await self._discover(
            "tool_t",
            request.query,
            request.top_k,
            request.agent_id,
            request.user_id,
            request.min_score,
        )
        tools = {t.tool_id: t for t in await self.repo.get_tools([i for i, _ in found])}
        return pb.DiscoverToolsResponse(
            model=model,
            results=[
                pb.ScoredTool(tool=convert.tool_definition(tools[i]), score=s, tool_id=i)
                for i, s in found
                if i in tools
            ],
        )

    # -- execution ------------------------------------------------------------------------

    async def ExecuteTool(
        self, request: pb.ExecuteToolRequest, context: Context
    ) -> pb.ExecuteToolResponse:
        required(request.tool, "tool")
        required(request.caller.agent_id, "caller.agent_id")
        check_request_id(request.request_id)
        remaining = context.time_remaining()
        response, replayed = await self._once_with(
            "ExecuteTool",
            request,
            pb.ExecuteToolResponse,
            lambda: self._execute(request, remaining),
        )
        response.replayed = replayed
        return response

    async def _execute(
        self, request: pb.ExecuteToolRequest, remaining: float | None
    ) -> pb.ExecuteToolResponse:
        caller = request.caller
        # The read phase on one connection (one pool round trip instead of four), released
        # before the tool runs: a slow tool must not hold a database connection.
        async with self.repo.pool.acquire() as conn:
            tool, grants = await self.repo.tool_for_execution(request.tool, conn)
            if not tool.active:
                raise FailedPrecondition(f"tool: {tool.name!r} is deleted", reason="TOOL_INACTIVE")
            via = await self.repo.skill_id(request.skill, conn) if request.skill else None
            view = await self.relations.agent_view(caller.agent_id, conn)
            kind = tool.implementation_type
            try:
                permit = runner.authorize(view, tool, grants, caller.user_id, via)
            except PermissionDenied:
                metrics.TOOL_EXECUTIONS.labels(kind, "denied").inc()
                raise
        timeout = float(permit.assignment.timeout_seconds) or self.config.default_timeout_seconds
        timeout = min(timeout, self.config.max_timeout_seconds)
        if remaining is not None:
            timeout = max(0.001, min(timeout, remaining - 0.05))
        ctx = ExecutionContext(
            tenant=current_tenant(),
            agent_id=caller.agent_id,
            user_id=caller.user_id,
            session_id=caller.session_id,
            timeout_seconds=timeout,
            config=permit.config,
        )
        arguments = convert.dict_of(request.arguments)
        try:
            result = await runner.run_tool(
                self._executor(tool), tool, arguments, ctx, permit.assignment.max_retries
            )
        except InvalidArgument:
            metrics.TOOL_EXECUTIONS.labels(kind, "invalid").inc()
            raise
        outcome = "tool_error" if result.outcome.is_error else "ok"
        metrics.TOOL_EXECUTIONS.labels(kind, outcome).inc()
        return self._response(tool, result, request.request_id)

    def _executor(self, tool: ToolRecord) -> Executor:
        return self.executors[tool.implementation_type]

    @staticmethod
    def _response(
        tool: ToolRecord, result: runner.RunResult, request_id: str
    ) -> pb.ExecuteToolResponse:
        outcome = result.outcome
        response = pb.ExecuteToolResponse(
            is_error=outcome.is_error,
            tool=tool.name,
            attempts=result.attempts,
            duration_ms=result.duration_ms,
            execution_id=request_id or str(uuid.uuid4()),
        )
        text = runner.model_text(outcome)
        if text is not None:
            response.content.append(pb.ContentBlock(text=pb.TextContent(text=text)))
        for data, mime in outcome.images:
            response.content.append(
                pb.ContentBlock(image=pb.ImageContent(data=data, mime_type=mime))
            )
        if outcome.value is not None:
            value = outcome.value if isinstance(outcome.value, dict) else {"result": outcome.value}
            try:
                response.structured_content.update(value)
            except (ValueError, TypeError):
                log.warning("tool %s returned a value protobuf cannot hold", tool.name)
        return response

    # -- import / export (service_io) -----------------------------------------------------

    async def ImportMcpTools(
        self, request: pb.ImportMcpToolsRequest, context: Context
    ) -> pb.ImportMcpToolsResponse:
        return await service_io.import_mcp_tools(self, request, context)

    async def ImportSkills(
        self, request: pb.ImportSkillsRequest, context: Context
    ) -> pb.ImportSkillsResponse:
        return await service_io.import_skills(self, request, context)

    async def ExportSkill(
        self, request: pb.ExportSkillRequest, context: Context
    ) -> pb.ExportSkillResponse:
        return await service_io.export_skill(self, request, context)


async def build(config: SkillConfig) -> ServiceDefinition:
    """Opens the migrated database and the executors, then describes the service."""
    pool = await open_database(
        config.database, schema="skill", migrations_package="skill_svc.migrations"
    )
    metrics.track_pool("skill", pool.get_size, pool.get_idle_size)
    embedder = Embedder(
        config.clients.embedding_addr,
        config.clients.call_timeout_seconds,
        tls_ca_file=config.clients.tls_ca_file,
    )
    python = PythonExecutor(config.python_modules)
    rest = RestExecutor(config.rest_allowed_hosts, config.rest_max_response_bytes)
    mcp = McpExecutor(config.mcp_stdio_commands)
    script = ScriptExecutor(config.sandbox)
    executors: dict[str, Executor] = {
        "python": python,
        "rest": rest,
        "mcp_server": mcp,
        "script": script,
    }
    repo = Repository(pool)
    servicer = SkillServicer(
        config, repo, Relations(pool), embedder, executors, ToolChecker(python, rest, mcp)
    )

    async def warmup() -> None:
        log.info("script sandbox: %s", await script.probe())
        expired = await RequestLog(pool).purge(config.request_ttl_hours)
        if expired:
            log.info("expired %d stored request answers", expired)

    async def close() -> None:
        await rest.close()
        await embedder.close()
        await pool.close()

    return ServiceDefinition(
        service_names=[SERVICE_NAME],
        error_domain=ERROR_DOMAIN,
        register=lambda server: pb_grpc.add_SkillServiceServicer_to_server(servicer, server),
        warmup=warmup,
        closers=[close],
    )
