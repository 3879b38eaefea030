"""The gRPC front of AgentService: agent/session/message RPCs, Chat, and ``build``.

Unary mutations with a ``request_id`` store their answer and return it on repeats. ``Chat``
validates, refuses a second concurrent turn on the same session (ABORTED), replays the events
of an earlier call with the same ``request_id``, or runs a ``loop.Turn``: each event is
stamped (turn id, sequence, time) and streamed; when the turn ends — answered, clarifying,
failed or cancelled by the client — the turn settles its session (snapshot, open calls) and
its events are stored for replay, shielded from the cancellation. A failure is streamed as an
error event and then ends the call with the same status.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import asyncpg
import grpc
from google.protobuf import empty_pb2, timestamp_pb2
from google.protobuf.message import Message

from agent_svc import continuity, convert, repository
from agent_svc.clients import Downstream
from agent_svc.config import AgentConfig
from agent_svc.llm.base import LlmBackend
from agent_svc.loop import Deps, Turn
from lightmind import errors, metrics
from lightmind.agent.v1 import agent_service_pb2 as pb
from lightmind.agent.v1 import agent_service_pb2_grpc as pb_grpc
from lightmind.db import open_database
from lightmind.errors import Aborted, InvalidArgument, LightmindError, classify
from lightmind.etags import parse_etag
from lightmind.pagination import PageTokens, page_size
from lightmind.requestlog import RequestLog
from lightmind.server import Context, ServiceDefinition
from lightmind.tenancy import current_tenant

log = logging.getLogger("lightmind.agent")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["AgentService"].full_name
ERROR_DOMAIN = "agent.lightmind.dev"
UPDATABLE = set(repository.AGENT_COLUMNS)
M = TypeVar("M", bound=Message)

_ERRORS_BY_CODE: dict[str, type[LightmindError]] = {
    cls.code.name: cls
    for cls in (
        errors.InvalidArgument,
        errors.NotFound,
        errors.Aborted,
        errors.FailedPrecondition,
        errors.PermissionDenied,
        errors.ResourceExhausted,
        errors.DeadlineExceeded,
        errors.Unavailable,
    )
}


class AgentServicer(pb_grpc.AgentServiceServicer):
    def __init__(self, deps: Deps) -> None:
        self._deps = deps
        self._pool = deps.pool
        self._tokens = PageTokens(deps.config.page_token_secret)
        self._requests = RequestLog(deps.pool)
        self._running: set[tuple[str, uuid.UUID]] = set()

    # -- agents -----------------------------------------------------------------------------

    async def CreateAgent(self, request: pb.CreateAgentRequest, context: Context) -> pb.Agent:
        if not request.HasField("agent"):
            raise InvalidArgument.field("agent", "is required")
        values = convert.agent_values(request.agent, None)
        self._check_prompt(values)

        async def work() -> pb.Agent:
            async with self._pool.acquire() as conn:
                return convert.agent_proto(await repository.insert_agent(conn, values))

        return await self._requests.once("CreateAgent", request, pb.Agent, work)

    def _check_prompt(self, values: dict[str, Any]) -> None:
        prompt = values.get("system_prompt", "")
        if len(prompt.encode()) > self._deps.config.max_prompt_bytes:
            raise InvalidArgument.field(
                "agent.system_prompt", f"at most {self._deps.config.max_prompt_bytes} bytes"
            )

    async def GetAgent(self, request: pb.GetAgentRequest, context: Context) -> pb.Agent:
        if not request.agent:
            raise InvalidArgument.field("agent", "is required")
        async with self._pool.acquire() as conn:
            return convert.agent_proto(await repository.get_agent(conn, request.agent))

    async def ListAgents(
        self, request: pb.ListAgentsRequest, context: Context
    ) -> pb.ListAgentsResponse:
        size = page_size(request.page_size, 50, 500)
        after = self._tokens.decode(request.page_token, "agents") if request.page_token else None
        async with self._pool.acquire() as conn:
            rows = await repository.list_agents(conn, after, size + 1)
        response = pb.ListAgentsResponse(agents=[convert.agent_proto(r) for r in rows[:size]])
        if len(rows) > size:
            response.next_page_token = self._tokens.encode(rows[size - 1]["name"], "agents")
        return response

    async def UpdateAgent(self, request: pb.UpdateAgentRequest, context: Context) -> pb.Agent:
        if not request.HasField("agent"):
            raise InvalidArgument.field("agent", "is required")
        agent_id = convert.required_uuid(request.agent.agent_id, "agent.agent_id")
        paths = set(request.update_mask.paths)
        if not paths or paths == {"*"}:
            paths = set(UPDATABLE)
        unknown = sorted(paths - UPDATABLE)
        if unknown:
            raise InvalidArgument.field(
                "update_mask",
                f"cannot update {', '.join(unknown)}; allowed: "
                + ", ".join(repository.AGENT_COLUMNS),
            )
        values = convert.agent_values(request.agent, paths)
        self._check_prompt(values)
        version = parse_etag(request.agent.etag, "agent.etag")

        async def work() -> pb.Agent:
            async with self._pool.acquire() as conn:
                row = await repository.update_agent(conn, agent_id, values, version)
            return convert.agent_proto(row)

        return await self._requests.once("UpdateAgent", request, pb.Agent, work)

    async def DeleteAgent(
        self, request: pb.DeleteAgentRequest, context: Context
    ) -> empty_pb2.Empty:
        if not request.agent:
            raise InvalidArgument.field("agent", "is required")
        version = parse_etag(request.etag, "etag")

        async def work() -> empty_pb2.Empty:
            async with self._pool.acquire() as conn:
                row = await repository.get_agent(conn, request.agent)
                await repository.delete_agent(conn, row["id"], version)
            return empty_pb2.Empty()

        return await self._requests.once("DeleteAgent", request, empty_pb2.Empty, work)

    # -- sessions and messages ---------------------------------------------------------------

    async def CreateSession(self, request: pb.CreateSessionRequest, context: Context) -> pb.Session:
        session = request.session
        if not session.agent_id:
            raise InvalidArgument.field("session.agent_id", "is required")
        user_id = convert.uuid_field(session.user_id, "session.user_id")
        if len(session.title) > convert.MAX_TITLE:
            raise InvalidArgument.field("session.title", f"at most {convert.MAX_TITLE} characters")
        metadata = convert.struct_dict(session.metadata)

        async def work() -> pb.Session:
            async with self._pool.acquire() as conn:
                agent = await repository.get_agent(conn, session.agent_id)
                row = await repository.insert_session(
                    conn, agent["id"], user_id, session.title, metadata
                )
            return convert.session_proto(row)

        return await self._requests.once("CreateSession", request, pb.Session, work)

    async def GetSession(self, request: pb.GetSessionRequest, context: Context) -> pb.Session:
        session_id = convert.required_uuid(request.session_id, "session_id")
        async with self._pool.acquire() as conn:
            return convert.session_proto(await repository.get_session(conn, session_id))

    async def ListSessions(
        self, request: pb.ListSessionsRequest, context: Context
    ) -> pb.ListSessionsResponse:
        size = page_size(request.page_size, 50, 500)
        user_id = convert.uuid_field(request.user_id, "user_id")
        scope = f"sessions\0{request.agent}\0{request.user_id}"
        cursor = None
        if request.page_token:
            micros, ident = self._tokens.decode(request.page_token, scope)
            from datetime import UTC, datetime, timedelta

            cursor = (
                datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros),
                uuid.UUID(ident),
            )
        async with self._pool.acquire() as conn:
            agent_id = None
            if request.agent:
                agent_id = (await repository.get_agent(conn, request.agent))["id"]
            rows = await repository.list_sessions(conn, agent_id, user_id, cursor, size + 1)
        response = pb.ListSessionsResponse(sessions=[convert.session_proto(r) for r in rows[:size]])
        if len(rows) > size:
            last = rows[size - 1]
            micros = int(last["created_at"].timestamp() * 1_000_000)
            response.next_page_token = self._tokens.encode([micros, str(last["id"])], scope)
        return response

    async def DeleteSession(
        self, request: pb.DeleteSessionRequest, context: Context
    ) -> empty_pb2.Empty:
        session_id = convert.required_uuid(request.session_id, "session_id")
        version = parse_etag(request.etag, "etag")
        if (current_tenant(), session_id) in self._running:
            raise Aborted("a Chat turn is running on this session", reason="TURN_IN_PROGRESS")

        async def work() -> empty_pb2.Empty:
            async with self._pool.acquire() as conn:
                await repository.delete_session(conn, session_id, version)
            return empty_pb2.Empty()

        return await self._requests.once("DeleteSession", request, empty_pb2.Empty, work)

    async def ListMessages(
        self, request: pb.ListMessagesRequest, context: Context
    ) -> pb.ListMessagesResponse:
        session_id = convert.required_uuid(request.session_id, "session_id")
        size = page_size(request.page_size, 100, 1000)
        scope = f"messages\0{session_id}"
        after = int(self._tokens.decode(request.page_token, scope)) if request.page_token else 0
        async with self._pool.acquire() as conn:
            await repository.get_session(conn, session_id)
            rows = await repository.list_messages(conn, session_id, after, size + 1)
        response = pb.ListMessagesResponse(messages=[convert.message_proto(r) for r in rows[:size]])
        if len(rows) > size:
            response.next_page_token = self._tokens.encode(rows[size - 1]["seq"], scope)
        return response

    # -- chat -------------------------------------------------------------------------------

    async def Chat(
        self, request: pb.ChatRequest, context: Context
    ) -> AsyncIterator[pb.ChatResponse]:
        session_id = convert.required_uuid(request.session_id, "session_id")
        text = request.message
        if not text.strip():
            raise InvalidArgument.field("message", "is required")
        if len(text.encode()) > self._deps.config.max_message_bytes:
            raise InvalidArgument.field(
                "message", f"at most {self._deps.config.max_message_bytes} bytes"
            )
        request_id = convert.uuid_field(request.request_id, "request_id")
        if request_id is not None:
            async with self._pool.acquire() as conn:
                earlier = await repository.turn_by_request(conn, request_id)
            if earlier is not None:
                async for event in self._replay(earlier, session_id):
                    yield event
                return
        key = (current_tenant(), session_id)
        if key in self._running:
            raise Aborted(
                "another Chat turn is running on this session; wait for it to finish",
                reason="TURN_IN_PROGRESS",
            )
        self._running.add(key)
        try:
            async for event in self._turn(session_id, text, request_id):
                yield event
        finally:
            self._running.discard(key)

    async def _replay(self, turn: Any, session_id: uuid.UUID) -> AsyncIterator[pb.ChatResponse]:
        if turn["session_id"] != session_id:
            raise InvalidArgument.field(
                "request_id", "was already used for a Chat on another session"
            )
        if turn["status"] == "running":
            raise Aborted(
                "the Chat with this request_id is still running", reason="TURN_IN_PROGRESS"
            )
        async with self._pool.acquire() as conn:
            payloads = await repository.turn_events(conn, turn["id"])
        last: pb.ChatResponse | None = None
        for payload in payloads:
            event = pb.ChatResponse.FromString(payload)
            event.replayed = True
            last = event
            if event.HasField("error") and event.error.code == "CANCELLED":
                continue  # recorded for the transcript; the original caller had gone
            yield event
        if last is not None and last.HasField("error") and last.error.code in _ERRORS_BY_CODE:
            raise _ERRORS_BY_CODE[last.error.code](last.error.message, reason=last.error.reason)

    async def _turn(
        self, session_id: uuid.UUID, text: str, request_id: uuid.UUID | None
    ) -> AsyncIterator[pb.ChatResponse]:
        async with self._pool.acquire() as conn:
            session = await repository.get_session(conn, session_id)
            agent = await repository.get_agent(conn, str(session["agent_id"]))
            turn_row = await repository.insert_turn(conn, session_id, request_id)
        if turn_row is None:  # a concurrent call with the same request_id won the race
            async with self._pool.acquire() as conn:
                earlier = await repository.turn_by_request(conn, request_id)  # type: ignore[arg-type]
            async for event in self._replay(earlier, session_id):
                yield event
            return
        turn = Turn(
            self._deps,
            agent,
            session,
            turn_row["id"],
            text,
            continuity.parse(session["continuity"]),
        )
        events: list[pb.ChatResponse] = []

        def stamp(event: pb.ChatResponse) -> pb.ChatResponse:
            event.turn_id = str(turn.turn_id)
            event.sequence = len(events) + 1
            event.event_time.CopyFrom(_now())
            events.append(event)
            return event

        status = "failed"
        try:
            async for event in turn.run():
                yield stamp(event)
            status = turn.outcome
        except asyncio.CancelledError:
            status = "cancelled"
            stamp(
                pb.ChatResponse(
                    error=pb.ErrorEvent(
                        code="CANCELLED",
                        reason="CANCELLED",
                        message="the client cancelled the turn",
                    )
                )
            )
            raise
        except Exception as exc:
            err = classify(exc)
            if err is None:
                log.error("turn %s failed", turn.turn_id, exc_info=exc)
                failure = pb.ErrorEvent(
                    code="INTERNAL", reason="INTERNAL", message="internal error; see the server log"
                )
            else:
                failure = pb.ErrorEvent(code=err.code.name, reason=err.reason, message=err.message)
            yield stamp(pb.ChatResponse(error=failure))
            raise
        finally:
            await asyncio.shield(self._finish(turn, status, events))

    async def _finish(self, turn: Turn, status: str, events: list[pb.ChatResponse]) -> None:
        try:
            await turn.settle()
        except Exception:
            log.exception("turn %s: could not settle the session", turn.turn_id)
        try:
            async with self._pool.acquire() as conn, conn.transaction():
                for stored in events:
                    await repository.append_event(
                        conn, turn.turn_id, stored.sequence, stored.SerializeToString()
                    )
                await repository.finish_turn(conn, turn.turn_id, status)
        except Exception:
            log.exception("turn %s: could not record its events", turn.turn_id)


def _now() -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.GetCurrentTime()
    return stamp


async def make_llm(config: AgentConfig) -> LlmBackend:
    if config.llm.backend == "openai":
        from agent_svc.llm.openai_backend import OpenAIBackend

        return OpenAIBackend(config.llm)
    from agent_svc.llm.local import LocalBackend

    return await LocalBackend.load(config.llm)


async def build(config: AgentConfig, llm: LlmBackend | None = None) -> ServiceDefinition:
    """Opens the migrated database, the downstream channels and the LLM back-end."""
    pool: asyncpg.Pool = await open_database(
        config.database, schema="agent", migrations_package="agent_svc.migrations"
    )
    metrics.track_pool("agent", pool.get_size, pool.get_idle_size)
    downstream = Downstream(config.clients)
    try:
        backend = llm or await make_llm(config)
    except BaseException:
        await downstream.close()
        await pool.close()
        raise
    servicer = AgentServicer(Deps(config, pool, downstream, backend))
    log.info("LLM back-end: %s, model %s", backend.name, config.llm.model)

    async def close() -> None:
        await backend.close()
        await downstream.close()
        await pool.close()

    return ServiceDefinition(
        service_names=[SERVICE_NAME],
        error_domain=ERROR_DOMAIN,
        register=lambda server: pb_grpc.add_AgentServiceServicer_to_server(servicer, server),
        closers=[close],
    )


def grpc_code(name: str) -> grpc.StatusCode:
    return grpc.StatusCode[name]
