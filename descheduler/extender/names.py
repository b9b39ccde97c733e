"""Node names of a request to node-table rows in one compiled pass, without a Python step per name.

kube-scheduler sends up to every node's name per request, in a fresh order each time (its filter
workers run in parallel), so no cache keyed on the request bytes helps the filter call. Decoding
5,000 names and looking each up in a dict costs 1-3 ms of CPU; this reads the names straight out
of the raw JSON array instead (`kernels.locate`): each name is hashed from its bytes and looked up
in an open-addressing table built with the state, and compared in full with the row's name, so a
name maps to a row only when its bytes are that row's name.

The fast path takes the array as Go's encoding/json writes it (`["a","b"]`: no whitespace, no
escapes) and names the table knows; anything else (an unknown name, an empty one, spaces, escapes)
answers None and the caller decodes the array the ordinary way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
import numpy as np
import numpy.typing as npt

from descheduler.extender import kernels

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class NameSpans:
    """Where each name of a raw NodeNames array sits: `raw[starts[i]:ends[i]]` is name i, unquoted;
    `words` is `kernels.words_view(raw)` (or the words of an answer holding the array), read again to
    write the answers."""

    starts: IntArray
    ends: IntArray
    words: kernels.WordArray


@dataclass(frozen=True, slots=True)
class Located:
    """The table rows of a raw NodeNames array, in request order, and where each name sits in it."""

    rows: IntArray
    spans: NameSpans


class NameIndex:
    """The table's node names, hashed into an open-addressing table for `kernels.locate`."""

    def __init__(self, names: Sequence[str]) -> None:
        kernels.load()
        self.names = tuple(names)
        encoded = [name.encode() for name in self.names]
        # A name JSON writes with escapes is left to the slow path: a request carries it escaped.
        plain = np.array(
            [
                len(raw) > 0 and msgspec.json.encode(name) == b'"' + raw + b'"'
                for name, raw in zip(self.names, encoded, strict=True)
            ],
            dtype=np.bool_,
        )
        self._known = bool(plain.any())
        self._offsets = np.cumsum([0, *map(len, encoded)], dtype=np.int64)
        self._words = kernels.words_view(b"".join(encoded))
        bits = max(4, (4 * max(len(encoded), 1) - 1).bit_length())  # at most a quarter full
        self.slots = kernels.build_slots(self._words, self._offsets, plain, bits)

    def locate(self, raw: bytes) -> Located | None:
        """Rows of a compact JSON array of known names, in its order; None when the slow path must decide."""
        if raw == b"[]":
            empty = np.zeros(0, dtype=np.int64)
            return Located(empty, NameSpans(empty, empty, kernels.words_view(raw)))
        if not self._known:
            return None
        buf, words = np.frombuffer(raw, dtype=np.uint8), kernels.words_view(raw)
        names = len(raw) // 3  # a compact array of names holds at most this many
        table = (self._words, self._offsets, self.slots, names)
        status, rows, starts, ends = kernels.locate(buf, words, *table, True)
        if status == kernels.MISGUESSED:  # a name shorter than the one before it fooled the guess: read them all
            status, rows, starts, ends = kernels.locate(buf, words, *table, False)
        if status != kernels.FOUND:
            return None
        return Located(rows, NameSpans(starts, ends, words))
