"""Filtered nearest-neighbour search that returns k rows whenever k rows match.

One HNSW index per table serves every tenant and owner, so a plain ``ORDER BY embedding <=>
q LIMIT k`` with a selective WHERE would stop after ``ef_search`` candidates and return too
few rows. Two paths avoid that:

* exact: when the rows matching the owner filters are few (at most
  ``exact_search_threshold``, found by a bounded count over the B-tree owner index), they
  are ranked by brute force (``ORDER BY (embedding <=> q) + 0`` keeps the planner off the
  HNSW index). Per-user and per-session searches nearly always take this path; recall is 1.
* approximate: otherwise the HNSW index is scanned with pgvector 0.8's iterative scan
  (``hnsw.iterative_scan = relaxed_order``) so filtered-out candidates are replaced by more,
  and the relaxed order is re-sorted. Should that still yield fewer than k rows (a very
  selective metadata filter), the exact path runs as a fallback.

Hybrid search fuses the vector ranking with a full-text ranking (``websearch_to_tsquery``
over the generated ``fts`` column) by reciprocal rank fusion.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import asyncpg
from pgvector import Vector

from lightmind.memory.v1 import memory_service_pb2 as pb
from lightmind.tenancy import current_tenant
from memory_svc.filters import Params, compile_filter
from memory_svc.repository import Record
from memory_svc.scopes import ORGANIZATION, ScopeSpec

RRF_K = 60


@dataclass(frozen=True)
class Query:
    spec: ScopeSpec
    vector: Sequence[float]
    model: str
    owners: dict[str, str]
    k: int
    filter: pb.MetadataFilter | None = None
    knowledge_bases: Sequence[str] = ()
    text: str = ""  # set for hybrid search
    filter_field: str = "filter"


@dataclass(frozen=True)
class Hit:
    row: Record
    similarity: float
    score: float


@dataclass(frozen=True)
class Tuning:
    ef_search: int
    exact_threshold: int


def _where(q: Query, params: Params, *, with_filter: bool) -> str:
    spec = q.spec
    where = ["m.tenant = $1", f"m.embedding_model = {params.add(q.model)}"]
    for column, value in q.owners.items():
        # Column names come from the scope spec's allow-list only.
        if column not in spec.owners:
            raise ValueError(f"{column} is not an owner column of {spec.table}")
        where.append(f"m.{column} = {params.add(value)}::uuid")
    if spec is ORGANIZATION and q.knowledge_bases:
        where.append(f"m.knowledge_base = ANY({params.add(list(q.knowledge_bases))}::text[])")
    if "expire_time" in spec.columns:
        where.append("m.expire_time > now()")
    if with_filter and q.filter is not None:
        where.append(compile_filter(q.filter, params, alias="m", field=q.filter_field))
    return " AND ".join(where)


async def _candidates_at_most(conn: asyncpg.Connection, q: Query, limit: int) -> bool:
    params = Params([current_tenant()])
    where = _where(q, params, with_filter=False)
    sql = (
        f"SELECT count(*) FROM (SELECT 1 FROM {q.spec.table} m WHERE {where} "
        f"LIMIT {params.add(limit + 1)}) s"
    )
    count: int = await conn.fetchval(sql, *params.values)
    return count <= limit


async def _exact(conn: asyncpg.Connection, q: Query, k: int) -> list[Record]:
    params = Params([current_tenant()])
    vec = params.add(Vector(list(q.vector)))
    where = _where(q, params, with_filter=True)
    sql = (
        f"SELECT {q.spec.select('m')}, (m.embedding <=> {vec}) AS distance "
        f"FROM {q.spec.table} m WHERE {where} "
        f"ORDER BY (m.embedding <=> {vec}) + 0, m.id LIMIT {params.add(k)}"
    )
    rows: list[Record] = await conn.fetch(sql, *params.values)
    return rows


async def _approximate(conn: asyncpg.Connection, q: Query, k: int, ef_search: int) -> list[Record]:
    params = Params([current_tenant()])
    vec = params.add(Vector(list(q.vector)))
    where = _where(q, params, with_filter=True)
    sql = (
        f"WITH relaxed AS MATERIALIZED ("
        f"SELECT {q.spec.select('m')}, (m.embedding <=> {vec}) AS distance "
        f"FROM {q.spec.table} m WHERE {where} "
        f"ORDER BY m.embedding <=> {vec} LIMIT {params.add(k)}) "
        f"SELECT * FROM relaxed ORDER BY distance, id"
    )
    async with conn.transaction():
        # Both values are integers from configuration, not from the request.
        await conn.execute(
            f"SET LOCAL hnsw.ef_search = {max(int(ef_search), k)}; "
            "SET LOCAL hnsw.iterative_scan = relaxed_order"
        )
        rows: list[Record] = await conn.fetch(sql, *params.values)
    return rows


async def nearest(conn: asyncpg.Connection, q: Query, k: int, tuning: Tuning) -> list[Record]:
    """The k nearest rows matching every filter (fewer only when fewer match)."""
    if k <= 0:
        return []
    if await _candidates_at_most(conn, q, tuning.exact_threshold):
        return await _exact(conn, q, k)
    rows = await _approximate(conn, q, k, tuning.ef_search)
    if len(rows) < k:
        rows = await _exact(conn, q, k)
    return rows


async def _text_ranked(conn: asyncpg.Connection, q: Query, n: int) -> list[Record]:
    params = Params([current_tenant()])
    vec = params.add(Vector(list(q.vector)))
    text = params.add(q.text)
    where = _where(q, params, with_filter=True)
    sql = (
        f"SELECT {q.spec.select('m')}, (m.embedding <=> {vec}) AS distance "
        f"FROM {q.spec.table} m, websearch_to_tsquery('english', {text}) tq "
        f"WHERE {where} AND m.fts @@ tq "
        f"ORDER BY ts_rank_cd(m.fts, tq) DESC, m.id LIMIT {params.add(n)}"
    )
    rows: list[Record] = await conn.fetch(sql, *params.values)
    return rows


async def search(
    conn: asyncpg.Connection, q: Query, tuning: Tuning, min_score: float | None = None
) -> list[Hit]:
    """Vector (or hybrid) search; hits best first, at most ``q.k``."""
    if not q.text:
        hits = [
            Hit(r, 1.0 - r["distance"], 1.0 - r["distance"])
            for r in await nearest(conn, q, q.k, tuning)
        ]
    else:
        pool = max(q.k * 4, 40)
        by_vector = await nearest(conn, q, pool, tuning)
        by_text = await _text_ranked(conn, q, pool)
        fused: dict[str, float] = {}
        rows: dict[str, Record] = {}
        for ranking in (by_vector, by_text):
            for rank, row in enumerate(ranking, start=1):
                key = str(row["id"])
                rows[key] = row
                fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank)
        order = sorted(fused, key=lambda key: (-fused[key], key))
        hits = [Hit(rows[key], 1.0 - rows[key]["distance"], fused[key]) for key in order]
    if min_score is not None:
        hits = [h for h in hits if h.similarity >= min_score]
    return hits[: q.k]
