"""Etags: one format for every service; quoted or bare numbers are read back, junk refused."""

from __future__ import annotations

import pytest

from lightmind.errors import InvalidArgument
from lightmind.etags import format_etag, parse_etag


def test_round_trip_and_forms() -> None:
    assert format_etag(7) == "7"
    assert parse_etag(format_etag(7)) == 7
    assert parse_etag('"12"') == 12
    assert parse_etag("") is None


@pytest.mark.parametrize("bad", ["abc", '"x"', "-1", "1.5", 'W/"3"'])
def test_junk_is_refused_naming_the_field(bad: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        parse_etag(bad, "memory.etag")
    assert info.value.violations[0].field == "memory.etag"
