"""Text to token ids for one model: query prefix, truncation and token counts.

Wraps a ``tokenizers.Tokenizer`` loaded from the model's ``tokenizer.json`` with its own
padding and truncation switched off: padding is the batcher's job (to the longest text of a
batch, not a fixed length), and truncation is decided per request. A text over the model's
maximum is reported, then either cut by a second tokenizer configured to truncate (so the
special tokens stay in place) or refused, as the request asks. Runs in worker threads; the
Rust tokenizer releases the GIL.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from embedding_svc.models import ModelSpec


@dataclass(frozen=True)
class Encoded:
    """One text, ready for the batcher."""

    ids: npt.NDArray[np.int64]
    type_ids: npt.NDArray[np.int64]
    token_count: int  # before truncation
    truncated: bool

    @property
    def length(self) -> int:
        return int(self.ids.shape[0])


class TextTokenizer:
    def __init__(self, spec: ModelSpec, tokenizer_file: Path) -> None:
        self.spec = spec
        self._full = Tokenizer.from_file(str(tokenizer_file))
        self._full.no_padding()
        self._full.no_truncation()
        self._cut = Tokenizer.from_file(str(tokenizer_file))
        self._cut.no_padding()
        self._cut.enable_truncation(max_length=spec.max_tokens)

    def _prepare(self, texts: list[str], query: bool) -> list[str]:
        prefix = self.spec.query_prefix if query else ""
        return [prefix + text for text in texts] if prefix else texts

    def count(self, texts: list[str], query: bool) -> list[int]:
        encodings = self._full.encode_batch(self._prepare(texts, query))
        return [len(e.ids) for e in encodings]

    def encode(self, texts: list[str], query: bool) -> list[Encoded]:
        prepared = self._prepare(texts, query)
        full = self._full.encode_batch(prepared)
        over = [i for i, e in enumerate(full) if len(e.ids) > self.spec.max_tokens]
        cut = dict(zip(over, self._cut.encode_batch([prepared[i] for i in over]), strict=True))
        result = []
        for i, encoding in enumerate(full):
            used = cut.get(i, encoding)
            result.append(
                Encoded(
                    ids=np.asarray(used.ids, dtype=np.int64),
                    type_ids=np.asarray(used.type_ids, dtype=np.int64),
                    token_count=len(encoding.ids),
                    truncated=i in cut,
                )
            )
        return result
