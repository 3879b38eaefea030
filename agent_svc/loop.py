"""One agent turn: Think -> Retrieve -> LLM -> Execute, repeated, streamed as events.

``Turn.run`` is an async generator of ``ChatResponse`` events (the servicer stamps sequence
and time and records them for replay). Think: the agent, the session's recent messages and
its continuity snapshot. Retrieve: one ``RetrieveContext`` call, concurrently with the level-1
skill catalog (``ListAgentSkills``) and re-loading the skills loaded earlier in the session.
LLM: system prompt + catalog + loaded skills' instructions + context + history, with the
built-in ``load_skill`` and ``ask_user`` tools and the loaded skills' tools. Execute: calls run
in order through ``ExecuteTool``; results and tool errors go back as tool messages. The loop
ends on an answer, an ``ask_user`` call (the session then awaits the answer, see
``continuity``), or the iteration limit. Every message is written as soon as it exists, so a
cancelled turn leaves a consistent transcript; ``Turn.settle`` closes what the turn left open.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import grpc
from google.protobuf import struct_pb2
from google.protobuf.duration_pb2 import Duration

from agent_svc import repository
from agent_svc.clients import Downstream, Timings
from agent_svc.config import AgentConfig
from agent_svc.continuity import AWAITING, FRESH, Continuity, PendingAction
from agent_svc.history import build_history, call_to_json, calls_of
from agent_svc.llm.base import (
    LlmBackend,
    LlmMessage,
    LlmRequest,
    LlmResult,
    ToolCallRequest,
    ToolSpec,
)
from lightmind.agent.v1 import agent_service_pb2 as pb
from lightmind.memory.v1 import memory_service_pb2 as mpb
from lightmind.skill.v1 import skill_service_pb2 as spb

log = logging.getLogger("lightmind.agent")

LOAD_SKILL = "load_skill"
ASK_USER = "ask_user"
CALL_NAMESPACE = uuid.UUID("6f1c2a56-8d1e-4c57-9a55-3a1f0c9e7b21")
DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
# Downstream errors the model can read and react to (bad arguments, a tool it may not use).
TOOL_ERROR_CODES = (
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.FAILED_PRECONDITION,
)
FACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "scope": {"enum": ["user", "agent"]},
                    "content": {"type": "string"},
                },
                "required": ["scope", "content"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}
MAX_FACTS = 5


@dataclass
class Deps:
    config: AgentConfig
    pool: asyncpg.Pool
    downstream: Downstream
    llm: LlmBackend


@dataclass
class LoadedSkill:
    name: str
    content: str
    tools: list[ToolSpec]


@dataclass
class Turn:
    deps: Deps
    agent: Any  # agent row
    session: Any  # session row
    turn_id: uuid.UUID
    text: str
    continuity: Continuity
    timings: Timings = field(default_factory=Timings)
    outcome: str = "running"  # answered, clarifying
    iterations: int = 0
    total_tokens: int = 0
    loaded: dict[str, LoadedSkill] = field(default_factory=dict)
    catalog: list[spb.SkillSummary] = field(default_factory=list)
    context: list[mpb.ContextItem] = field(default_factory=list)
    messages: list[LlmMessage] = field(default_factory=list)
    pending: PendingAction | None = None
    active_skill: str = ""
    # Calls of the last assistant message that have no result yet.
    open_calls: list[ToolCallRequest] = field(default_factory=list)
    answer: str = ""
    # Results of this turn's tool calls by (tool, arguments): a repeat is answered from here.
    results: dict[str, str] = field(default_factory=dict)

    # -- identity ---------------------------------------------------------------------------

    @property
    def session_id(self) -> uuid.UUID:
        value: uuid.UUID = self.session["id"]
        return value

    @property
    def agent_id(self) -> str:
        return str(self.agent["id"])

    @property
    def user_id(self) -> str:
        return str(self.session["user_id"]) if self.session["user_id"] else ""

    def snapshot(self) -> Continuity:
        loaded = tuple(self.loaded) or self.continuity.loaded_skills
        if self.outcome == "clarifying" and self.pending is not None:
            return Continuity(AWAITING, self.pending, loaded, str(self.turn_id))
        if self.outcome == "running" and self.continuity.awaiting and self.pending is not None:
            return self.continuity  # the answer was never recorded: still awaiting it
        return Continuity(FRESH, None, loaded, str(self.turn_id))

    # -- the turn ---------------------------------------------------------------------------

    async def run(self) -> AsyncIterator[pb.ChatResponse]:
        resume = self.continuity.awaiting
        self.pending = self.continuity.pending
        query = self.text
        if resume and self.pending is not None and self.pending.question:
            query = f"{self.pending.question}\n{self.text}"
        retrieved, catalog = await asyncio.gather(
            self._retrieve(query),
            self.deps.downstream.catalog(self.timings, self.agent_id, self.user_id),
        )
        self.catalog = catalog
        self.context = list(retrieved.items)
        yield _event(
            context_retrieved=pb.ContextRetrieved(
                items=[
                    pb.ContextItem(
                        scope=mpb.Scope.Name(item.scope).removeprefix("SCOPE_"),
                        source=item.source,
                        score=item.score,
                        content=item.memory.content,
                    )
                    for item in self.context
                ],
                duration_ms=retrieved.embed_ms + retrieved.search_ms,
            )
        )
        await self._reload_skills()

        open_message: Any = None
        if resume and self.pending is not None:
            async with self.deps.pool.acquire() as conn:
                open_message = await repository.find_assistant_call(
                    conn, self.session_id, self.pending.call_id
                )
            if open_message is None:
                log.warning(
                    "session %s: pending call %s not found; treating the message as new",
                    self.session_id,
                    self.pending.call_id,
                )
                resume = False
        async with self.deps.pool.acquire() as conn:
            rows = await repository.recent_messages(
                conn, self.session_id, self.deps.config.history_messages
            )
        self.messages = build_history(rows, open_message["id"] if resume else None)

        if resume:
            async for event in self._resume(open_message):
                yield event
            if self.outcome == "clarifying":
                return
        else:
            self.pending = None
            await self._write(
                "user",
                self.text,
                metadata={"context": [item.source for item in self.context]},
            )
            self.messages.append(LlmMessage("user", self.text))

        limit = self.agent["max_iterations"] or self.deps.config.max_iterations
        while self.iterations < limit:
            self.iterations += 1
            result: LlmResult | None = None
            async for piece in self._llm():
                if isinstance(piece, str):
                    yield _event(text_delta=pb.TextDelta(text=piece))
                else:
                    result = piece
            assert result is not None
            if not result.tool_calls:
                row = await self._write(
                    "assistant", result.text, metadata=self._metadata(result.finish_reason)
                )
                self.outcome, self.answer = "answered", result.text
                yield _event(
                    final_answer=pb.FinalAnswer(
                        text=result.text,
                        reason=pb.FINISH_REASON_ANSWER,
                        message_id=str(row["id"]),
                        iterations=self.iterations,
                        total_tokens=self.total_tokens,
                    )
                )
                await self._after_turn(self.answer)
                await self._final_timings(row["id"])
                return
            await self._write(
                "assistant",
                result.text,
                tool_calls=[call_to_json(c) for c in result.tool_calls],
                metadata=self._metadata(result.finish_reason),
            )
            self.messages.append(LlmMessage("assistant", result.text, tool_calls=result.tool_calls))
            self.open_calls = list(result.tool_calls)
            async for event in self._run_calls():
                yield event
            if self.outcome == "clarifying":
                return

        text = (
            f"I stopped after {limit} steps without reaching an answer (this agent's iteration "
            "limit). Ask me to continue, or narrow the question."
        )
        row = await self._write("assistant", text, metadata=self._metadata("max_iterations"))
        self.outcome, self.answer = "answered", text
        yield _event(
            final_answer=pb.FinalAnswer(
                text=text,
                reason=pb.FINISH_REASON_MAX_ITERATIONS,
                message_id=str(row["id"]),
                iterations=self.iterations,
                total_tokens=self.total_tokens,
            )
        )
        await self._after_turn(text)
        await self._final_timings(row["id"])

    async def _final_timings(self, message_id: uuid.UUID) -> None:
        """The answer's metadata gets the whole turn's timings (memory writes included)."""
        async with self.deps.pool.acquire() as conn:
            await repository.merge_message_metadata(
                conn, message_id, {"turn_timings_ms": self.timings.as_dict()}
            )

    async def _resume(self, open_message: Any) -> AsyncIterator[pb.ChatResponse]:
        """Completes the step that asked the question: the answer is the pending call's
        result; calls of that step that already completed are not run again."""
        assert self.pending is not None
        calls = calls_of(open_message)
        async with self.deps.pool.acquire() as conn:
            done = await repository.answered_calls(conn, self.session_id, [c.id for c in calls])
        self.open_calls = [c for c in calls if c.id not in done]
        self.active_skill = self.pending.owner_skill
        pending = self.open_calls.pop(0) if self.open_calls else None
        if pending is None or pending.id != self.pending.call_id:
            # Snapshot and transcript disagree: answer the pending call anyway if it is open.
            match = [c for c in self.open_calls if c.id == self.pending.call_id]
            if pending is not None:
                self.open_calls.insert(0, pending)
            if not match:
                log.warning("session %s: pending call already answered", self.session_id)
                return
            pending = match[0]
            self.open_calls.remove(pending)
        async with self.deps.pool.acquire() as conn, conn.transaction():
            await repository.insert_message(
                conn,
                self.session_id,
                self.turn_id,
                "tool",
                self.text,
                tool_call_id=pending.id,
                tool_name=ASK_USER,
                metadata={"is_error": False, "answer_to": self.pending.question},
            )
            self.pending = None
            await repository.save_session_state(conn, self.session_id, self.snapshot().to_json())
        self.messages.append(LlmMessage("tool", self.text, tool_call_id=pending.id, name=ASK_USER))
        yield _event(
            tool_result=pb.ToolResult(call_id=pending.id, name=ASK_USER, content=self.text)
        )
        async for event in self._run_calls():
            yield event

    # -- the steps --------------------------------------------------------------------------

    async def _retrieve(self, query: str) -> mpb.RetrieveContextResponse:
        limits_raw = self.agent["memory_limits"] or {}
        limits = mpb.ScopeLimits(**{k: int(v) for k, v in limits_raw.items()})
        request = mpb.RetrieveContextRequest(
            query=query[:4000],
            session_id=str(self.session_id),
            agent_id=self.agent_id,
            user_id=self.user_id,
            limits=limits,
            knowledge_bases=list(self.agent["knowledge_bases"]),
        )
        return await self.deps.downstream.retrieve(self.timings, request)

    async def _reload_skills(self) -> None:
        names = [s.name for s in self.catalog]
        wanted = [name for name in self.continuity.loaded_skills if name in names]
        results = await asyncio.gather(
            *(self._load(name) for name in wanted), return_exceptions=True
        )
        for name, result in zip(wanted, results, strict=True):
            if isinstance(result, BaseException):
                if (
                    not isinstance(result, grpc.aio.AioRpcError)
                    or result.code() not in TOOL_ERROR_CODES
                ):
                    raise result
                log.info("skill %s can no longer be loaded: %s", name, result.details())
            else:
                self.loaded[name] = result

    async def _load(self, name: str) -> LoadedSkill:
        response = await self.deps.downstream.load_skill(
            self.timings, self.agent_id, self.user_id, name
        )
        tools = [
            ToolSpec(
                t.name,
                t.description,
                _struct_to_dict(t.input_schema) or {"type": "object", "properties": {}},
            )
            for t in response.tools
        ]
        return LoadedSkill(response.skill.name or name, response.content, tools)

    def _tools(self) -> list[ToolSpec]:
        tools: list[ToolSpec] = []
        # Only skills not loaded yet: small models otherwise keep re-loading the same skill
        # instead of calling the tools it just gave them.
        unloaded = [s.name for s in self.catalog if s.name not in self.loaded]
        if unloaded:
            tools.append(
                ToolSpec(
                    LOAD_SKILL,
                    "Load one of your skills by name: returns its instructions and makes its "
                    "tools available.",
                    {
                        "type": "object",
                        "properties": {
                            "name": {
                                "type": "string",
                                "enum": unloaded,
                                "description": "The skill's name.",
                            }
                        },
                        "required": ["name"],
                    },
                )
            )
        tools.append(
            ToolSpec(
                ASK_USER,
                "Ask the user a clarifying question when you cannot proceed without their "
                "answer. The conversation pauses until they reply.",
                {
                    "type": "object",
                    "properties": {"question": {"type": "string", "description": "The question."}},
                    "required": ["question"],
                },
            )
        )
        seen = {LOAD_SKILL, ASK_USER}
        for skill in self.loaded.values():
            for tool in skill.tools:
                if tool.name not in seen:
                    seen.add(tool.name)
                    tools.append(tool)
        return tools

    def _owner(self, tool: str) -> str:
        for skill in self.loaded.values():
            if any(t.name == tool for t in skill.tools):
                return skill.name
        return ""

    def _system_prompt(self) -> str:
        parts = [self.agent["system_prompt"] or DEFAULT_SYSTEM_PROMPT]
        if self.context:
            lines = [
                f"- [{mpb.Scope.Name(i.scope).removeprefix('SCOPE_').lower()}] {i.memory.content}"
                for i in self.context
            ]
            parts.append("Relevant memory:\n" + "\n".join(lines))
        if self.catalog:
            lines = [f"- {s.name}: {s.description}" for s in self.catalog]
            parts.append(
                "Skills you can load with the load_skill tool (load one before using its "
                "tools):\n" + "\n".join(lines)
            )
        for skill in self.loaded.values():
            parts.append(f"Instructions of the loaded skill {skill.name}:\n{skill.content}")
        return "\n\n".join(parts)

    def _llm(self) -> AsyncIterator[str | LlmResult]:
        options = self.agent["chat_options"] or {}
        request = LlmRequest(
            model=self.agent["model"] or self.deps.config.llm.model,
            messages=[LlmMessage("system", self._system_prompt()), *self.messages],
            tools=self._tools(),
            temperature=options.get("temperature"),
            top_p=options.get("top_p"),
            max_tokens=int(options.get("max_tokens") or self.deps.config.llm.max_tokens),
        )
        return self._timed(request)

    async def _timed(self, request: LlmRequest) -> AsyncIterator[str | LlmResult]:
        with self.timings.measure("llm"):
            async for piece in self.deps.llm.complete(request):
                if isinstance(piece, LlmResult):
                    self.total_tokens += piece.prompt_tokens + piece.completion_tokens
                yield piece

    async def _run_calls(self) -> AsyncIterator[pb.ChatResponse]:
        """Runs the open calls in order; stops at an ask_user (the turn then pauses)."""
        while self.open_calls:
            call = self.open_calls[0]
            yield _event(tool_call=pb.ToolCallStarted(call=_call_proto(call)))
            if call.name == ASK_USER:
                question = str((call.arguments or {}).get("question") or "").strip()
                if not question:
                    question = "Could you tell me more about what you need?"
                self.pending = PendingAction(call.id, question, self.active_skill)
                self.outcome = "clarifying"
                self.open_calls.pop(0)
                self.answer = question
                yield _event(
                    clarification_requested=pb.ClarificationRequested(
                        question=question, call_id=call.id, skill=self.active_skill
                    )
                )
                await self._after_turn(question)
                return
            started = asyncio.get_running_loop().time()
            loaded: LoadedSkill | None = None
            key = json.dumps([call.name, call.arguments], sort_keys=True, default=str)
            if call.name == LOAD_SKILL:
                content, is_error, loaded = await self._call_load_skill(call)
            elif key in self.results:
                # The same call again in one turn: small models loop like this. Not run twice
                # (tools may have side effects); the model is pointed at the earlier result.
                content, is_error = (
                    f"Already called {call.name} with these arguments in this turn; the "
                    f"result was: {self.results[key]}\nUse it to answer the user.",
                    False,
                )
            else:
                content, is_error = await self._call_tool(call)
                if not is_error:
                    self.results[key] = content
            duration = (asyncio.get_running_loop().time() - started) * 1000
            await self._write(
                "tool",
                content,
                tool_call_id=call.id,
                tool_name=call.name,
                metadata={"is_error": is_error, "duration_ms": round(duration, 3)},
            )
            self.open_calls.pop(0)
            self.messages.append(LlmMessage("tool", content, tool_call_id=call.id, name=call.name))
            if loaded is not None:
                yield _event(
                    skill_loaded=pb.SkillLoaded(
                        skill=loaded.name, tools=[t.name for t in loaded.tools], call_id=call.id
                    )
                )
            yield _event(
                tool_result=pb.ToolResult(
                    call_id=call.id,
                    name=call.name,
                    content=content,
                    is_error=is_error,
                    duration_ms=duration,
                )
            )

    async def _call_load_skill(self, call: ToolCallRequest) -> tuple[str, bool, LoadedSkill | None]:
        name = str((call.arguments or {}).get("name") or "")
        if not name:
            return "load_skill needs the skill's name in `name`.", True, None
        if name in self.loaded:
            loaded = self.loaded[name]
            tools = ", ".join(t.name for t in loaded.tools) or "none"
            return (
                f"Skill {name} is already loaded; call its tools ({tools}) or answer.",
                False,
                None,
            )
        try:
            skill = await self._load(name)
        except grpc.aio.AioRpcError as exc:
            if exc.code() not in TOOL_ERROR_CODES:
                raise
            return f"cannot load skill {name!r}: {exc.details()}", True, None
        self.loaded[skill.name] = skill
        self.active_skill = skill.name
        tools = ", ".join(t.name for t in skill.tools) or "none"
        return (
            f"Loaded skill {skill.name}. Tools now available: {tools}.\n\n{skill.content}",
            False,
            skill,
        )

    async def _call_tool(self, call: ToolCallRequest) -> tuple[str, bool]:
        owner = self._owner(call.name)
        if not owner:
            return (
                f"tool {call.name!r} is not available: load the skill that provides it with "
                "load_skill first.",
                True,
            )
        if call.arguments is None:
            return (
                f"the arguments of {call.name} are not a JSON object: {call.raw_arguments[:200]}",
                True,
            )
        self.active_skill = owner
        arguments = struct_pb2.Struct()
        arguments.update(call.arguments)
        request = spb.ExecuteToolRequest(
            tool=call.name,
            arguments=arguments,
            caller=spb.Caller(
                agent_id=self.agent_id, user_id=self.user_id, session_id=str(self.session_id)
            ),
            # Deterministic: a retried or resumed step never runs the same call twice.
            request_id=str(uuid.uuid5(CALL_NAMESPACE, f"{self.session_id}:{call.id}")),
            skill=owner,
        )
        try:
            response = await self.deps.downstream.execute(self.timings, request)
        except grpc.aio.AioRpcError as exc:
            if exc.code() not in TOOL_ERROR_CODES:
                raise
            return f"{exc.code().name}: {exc.details()}", True
        texts = [block.text.text for block in response.content if block.HasField("text")]
        content = "\n".join(texts)
        if not content and response.HasField("structured_content"):
            content = json.dumps(_struct_to_dict(response.structured_content))
        limit = self.deps.config.max_tool_result_chars
        if len(content) > limit:
            content = content[:limit] + f"\n(truncated to {limit} characters)"
        return content, response.is_error

    # -- storage ----------------------------------------------------------------------------

    def _metadata(self, finish_reason: str) -> dict[str, Any]:
        return {
            "finish_reason": finish_reason,
            "iteration": self.iterations,
            "total_tokens": self.total_tokens,
            "timings_ms": self.timings.as_dict(),
        }

    async def _write(self, role: str, content: str, **kwargs: Any) -> Any:
        with self.timings.measure("database"):
            async with self.deps.pool.acquire() as conn:
                return await repository.insert_message(
                    conn, self.session_id, self.turn_id, role, content, **kwargs
                )

    async def _after_turn(self, reply: str) -> None:
        """Session memory for the exchange, then (optionally) durable facts."""
        user_text = self.text
        if self.continuity.awaiting and self.continuity.pending is not None:
            user_text = f"(answering: {self.continuity.pending.question}) {self.text}"
        ttl = self.deps.config.session_memory_ttl_seconds
        requests = []
        for role, content in (("user", user_text), ("assistant", reply)):
            if not content.strip():
                continue
            metadata = struct_pb2.Struct()
            metadata.update({"role": role, "turn_id": str(self.turn_id)})
            request = mpb.CreateMemoryRequest(
                memory=mpb.Memory(
                    scope=mpb.SCOPE_SESSION,
                    session_id=str(self.session_id),
                    agent_id=self.agent_id,
                    user_id=self.user_id,
                    content=f"{role}: {content}"[:8000],
                    metadata=metadata,
                )
            )
            if ttl:
                request.ttl.CopyFrom(Duration(seconds=int(ttl)))
            requests.append(request)
        if requests:
            await self.deps.downstream.store(
                self.timings,
                mpb.BatchCreateMemoriesRequest(
                    requests=requests,
                    request_id=str(uuid.uuid5(CALL_NAMESPACE, f"{self.turn_id}:memory")),
                ),
            )
        if (
            self.outcome == "answered"
            and self.deps.config.fact_extraction
            and self.agent["extract_facts"]
        ):
            await self._extract_facts(user_text, reply)

    async def _extract_facts(self, user_text: str, reply: str) -> None:
        request = LlmRequest(
            model=self.agent["model"] or self.deps.config.llm.model,
            messages=[
                LlmMessage(
                    "system",
                    "Extract durable facts worth remembering from this exchange: facts and "
                    'preferences about the user (scope "user") or lessons for the assistant '
                    '(scope "agent"). Reply with JSON {"facts": [{"scope": ..., "content": ...}]}; '
                    "an empty list when there is nothing durable.",
                ),
                LlmMessage("user", f"User: {user_text}\nAssistant: {reply}"),
            ],
            max_tokens=256,
            temperature=0.0,
            json_schema=FACT_SCHEMA,
        )
        result: LlmResult | None = None
        try:
            async for piece in self._timed(request):
                if isinstance(piece, LlmResult):
                    result = piece
            facts = json.loads(result.text if result else "")["facts"]
        except (ValueError, KeyError, TypeError) as exc:
            log.info("fact extraction produced no usable JSON: %s", exc)
            return
        for fact in facts[:MAX_FACTS] if isinstance(facts, list) else []:
            if not isinstance(fact, dict) or not str(fact.get("content", "")).strip():
                continue
            scope = fact.get("scope")
            if scope == "user" and not self.user_id:
                continue
            memory = mpb.Memory(
                scope=mpb.SCOPE_USER if scope == "user" else mpb.SCOPE_AGENT,
                agent_id=self.agent_id,
                user_id=self.user_id if scope == "user" else "",
                content=str(fact["content"])[:4000],
            )
            memory.metadata.update(
                {"source": "fact_extraction", "session_id": str(self.session_id)}
            )
            await self.deps.downstream.create_memory(
                self.timings, mpb.CreateMemoryRequest(memory=memory)
            )

    async def settle(self) -> None:
        """After the turn ended (any way): close calls it left open, save the snapshot."""
        async with self.deps.pool.acquire() as conn, conn.transaction():
            snapshot = self.snapshot()
            if not snapshot.awaiting:
                for call in self.open_calls:
                    await repository.insert_message(
                        conn,
                        self.session_id,
                        self.turn_id,
                        "tool",
                        "(not run: the turn ended before this call)",
                        tool_call_id=call.id,
                        tool_name=call.name,
                        metadata={"is_error": True, "not_run": True},
                    )
                self.open_calls = []
            title = None
            if not self.session["title"] and self.outcome != "running":
                title = self.text.strip().splitlines()[0][:60] if self.text.strip() else None
            await repository.save_session_state(conn, self.session_id, snapshot.to_json(), title)


def _event(**kwargs: Any) -> pb.ChatResponse:
    return pb.ChatResponse(**kwargs)


def _call_proto(call: ToolCallRequest) -> pb.ToolCall:
    proto = pb.ToolCall(call_id=call.id, name=call.name)
    if call.arguments is not None:
        proto.arguments.update(call.arguments)
    return proto


def _struct_to_dict(value: struct_pb2.Struct) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    result: dict[str, Any] = MessageToDict(value)
    return result
