"""Logging set-up shared by every service: plain text for people, JSON lines for machines.

Each record carries the tenant and request id of the call it was logged in (from
``lightmind.tenancy``), so one request can be followed through a service's log.
"""

from __future__ import annotations

import json
import logging
import sys
import time

from lightmind import tenancy


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.tenant = tenancy.current_tenant()
        record.request_id = tenancy.current_request_id()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, tenant, request id, extras."""

    _STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message"}

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in self._STANDARD and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


def configure(level: str = "info", fmt: str = "text") -> None:
    """Installs one stderr handler on the root logger (idempotent)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_lightmind", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler._lightmind = True  # type: ignore[attr-defined]
    handler.addFilter(_ContextFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(tenant)s] %(message)s")
        )
    root.addHandler(handler)
    root.setLevel(level.upper())
