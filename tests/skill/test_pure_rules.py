"""Pure logic: the dependency graph, the arithmetic evaluator, schema building."""

from __future__ import annotations

import pytest

from skill_svc import graph
from skill_svc.builtins import calculate
from skill_svc.executors.base import ToolFailure
from skill_svc.schema import Parameter, input_schema, required_level


def test_find_cycle_and_dependency_order() -> None:
    edges = {"a": ["b", "c"], "b": ["d"], "c": ["d"]}
    assert graph.find_cycle(edges, "d", "a") == ["d", "a", "b", "d"]
    assert graph.find_cycle(edges, "a", "d") is None
    assert graph.dependencies_first(edges, "a") == ["d", "b", "c", "a"]


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("-2 ** 2", -4),
        ("7 // 2 + 7 % 2", 4),
        ("max(1, 5, 3)", 5),
    ],
)
async def test_calculate(expression: str, value: float) -> None:
    assert (await calculate(expression))["value"] == value


@pytest.mark.parametrize(
    "expression",
    ["__import__('os')", "x", "1 / 0", "(1).__class__", "[1, 2]", "'a' * 3", "10 ** 100000"],
)
async def test_calculate_refuses(expression: str) -> None:
    with pytest.raises(ToolFailure):
        await calculate(expression)


def test_input_schema_and_access_levels() -> None:
    params = [
        Parameter("b", "integer", False, 3, "", {"minimum": 0.0}, 1),
        Parameter("a", "string", True, None, "The a.", None, 1),
    ]
    assert input_schema(params) == {
        "type": "object",
        "properties": {
            "a": {"type": "string", "description": "The a."},
            "b": {"type": "integer", "minimum": 0, "default": 3},
        },
        "required": ["a"],
        "additionalProperties": False,
    }
    assert required_level(None, {"read_only_hint": True}) == "read"
    assert required_level(None, {"destructive_hint": True}) == "execute"
    assert required_level(None, {}) == "write"
    assert required_level("read", {"destructive_hint": True}) == "read"
