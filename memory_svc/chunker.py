"""Cuts a document into overlapping chunks measured in the embedding model's tokens.

The model's tokenizer lives in EmbeddingService, so token counts come from its
``CountTokens`` RPC. BERT-style tokenizers (both supported models) split on whitespace before
WordPiece, so a text's tokens are the sum of its whitespace-separated words' tokens plus the
model's special tokens; we therefore count each distinct word once and pack words greedily:
a chunk takes words until the next would exceed ``chunk_tokens``, and the next chunk starts
early enough to repeat about ``overlap_tokens`` tokens. Chunks are slices of the original text
(whitespace and line breaks kept). A single word longer than a chunk becomes a chunk of its
own and is truncated by the model when embedded.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

_WORD = re.compile(r"\S+")

CountFn = Callable[[Sequence[str]], Awaitable[list[int]]]


@dataclass(frozen=True)
class Chunk:
    index: int
    text: str
    token_count: int


@dataclass(frozen=True)
class Chunking:
    chunks: list[Chunk]
    token_count: int  # the whole text, special tokens once


async def special_tokens(count: CountFn) -> int:
    """Tokens a model adds around every text ([CLS] and [SEP] for BERT)."""
    one, two = await count(["a", "a a"])
    per_word = two - one
    return one - per_word


def pack(
    words: Sequence[tuple[int, int]],
    costs: Sequence[int],
    budget: int,
    overlap: int,
) -> list[tuple[int, int]]:
    """Word index ranges [start, end) of each chunk: pure logic, unit-tested."""
    ranges: list[tuple[int, int]] = []
    n = len(words)
    start = 0
    while start < n:
        end, used = start, 0
        while end < n and (end == start or used + costs[end] <= budget):
            used += costs[end]
            end += 1
        ranges.append((start, end))
        if end >= n:
            break
        # Step back from the end while the repeated words fit in the overlap.
        back, shared = end, 0
        while back - 1 > start and shared + costs[back - 1] <= overlap:
            back -= 1
            shared += costs[back]
        start = back
    return ranges


async def chunk_text(
    text: str, *, chunk_tokens: int, overlap_tokens: int, count: CountFn
) -> Chunking:
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    if not spans:
        return Chunking([], 0)
    specials = await special_tokens(count)
    distinct = sorted({text[s:e] for s, e in spans})
    # Each word counted alone carries the special tokens; take them off.
    cost_of = {
        word: max(1, n - specials) for word, n in zip(distinct, await count(distinct), strict=True)
    }
    costs = [cost_of[text[s:e]] for s, e in spans]
    budget = max(1, chunk_tokens - specials)
    chunks = []
    for index, (first, last) in enumerate(pack(spans, costs, budget, overlap_tokens)):
        chunks.append(
            Chunk(
                index=index,
                text=text[spans[first][0] : spans[last - 1][1]],
                token_count=sum(costs[first:last]) + specials,
            )
        )
    return Chunking(chunks, sum(costs) + specials)
