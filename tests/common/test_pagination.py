"""Signed page tokens: they round-trip, and altered, foreign or re-scoped tokens are refused."""

from __future__ import annotations

import pytest

from lightmind import tenancy
from lightmind.errors import InvalidArgument
from lightmind.pagination import PageTokens, page_size


def test_round_trip_and_tampering() -> None:
    tokens = PageTokens(b"secret")
    token = tokens.encode(["2026-01-02", "id-7"], "ListThings|filter=a")
    assert tokens.decode(token, "ListThings|filter=a") == ["2026-01-02", "id-7"]
    for bad, scope in (
        (token, "ListThings|filter=b"),  # other filters
        (token[:-2], "ListThings|filter=a"),  # altered
        ("", "ListThings|filter=a"),
        ("!!!", "ListThings|filter=a"),
    ):
        with pytest.raises(InvalidArgument) as info:
            tokens.decode(bad, scope)
        assert info.value.violations[0].field == "page_token"
    with pytest.raises(InvalidArgument):
        PageTokens(b"other secret").decode(token, "ListThings|filter=a")


def test_a_token_is_bound_to_its_tenant() -> None:
    tokens = PageTokens("secret")
    bound = tenancy.bind("acme", None)
    try:
        token = tokens.encode(1, "scope")
    finally:
        tenancy.unbind(bound)
    bound = tenancy.bind("globex", None)
    try:
        with pytest.raises(InvalidArgument):
            tokens.decode(token, "scope")
    finally:
        tenancy.unbind(bound)


def test_page_size() -> None:
    assert page_size(0) == 50 and page_size(7) == 7 and page_size(10**6) == 1000
    assert page_size(0, default=20, maximum=100) == 20
    with pytest.raises(InvalidArgument):
        page_size(-1)
