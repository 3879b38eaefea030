"""The agent loop against real Memory/Skill/Embedding services and a scripted LLM."""

from __future__ import annotations

import json
import uuid

import grpc
import pytest
from agent_helpers import USER_A, Stack, kinds
from scripted_llm import call, calls, text

from lightmind.agent.v1 import agent_service_pb2 as pb
from lightmind.memory.v1 import memory_service_pb2 as mpb
from lightmind.testing import error_details


async def session_memories(stack: Stack, session: pb.Session) -> list[str]:
    page = await stack.memory.ListMemories(
        mpb.ListMemoriesRequest(scope=mpb.SCOPE_SESSION, session_id=session.session_id)
    )
    return sorted(m.content for m in page.memories)


async def test_answer_without_tools_streams_deltas_and_stores_the_turn(stack: Stack) -> None:
    agent = await stack.new_agent()
    session = await stack.new_session(agent)
    stack.llm.add(text("Hello there, how can I help?"))

    events = await stack.chat(session, "Hi!")

    assert kinds(events)[0] == "context_retrieved"
    assert kinds(events)[-1] == "final_answer"
    deltas = "".join(e.text_delta.text for e in events if e.HasField("text_delta"))
    assert deltas == "Hello there, how can I help?"
    assert len([e for e in events if e.HasField("text_delta")]) > 1
    final = events[-1].final_answer
    assert final.reason == pb.FINISH_REASON_ANSWER
    assert final.iterations == 1
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert all(e.turn_id == events[0].turn_id and e.event_time.seconds > 0 for e in events)
    messages = await stack.messages(session)
    assert [(m.role, m.content) for m in messages] == [
        (pb.ROLE_USER, "Hi!"),
        (pb.ROLE_ASSISTANT, "Hello there, how can I help?"),
    ]
    assert messages[1].message_id == final.message_id
    assert "timings_ms" in messages[1].metadata
    assert await session_memories(stack, session) == [
        "assistant: Hello there, how can I help?",
        "user: Hi!",
    ]
    # The model was given the system prompt and the built-in ask_user tool only.
    sent = stack.llm.requests[0]
    assert sent["messages"][0]["role"] == "system"
    assert "You are a test agent." in sent["messages"][0]["content"]
    assert [t["function"]["name"] for t in sent["tools"]] == ["ask_user"]
    got = await stack.agent.GetSession(pb.GetSessionRequest(session_id=session.session_id))
    assert got.title == "Hi!"
    assert got.state == pb.SESSION_STATE_ACTIVE


async def test_second_turn_sees_history_and_session_memory(stack: Stack) -> None:
    agent = await stack.new_agent()
    session = await stack.new_session(agent)
    stack.llm.add(text("Noted: your favourite colour is teal."), text("Teal."))
    await stack.chat(session, "My favourite colour is teal.")

    events = await stack.chat(session, "What is my favourite colour?")

    retrieved = events[0].context_retrieved
    assert any("teal" in item.content for item in retrieved.items)
    assert {item.scope for item in retrieved.items} == {"SESSION"}
    prompt = stack.llm.prompt_text(1)
    assert "My favourite colour is teal." in prompt  # history
    assert "Relevant memory" in stack.llm.requests[1]["messages"][0]["content"]


async def test_loading_a_loaded_skill_again_points_at_its_tools(stack: Stack) -> None:
    agent = await stack.new_agent()
    await stack.math_skill(agent)
    session = await stack.new_session(agent)
    stack.llm.add(
        call("c1", "load_skill", {"name": "math"}),
        call("c2", "load_skill", {"name": "math"}),
        text("Done."),
    )
    events = await stack.chat(session, "Load math twice.")
    results = [e.tool_result for e in events if e.HasField("tool_result")]
    assert [r.is_error for r in results] == [False, False]
    assert "already loaded" in results[1].content and "calculate" in results[1].content
    assert [e.skill_loaded.skill for e in events if e.HasField("skill_loaded")] == ["math"]


async def test_a_repeated_identical_call_is_not_run_twice(stack: Stack) -> None:
    agent = await stack.new_agent()
    await stack.math_skill(agent)
    session = await stack.new_session(agent)
    stack.llm.add(
        call("c1", "load_skill", {"name": "math"}),
        call("c2", "calculate", {"expression": "6 * 7"}),
        call("c3", "calculate", {"expression": "6 * 7"}),
        call("c4", "calculate", {"expression": "6 * 8"}),
        text("42."),
    )
    events = await stack.chat(session, "What is 6 times 7?")
    results = {e.tool_result.call_id: e.tool_result for e in events if e.HasField("tool_result")}
    assert json.loads(results["c2"].content)["value"] == 42
    assert results["c3"].content.startswith("Already called calculate")
    assert '"value": 42' in results["c3"].content and not results["c3"].is_error
    assert json.loads(results["c4"].content)["value"] == 48  # other arguments run


async def test_load_skill_then_tool_of_that_skill(stack: Stack) -> None:
    agent = await stack.new_agent()
    await stack.math_skill(agent)
    session = await stack.new_session(agent)
    stack.llm.add(
        call("c1", "load_skill", {"name": "math"}),
        call("c2", "calculate", {"expression": "6 * 7"}),
        text("6 times 7 is 42."),
    )

    events = await stack.chat(session, "What is 6 times 7?")

    assert kinds(events) == [
        "context_retrieved",
        "tool_call",
        "skill_loaded",
        "tool_result",
        "tool_call",
        "tool_result",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_delta",
        "final_answer",
    ]
    loaded = events[2].skill_loaded
    assert (loaded.skill, list(loaded.tools)) == ("math", ["calculate"])
    result = events[5].tool_result
    assert (result.name, result.is_error) == ("calculate", False)
    assert json.loads(result.content)["value"] == 42
    # Level 1 only in the first call; the tool schema is offered after loading.
    first, second = stack.llm.requests[0], stack.llm.requests[1]
    assert [t["function"]["name"] for t in first["tools"]] == ["load_skill", "ask_user"]
    assert "math: Arithmetic with a calculator." in first["messages"][0]["content"]
    # Once loaded, a skill is no longer offered to load_skill (its only skill here, so
    # load_skill itself is gone); its tools are.
    assert [t["function"]["name"] for t in second["tools"]] == ["ask_user", "calculate"]
    assert "Use the calculate tool" in second["messages"][0]["content"]
    third = stack.llm.requests[2]["messages"]
    assert third[-1]["role"] == "tool" and third[-1]["tool_call_id"] == "c2"
    messages = await stack.messages(session)
    assert [m.role for m in messages] == [
        pb.ROLE_USER,
        pb.ROLE_ASSISTANT,
        pb.ROLE_TOOL,
        pb.ROLE_ASSISTANT,
        pb.ROLE_TOOL,
        pb.ROLE_ASSISTANT,
    ]
    assert messages[1].tool_calls[0].name == "load_skill"
    assert messages[4].tool_call_id == "c2"
    got = await stack.agent.GetSession(pb.GetSessionRequest(session_id=session.session_id))
    assert list(got.loaded_skills) == ["math"]

    # The next turn offers the loaded skill's tool right away.
    stack.llm.add(text("Done."))
    await stack.chat(session, "Thanks")
    assert "calculate" in [t["function"]["name"] for t in stack.llm.requests[3]["tools"]]


async def test_tool_error_is_fed_back_and_the_model_corrects_itself(stack: Stack) -> None:
    agent = await stack.new_agent()
    await stack.math_skill(agent)
    session = await stack.new_session(agent)
    stack.llm.add(
        call("c1", "load_skill", {"name": "math"}),
        call("c2", "calculate", {"expression": "1 / 0"}),
        call("c3", "calculate", {"wrong": "x"}),
        call("c4", "calculate", {"expression": "1 / 2"}),
        text("It is 0.5."),
    )

    events = await stack.chat(session, "Compute 1/0, or 1/2 if that fails.")

    results = [e.tool_result for e in events if e.HasField("tool_result")]
    assert [(r.call_id, r.is_error) for r in results] == [
        ("c1", False),
        ("c2", True),
        ("c3", True),
        ("c4", False),
    ]
    assert "division by zero" in results[1].content
    assert "INVALID_ARGUMENT" in results[2].content  # schema validation in SkillService
    tool_msgs = [m for m in stack.llm.requests[3]["messages"] if m["role"] == "tool"]
    assert "division by zero" in tool_msgs[1]["content"]
    assert events[-1].final_answer.text == "It is 0.5."


async def test_unloaded_tool_is_refused_with_a_hint(stack: Stack) -> None:
    agent = await stack.new_agent()
    await stack.math_skill(agent)
    session = await stack.new_session(agent)
    stack.llm.add(call("c1", "calculate", {"expression": "1+1"}), text("ok"))

    events = await stack.chat(session, "1+1?")

    result = next(e.tool_result for e in events if e.HasField("tool_result"))
    assert result.is_error and "load_skill" in result.content


async def test_clarification_then_resume_without_re_execution(stack: Stack) -> None:
    agent = await stack.new_agent()
    await stack.math_skill(agent)
    session = await stack.new_session(agent)
    stack.llm.add(
        call("c1", "load_skill", {"name": "math"}),
        calls(
            ("c2", "calculate", {"expression": "2 + 2"}),
            ("c3", "ask_user", {"question": "Which number should I add next?"}),
            ("c4", "calculate", {"expression": "3 * 3"}),
        ),
    )

    first = await stack.chat(session, "Add some numbers for me.")

    assert kinds(first)[-1] == "clarification_requested"
    asked = first[-1].clarification_requested
    assert (asked.question, asked.call_id, asked.skill) == (
        "Which number should I add next?",
        "c3",
        "math",
    )
    got = await stack.agent.GetSession(pb.GetSessionRequest(session_id=session.session_id))
    assert got.state == pb.SESSION_STATE_AWAITING_CLARIFICATION
    assert got.pending_question == "Which number should I add next?"
    assert len(stack.llm.requests) == 2

    stack.llm.add(text("2 + 2 is 4, and 3 * 3 is 9; adding 5 gives 18."))
    second = await stack.chat(session, "Add 5")

    assert [k for k in kinds(second) if k != "text_delta"] == [
        "context_retrieved",
        "tool_result",  # the answer completes the pending ask_user call
        "tool_call",  # c4 was still open; c2 completed before and is not run again
        "tool_result",
        "final_answer",
    ]
    assert second[1].tool_result.call_id == "c3"
    assert second[1].tool_result.content == "Add 5"
    assert second[2].tool_call.call.call_id == "c4"
    messages = await stack.messages(session)
    tool_ids = [m.tool_call_id for m in messages if m.role == pb.ROLE_TOOL]
    assert tool_ids == ["c1", "c2", "c3", "c4"]  # each call answered exactly once
    # The model saw the whole step, in order, with the user's answer as c3's result.
    sent = stack.llm.requests[2]["messages"]
    tail = [(m["role"], m.get("tool_call_id")) for m in sent[-4:]]
    assert tail == [("assistant", None), ("tool", "c2"), ("tool", "c3"), ("tool", "c4")]
    got = await stack.agent.GetSession(pb.GetSessionRequest(session_id=session.session_id))
    assert got.state == pb.SESSION_STATE_ACTIVE
    assert "(answering: Which number should I add next?) Add 5" in " ".join(
        await session_memories(stack, session)
    )


async def test_max_iterations_ends_with_a_clear_final_event(stack: Stack) -> None:
    agent = await stack.new_agent(max_iterations=2)
    await stack.math_skill(agent)
    session = await stack.new_session(agent)
    stack.llm.add(
        call("c1", "load_skill", {"name": "math"}),
        call("c2", "calculate", {"expression": "1 + 1"}),
        text("never reached"),
    )

    events = await stack.chat(session, "Loop forever")

    final = events[-1].final_answer
    assert final.reason == pb.FINISH_REASON_MAX_ITERATIONS
    assert final.iterations == 2
    assert "iteration limit" in final.text
    assert len(stack.llm.requests) == 2
    messages = await stack.messages(session)
    assert messages[-1].role == pb.ROLE_ASSISTANT and messages[-1].content == final.text


async def test_llm_unreachable_is_unavailable_with_an_error_event(start_stack) -> None:  # type: ignore[no-untyped-def]
    stack: Stack = await start_stack(LIGHTMIND_LLM_BASE_URL="http://127.0.0.1:9/v1")
    agent = await stack.new_agent()
    session = await stack.new_session(agent)
    received: list[pb.ChatResponse] = []

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for event in stack.agent.Chat(
            pb.ChatRequest(session_id=session.session_id, message="hello")
        ):
            received.append(event)

    details = error_details(caught.value)
    assert details.code == grpc.StatusCode.UNAVAILABLE
    assert details.reason == "LLM_UNAVAILABLE"
    assert "127.0.0.1:9" in details.message and "unreachable" in details.message
    assert kinds(received) == ["context_retrieved", "error"]
    assert received[-1].error.code == "UNAVAILABLE"
    # The user's message is kept; the session is usable again.
    messages = await stack.messages(session)
    assert [m.role for m in messages] == [pb.ROLE_USER]


async def test_llm_5xx_is_unavailable_after_retries(start_stack) -> None:  # type: ignore[no-untyped-def]
    stack: Stack = await start_stack(LIGHTMIND_LLM_MAX_RETRIES="1")
    agent = await stack.new_agent()
    session = await stack.new_session(agent)
    stack.llm.add({"status": 503}, {"status": 503})

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stack.chat(session, "hello")

    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "HTTP 503" in (caught.value.details() or "")
    assert len(stack.llm.requests) == 2  # one retry

    stack.llm.add({"status": 429}, text("recovered"))
    events = await stack.chat(session, "again")
    assert events[-1].final_answer.text == "recovered"


async def test_request_id_replay_does_not_run_twice(stack: Stack) -> None:
    agent = await stack.new_agent()
    await stack.math_skill(agent)
    session = await stack.new_session(agent)
    stack.llm.add(
        call("c1", "load_skill", {"name": "math"}),
        call("c2", "calculate", {"expression": "2 + 3"}),
        text("5"),
    )
    request_id = str(uuid.uuid4())

    first = await stack.chat(session, "2+3?", request_id=request_id)
    again = await stack.chat(session, "2+3?", request_id=request_id)

    assert len(stack.llm.requests) == 3
    assert [e.replayed for e in again] == [True] * len(first)
    for a, b in zip(first, again, strict=True):
        b.replayed = False
        assert a == b
    assert len(await stack.messages(session)) == 6

    with pytest.raises(grpc.aio.AioRpcError) as caught:
        other = await stack.new_session(agent)
        await stack.chat(other, "2+3?", request_id=request_id)
    assert error_details(caught.value).fields == ["request_id"]


async def test_two_users_of_one_agent_never_see_each_others_memories(start_stack) -> None:  # type: ignore[no-untyped-def]
    stack: Stack = await start_stack(LIGHTMIND_AGENT_FACT_EXTRACTION="true")
    agent = await stack.new_agent(extract_facts=True)
    alice = await stack.new_session(agent, user_id=USER_A)
    bob = await stack.new_session(agent, user_id="7a1f2a52-3c1e-4c9a-9a57-1b1d7e0a00b2")
    fact = {"facts": [{"scope": "user", "content": "The user's secret code is 4711."}]}
    stack.llm.add(text("I will remember that."), text(json.dumps(fact)))

    await stack.chat(alice, "My secret code is 4711.")

    user_memories = await stack.memory.ListMemories(
        mpb.ListMemoriesRequest(scope=mpb.SCOPE_USER, user_id=USER_A)
    )
    assert [m.content for m in user_memories.memories] == ["The user's secret code is 4711."]
    assert stack.llm.requests[1]["response_format"]["type"] == "json_schema"

    stack.llm.add(text("I don't know."), text('{"facts": []}'))
    events = await stack.chat(bob, "What is my secret code?")

    assert "4711" not in json.dumps([item.content for item in events[0].context_retrieved.items])
    assert "4711" not in stack.llm.prompt_text(2)

    stack.llm.add(text("It is 4711."), text('{"facts": []}'))
    events = await stack.chat(alice, "What is my secret code?")
    contents = [item.content for item in events[0].context_retrieved.items]
    assert "The user's secret code is 4711." in contents
    assert {item.scope for item in events[0].context_retrieved.items} >= {"USER", "SESSION"}
