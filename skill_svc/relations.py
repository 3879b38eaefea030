"""Who has what: agent→skill assignments, skill→tool grants, skill→skill dependencies, the
agent view that progressive disclosure and permission checks are computed from, and kNN search.

``AgentView`` loads, in two queries, an agent's active assignments and every skill reachable
from them through active required dependencies (a recursive CTE; ``UNION`` stops on cycles).
A skill is *available* when it and all of its required dependencies, transitively, are active;
it is *usable* by a user when it is available and its assignment does not exclude the user.
Adding a dependency runs under a per-tenant transaction advisory lock, so two concurrent
additions cannot together close a cycle that each alone would not.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from lightmind.errors import Aborted, FailedPrecondition, NotFound
from lightmind.tenancy import current_tenant
from skill_svc import graph
from skill_svc.records import Assignment, Dependency, Grant, GraphNode


@dataclass
class AgentView:
    agent_id: str
    assignments: list[Assignment]  # ordered: priority desc, sequence, name
    nodes: dict[str, GraphNode]

    @property
    def edges(self) -> dict[str, list[str]]:
        return {sid: node.required_deps for sid, node in self.nodes.items()}

    def closure(self, skill_id: str) -> list[str]:
        """The skill and its required dependencies, dependencies first."""
        return graph.dependencies_first(self.edges, skill_id)

    def unavailable_because(self, skill_id: str) -> GraphNode | None:
        """The first inactive skill in the closure (the skill itself or a dependency)."""
        for sid in self.closure(skill_id):
            node = self.nodes.get(sid)
            if node is None or not node.active:
                return node or GraphNode(sid, sid, "", False, [])
        return None

    def usable(self, user_id: str) -> list[Assignment]:
        return [
            a
            for a in self.assignments
            if a.allows(user_id) and self.unavailable_because(a.skill_id) is None
        ]

    def reachable(self, user_id: str) -> dict[str, Assignment]:
        """Every skill the agent may use for the user (assigned or a required dependency of an
        assigned one) → the best assignment it comes through (first in priority order)."""
        found: dict[str, Assignment] = {}
        for assignment in self.usable(user_id):
            for sid in self.closure(assignment.skill_id):
                found.setdefault(sid, assignment)
        return found


ASSIGNMENT_SELECT = """SELECT a.agent_def_id, a.skill_id, s.name, a.config, a.priority,
           a.sequence_id, a.timeout_seconds, a.max_retries, a.allowed_users,
           a.aggregate_version, a.update_ts
    FROM agent_skill_t a JOIN skill_t s ON s.host_id = a.host_id AND s.skill_id = a.skill_id"""


class Relations:
    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    # -- agent → skill --------------------------------------------------------------------

    async def assign(
        self,
        *,
        agent_id: str,
        skill_id: str,
        config: dict[str, Any],
        priority: int,
        sequence: int,
        timeout_seconds: int,
        max_retries: int,
        allowed_users: list[str],
        expected_version: int | None,
    ) -> Assignment:
        tenant = current_tenant()
        async with self.pool.acquire() as conn, conn.transaction():
            current = await conn.fetchval(
                "SELECT aggregate_version FROM agent_skill_t WHERE host_id = $1 "
                "AND agent_def_id = $2 AND skill_id = $3 FOR UPDATE",
                tenant,
                agent_id,
                uuid.UUID(skill_id),
            )
            if expected_version is not None and current != expected_version:
                raise Aborted(
                    f"etag: stale; the current etag is {current}",
                    reason="ETAG_MISMATCH",
                    metadata={"current_etag": str(current or "")},
                )
            await conn.execute(
                """INSERT INTO agent_skill_t (host_id, agent_def_id, skill_id, config, priority,
                       sequence_id, timeout_seconds, max_retries, allowed_users, update_user)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $1::text)
                   ON CONFLICT (host_id, agent_def_id, skill_id) DO UPDATE SET
                       config = EXCLUDED.config, priority = EXCLUDED.priority,
                       sequence_id = EXCLUDED.sequence_id,
                       timeout_seconds = EXCLUDED.timeout_seconds,
                       max_retries = EXCLUDED.max_retries,
                       allowed_users = EXCLUDED.allowed_users, active = true,
                       aggregate_version = agent_skill_t.aggregate_version + 1,
                       update_ts = now(), update_user = EXCLUDED.update_user""",
                tenant,
                agent_id,
                uuid.UUID(skill_id),
                config,
                priority,
                sequence,
                timeout_seconds,
                max_retries,
                allowed_users,
            )
            row = await conn.fetchrow(
                ASSIGNMENT_SELECT + " WHERE a.host_id = $1 AND a.agent_def_id = $2 "
                "AND a.skill_id = $3",
                tenant,
                agent_id,
                uuid.UUID(skill_id),
            )
        return Assignment.from_row(row)

    async def unassign(self, agent_id: str, skill_id: str) -> None:
        status = await self.pool.execute(
            "DELETE FROM agent_skill_t WHERE host_id = $1 AND agent_def_id = $2 AND skill_id = $3",
            current_tenant(),
            agent_id,
            uuid.UUID(skill_id),
        )
        if status.endswith(" 0"):
            raise NotFound(
                f"skill: agent {agent_id!r} has no such skill assigned",
                reason="ASSIGNMENT_NOT_FOUND",
            )

    async def agent_view(self, agent_id: str, conn: Any = None) -> AgentView:
        """The agent's active assignments and every skill they reach through required
        dependencies, in one query (it is read on every ExecuteTool and LoadSkill)."""
        rows = await (conn or self.pool).fetch(
            """WITH RECURSIVE asg AS ("""
            + ASSIGNMENT_SELECT
            + """ WHERE a.host_id = $1 AND a.agent_def_id = $2 AND a.active),
               reach(skill_id) AS (
                   SELECT skill_id FROM asg
                   UNION
                   SELECT d.depends_on_skill_id FROM skill_dependency_t d
                   JOIN reach r ON d.skill_id = r.skill_id
                   WHERE d.host_id = $1 AND d.active AND d.required),
               graph AS (
                   SELECT jsonb_agg(jsonb_build_object(
                       'skill_id', s.skill_id, 'name', s.name,
                       'description', s.description, 'active', s.active,
                       'deps', COALESCE((SELECT jsonb_agg(d.depends_on_skill_id ORDER BY dn.name)
                                         FROM skill_dependency_t d JOIN skill_t dn
                                           ON dn.host_id = d.host_id
                                          AND dn.skill_id = d.depends_on_skill_id
                                         WHERE d.host_id = $1 AND d.skill_id = s.skill_id
                                           AND d.active AND d.required), '[]'::jsonb)))
                       AS nodes
                   FROM skill_t s WHERE s.host_id = $1
                     AND s.skill_id IN (SELECT skill_id FROM reach))
               SELECT asg.*, graph.nodes FROM asg CROSS JOIN graph
               ORDER BY asg.priority DESC, asg.sequence_id, asg.name""",
            current_tenant(),
            agent_id,
        )
        if not rows:
            return AgentView(agent_id, [], {})
        assignments = [Assignment.from_row(r) for r in rows]
        nodes = {
            str(n["skill_id"]): GraphNode(
                str(n["skill_id"]),
                n["name"],
                n["description"],
                n["active"],
                [str(d) for d in n["deps"]],
            )
            for n in rows[0]["nodes"] or []
        }
        return AgentView(agent_id, assignments, nodes)

    # -- skill → tool ---------------------------------------------------------------------

    async def attach(
        self, skill_id: str, tool_id: str, access_level: str, config: dict[str, Any]
    ) -> Grant:
        tenant = current_tenant()
        row = await self.pool.fetchrow(
            """INSERT INTO skill_tool_t (host_id, skill_id, tool_id, config, access_level,
                   update_user)
               VALUES ($1, $2, $3, $4, $5, $1::text)
               ON CONFLICT (host_id, skill_id, tool_id) DO UPDATE SET
                   config = EXCLUDED.config, access_level = EXCLUDED.access_level,
                   active = true, aggregate_version = skill_tool_t.aggregate_version + 1,
                   update_ts = now()
               RETURNING skill_id, tool_id, access_level, config, aggregate_version""",
            tenant,
            uuid.UUID(skill_id),
            uuid.UUID(tool_id),
            config,
            access_level,
        )
        name = await self.pool.fetchval(
            "SELECT name FROM tool_t WHERE host_id = $1 AND tool_id = $2", tenant, row["tool_id"]
        )
        return Grant(
            str(row["skill_id"]),
            str(row["tool_id"]),
            name,
            row["access_level"],
            dict(row["config"]),
            row["aggregate_version"],
        )

    async def detach(self, skill_id: str, tool_id: str) -> None:
        status = await self.pool.execute(
            "DELETE FROM skill_tool_t WHERE host_id = $1 AND skill_id = $2 AND tool_id = $3",
            current_tenant(),
            uuid.UUID(skill_id),
            uuid.UUID(tool_id),
        )
        if status.endswith(" 0"):
            raise NotFound("tool: the skill does not grant this tool", reason="GRANT_NOT_FOUND")

    async def grants_of(self, skill_ids: Sequence[str], *, active_tools_only: bool) -> list[Grant]:
        """Grants of these skills, ordered by skill (as given) then tool name."""
        rows = await self.pool.fetch(
            """SELECT st.skill_id, st.tool_id, t.name, st.access_level, st.config,
                      st.aggregate_version
               FROM skill_tool_t st JOIN tool_t t
                 ON t.host_id = st.host_id AND t.tool_id = st.tool_id
               WHERE st.host_id = $1 AND st.skill_id = ANY($2) AND st.active
                 AND (NOT $3 OR t.active)
               ORDER BY array_position($2, st.skill_id), t.name""",
            current_tenant(),
            [uuid.UUID(s) for s in skill_ids],
            active_tools_only,
        )
        return [
            Grant(
                str(r["skill_id"]),
                str(r["tool_id"]),
                r["name"],
                r["access_level"],
                dict(r["config"]),
                r["aggregate_version"],
            )
            for r in rows
        ]

    # -- skill → skill --------------------------------------------------------------------

    async def add_dependency(self, skill_id: str, depends_on: str, required: bool) -> Dependency:
        tenant = current_tenant()
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext($1))", f"lightmind.skill.deps.{tenant}"
            )
            rows = await conn.fetch(
                "SELECT skill_id, depends_on_skill_id FROM skill_dependency_t "
                "WHERE host_id = $1 AND active",
                tenant,
            )
            edges: dict[str, list[str]] = {}
            for r in rows:
                edges.setdefault(str(r["skill_id"]), []).append(str(r["depends_on_skill_id"]))
            cycle = graph.find_cycle(edges, skill_id, depends_on)
            if cycle is not None:
                names = dict(
                    await conn.fetch(
                        "SELECT skill_id::text, name FROM skill_t "
                        "WHERE host_id = $1 AND skill_id = ANY($2)",
                        tenant,
                        [uuid.UUID(s) for s in set(cycle)],
                    )
                )
                path = " -> ".join(names.get(s, s) for s in cycle)
                raise FailedPrecondition(
                    f"depends_on: this dependency would close a cycle: {path}",
                    reason="DEPENDENCY_CYCLE",
                    metadata={"cycle": path},
                )
            await conn.execute(
                """INSERT INTO skill_dependency_t (host_id, skill_id, depends_on_skill_id,
                       required, update_user)
                   VALUES ($1, $2, $3, $4, $1::text)
                   ON CONFLICT (host_id, skill_id, depends_on_skill_id) DO UPDATE SET
                       required = EXCLUDED.required, active = true,
                       aggregate_version = skill_dependency_t.aggregate_version + 1,
                       update_ts = now()""",
                tenant,
                uuid.UUID(skill_id),
                uuid.UUID(depends_on),
                required,
            )
            name = await conn.fetchval(
                "SELECT name FROM skill_t WHERE host_id = $1 AND skill_id = $2",
                tenant,
                uuid.UUID(depends_on),
            )
        return Dependency(skill_id, depends_on, name, required)

    async def remove_dependency(self, skill_id: str, depends_on: str) -> None:
        status = await self.pool.execute(
            "DELETE FROM skill_dependency_t WHERE host_id = $1 AND skill_id = $2 "
            "AND depends_on_skill_id = $3",
            current_tenant(),
            uuid.UUID(skill_id),
            uuid.UUID(depends_on),
        )
        if status.endswith(" 0"):
            raise NotFound("depends_on: no such dependency", reason="DEPENDENCY_NOT_FOUND")

    async def dependencies_of(self, skill_id: str) -> list[Dependency]:
        rows = await self.pool.fetch(
            """SELECT d.skill_id, d.depends_on_skill_id, s.name, d.required
               FROM skill_dependency_t d JOIN skill_t s
                 ON s.host_id = d.host_id AND s.skill_id = d.depends_on_skill_id
               WHERE d.host_id = $1 AND d.skill_id = $2 AND d.active ORDER BY s.name""",
            current_tenant(),
            uuid.UUID(skill_id),
        )
        return [
            Dependency(str(r["skill_id"]), str(r["depends_on_skill_id"]), r["name"], r["required"])
            for r in rows
        ]

    # -- semantic search ------------------------------------------------------------------

    async def search(
        self,
        table: str,
        vector: Sequence[float],
        model: str,
        k: int,
        restrict_to: Sequence[str] | None,
    ) -> list[tuple[str, float]]:
        """(id, cosine similarity) of the k nearest active rows of skill_t or tool_t."""
        key = {"skill_t": "skill_id", "tool_t": "tool_id"}[table]
        async with self.pool.acquire() as conn, conn.transaction():
            # Filtered HNSW scans otherwise stop early and return fewer than k rows.
            await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            rows = await conn.fetch(
                f"""SELECT {key} AS id, description_embedding <=> $2 AS distance
                    FROM {table}
                    WHERE host_id = $1 AND active AND embedding_model = $3
                      AND ($4::uuid[] IS NULL OR {key} = ANY($4))
                    ORDER BY description_embedding <=> $2 LIMIT $5""",
                current_tenant(),
                vector,
                model,
                None if restrict_to is None else [uuid.UUID(s) for s in restrict_to],
                k,
            )
        return [(str(r["id"]), 1.0 - float(r["distance"])) for r in rows]
