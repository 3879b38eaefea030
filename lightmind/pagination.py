"""Opaque, signed page tokens for keyset pagination, and the page-size rule (AIP-158).

A token carries the last row's sort key (any JSON value the service chooses) and a digest of
the request that made it — the tenant, plus the ``scope`` string the service builds from the
method and every filter field — signed with HMAC-SHA256. A token that was altered, comes from
another tenant, or is replayed with other filters is refused with INVALID_ARGUMENT on
``page_token``. With no configured secret a random one is made per process: tokens then do not
survive a restart or travel between replicas.
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

_SIG_BYTES = 16


def page_size(requested: int, default: int = 50, maximum: int = 1000) -> int:
    """0 means the default; more than the maximum is capped; negative is refused."""
    if requested < 0:
        raise InvalidArgument.field("page_size", "must not be negative")
    return min(requested or default, maximum)


class PageTokens:
    def __init__(self, secret: bytes | str = b"") -> None:
        raw = secret.encode() if isinstance(secret, str) else secret
        self._secret = raw or secrets.token_bytes(32)

    def _sign(self, payload: bytes) -> bytes:
        return hmac.new(self._secret, payload, hashlib.sha256).digest()[:_SIG_BYTES]

    @staticmethod
    def _digest(scope: str) -> str:
        return hashlib.sha256(f"{current_tenant()}\0{scope}".encode()).hexdigest()[:16]

    def encode(self, key: Any, scope: str) -> str:
        """A token for the page after ``key``; ``scope`` names the method and its filters."""
        payload = json.dumps({"k": key, "s": self._digest(scope)}, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(self._sign(payload) + payload).decode().rstrip("=")

    def decode(self, token: str, scope: str) -> Any:
        """The key ``encode`` was given; raises INVALID_ARGUMENT naming ``page_token``."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (ValueError, TypeError):
            raise _bad("is not a token this service issued") from None
        sig, payload = raw[:_SIG_BYTES], raw[_SIG_BYTES:]
        if len(sig) != _SIG_BYTES or not hmac.compare_digest(sig, self._sign(payload)):
            raise _bad("is not a token this service issued (or it was altered)")
        try:
            data = json.loads(payload)
            key, digest = data["k"], str(data["s"])
        except (ValueError, KeyError, TypeError):
            raise _bad("is malformed") from None
        if not hmac.compare_digest(digest, self._digest(scope)):
            raise _bad("was issued for a request with other filters; start from the first page")
        return key


def _bad(why: str) -> InvalidArgument:
    return InvalidArgument.field("page_token", why, reason="INVALID_PAGE_TOKEN")
