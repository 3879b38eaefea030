"""Opaque, signed page tokens: the last row's sort key plus a digest of the request filters.

A token that was altered, comes from another tenant or is reused with other filters is
refused with INVALID_ARGUMENT on ``page_token``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from typing import Any

from lightmind.errors import InvalidArgument
from lightmind.tenancy import current_tenant

_SIG = 16


class PageTokens:
    def __init__(self, secret: str) -> None:
        self._secret = secret.encode() if secret else secrets.token_bytes(32)

    def _scope(self, scope: str) -> str:
        return hashlib.sha256(f"{current_tenant()}\0{scope}".encode()).hexdigest()[:16]

    def encode(self, key: Any, scope: str) -> str:
        payload = json.dumps({"k": key, "s": self._scope(scope)}, separators=(",", ":")).encode()
        sig = hmac.new(self._secret, payload, hashlib.sha256).digest()[:_SIG]
        return base64.urlsafe_b64encode(sig + payload).decode().rstrip("=")

    def decode(self, token: str, scope: str) -> Any:
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (ValueError, TypeError):
            raise _bad("is not a token this service issued") from None
        sig, payload = raw[:_SIG], raw[_SIG:]
        expected = hmac.new(self._secret, payload, hashlib.sha256).digest()[:_SIG]
        if len(sig) != _SIG or not hmac.compare_digest(sig, expected):
            raise _bad("is not a token this service issued (or it was altered)")
        data = json.loads(payload)
        if data.get("s") != self._scope(scope):
            raise _bad("was issued for a request with other filters; start from the first page")
        return data.get("k")


def page_size(requested: int, default: int, maximum: int) -> int:
    if requested < 0:
        raise InvalidArgument.field("page_size", "must not be negative")
    return min(requested or default, maximum)


def _bad(why: str) -> InvalidArgument:
    return InvalidArgument.field("page_token", why, reason="INVALID_PAGE_TOKEN")
