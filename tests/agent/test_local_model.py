"""End to end with the real embedded model: xllamacpp serving SmolLM2-135M-Instruct, with real
Memory, Skill and Embedding services. Asserts structure (events, stored messages, session
memory), never the model's wording."""

from __future__ import annotations

from typing import Any

from agent_helpers import Stack, kinds

from lightmind.agent.v1 import agent_service_pb2 as pb
from lightmind.memory.v1 import memory_service_pb2 as mpb

TERMINAL = {"final_answer", "clarification_requested"}


async def test_a_turn_with_the_local_model(start_stack: Any) -> None:
    stack: Stack = await start_stack(
        LIGHTMIND_LLM_BASE_URL="",
        LIGHTMIND_LLM_BACKEND="local",
        LIGHTMIND_LLM_MODEL="",
        LIGHTMIND_LLM_MAX_TOKENS="48",
        LIGHTMIND_LLM_LOCAL_CONTEXT_TOKENS="2048",
        LIGHTMIND_LLM_LOCAL_THREADS="2",
    )
    agent = await stack.new_agent(max_iterations=2, chat_options=pb.ChatOptions(temperature=0.0))
    session = await stack.new_session(agent)

    events = await stack.chat(session, "Say hello to me in one short sentence.")

    names = kinds(events)
    assert names[0] == "context_retrieved"
    assert names[-1] in TERMINAL
    assert names.count("final_answer") + names.count("clarification_requested") == 1
    terminal = events[-1]
    reply = (
        terminal.final_answer.text
        if terminal.HasField("final_answer")
        else terminal.clarification_requested.question
    )
    assert reply.strip()
    messages = await stack.messages(session)
    assert messages[0].role == pb.ROLE_USER
    assert messages[0].content == "Say hello to me in one short sentence."
    assert any(m.role == pb.ROLE_ASSISTANT for m in messages)
    memories = await stack.memory.ListMemories(
        mpb.ListMemoriesRequest(scope=mpb.SCOPE_SESSION, session_id=session.session_id)
    )
    contents = {m.content for m in memories.memories}
    assert "user: Say hello to me in one short sentence." in contents
    assert len(contents) == 2
