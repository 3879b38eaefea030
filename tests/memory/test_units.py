"""Pure logic: chunk packing, page tokens, filter compilation (no database, no model)."""

from __future__ import annotations

import itertools
import uuid
from datetime import UTC, datetime

import pytest
from google.protobuf import struct_pb2

from lightmind.errors import InvalidArgument
from lightmind.memory.v1 import memory_service_pb2 as pb
from lightmind.pagination import PageTokens
from memory_svc.chunker import chunk_text, pack
from memory_svc.filters import Params, compile_filter
from memory_svc.pagination import Cursor, decode_cursor, encode_cursor


def test_pack_respects_budget_and_overlap() -> None:
    costs = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5]
    words = [(0, 0)] * len(costs)
    ranges = pack(words, costs, budget=10, overlap=4)
    assert ranges[0][0] == 0 and ranges[-1][1] == len(costs)
    for (s1, e1), (s2, _) in itertools.pairwise(ranges):
        assert s1 < s2 <= e1  # progress, and overlap never goes past the previous start
        assert sum(costs[s2:e1]) <= 4
    for start, end in ranges:
        assert sum(costs[start:end]) <= 10 or end - start == 1


def test_pack_gives_an_oversized_word_its_own_chunk() -> None:
    assert pack([(0, 0)] * 3, [2, 50, 2], budget=10, overlap=0) == [(0, 1), (1, 2), (2, 3)]


async def test_chunk_text_uses_counts_and_keeps_original_text() -> None:
    async def count(texts):  # 2 special tokens + one token per non-space character
        return [2 + len(t.replace(" ", "")) for t in texts]

    text = "aa bb\ncc  dd ee"
    chunking = await chunk_text(text, chunk_tokens=8, overlap_tokens=2, count=count)
    assert [c.text for c in chunking.chunks] == ["aa bb\ncc", "cc  dd ee"]
    assert all(c.token_count <= 8 for c in chunking.chunks)
    assert chunking.token_count == 2 + 10


def test_cursor_round_trips_through_a_page_token() -> None:
    tokens = PageTokens(b"secret")
    cursor = Cursor(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), str(uuid.uuid4()))
    token = encode_cursor(tokens, cursor, "scope-1")
    assert decode_cursor(tokens, token, "scope-1") == cursor
    with pytest.raises(InvalidArgument):
        decode_cursor(tokens, tokens.encode({"not": "a cursor"}, "scope-1"), "scope-1")


def test_filter_sql_binds_keys_and_values() -> None:
    value = struct_pb2.Value(string_value="x'); DROP TABLE t; --")
    flt = pb.MetadataFilter(
        all_of=pb.FilterGroup(
            filters=[
                pb.MetadataFilter(equals=pb.EqualsCondition(key="a'.b", value=value)),
                pb.MetadataFilter(exists=pb.ExistsCondition(key="c")),
            ]
        )
    )
    params = Params(["tenant"])
    sql = compile_filter(flt, params, alias="m")
    assert "DROP" not in sql and "a'" not in sql
    assert params.values == ["tenant", ["a'", "b"], "x'); DROP TABLE t; --", ["c"]]


def test_filter_depth_is_limited() -> None:
    flt = pb.MetadataFilter(exists=pb.ExistsCondition(key="k"))
    for _ in range(12):
        flt = pb.MetadataFilter(negate=flt)
    with pytest.raises(InvalidArgument) as err:
        compile_filter(flt, Params(), alias="m")
    assert err.value.violations[0].field.startswith("filter.negate")
