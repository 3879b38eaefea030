"""SQL for skills, tools and their parameters, plus the request-id answer log.

Every query is keyed by ``current_tenant()`` (the ``host_id`` column). Writes bump
``aggregate_version`` and, when the caller sent an etag, compare it in the same statement so a
concurrent change is detected without a lock (stale → ``Aborted``). Unique names are enforced
by the database: ``UniqueViolationError`` becomes ``AlreadyExists`` here, by class.
Assignments, grants, dependencies and the agent view live in ``relations``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import asyncpg

from lightmind.errors import Aborted, AlreadyExists, InvalidArgument, NotFound
from lightmind.tenancy import current_tenant
from skill_svc.records import Grant, SkillRecord, ToolRecord, parameter_from_row
from skill_svc.schema import Parameter, is_uuid

SKILL_COLUMNS = (
    "skill_id, name, description, content_markdown, parent_skill_id, version, license, "
    "metadata, active, aggregate_version, create_ts, update_ts, update_user"
)
TOOL_COLUMNS = (
    "tool_id, name, description, implementation_type, implementation, output_schema, "
    "annotations, required_access_level, version, active, aggregate_version, create_ts, "
    "update_ts, update_user"
)
# Columns UpdateSkill / UpdateTool may set, from field-mask paths (an allow-list: these names
# are interpolated into SQL).
SKILL_UPDATABLE = {
    "name": "name",
    "description": "description",
    "content": "content_markdown",
    "parent_skill_id": "parent_skill_id",
    "version": "version",
    "license": "license",
    "metadata": "metadata",
    "active": "active",
}
TOOL_UPDATABLE = {
    "name": "name",
    "description": "description",
    "implementation_type": "implementation_type",
    "implementation": "implementation",
    "output_schema": "output_schema",
    "annotations": "annotations",
    "required_access_level": "required_access_level",
    "version": "version",
    "active": "active",
}


class Repository:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    # -- references -----------------------------------------------------------------------

    async def skill_id(self, ref: str, conn: Any = None, *, field: str = "skill") -> str:
        """The id of the skill ``ref`` names (name or id), active or not."""
        if not ref:
            raise InvalidArgument.field(field, "is required")
        db = conn or self.pool
        column = "skill_id" if is_uuid(ref) else "name"
        value: Any = uuid.UUID(ref) if column == "skill_id" else ref
        found = await db.fetchval(
            f"SELECT skill_id FROM skill_t WHERE host_id = $1 AND {column} = $2",
            current_tenant(),
            value,
        )
        if found is None:
            raise NotFound(
                f"{field}: no skill {ref!r}", reason="SKILL_NOT_FOUND", metadata={"field": field}
            )
        return str(found)

    async def tool_id(self, ref: str, conn: Any = None, *, field: str = "tool") -> str:
        if not ref:
            raise InvalidArgument.field(field, "is required")
        db = conn or self.pool
        column = "tool_id" if is_uuid(ref) else "name"
        value: Any = uuid.UUID(ref) if column == "tool_id" else ref
        found = await db.fetchval(
            f"SELECT tool_id FROM tool_t WHERE host_id = $1 AND {column} = $2",
            current_tenant(),
            value,
        )
        if found is None:
            raise NotFound(
                f"{field}: no tool {ref!r}", reason="TOOL_NOT_FOUND", metadata={"field": field}
            )
        return str(found)

    # -- skills ---------------------------------------------------------------------------

    async def get_skill(self, skill_id: str, conn: Any = None) -> SkillRecord:
        db = conn or self.pool
        row = await db.fetchrow(
            f"SELECT {SKILL_COLUMNS} FROM skill_t WHERE host_id = $1 AND skill_id = $2",
            current_tenant(),
            uuid.UUID(skill_id),
        )
        if row is None:
            raise NotFound(f"skill: no skill {skill_id!r}", reason="SKILL_NOT_FOUND")
        return SkillRecord.from_row(row)

    async def list_skills(
        self, *, after: str | None, limit: int, show_inactive: bool, parent_skill_id: str
    ) -> list[SkillRecord]:
        rows = await self.pool.fetch(
            f"""SELECT {SKILL_COLUMNS} FROM skill_t
                WHERE host_id = $1 AND ($2::text IS NULL OR name > $2)
                  AND ($3 OR active)
                  AND ($4::uuid IS NULL OR parent_skill_id = $4)
                ORDER BY name LIMIT $5""",
            current_tenant(),
            after,
            show_inactive,
            uuid.UUID(parent_skill_id) if parent_skill_id else None,
            limit,
        )
        return [SkillRecord.from_row(r) for r in rows]

    async def insert_skill(
        self,
        conn: Any,
        *,
        name: str,
        description: str,
        content: str,
        parent_skill_id: str,
        version: str,
        license: str,
        metadata: dict[str, str],
        embedding: Sequence[float],
        model: str,
    ) -> str:
        skill_id = uuid.uuid4()
        try:
            await conn.execute(
                """INSERT INTO skill_t (host_id, skill_id, parent_skill_id, name, description,
                       content_markdown, description_embedding, embedding_model, version,
                       license, metadata, update_user)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $1::text)""",
                current_tenant(),
                skill_id,
                uuid.UUID(parent_skill_id) if parent_skill_id else None,
                name,
                description,
                content,
                embedding,
                model,
                version or "1.0.0",
                license,
                metadata,
            )
        except asyncpg.UniqueViolationError:
            raise AlreadyExists(
                f"skill.name: a skill named {name!r} already exists",
                reason="SKILL_ALREADY_EXISTS",
                metadata={"field": "skill.name"},
            ) from None
        except asyncpg.ForeignKeyViolationError:
            raise NotFound(
                f"skill.parent_skill_id: no skill {parent_skill_id!r}", reason="SKILL_NOT_FOUND"
            ) from None
        return str(skill_id)

    async def update_skill(
        self,
        conn: Any,
        skill_id: str,
        values: dict[str, Any],
        expected_version: int | None,
    ) -> None:
        """Sets the given columns (keys of SKILL_UPDATABLE's values, plus embedding columns)."""
        await self._update("skill_t", "skill_id", conn, skill_id, values, expected_version)

    async def _update(
        self,
        table: str,
        key: str,
        conn: Any,
        row_id: str,
        values: dict[str, Any],
        expected_version: int | None,
    ) -> None:
        sets = [f"{column} = ${i}" for i, column in enumerate(values, start=4)]
        sets += ["aggregate_version = aggregate_version + 1", "update_ts = now()"]
        sets.append("update_user = $1::text")
        try:
            status = await conn.execute(
                f"""UPDATE {table} SET {", ".join(sets)}
                    WHERE host_id = $1 AND {key} = $2
                      AND ($3::bigint IS NULL OR aggregate_version = $3)""",
                current_tenant(),
                uuid.UUID(row_id),
                expected_version,
                *values.values(),
            )
        except asyncpg.UniqueViolationError:
            raise AlreadyExists(
                f"name: {values.get('name')!r} is taken", reason="NAME_ALREADY_EXISTS"
            ) from None
        except asyncpg.ForeignKeyViolationError:
            raise NotFound("parent_skill_id: no such skill", reason="SKILL_NOT_FOUND") from None
        if status.endswith(" 0"):
            exists = await conn.fetchval(
                f"SELECT aggregate_version FROM {table} WHERE host_id = $1 AND {key} = $2",
                current_tenant(),
                uuid.UUID(row_id),
            )
            if exists is None:
                raise NotFound(f"{key}: no row {row_id!r}")
            raise Aborted(
                f"etag: stale; the current etag is {exists}: read again and retry",
                reason="ETAG_MISMATCH",
                metadata={"current_etag": str(exists)},
            )

    async def skill_files(self, skill_id: str) -> list[tuple[str, bytes]]:
        rows = await self.pool.fetch(
            "SELECT path, content FROM skill_file_t WHERE host_id = $1 AND skill_id = $2 "
            "ORDER BY path",
            current_tenant(),
            uuid.UUID(skill_id),
        )
        return [(r["path"], bytes(r["content"])) for r in rows]

    async def replace_skill_files(
        self, conn: Any, skill_id: str, files: Sequence[tuple[str, bytes]]
    ) -> None:
        tenant = current_tenant()
        await conn.execute(
            "DELETE FROM skill_file_t WHERE host_id = $1 AND skill_id = $2",
            tenant,
            uuid.UUID(skill_id),
        )
        if files:
            await conn.executemany(
                "INSERT INTO skill_file_t (host_id, skill_id, path, content) "
                "VALUES ($1, $2, $3, $4)",
                [(tenant, uuid.UUID(skill_id), path, content) for path, content in files],
            )

    # -- tools ----------------------------------------------------------------------------

    async def _parameters(self, db: Any, tool_ids: list[uuid.UUID]) -> dict[str, list[Parameter]]:
        rows = await db.fetch(
            """SELECT tool_id, name, param_type, required, default_value, description,
                      validation_schema, order_index
               FROM tool_param_t WHERE host_id = $1 AND tool_id = ANY($2) AND active
               ORDER BY order_index, name""",
            current_tenant(),
            tool_ids,
        )
        found: dict[str, list[Parameter]] = {str(t): [] for t in tool_ids}
        for row in rows:
            found[str(row["tool_id"])].append(parameter_from_row(row))
        return found

    async def find_tool(self, ref: str, conn: Any = None, *, field: str = "tool") -> ToolRecord:
        """The tool ``ref`` names (name or id) with its parameters, in one query."""
        tool, _ = await self._find_tool(ref, conn, field, with_grants=False)
        return tool

    async def tool_for_execution(self, ref: str, conn: Any) -> tuple[ToolRecord, list[Grant]]:
        """The tool with its parameters and every active grant of it, in one query: this is
        the first read of every ExecuteTool."""
        return await self._find_tool(ref, conn, "tool", with_grants=True)

    async def _find_tool(
        self, ref: str, conn: Any, field: str, *, with_grants: bool
    ) -> tuple[ToolRecord, list[Grant]]:
        if not ref:
            raise InvalidArgument.field(field, "is required")
        column = "tool_id" if is_uuid(ref) else "name"
        grants_sql = (
            """COALESCE((SELECT jsonb_agg(jsonb_build_object(
                             'skill_id', g.skill_id, 'access_level', g.access_level,
                             'config', g.config, 'aggregate_version', g.aggregate_version))
                         FROM skill_tool_t g
                         WHERE g.host_id = t.host_id AND g.tool_id = t.tool_id AND g.active),
                        '[]'::jsonb)"""
            if with_grants
            else "'[]'::jsonb"
        )
        row = await (conn or self.pool).fetchrow(
            f"""SELECT {TOOL_COLUMNS},
                   COALESCE((SELECT jsonb_agg(jsonb_build_object(
                                 'name', p.name, 'param_type', p.param_type,
                                 'required', p.required, 'default_value', p.default_value,
                                 'description', p.description,
                                 'validation_schema', p.validation_schema,
                                 'order_index', p.order_index)
                               ORDER BY p.order_index, p.name)
                             FROM tool_param_t p
                             WHERE p.host_id = t.host_id AND p.tool_id = t.tool_id
                               AND p.active), '[]'::jsonb) AS params,
                   {grants_sql} AS grants
                FROM tool_t t WHERE t.host_id = $1 AND t.{column} = $2""",
            current_tenant(),
            uuid.UUID(ref) if column == "tool_id" else ref,
        )
        if row is None:
            raise NotFound(
                f"{field}: no tool {ref!r}", reason="TOOL_NOT_FOUND", metadata={"field": field}
            )
        tool = ToolRecord.from_row(row, [parameter_from_row(p) for p in row["params"]])
        grants = [
            Grant(
                str(g["skill_id"]),
                tool.tool_id,
                tool.name,
                g["access_level"],
                dict(g["config"] or {}),
                int(g["aggregate_version"]),
            )
            for g in row["grants"]
        ]
        return tool, grants

    async def get_skills(self, skill_ids: Sequence[str]) -> list[SkillRecord]:
        """The skills with these ids, in the given order (missing ones left out)."""
        rows = await self.pool.fetch(
            f"SELECT {SKILL_COLUMNS} FROM skill_t WHERE host_id = $1 AND skill_id = ANY($2)",
            current_tenant(),
            [uuid.UUID(s) for s in skill_ids],
        )
        by_id = {str(r["skill_id"]): SkillRecord.from_row(r) for r in rows}
        return [by_id[s] for s in skill_ids if s in by_id]

    async def get_tool(self, tool_id: str, conn: Any = None) -> ToolRecord:
        tools = await self.get_tools([tool_id], conn)
        if not tools:
            raise NotFound(f"tool: no tool {tool_id!r}", reason="TOOL_NOT_FOUND")
        return tools[0]

    async def get_tools(self, tool_ids: Sequence[str], conn: Any = None) -> list[ToolRecord]:
        """The tools with these ids, in the given order (missing ones left out)."""
        db = conn or self.pool
        ids = [uuid.UUID(t) for t in tool_ids]
        rows = await db.fetch(
            f"SELECT {TOOL_COLUMNS} FROM tool_t WHERE host_id = $1 AND tool_id = ANY($2)",
            current_tenant(),
            ids,
        )
        params = await self._parameters(db, ids)
        by_id = {str(r["tool_id"]): ToolRecord.from_row(r, params[str(r["tool_id"])]) for r in rows}
        return [by_id[t] for t in tool_ids if t in by_id]

    async def list_tools(
        self, *, after: str | None, limit: int, show_inactive: bool, skill_id: str
    ) -> list[ToolRecord]:
        rows = await self.pool.fetch(
            f"""SELECT {TOOL_COLUMNS} FROM tool_t t
                WHERE host_id = $1 AND ($2::text IS NULL OR name > $2) AND ($3 OR active)
                  AND ($4::uuid IS NULL OR EXISTS (
                      SELECT 1 FROM skill_tool_t st WHERE st.host_id = t.host_id
                        AND st.tool_id = t.tool_id AND st.skill_id = $4 AND st.active))
                ORDER BY name LIMIT $5""",
            current_tenant(),
            after,
            show_inactive,
            uuid.UUID(skill_id) if skill_id else None,
            limit,
        )
        params = await self._parameters(self.pool, [r["tool_id"] for r in rows])
        return [ToolRecord.from_row(r, params[str(r["tool_id"])]) for r in rows]

    async def insert_tool(
        self,
        conn: Any,
        *,
        name: str,
        description: str,
        implementation_type: str,
        implementation: dict[str, Any],
        output_schema: dict[str, Any] | None,
        annotations: dict[str, Any],
        required_access_level: str | None,
        version: str,
        parameters: list[Parameter],
        embedding: Sequence[float],
        model: str,
    ) -> str:
        tool_id = uuid.uuid4()
        try:
            await conn.execute(
                """INSERT INTO tool_t (host_id, tool_id, name, description, implementation_type,
                       implementation, output_schema, annotations, required_access_level,
                       description_embedding, embedding_model, version, update_user)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $1::text)""",
                current_tenant(),
                tool_id,
                name,
                description,
                implementation_type,
                implementation,
                output_schema,
                annotations,
                required_access_level,
                embedding,
                model,
                version or "1.0.0",
            )
        except asyncpg.UniqueViolationError:
            raise AlreadyExists(
                f"tool.name: a tool named {name!r} already exists",
                reason="TOOL_ALREADY_EXISTS",
                metadata={"field": "tool.name"},
            ) from None
        await self.replace_parameters(conn, str(tool_id), parameters)
        return str(tool_id)

    async def update_tool(
        self, conn: Any, tool_id: str, values: dict[str, Any], expected_version: int | None
    ) -> None:
        await self._update("tool_t", "tool_id", conn, tool_id, values, expected_version)

    async def replace_parameters(
        self, conn: Any, tool_id: str, parameters: Sequence[Parameter]
    ) -> None:
        tenant = current_tenant()
        await conn.execute(
            "DELETE FROM tool_param_t WHERE host_id = $1 AND tool_id = $2",
            tenant,
            uuid.UUID(tool_id),
        )
        if parameters:
            await conn.executemany(
                """INSERT INTO tool_param_t (host_id, param_id, tool_id, name, param_type,
                       required, default_value, description, validation_schema, order_index,
                       update_user)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $1::text)""",
                [
                    (
                        tenant,
                        uuid.uuid4(),
                        uuid.UUID(tool_id),
                        p.name,
                        p.type,
                        p.required,
                        p.default,
                        p.description,
                        dict(p.validation_schema) if p.validation_schema else None,
                        p.order,
                    )
                    for p in parameters
                ],
            )

    # -- request-id answers ---------------------------------------------------------------
