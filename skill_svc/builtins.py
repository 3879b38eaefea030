"""Built-in python tools shipped with SkillService (module ``skill_svc.builtins``).

Both are coroutines (bounded, microseconds of work: no worker thread needed).
``current_time`` tells the time in an IANA time zone; ``calculate`` evaluates arithmetic by
walking the expression's AST (never ``eval``): numbers, + - * / // % **, unary signs,
parentheses and a fixed set of math functions and constants, with limits on expression
length, exponent size and result magnitude so a call cannot burn CPU or memory.

The memory-search built-in lives in ``skill_svc.memory_tools`` (it needs a MemoryService
client).
"""

from __future__ import annotations

import ast
import datetime as dt
import math
import operator
from collections.abc import Callable
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from skill_svc.executors.base import ToolFailure


async def current_time(timezone: str = "UTC") -> dict[str, Any]:
    """The current date and time in ``timezone`` (an IANA name such as "Europe/Paris")."""
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ToolFailure(
            f"unknown time zone {timezone!r}; use an IANA name like 'Asia/Tokyo'"
        ) from None
    now = dt.datetime.now(zone)
    return {
        "timezone": timezone,
        "iso": now.isoformat(timespec="seconds"),
        "date": now.date().isoformat(),
        "time": now.strftime("%H:%M:%S"),
        "weekday": now.strftime("%A"),
        "utc_offset": now.strftime("%z"),
        "unix": int(now.timestamp()),
    }


MAX_EXPRESSION = 1000
MAX_EXPONENT = 10_000
MAX_MAGNITUDE = 1e300

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "floor": math.floor,
    "ceil": math.ceil,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}


def _check(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolFailure("the expression must produce a number")
    if abs(value) > MAX_MAGNITUDE:
        raise ToolFailure("the result is too large")
    return value


def _eval(node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        if isinstance(node.value, bool):
            raise ToolFailure("booleans are not numbers here")
        return _check(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ToolFailure(f"exponents above {MAX_EXPONENT} are not allowed")
        # Bound the size of powers before computing them (big integers are exact and slow).
        if (
            isinstance(node.op, ast.Pow)
            and abs(left) > 1
            and right > 0
            and right * math.log10(abs(left)) > 300
        ):
            raise ToolFailure("the result is too large")
        try:
            return _check(_BINARY[type(node.op)](left, right))
        except ZeroDivisionError:
            raise ToolFailure("division by zero") from None
        except OverflowError:
            raise ToolFailure("the result is too large") from None
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS
        and not node.keywords
    ):
        args = [_eval(a) for a in node.args]
        try:
            return _check(_FUNCTIONS[node.func.id](*args))
        except (ValueError, TypeError, OverflowError) as exc:
            raise ToolFailure(f"{node.func.id}: {exc}") from None
    raise ToolFailure(f"unsupported element in the expression: {ast.dump(node)[:60]}")


async def calculate(expression: str) -> dict[str, Any]:
    """Evaluates an arithmetic expression such as "(2 + 3) * sqrt(16) / 4".

    A coroutine, so it runs on the event loop without a thread hop: the length, exponent and
    magnitude limits keep every evaluation to well under a millisecond."""
    if len(expression) > MAX_EXPRESSION:
        raise ToolFailure(f"the expression is longer than {MAX_EXPRESSION} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ToolFailure(f"not a valid expression: {exc.msg}") from None
    value = _eval(tree)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        value = int(value)
    return {"expression": expression, "value": value}
