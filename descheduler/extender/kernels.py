"""The extender's per-name byte work as compiled loops (numba): reading node names out of a request,
and writing the names and scores of an answer.

kube-scheduler sends every candidate's name per request (5,000 at 5,000 nodes), in a fresh order
each time. In NumPy, reading the names took ~25 whole-array passes (~0.45 ms) and writing a
HostPriorityList joined 10,000 bytes objects (~0.3 ms); a loop over the bytes does each in one pass.

Names are compared as 8-byte words read unaligned from a zero-padded copy of the bytes (`words`):
the words view starts at every byte, so `view[p]` is the 8 bytes from offset p. A name is found
by a 64-bit hash of its words in an open-addressing table (linear probing, at most a quarter full)
built with the state, and then compared in full with the table's name, so a name maps to a row
only when its bytes are that row's name.

The kernels keep the GIL: a request runs them without a break, as `yielding.RequestsFirst` wants. Each
release (numba's `nogil`) let a rebuilding thread take the GIL and, on one core, the core, so the
request waited for it to hand both back (p50 ~7 ms over HTTP at 5,000 nodes while the state was
rebuilt).
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import numpy as np
import numpy.typing as npt

ByteArray = npt.NDArray[np.uint8]
WordArray = npt.NDArray[np.uint64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

F = TypeVar("F", bound=Callable[..., Any])

PADDING = 16  # zero bytes after the bytes a words view reads: a read at any offset stays inside

FOUND, NOT_COMPACT, UNKNOWN_NAME, MISGUESSED = 0, 1, 2, 3  # what `locate` returns first


_KERNELS: list[tuple[Callable[..., Any], bool]] = []


def _compiled(function: F) -> F:
    """A kernel: compiled by `load`, which replaces the module's name for it with the compiled one
    (numba is imported only then: importing it costs ~0.5 s that only the extender needs)."""
    _KERNELS.append((function, False))
    return function


def _inlined(function: F) -> F:
    """A helper of the kernels, compiled into each caller: a call between compiled functions passes
    every array as a struct and keeps the loop from being optimised across it (a per-name copy
    through a call took 2.4 times as long)."""
    _KERNELS.append((function, True))
    return function


@functools.cache
def load() -> None:
    """Compile every kernel (cached on disk next to this file when that is writable, else in each
    process) and run each once: a state build does this before the first request is answered."""
    import numba

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaWarning)
        for function, inline in _KERNELS:  # in definition order: a kernel's callees are compiled before it
            how: Literal["always", "never"] = "always" if inline else "never"
            try:
                compiled = numba.njit(cache=True, inline=how)(function)
            except RuntimeError:  # no writable place for the cache (a read-only install)
                compiled = numba.njit(inline=how)(function)
            globals()[function.__name__] = compiled
    _warm()


def words_view(data: bytes) -> WordArray:
    """The little-endian 8-byte word at every byte offset of `data` (zero past its end)."""
    padded = data + bytes(PADDING)
    return np.ndarray((len(padded) - 7,), dtype="<u8", buffer=padded, strides=(1,))


@dataclass(frozen=True, slots=True)
class Pieces:
    """Byte strings back to back for the kernels: piece k is bytes offsets[k]:offsets[k+1] of `words`."""

    words: WordArray
    offsets: IntArray
    longest: int

    @classmethod
    def of(cls, items: Sequence[bytes]) -> Pieces:
        lengths = list(map(len, items))
        offsets = np.fromiter(itertools.accumulate(lengths, initial=0), dtype=np.int64, count=len(lengths) + 1)
        return cls(words_view(b"".join(items)), offsets, max(lengths, default=0))


_ONES = np.uint64(0x0101010101010101)
_HIGHS = np.uint64(0x8080808080808080)
_QUOTES = np.uint64(0x2222222222222222)
_BACKSLASHES = np.uint64(0x5C5C5C5C5C5C5C5C)
_BYTE_INDEX = np.uint64(0x0001020304050607)
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
_MIXER = np.uint64(0xFF51AFD7ED558CCD)


@_inlined
def _hash(words: WordArray, start: int, end: int) -> np.uint64:
    """A 64-bit hash of bytes [start, end): their words multiplied in, then MurmurHash3's finaliser,
    so the low bits (the slot) depend on every byte."""
    h = np.uint64(end - start) * _MULTIPLIER
    p = start
    while p + 8 < end:
        h = (h ^ words[p]) * _MULTIPLIER
        p += 8
    shift = np.uint64(8 * (8 - (end - p)))  # the last word holds 1 to 8 of the bytes
    h = (h ^ ((words[p] << shift) >> shift)) * _MULTIPLIER
    h ^= h >> np.uint64(33)
    h *= _MIXER
    h ^= h >> np.uint64(33)
    return h  # type: ignore[no-any-return]  # NumPy's stubs lose the type of a shifted uint64


@_inlined
def _same(words: WordArray, start: int, table: WordArray, at: int, length: int) -> bool:
    """Whether bytes [start, start + length) equal the table's bytes from `at` (length > 0)."""
    k = 0
    while k + 8 < length:
        if words[start + k] != table[at + k]:
            return False
        k += 8
    shift = np.uint64(8 * (8 - (length - k)))
    return bool((words[start + k] << shift) == (table[at + k] << shift))


@_compiled
def build_slots(table: WordArray, offsets: IntArray, plain: BoolArray, bits: int) -> npt.NDArray[np.int32]:
    """The open-addressing table of the names (row r: bytes offsets[r]:offsets[r+1] of the table's
    words) where `plain`: per slot, a row or -1."""
    mask = np.uint64((1 << bits) - 1)
    slots = np.full(1 << bits, -1, np.int32)
    for row in range(offsets.size - 1):
        if not plain[row]:
            continue
        s = _hash(table, offsets[row], offsets[row + 1]) & mask
        while slots[s] >= 0:
            s = (s + np.uint64(1)) & mask
        slots[s] = row
    return slots


@_inlined
def _next_special(words: WordArray, at: int, end: int) -> int:
    """The offset of the first quote or backslash from `at`, or `end` when there is none before it.
    Eight bytes a step: a byte b is one of them when (b ^ c) - 1 borrows into its high bit."""
    while at < end:
        w = words[at]
        x = w ^ _QUOTES
        y = w ^ _BACKSLASHES
        hits = (((x - _ONES) & ~x) | ((y - _ONES) & ~y)) & _HIGHS
        if hits:
            # Only bytes above a real hit can be false hits: the lowest set bit is a real one.
            lowest = hits & (~hits + np.uint64(1))
            return min(at + int(((lowest >> np.uint64(7)) * _BYTE_INDEX) >> np.uint64(56)), end)
        at += 8
    return end


@_compiled
def locate(
    raw: ByteArray,
    words: WordArray,
    table: WordArray,
    offsets: IntArray,
    slots: npt.NDArray[np.int32],
    cap: int,
    guess: bool,
) -> tuple[int, IntArray, IntArray, IntArray]:
    """(FOUND, rows, starts, ends) for a compact JSON array of known names (`["a","b"]`: no spaces, no
    escapes, no empty name), name i being raw[starts[i]:ends[i]]; (NOT_COMPACT or UNKNOWN_NAME, ...)
    otherwise. `words` is `words_view(raw)`; `cap`: at most this many names (more: NOT_COMPACT).

    With `guess`, a name is first taken to be as long as the one before it (a cluster's node names
    often all are) when a quote and a comma or bracket follow at that length, instead of scanning
    its bytes for the closing quote (a third of the time). Such a name must then equal a table name,
    and those hold no quote or backslash, so a FOUND answer reads the array exactly as the scan
    would; any other answer after a guess is MISGUESSED, and the caller asks again without guessing.

    In passes over all the names: read and hash them, then each table read for all of them at once (the
    slot, then the row's offsets, then its bytes). The names come in random order, so after the thread
    slept between requests most of these reads miss the cache; reads that do not wait for one another
    are overlapped by the processor. Name by name, each read waiting for the one before, took 1.3x as
    long after a 2 ms sleep and 1.8x with the caches flushed (5,000 names)."""
    n = raw.size
    rows = np.empty(cap, np.int64)
    starts = np.empty(cap, np.int64)
    ends = np.empty(cap, np.int64)
    mask = np.uint64(slots.size - 1)
    if n < 4 or raw[0] != 91 or raw[n - 1] != 93:  # [ ]
        return NOT_COMPACT, rows[:0], starts[:0], ends[:0]
    first = np.empty(cap, np.int64)  # each name's first slot, then its row's offset in the table
    count = 0
    i = 1
    length = 0  # of the name before
    guessed = False
    failed = NOT_COMPACT
    while True:
        if raw[i] != 34:  # "
            return failed, rows[:0], starts[:0], ends[:0]
        start = i + 1
        end = start + length
        if guess and length > 0 and end < n - 1 and raw[end] == 34 and (raw[end + 1] == 44 or raw[end + 1] == 93):
            guessed = True
            failed = MISGUESSED
        else:
            end = _next_special(words, start, n)
            if end >= n - 1 or raw[end] != 34 or end == start:
                return failed, rows[:0], starts[:0], ends[:0]
        if count == cap:
            return failed, rows[:0], starts[:0], ends[:0]
        length = end - start
        first[count] = _hash(words, start, end) & mask
        starts[count] = start
        ends[count] = end
        count += 1
        after = raw[end + 1]
        if after == 93:  # ]
            if end + 2 != n:
                return failed, rows[:0], starts[:0], ends[:0]
            break
        if after != 44:  # ,
            return failed, rows[:0], starts[:0], ends[:0]
        i = end + 2
    for k in range(count):
        rows[k] = slots[first[k]]
    lengths = np.empty(count, np.int64)  # of the first slot's row; -1 when that slot is empty
    for k in range(count):
        row = rows[k]
        at = offsets[max(row, 0)]
        first[k] = at
        lengths[k] = offsets[max(row, 0) + 1] - at if row >= 0 else -1
    for k in range(count):
        start, length = starts[k], ends[k] - starts[k]
        if lengths[k] == length and _same(words, start, table, first[k], length):
            continue
        # Not at its first slot: a collision, or a name the table does not know.
        s = _hash(words, start, ends[k]) & mask
        found = -1
        while True:
            row = slots[s]
            if row < 0:
                break
            at = offsets[row]
            if offsets[row + 1] - at == length and _same(words, start, table, at, length):
                found = row
                break
            s = (s + np.uint64(1)) & mask
        if found < 0:
            return MISGUESSED if guessed else UNKNOWN_NAME, rows[:0], starts[:0], ends[:0]
        rows[k] = found
    return FOUND, rows[:count], starts[:count], ends[:count]


@_inlined
def _copy(out: WordArray, at: int, source: WordArray, start: int, length: int) -> None:
    """Bytes [start, start + length) of `source` to `at` of `out`, 8 at a time: up to 7 bytes after
    them are written too (the next write or the padding takes them)."""
    k = 0
    while k < length:
        out[at + k] = source[start + k]
        k += 8


_OPEN, _CLOSE = np.uint64(ord("[")), np.uint64(ord("]"))


@_inlined
def _piece(out: WordArray, p: int, pieces: WordArray, offsets: IntArray, k: int) -> int:
    """Piece k (bytes offsets[k]:offsets[k+1] of `pieces`) at `p` of `out`; returns where it ends."""
    length = offsets[k + 1] - offsets[k]
    _copy(out, p, pieces, offsets[k], length)
    return p + length  # type: ignore[no-any-return]  # numba's ints


@_inlined
def _failed_map(
    out: WordArray,
    out_bytes: ByteArray,
    p: int,
    reason: IntArray,
    raw: WordArray,
    starts: IntArray,
    ends: IntArray,
    texts: WordArray,
    text_offsets: IntArray,
    hopeless: BoolArray,
    unresolvable: bool,
) -> int:
    """At `p`: the FailedNodesMap of the positions whose reason's `hopeless` is `unresolvable`, each
    entry `,"name":` (the name's bytes and quotes copied from `raw`) and its reason's JSON string of
    `texts`. Returns its end."""
    first = p
    for i in range(reason.size):
        r = reason[i]
        if r >= 0 and hopeless[r] == unresolvable:
            out_bytes[p] = 44  # ,
            length = ends[i] - starts[i] + 2  # the name and its quotes
            _copy(out, p + 1, raw, starts[i] - 1, length)
            p += length + 1
            out_bytes[p] = 58  # :
            p = _piece(out, p + 1, texts, text_offsets, r)
    if p == first:
        p += 1
    out_bytes[first] = 123  # {, over the first entry's comma
    out_bytes[p] = 125  # }
    return p + 1


@_compiled
def filter_answer(
    out: WordArray,
    out_bytes: ByteArray,
    literals: WordArray,
    literal_offsets: IntArray,
    raw: WordArray,
    starts: IntArray,
    ends: IntArray,
    reason: IntArray,
    texts: WordArray,
    text_offsets: IntArray,
    hopeless: BoolArray,
    rows: IntArray,
    kept: IntArray,
) -> tuple[int, int, int, int]:
    """An ExtenderFilterResult into `out` (a words view of `out_bytes`, sized by the caller for the
    request's names and every failed entry): the names whose `reason` is -1 copied from the compact
    NodeNames array whose words are `raw` (name i at starts[i]:ends[i]), then the others, copied from
    it too, in the FailedNodes or FailedAndUnresolvableNodes map as their reason's `hopeless` says.
    `literals` holds the four fixed parts (up to NodeNames, up to FailedNodes, up to
    FailedAndUnresolvableNodes, the end). Returns (its length, where the NodeNames array starts and
    ends, how many names passed); (-1, 0, 0, 0) when `out` is too short. For the names that passed,
    `kept` (3 × names) gets their `rows`, then where each starts in `out`, then where it ends."""
    need = literal_offsets[4] + 6  # the fixed parts, the brackets, and the braces of two empty maps
    for i in range(starts.size):
        r = reason[i]
        if r < 0:
            need += ends[i] - starts[i] + 3
        else:
            need += ends[i] - starts[i] + 4 + text_offsets[r + 1] - text_offsets[r]
    if need + 8 > out_bytes.size or kept.size < 3 * starts.size:
        return -1, 0, 0, 0  # no write past `out` or `kept`
    p = _piece(out, 0, literals, literal_offsets, 0)
    names = p
    out_bytes[p] = 91  # [
    p += 1
    n = starts.size
    count = 0
    for i in range(n):
        if reason[i] < 0:
            length = ends[i] - starts[i] + 3  # "name" and the comma (or bracket) after it
            _copy(out, p, raw, starts[i] - 1, length)
            kept[count] = rows[i]
            kept[n + count] = p + 1
            kept[2 * n + count] = p + length - 2
            count += 1
            p += length
    if p == names + 1:
        p += 1
    out_bytes[p - 1] = 93  # ], over the last comma
    names_end = p
    p = _piece(out, p, literals, literal_offsets, 1)
    p = _failed_map(out, out_bytes, p, reason, raw, starts, ends, texts, text_offsets, hopeless, False)
    p = _piece(out, p, literals, literal_offsets, 2)
    p = _failed_map(out, out_bytes, p, reason, raw, starts, ends, texts, text_offsets, hopeless, True)
    p = _piece(out, p, literals, literal_offsets, 3)
    return p, names, names_end, count


_HOST = np.uint64(int.from_bytes(b'{"Host":', "little"))
_SCORE = np.uint64(int.from_bytes(b',"Score"', "little"))
_COLON_ONE_ZERO = np.uint64(int.from_bytes(b":10},", "little"))
_COLON_DIGIT = np.uint64(int.from_bytes(b":0},", "little"))  # plus the score << 8


@_compiled
def host_priorities(raw: WordArray, starts: IntArray, ends: IntArray, scores: IntArray, out: WordArray) -> int:
    """Into `out` (a words view of at least the names' bytes + 23 a name + 2 bytes): the
    HostPriorityList `[{"Host":"name","Score":7},...]`, name i (with its quotes) copied from the
    compact NodeNames array whose words are `raw` (name i at starts[i]:ends[i]): read in order, not
    gathered by table row from pre-encoded pieces (those random reads took ~4x as long after the thread
    slept). Returns its length; -1 when `out` is too short or a score is not 0-10 (the extender range)."""
    out[0] = _OPEN
    p = 1
    for i in range(starts.size):
        length = ends[i] - starts[i] + 2  # the name and its quotes
        if p + length + 23 >= out.size:
            return -1  # `out` is too short: no write past it
        out[p] = _HOST
        _copy(out, p + 8, raw, starts[i] - 1, length)
        p += length + 8
        out[p] = _SCORE
        p += 8
        score = scores[i]
        if score < 0 or score > 10:
            return -1
        if score == 10:
            out[p] = _COLON_ONE_ZERO
            p += 5
        else:
            out[p] = _COLON_DIGIT + (np.uint64(score) << np.uint64(8))
            p += 4
    if p == 1:
        p = 2
    out[p - 1] = _CLOSE
    return p


def output(size: int) -> tuple[npt.NDArray[np.uint8], WordArray]:
    """A buffer of `size` bytes and padding (not zeroed: a kernel writes every byte it answers
    with), and the words view a kernel writes through."""
    buffer = np.empty(size + PADDING, dtype=np.uint8)
    return buffer, words_of(buffer)


def words_of(buffer: npt.NDArray[np.uint8] | bytearray) -> WordArray:
    """The writable words view of `buffer` at every byte offset, as `words_view` reads bytes."""
    return np.ndarray((len(buffer) - 7,), dtype="<u8", buffer=buffer, strides=(1,))


def _warm() -> None:
    """Call each kernel once: ~1 s each to compile (or a few ms to load from the cache)."""
    index = words_view(b"ab")
    offsets = np.array([0, 2], dtype=np.int64)
    slots = build_slots(index, offsets, np.ones(1, dtype=np.bool_), 4)
    raw = b'["ab"]'
    _, rows, starts, ends = locate(np.frombuffer(raw, dtype=np.uint8), words_view(raw), index, offsets, slots, 2, True)
    literals, texts = Pieces.of([b"{", b"", b"", b"}"]), Pieces.of([b'"no"'])
    buffer, out = output(64)
    reason, hopeless = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.bool_)
    filter_answer(
        out,
        buffer,
        literals.words,
        literals.offsets,
        words_view(raw),
        starts,
        ends,
        reason,
        texts.words,
        texts.offsets,
        hopeless,
        rows,
        np.empty(3, dtype=np.int64),
    )
    host_priorities(words_view(raw), starts, ends, rows, output(32)[1])
