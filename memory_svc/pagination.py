"""Opaque, tamper-proof page tokens for keyset pagination.

A token carries the last row's sort key (create time in microseconds and id) and a digest of
the request that made it (tenant, method and every filter field), signed with HMAC-SHA256.
A token that was altered, comes from another tenant, or is replayed with different filters
is refused with INVALID_ARGUMENT on ``page_token``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from lightmind.errors import InvalidArgument

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
_SIG_BYTES = 16
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Cursor:
    create_time: datetime
    id: str


def page_size(requested: int) -> int:
    if requested < 0:
        raise InvalidArgument.field("page_size", "must not be negative")
    if requested == 0:
        return DEFAULT_PAGE_SIZE
    return min(requested, MAX_PAGE_SIZE)


class PageTokens:
    def __init__(self, secret: bytes) -> None:
        self._secret = secret

    def _sign(self, payload: bytes) -> bytes:
        return hmac.new(self._secret, payload, hashlib.sha256).digest()[:_SIG_BYTES]

    @staticmethod
    def _digest(scope: str) -> str:
        return hashlib.sha256(scope.encode()).hexdigest()[:16]

    def encode(self, cursor: Cursor, scope: str) -> str:
        """``scope`` identifies tenant, method and filters; it must match on decode."""
        micros = (cursor.create_time - _EPOCH) // timedelta(microseconds=1)
        payload = json.dumps(
            {"t": micros, "i": cursor.id, "s": self._digest(scope)}, separators=(",", ":")
        ).encode()
        return base64.urlsafe_b64encode(self._sign(payload) + payload).decode().rstrip("=")

    def decode(self, token: str, scope: str) -> Cursor:
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        except (ValueError, TypeError):
            raise _bad("is not a token this service issued") from None
        sig, payload = raw[:_SIG_BYTES], raw[_SIG_BYTES:]
        if len(sig) != _SIG_BYTES or not hmac.compare_digest(sig, self._sign(payload)):
            raise _bad("is not a token this service issued (or it was altered)")
        try:
            data = json.loads(payload)
            micros, ident, digest = int(data["t"]), str(data["i"]), str(data["s"])
        except (ValueError, KeyError, TypeError):
            raise _bad("is malformed") from None
        if not hmac.compare_digest(digest, self._digest(scope)):
            raise _bad("was issued for a request with other filters; start from the first page")
        return Cursor(_EPOCH + timedelta(microseconds=micros), ident)


def _bad(why: str) -> InvalidArgument:
    return InvalidArgument.field("page_token", why, reason="INVALID_PAGE_TOKEN")
