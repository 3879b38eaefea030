"""Etags (AIP-154) for every service: the resource's version number as a string.

``format_etag`` writes it; ``parse_etag`` reads what a client sends back — the bare number,
or the number in double quotes (HTTP style) — and refuses anything else with INVALID_ARGUMENT
naming the field. Comparing versions (ABORTED when stale) stays with each repository, next to
the row it guards.
"""

from __future__ import annotations

from lightmind.errors import InvalidArgument


def format_etag(version: int) -> str:
    return str(version)


def parse_etag(etag: str, field: str = "etag") -> int | None:
    """The version an etag names; None when the client sent none."""
    if not etag:
        return None
    text = etag.strip()
    if text.startswith('"') and text.endswith('"') and len(text) >= 2:
        text = text[1:-1]
    if not text.isdigit():
        raise InvalidArgument.field(field, "is not an etag this service issued")
    return int(text)
