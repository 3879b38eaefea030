"""MemoryService's keyset cursor (create time, id) on top of the shared signed page tokens.

Rows are listed newest first by (create_time, id); a token carries the last row's pair. The
token format, signing and checks live in ``lightmind.pagination``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from lightmind.errors import InvalidArgument
from lightmind.pagination import PageTokens

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Cursor:
    create_time: datetime
    id: str


def page_size(requested: int) -> int:
    from lightmind.pagination import page_size as shared

    return shared(requested, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


def encode_cursor(tokens: PageTokens, cursor: Cursor, scope: str) -> str:
    micros = (cursor.create_time - _EPOCH) // timedelta(microseconds=1)
    return tokens.encode([micros, cursor.id], scope)


def decode_cursor(tokens: PageTokens, token: str, scope: str) -> Cursor:
    key = tokens.decode(token, scope)
    try:
        micros, ident = int(key[0]), str(key[1])
    except (ValueError, TypeError, IndexError, KeyError):
        raise InvalidArgument.field(
            "page_token", "is malformed", reason="INVALID_PAGE_TOKEN"
        ) from None
    return Cursor(_EPOCH + timedelta(microseconds=micros), ident)


def keyset_clause(cursor: Cursor, add: Callable[[object], str], alias: str = "m") -> str:
    """The WHERE clause that starts a newest-first page after ``cursor``; ``add`` binds a
    parameter and returns its placeholder."""
    t, i = add(cursor.create_time), add(cursor.id)
    return f"({alias}.create_time, {alias}.id) < ({t}::timestamptz, {i}::uuid)"
