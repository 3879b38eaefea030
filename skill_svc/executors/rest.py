"""The ``rest`` executor: one HTTP request per attempt through a shared httpx client.

``{name}`` placeholders in the URL template take URL-encoded arguments; the other arguments
go in the JSON body (POST/PUT/PATCH) or the query string (GET/DELETE). The response is read
in chunks and abandoned past LIGHTMIND_SKILL_REST_MAX_RESPONSE_BYTES. 5xx, 429 and transport
errors are retryable failures; other 4xx are failures the model reads (with the body); 2xx
JSON becomes structured content, anything else text. Hosts can be limited with
LIGHTMIND_SKILL_REST_ALLOWED_HOSTS.
"""

from __future__ import annotations

import json
import re
import string
import urllib.parse
from typing import Any

import httpx

from lightmind.errors import InvalidArgument
from skill_svc.executors.base import ExecutionContext, ToolFailure, ToolOutcome
from skill_svc.records import ToolRecord

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders(template: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(template) if name]


class RestExecutor:
    def __init__(self, allowed_hosts: tuple[str, ...], max_response_bytes: int) -> None:
        self._allowed = allowed_hosts
        self._max_bytes = max_response_bytes
        self._client = httpx.AsyncClient(follow_redirects=False)

    def host_allowed(self, host: str) -> bool:
        return "*" in self._allowed or host.lower() in (h.lower() for h in self._allowed)

    def check(self, impl: dict[str, Any], field: str) -> None:
        if impl.get("method", "").upper() not in METHODS:
            raise InvalidArgument.field(f"{field}.method", f"must be one of {', '.join(METHODS)}")
        template = impl.get("url_template", "")
        probe = _PLACEHOLDER.sub("x", template)
        parsed = urllib.parse.urlsplit(probe)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise InvalidArgument.field(f"{field}.url_template", "must be an http(s) URL")
        if not self.host_allowed(parsed.hostname):
            raise InvalidArgument.field(
                f"{field}.url_template",
                f"host {parsed.hostname!r} is not in LIGHTMIND_SKILL_REST_ALLOWED_HOSTS",
                reason="REST_HOST_NOT_ALLOWED",
            )

    async def run(
        self, tool: ToolRecord, arguments: dict[str, Any], context: ExecutionContext
    ) -> ToolOutcome:
        impl = tool.implementation
        method = impl["method"].upper()
        template: str = impl["url_template"]
        rest = dict(arguments)
        url = _PLACEHOLDER.sub(
            lambda m: urllib.parse.quote(str(rest.pop(m.group(1), "")), safe=""), template
        )
        host = urllib.parse.urlsplit(url).hostname or ""
        if not self.host_allowed(host):
            raise ToolFailure(f"host {host!r} is not allowed")
        timeout = float(impl.get("timeout_seconds") or 0) or context.timeout_seconds
        request_args: dict[str, Any] = {"headers": dict(impl.get("headers") or {})}
        if method in ("GET", "DELETE"):
            request_args["params"] = {
                k: v if isinstance(v, str) else json.dumps(v) for k, v in rest.items()
            }
        else:
            request_args["json"] = rest
        try:
            async with self._client.stream(
                method, url, timeout=httpx.Timeout(timeout), **request_args
            ) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > self._max_bytes:
                        raise ToolFailure(
                            f"the response exceeded the limit of {self._max_bytes} bytes"
                        )
        except httpx.TimeoutException:
            raise ToolFailure(
                f"the HTTP request timed out after {timeout}s", retryable=True
            ) from None
        except httpx.TransportError as exc:
            raise ToolFailure(f"the HTTP request failed: {exc}", retryable=True) from None
        text = body.decode(response.encoding or "utf-8", errors="replace")
        status = response.status_code
        if status >= 400:
            retryable = status >= 500 or status == 429
            raise ToolFailure(f"HTTP {status}: {text[:2000]}", retryable=retryable)
        if "json" in response.headers.get("content-type", ""):
            try:
                return ToolOutcome(value=json.loads(text))
            except ValueError:
                pass
        return ToolOutcome(text=text)

    async def close(self) -> None:
        await self._client.aclose()
