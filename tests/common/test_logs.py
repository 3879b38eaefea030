"""Structured logs: JSON lines carrying the tenant and request id of the call."""

from __future__ import annotations

import json
import logging

import pytest

from lightmind import logs, tenancy


def test_json_lines_carry_tenant_and_request_id(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    level = root.level
    try:
        logs.configure("info", "json")
        bound = tenancy.bind("acme", None, "req-42")
        try:
            logging.getLogger("lightmind.test").info(
                "created %s", "thing", extra={"method": "/x.Y/Create"}
            )
        finally:
            tenancy.unbind(bound)
        line = capsys.readouterr().err.strip().splitlines()[-1]
        record = json.loads(line)
        assert record["msg"] == "created thing" and record["level"] == "info"
        assert record["tenant"] == "acme" and record["request_id"] == "req-42"
        assert record["method"] == "/x.Y/Create" and record["logger"] == "lightmind.test"
    finally:
        for handler in list(root.handlers):
            if getattr(handler, "_lightmind", False):
                root.removeHandler(handler)
        root.setLevel(level)
