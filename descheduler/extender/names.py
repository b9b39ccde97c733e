"""Node names of a request to node-table rows in a few NumPy passes, without a Python step per name.

kube-scheduler sends up to every node's name per request, in a fresh order each time (its filter
workers run in parallel), so no cache keyed on the request bytes helps the filter call. Decoding
5,000 names and looking each up in a dict costs 1-3 ms of CPU (the lookups touch 5,000 scattered
string objects); this reads the names straight out of the raw JSON array instead: find the
quotes, read each name's bytes as a fixed-width row of 64-bit words, hash the rows, look the
hashes up in an open-addressing table built with the state, then compare the words exactly, so a
hash collision can only send a request to the slow path, never to a wrong node.

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

IntArray = npt.NDArray[np.int64]
WordArray = npt.NDArray[np.uint64]

MAX_WIDTH = 256  # bytes; a longer name (Kubernetes allows 253) is only found by the slow path
_QUOTE, _COMMA = ord('"'), ord(",")
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd, so each step of the hash is a bijection
_SHIFT = np.uint64(29)
# MASKS[k] keeps the first k bytes of a little-endian word.
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


@dataclass(frozen=True, slots=True)
class NameSpans:
    """Where each name of a raw NodeNames array sits: `raw[starts[i]:ends[i]]` is name i, unquoted."""

    starts: IntArray
    ends: IntArray


@dataclass(frozen=True, slots=True)
class Located:
    """The table rows of a raw NodeNames array, in request order, and where each name sits in it."""

    rows: IntArray
    spans: NameSpans


class NameIndex:
    """The table's node names as fixed-width byte rows, with their hashes sorted for binary search."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        encoded = [name.encode() for name in self.names]
        # A name JSON writes with escapes, or one too long, is left to the slow path.
        plain = [
            len(raw) <= MAX_WIDTH and msgspec.json.encode(name) == b'"' + raw + b'"' and b"," not in raw
            for name, raw in zip(self.names, encoded, strict=True)
        ]
        longest = max((len(raw) for raw, ok in zip(encoded, plain, strict=True) if ok), default=0)
        self.width = max(8, -(-longest // 8) * 8)
        rows = len(encoded)
        padded = np.zeros((rows, self.width), dtype=np.uint8)
        for row, (raw, ok) in enumerate(zip(encoded, plain, strict=True)):
            if ok:
                padded[row, : len(raw)] = np.frombuffer(raw, dtype=np.uint8)
        self.words: WordArray = padded.view(np.uint64)
        hashes = _hash(self.words).tolist()
        # Open addressing, linear probing, at most a quarter full: most names sit in their first slot.
        bits = max(4, (4 * max(rows, 1) - 1).bit_length())
        self._shift = np.uint64(64 - bits)
        self._mask = (1 << bits) - 1
        slot_hash = [0] * (1 << bits)
        slot_row = [-1] * (1 << bits)
        self.probes = 1  # the longest probe sequence of any name
        for row, (value, ok) in enumerate(zip(hashes, plain, strict=True)):
            if not ok:
                continue  # never found: a request's name hashes its own bytes, and the words differ
            slot, probes = value >> (64 - bits), 1
            while slot_row[slot] >= 0:
                slot, probes = (slot + 1) & self._mask, probes + 1
            slot_hash[slot], slot_row[slot] = value, row
            self.probes = max(self.probes, probes)
        self.slot_hash: WordArray = np.array(slot_hash, dtype=np.uint64)
        self.slot_row: IntArray = np.array(slot_row, dtype=np.int64)

    def locate(self, raw: bytes) -> Located | None:
        """Rows of a compact JSON array of known names, in its order; None when the slow path must decide."""
        if raw == b"[]":
            empty = np.zeros(0, dtype=np.int64)
            return Located(empty, NameSpans(empty, empty))
        if not self.slot_row.size or raw[:2] != b'["' or raw[-2:] != b'"]' or b"\\" in raw:
            return None
        buf = np.frombuffer(raw, dtype=np.uint8)
        quotes = np.flatnonzero(buf == _QUOTE)
        if quotes.size % 2:
            return None
        starts, ends = quotes[0::2] + 1, quotes[1::2]
        # Without escapes every quote opens or closes a string; the array holds only strings when
        # exactly one comma separates each from the next.
        if starts.size > 1 and not (
            bool((starts[1:] - ends[:-1] == 3).all()) and bool((buf[ends[:-1] + 1] == _COMMA).all())
        ):
            return None
        lengths = ends - starts
        if int(lengths.min()) == 0 or int(lengths.max()) > self.width:
            return None
        # Each name's first `width` bytes as one fixed-size item (a strided view over the raw bytes),
        # then the bytes past its end zeroed, as the table pads its names.
        padded = raw + bytes(self.width)
        windows = np.ndarray((len(raw),), dtype=np.dtype((np.void, self.width)), buffer=padded, strides=(1,))
        words = windows[starts].view(np.uint64).reshape(starts.size, -1)
        for column in range(words.shape[1]):
            words[:, column] &= _MASKS[np.maximum(np.minimum(lengths - 8 * column, 8), 0)]
        rows = self._rows(_hash(words))
        if rows is None or not bool((self.words[rows] == words).all()):
            return None  # a name the table lacks (or a hash collision): the slow path sorts it out
        return Located(rows, NameSpans(starts, ends))

    def _rows(self, hashes: WordArray) -> IntArray | None:
        """The row holding each hash, or None when one is in no slot."""
        base = (hashes >> self._shift).astype(np.int64)
        rows = self.slot_row[base]
        todo = np.flatnonzero((self.slot_hash[base] != hashes) | (rows < 0))
        for step in range(1, self.probes):
            if not todo.size:
                break
            slots = (base[todo] + step) & self._mask
            hit = (self.slot_hash[slots] == hashes[todo]) & (self.slot_row[slots] >= 0)
            rows[todo[hit]] = self.slot_row[slots[hit]]
            todo = todo[~hit]
        return rows if not todo.size else None


def _hash(words: WordArray) -> WordArray:
    """A 64-bit hash of each row of words (multiply and xor-shift; wrapping arithmetic)."""
    out = np.zeros(words.shape[0], dtype=np.uint64)
    for column in range(words.shape[1]):
        out ^= words[:, column]
        out *= _MULTIPLIER
        out ^= out >> _SHIFT
    return out


def passed_names(raw: bytes, spans: NameSpans, passed: npt.NDArray[np.bool_]) -> bytes:
    """The names of a compact NodeNames array where `passed`, as a JSON array in request order: slices
    of `raw`, one per run of consecutive passing names."""
    if bool(passed.all()):
        return raw
    if not bool(passed.any()):
        return b"[]"
    edges = np.diff(passed.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
    first = spans.starts[np.flatnonzero(edges == 1)] - 1
    last = spans.ends[np.flatnonzero(edges == -1) - 1] + 1
    return b"[" + b",".join([raw[a:b] for a, b in zip(first.tolist(), last.tolist(), strict=True)]) + b"]"
