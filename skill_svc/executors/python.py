"""The ``python`` executor: in-process callables from an allow-list of modules.

A tool names its callable by dotted path (``package.module.function`` or
``package.module:function``); the module must be one of LIGHTMIND_SKILL_PYTHON_MODULES or
below one of them, so a tool definition cannot reach arbitrary code such as ``os.system``.
Callables receive the arguments as keyword arguments, plus ``context`` (an
``ExecutionContext``) when they declare a parameter of that name. Coroutine functions are
awaited; plain functions run in a worker thread so they never block the event loop (a
thread cannot be killed: a sync function that outlives its timeout finishes in the
background, and its result is dropped). Exceptions become ``is_error`` results.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Callable
from typing import Any

from lightmind.errors import InvalidArgument
from skill_svc.executors.base import ExecutionContext, ToolFailure, ToolOutcome
from skill_svc.records import ToolRecord


def split_path(path: str) -> tuple[str, str]:
    if ":" in path:
        module, _, attr = path.partition(":")
    else:
        module, _, attr = path.rpartition(".")
    if not module or not attr or not attr.isidentifier() or attr.startswith("_"):
        raise ValueError(path)
    return module, attr


class PythonExecutor:
    def __init__(self, allowed_modules: tuple[str, ...]) -> None:
        self._allowed = allowed_modules
        self._cache: dict[str, Callable[..., Any]] = {}

    def allowed(self, module: str) -> bool:
        return any(module == m or module.startswith(m + ".") for m in self._allowed)

    def check(self, path: str, field: str) -> None:
        """Raises InvalidArgument unless ``path`` names an allowed, existing callable."""
        try:
            module, _ = split_path(path)
        except ValueError:
            raise InvalidArgument.field(
                field, "must be a dotted path like 'package.module.function'"
            ) from None
        if not self.allowed(module):
            raise InvalidArgument.field(
                field,
                f"module {module!r} is not on the allow-list (LIGHTMIND_SKILL_PYTHON_MODULES: "
                f"{', '.join(self._allowed) or 'empty'})",
                reason="PYTHON_MODULE_NOT_ALLOWED",
            )
        try:
            self.resolve(path)
        except LookupError as exc:
            raise InvalidArgument.field(
                field, str(exc), reason="PYTHON_CALLABLE_NOT_FOUND"
            ) from None

    def resolve(self, path: str) -> Callable[..., Any]:
        found = self._cache.get(path)
        if found is not None:
            return found
        module_name, attr = split_path(path)
        if not self.allowed(module_name):
            raise LookupError(f"module {module_name!r} is not on the allow-list")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise LookupError(f"cannot import {module_name!r}: {exc}") from None
        func: Callable[..., Any] | None = getattr(module, attr, None)
        if func is None or not callable(func):
            raise LookupError(f"{module_name!r} has no callable {attr!r}")
        self._cache[path] = func
        return func

    async def run(
        self, tool: ToolRecord, arguments: dict[str, Any], context: ExecutionContext
    ) -> ToolOutcome:
        try:
            func = self.resolve(tool.implementation["callable"])
        except LookupError as exc:
            raise ToolFailure(f"the tool's implementation is unavailable: {exc}") from None
        kwargs = dict(arguments)
        if "context" in inspect.signature(func).parameters:
            kwargs["context"] = context
        try:
            if inspect.iscoroutinefunction(func):
                value = await func(**kwargs)
            else:
                value = await asyncio.to_thread(func, **kwargs)
        except ToolFailure:
            raise
        except Exception as exc:
            raise ToolFailure(f"{type(exc).__name__}: {exc}") from None
        return ToolOutcome(value=value)
