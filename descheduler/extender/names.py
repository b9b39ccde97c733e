"""Node names of a request to node-table rows in a few NumPy passes, without a Python step per name.

kube-scheduler sends up to every node's name per request, in a fresh order each time (its filter
workers run in parallel), so no cache keyed on the request bytes helps the filter call. Decoding
5,000 names and looking each up in a dict costs 1-3 ms of CPU (the lookups touch 5,000 scattered
string objects); this reads the names straight out of the raw JSON array instead: find the
quotes, then read each name as a key of 64-bit words that determines it exactly: its length, its
whole 8-byte words from the start but the last, and its last 8 bytes (all of them when shorter),
each read unaligned straight from the request's bytes. The keys are hashed and looked up in an
open-addressing table built with the state, and the found row's key is compared in full, so a
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

IntArray = npt.NDArray[np.int64]
WordArray = npt.NDArray[np.uint64]

MAX_WIDTH = 256  # bytes; a longer name (Kubernetes allows 253) is only found by the slow path
_QUOTE, _COMMA = ord('"'), ord(",")
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # odd, so each step of the hash is a bijection
_SHIFT = np.uint64(29)
_MIXER = np.uint64(0xFF51AFD7ED558CCD)
_WORD = np.dtype("<u8")


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
    """The table's node names as exact word keys, hashed into an open-addressing table."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = tuple(names)
        encoded = [name.encode() for name in self.names]
        # A name JSON writes with escapes, one with a comma, or one too long, is left to the slow path.
        plain = [
            0 < len(raw) <= MAX_WIDTH and msgspec.json.encode(name) == b'"' + raw + b'"' and b"," not in raw
            for name, raw in zip(self.names, encoded, strict=True)
        ]
        self.longest = max((len(raw) for raw, ok in zip(encoded, plain, strict=True) if ok), default=0)
        self.heads = max(-(-self.longest // 8) - 1, 0)  # words before the last of the longest name
        # The names laid out as a request would carry them, and keyed by the same code.
        layout = b"[" + b",".join(b'"' + raw + b'"' if ok else b'""' for raw, ok in zip(encoded, plain, strict=True))
        starts = np.cumsum([0, *(len(raw) + 3 if ok else 3 for raw, ok in zip(encoded, plain, strict=True))])[:-1] + 2
        lengths = np.array([len(raw) if ok else 0 for raw, ok in zip(encoded, plain, strict=True)], dtype=np.int64)
        keys = _keys(layout + b"]", starts.astype(np.int64), lengths, self.heads)
        # One more row, of length 0, that empty slots point to: no request's name has its key.
        self.keys: list[WordArray] = [np.append(column, np.uint64(0)) for column in keys]
        self._place(_hash(keys).tolist(), plain)

    def _place(self, hashes: list[int], plain: list[bool]) -> None:
        """Cuckoo hashing: each name sits in one of two slots (the hash's high bits, or its low bits),
        so a lookup is two vector passes, never a probe loop. At most a quarter full, placing fails only
        with negligible odds; then the table doubles and tries again. Small (int32 rows, 128 KiB at
        5,000 names) so its random reads stay in cache between requests."""
        bits = max(4, (4 * max(len(plain), 1) - 1).bit_length())
        while True:
            shift, mask = 64 - bits, (1 << bits) - 1
            slot_row = [-1] * (1 << bits)
            if all(
                _insert(slot_row, row, hashes, shift, mask) for row, ok in enumerate(plain) if ok
            ):  # a name not plain is never found: its key holds length 0, and no request's name has that
                break
            bits += 1
        self._shift, self._mask = np.uint64(shift), np.uint64(mask)
        empty = len(plain)  # the extra row
        self.slot_row: npt.NDArray[np.int32] = np.array([empty if r < 0 else r for r in slot_row], dtype=np.int32)

    def locate(self, raw: bytes) -> Located | None:
        """Rows of a compact JSON array of known names, in its order; None when the slow path must decide."""
        if raw == b"[]":
            empty = np.zeros(0, dtype=np.int64)
            return Located(empty, NameSpans(empty, empty))
        if not self.longest or raw[:2] != b'["' or raw[-2:] != b'"]' or b"\\" in raw:
            return None
        buf = np.frombuffer(raw, dtype=np.uint8)
        quotes = np.flatnonzero(buf == _QUOTE)
        if quotes.size % 2:
            return None
        # Without escapes every quote opens or closes a string; the array holds only strings when
        # exactly one comma separates each from the next.
        steps = np.diff(quotes)
        lengths = steps[0::2] - 1
        if quotes.size > 2 and not (bool((steps[1::2] == 2).all()) and bool((buf[quotes[1:-1:2] + 1] == _COMMA).all())):
            return None
        if int(lengths.min()) == 0 or int(lengths.max()) > self.longest:
            return None
        starts = quotes[0::2] + 1
        keys = _keys(raw, starts, lengths, self.heads)
        rows = self._rows(keys)
        if rows is None:
            return None  # a name the table lacks: the slow path sorts it out
        return Located(rows, NameSpans(starts, starts + lengths))

    def _rows(self, keys: list[WordArray]) -> IntArray | None:
        """The row whose key equals each key, or None when one has none."""
        hashes = _hash(keys)
        rows = self.slot_row[(hashes >> self._shift).astype(np.intp)]
        todo = np.flatnonzero(~_equal(self.keys, rows, keys, None))
        if todo.size:
            found = self.slot_row[(hashes[todo] & self._mask).astype(np.intp)]
            if not bool(_equal(self.keys, found, keys, todo).all()):
                return None
            rows[todo] = found
        return rows.astype(np.int64)


def _insert(slot_row: list[int], row: int, hashes: list[int], shift: int, mask: int, tries: int = 500) -> bool:
    """Put `row` in one of its two slots, moving the names in the way to their other slot; False when
    the chain of moves does not end within `tries`."""
    slot = hashes[row] >> shift
    for _ in range(tries):
        row, slot_row[slot] = slot_row[slot], row
        if row < 0:
            return True
        first, second = hashes[row] >> shift, hashes[row] & mask
        slot = second if slot == first else first
    return False


def _keys(raw: bytes, starts: IntArray, lengths: IntArray, heads: int) -> list[WordArray]:
    """Per name `raw[s:s+n]` (s in `starts`, n in `lengths`, 0 < n <= 8 × (heads + 1)): its length, its
    words at offsets 0, 8, ... before its last 8 bytes (0 past them), and its last 8 bytes (its
    bytes, zero-extended, when shorter) as little-endian words: together they determine the name."""
    padded = bytes(8) + raw + bytes(8 * heads + 8)  # every read below stays inside
    words = np.ndarray((len(padded) - 7,), dtype=_WORD, buffer=padded, strides=(1,))
    at = starts + 8
    shortest = int(lengths.min()) if lengths.size else 0
    last = words[at + lengths - 8]
    if shortest < 8:  # shift out the bytes before a short name's start
        last >>= np.maximum(8 - lengths, 0).astype(np.uint64) * np.uint64(8)
    out = [lengths.astype(np.uint64), last]
    for k in range(heads):
        head = words[at + 8 * k]
        if shortest <= 8 * (k + 1):  # names this short have no such word
            head *= lengths > 8 * (k + 1)
        out.append(head)
    return out


def _hash(keys: list[WordArray]) -> WordArray:
    """A 64-bit hash of each row of keys but the length (rows of equal words and other lengths are
    told apart by the comparison), multiply and xor-shift with wrapping arithmetic: the words are
    mixed into the low bits too, which pick a name's second slot."""
    words = keys[1:]
    out = words[0] * _MULTIPLIER
    for column in words[1:]:
        out ^= column
        out *= _MULTIPLIER
    # A finaliser (MurmurHash3's), so both ends of the hash depend on every byte: the high bits pick
    # a name's first slot, the low bits its second.
    out ^= out >> np.uint64(33)
    out *= _MIXER
    out ^= out >> _SHIFT
    return out


def _equal(
    table: list[WordArray], rows: npt.NDArray[np.int32], keys: list[WordArray], which: IntArray | None
) -> npt.NDArray[np.bool_]:
    """Whether the table's key of each of `rows` is the key of the name at the same place (of `which`)."""
    same: npt.NDArray[np.bool_] | None = None
    for mine, theirs in zip(table, keys, strict=True):
        equal = mine[rows] == (theirs if which is None else theirs[which])
        same = equal if same is None else same & equal
    assert same is not None
    return same


def passed_names(raw: bytes, spans: NameSpans, passed: npt.NDArray[np.bool_]) -> bytes:
    """The names of a compact NodeNames array where `passed`, as a JSON array in request order: the
    request's own bytes, each name kept or dropped with the comma after it (one byte mask)."""
    if bool(passed.all()):
        return raw
    if not bool(passed.any()):
        return b"[]"
    # Name i owns its quoted bytes and the comma after it: from its opening quote to the next one's.
    begins = spans.starts - 1
    owned = np.diff(begins, append=len(raw) - 1)
    kept = np.frombuffer(raw, dtype=np.uint8)[1:-1][np.repeat(passed, owned)].tobytes()
    return b"[" + (kept[:-1] if kept.endswith(b",") else kept) + b"]"
