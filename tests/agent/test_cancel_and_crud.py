"""Stream cancellation, agent/session/message RPCs, bad input and tenant isolation."""

from __future__ import annotations

import asyncio

import asyncpg
import grpc
import pytest
from agent_helpers import USER_A, Stack
from google.protobuf import field_mask_pb2
from scripted_llm import call, text

from lightmind.agent.v1 import agent_service_pb2 as pb
from lightmind.testing import error_details


async def turn_statuses(database_url: str) -> list[str]:
    conn = await asyncpg.connect(database_url)
    try:
        rows = await conn.fetch("SELECT status FROM agent.chat_turn ORDER BY created_at")
    finally:
        await conn.close()
    return [r["status"] for r in rows]


async def test_cancelling_the_stream_stops_the_loop_and_keeps_the_session_consistent(
    stack: Stack,
) -> None:
    agent = await stack.new_agent()
    await stack.math_skill(agent)
    session = await stack.new_session(agent)
    stack.llm.add(
        call("c1", "load_skill", {"name": "math"}),
        {"delay": 5, **call("c2", "calculate", {"expression": "1+1"})},
        text("after the cancel"),
    )

    chat = stack.agent.Chat(pb.ChatRequest(session_id=session.session_id, message="slow"))
    seen: list[str] = []
    async for event in chat:
        seen.append(str(event.WhichOneof("event")))
        if event.HasField("tool_result"):
            chat.cancel()
            break
    assert seen[-1] == "tool_result"

    for _ in range(200):  # the server settles the turn once it notices the cancellation
        if await turn_statuses(stack.database_url) == ["cancelled"]:
            break
        await asyncio.sleep(0.05)
    assert await turn_statuses(stack.database_url) == ["cancelled"]
    messages = await stack.messages(session)
    assert [(m.role, m.tool_call_id) for m in messages] == [
        (pb.ROLE_USER, ""),
        (pb.ROLE_ASSISTANT, ""),
        (pb.ROLE_TOOL, "c1"),
    ]
    assert len(stack.llm.requests) == 2  # the second LLM call was cut off, nothing after it

    events = await stack.chat(session, "are you there?")
    assert events[-1].final_answer.text == "after the cancel"
    history = stack.llm.requests[2]["messages"]
    assert [m["role"] for m in history[1:]] == ["user", "assistant", "tool", "user"]


async def test_agent_crud_with_field_mask_etag_and_request_id(stack: Stack) -> None:
    create = pb.CreateAgentRequest(
        agent=pb.Agent(
            name="planner",
            description="plans",
            chat_options=pb.ChatOptions(temperature=0.2, max_tokens=64),
            memory_limits=pb.MemoryLimits(session=3, organization=0),
            knowledge_bases=["handbook"],
        ),
        request_id="8b7f0e36-5d7c-4f51-9d0e-3b1c2a4e5f60",
    )
    created = await stack.agent.CreateAgent(create)
    again = await stack.agent.CreateAgent(create)
    assert again == created
    # The same request_id on a different request is refused, not answered with the first.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.agent.CreateAgent(
            pb.CreateAgentRequest(
                agent=pb.Agent(name="other"), request_id="8b7f0e36-5d7c-4f51-9d0e-3b1c2a4e5f60"
            )
        )
    assert error_details(info.value).reason == "REQUEST_ID_REUSED"
    assert created.chat_options.temperature == pytest.approx(0.2)
    assert created.memory_limits.HasField("organization") and created.memory_limits.session == 3
    by_name = await stack.agent.GetAgent(pb.GetAgentRequest(agent="planner"))
    assert by_name == created

    updated = await stack.agent.UpdateAgent(
        pb.UpdateAgentRequest(
            agent=pb.Agent(agent_id=created.agent_id, description="plans trips", etag=created.etag),
            update_mask=field_mask_pb2.FieldMask(paths=["description"]),
        )
    )
    assert updated.description == "plans trips" and updated.name == "planner"
    assert updated.etag != created.etag
    with pytest.raises(grpc.aio.AioRpcError) as stale:
        await stack.agent.UpdateAgent(
            pb.UpdateAgentRequest(
                agent=pb.Agent(agent_id=created.agent_id, description="x", etag=created.etag),
                update_mask=field_mask_pb2.FieldMask(paths=["description"]),
            )
        )
    assert stale.value.code() == grpc.StatusCode.ABORTED

    with pytest.raises(grpc.aio.AioRpcError) as dup:
        await stack.agent.CreateAgent(pb.CreateAgentRequest(agent=pb.Agent(name="planner")))
    assert dup.value.code() == grpc.StatusCode.ALREADY_EXISTS

    for name in ("b-agent", "c-agent"):
        await stack.agent.CreateAgent(pb.CreateAgentRequest(agent=pb.Agent(name=name)))
    first = await stack.agent.ListAgents(pb.ListAgentsRequest(page_size=2))
    second = await stack.agent.ListAgents(
        pb.ListAgentsRequest(page_size=2, page_token=first.next_page_token)
    )
    assert [a.name for a in first.agents] == ["b-agent", "c-agent"]
    assert [a.name for a in second.agents] == ["planner"] and not second.next_page_token

    session = await stack.new_session(updated)
    await stack.agent.DeleteAgent(pb.DeleteAgentRequest(agent="planner"))
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await stack.agent.GetSession(pb.GetSessionRequest(session_id=session.session_id))
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    ("agent", "field"),
    [
        (pb.Agent(), "agent.name"),
        (pb.Agent(name="has space"), "agent.name"),
        (
            pb.Agent(name="a", chat_options=pb.ChatOptions(temperature=3)),
            "agent.chat_options.temperature",
        ),
        (pb.Agent(name="a", chat_options=pb.ChatOptions(top_p=0)), "agent.chat_options.top_p"),
        (pb.Agent(name="a", memory_limits=pb.MemoryLimits(user=-1)), "agent.memory_limits.user"),
        (pb.Agent(name="a", max_iterations=51), "agent.max_iterations"),
        (pb.Agent(name="a", knowledge_bases=[""]), "agent.knowledge_bases[0]"),
    ],
)
async def test_bad_agent_fields_are_named(stack: Stack, agent: pb.Agent, field: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stack.agent.CreateAgent(pb.CreateAgentRequest(agent=agent))
    details = error_details(caught.value)
    assert details.code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.fields == [field]
    assert details.domain == "agent.lightmind.dev"
    listed = await stack.agent.ListAgents(pb.ListAgentsRequest())
    assert not listed.agents


async def test_bad_session_and_chat_requests(stack: Stack) -> None:
    agent = await stack.new_agent()
    cases = [
        (
            stack.agent.CreateSession(pb.CreateSessionRequest(session=pb.Session())),
            "session.agent_id",
        ),
        (
            stack.agent.CreateSession(
                pb.CreateSessionRequest(session=pb.Session(agent_id=agent.agent_id, user_id="bob"))
            ),
            "session.user_id",
        ),
        (stack.agent.ListMessages(pb.ListMessagesRequest(session_id="nope")), "session_id"),
        (
            stack.agent.ListMessages(
                pb.ListMessagesRequest(
                    session_id="7a1f2a52-3c1e-4c9a-9a57-1b1d7e0a00a1", page_token="forged"
                )
            ),
            "page_token",
        ),
    ]
    for pending, field in cases:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await pending
        assert error_details(caught.value).fields == [field]
    session = await stack.new_session(agent)
    for request, field in (
        (pb.ChatRequest(session_id=session.session_id, message=" "), "message"),
        (pb.ChatRequest(session_id=session.session_id, message="x", request_id="r"), "request_id"),
        (pb.ChatRequest(message="x"), "session_id"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            [e async for e in stack.agent.Chat(request)]
        assert error_details(caught.value).fields == [field]
    assert await stack.messages(session) == []
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await stack.chat(pb.Session(session_id="7a1f2a52-3c1e-4c9a-9a57-1b1d7e0a00ff"), "hi")
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND


async def test_sessions_list_and_messages_page(stack: Stack) -> None:
    agent = await stack.new_agent()
    other = await stack.new_agent("other")
    sessions = [await stack.new_session(agent) for _ in range(3)]
    await stack.new_session(other)
    listed = await stack.agent.ListSessions(pb.ListSessionsRequest(agent="helper", page_size=2))
    rest = await stack.agent.ListSessions(
        pb.ListSessionsRequest(agent="helper", page_size=2, page_token=listed.next_page_token)
    )
    ids = [s.session_id for s in [*listed.sessions, *rest.sessions]]
    assert ids == [s.session_id for s in reversed(sessions)]
    mine = await stack.agent.ListSessions(pb.ListSessionsRequest(user_id=USER_A))
    assert len(mine.sessions) == 4

    stack.llm.add(text("one"), text("two"))
    await stack.chat(sessions[0], "first")
    await stack.chat(sessions[0], "second")
    page1 = await stack.agent.ListMessages(
        pb.ListMessagesRequest(session_id=sessions[0].session_id, page_size=3)
    )
    page2 = await stack.agent.ListMessages(
        pb.ListMessagesRequest(
            session_id=sessions[0].session_id, page_size=3, page_token=page1.next_page_token
        )
    )
    assert [m.content for m in [*page1.messages, *page2.messages]] == [
        "first",
        "one",
        "second",
        "two",
    ]
    await stack.agent.DeleteSession(pb.DeleteSessionRequest(session_id=sessions[0].session_id))
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await stack.messages(sessions[0])
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND
