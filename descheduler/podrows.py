"""Per-pod rows of the node table: what each pod weighs and where, as arrays the table sums.

`rows_of` computes them for any Snapshot's pods; the list-watch cache keeps them as watch events
arrive (`PodRowStore`: only the pods changed since the last snapshot are computed again) and hands
each Snapshot its rows, so a planning cycle sums arrays instead of visiting 150,000 pods field by
field. Both go through `pod_columns`, so they agree (tests/kube/test_cache_pod_rows_property.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import repeat
from operator import attrgetter
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from descheduler.model import POD_TERMINAL_PHASES, Node, Pod
from descheduler.priority import is_prod

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

NO_TIME = int(np.iinfo(np.int64).min)  # a pod with no PodScheduled time
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_KEY = attrgetter("key")
_NODE_NAME = attrgetter("node_name")
_PHASE = attrgetter("phase")
_DELETING = attrgetter("deleting")
_SCHEDULED = attrgetter("scheduled_at")
# Items per C-level pass of `sliced`/`sliced_column`: one `map` over 150,000 pods holds the GIL for
# 10-50 ms (no bytecode runs inside it), which a request served meanwhile waits out (the extender's
# rebuild steps aside only between calls: descheduler/extender/yielding.py). A slice of 4,000 took up
# to ~3 ms on a shared core, the extender's p99 while rebuilt 12-16 ms; of 1,000, 9-10 ms.
SLICE = 1_000
T = TypeVar("T")
# The label whose value, with the namespace, names a pod's quota group (QuotaReclaim's and the
# extender's default quotaLabel): the cache keeps each pod's pair of them, so a census of the groups
# reads arrays (`PodRows.quota_pair`) instead of every pod's labels.
QUOTA_LABEL = "quota.scheduling.koordinator.sh/name"
QuotaPair = tuple[str | None, str]  # (the pod's QUOTA_LABEL value or None, its namespace)


def micros(moment: datetime) -> int:
    """A time as integer microseconds since the epoch: exact, so comparisons agree with datetime's
    (a naive time counts as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND


@dataclass(frozen=True, slots=True)
class PodColumns:
    """One row per pod of a batch: requests and limits over `resources`, and the facts the node table reads."""

    resources: tuple[str, ...]
    requests: IntArray
    limits: IntArray
    prod: BoolArray
    deleting: BoolArray
    terminal: BoolArray
    scheduled: IntArray  # PodScheduled time in µs since the epoch; NO_TIME when unknown
    keys: list[str]
    node_names: list[str]


def sliced(function: Callable[..., T], items: Sequence[Any], *constants: object) -> list[T]:
    """`list(map(function, items, *(repeat(c) for c in constants)))`, `SLICE` items per C-level pass:
    between passes another thread may take the GIL. Each pass is a call (`extend`, not `+=`), so a
    profile hook sees it."""
    out: list[T] = []
    for start in range(0, len(items), SLICE):
        out.extend(map(function, items[start : start + SLICE], *map(repeat, constants)))
    return out


def sliced_column(
    function: Callable[..., Any], items: Sequence[Any], dtype: type[np.generic], *constants: object
) -> npt.NDArray[Any]:
    """`np.fromiter` over `map(function, items, *constants repeated)`, `SLICE` items per C-level pass."""
    out = np.empty(len(items), dtype=dtype)
    for start in range(0, len(items), SLICE):
        part = items[start : start + SLICE]
        out[start : start + len(part)] = np.fromiter(map(function, part, *map(repeat, constants)), dtype, len(part))
    return out


def pod_columns(pods: Sequence[Pod]) -> PodColumns:
    """The rows of `pods`. Column by column through C-level maps (in slices: see `SLICE`): this runs
    for every pod of a list."""
    n = len(pods)
    requested = [p.requests.as_dict() for p in pods]
    limited = [p.limits.as_dict() for p in pods]
    union: set[str] = set()
    for start in range(0, n, SLICE):
        union.update(*requested[start : start + SLICE], *limited[start : start + SLICE])
    names = tuple(sorted(union))
    return PodColumns(
        resources=names,
        requests=_stack(requested, names),
        limits=_stack(limited, names),
        prod=np.fromiter(map(is_prod, pods), np.bool_, n),  # a Python function: the GIL switches inside
        deleting=sliced_column(_DELETING, pods, np.bool_),
        terminal=sliced_column(POD_TERMINAL_PHASES.__contains__, sliced(_PHASE, pods), np.bool_),
        scheduled=_scheduled(sliced(_SCHEDULED, pods)),
        keys=sliced(_KEY, pods),
        node_names=sliced(_NODE_NAME, pods),
    )


def _scheduled(moments: list[datetime | None]) -> IntArray:
    try:  # `micros` inlined for aware times (all the decoder makes): this runs for every pod of a list
        return np.fromiter(
            (NO_TIME if m is None else (m - _EPOCH) // _MICROSECOND for m in moments), np.int64, len(moments)
        )
    except TypeError:  # a naive time
        return np.fromiter((NO_TIME if m is None else micros(m) for m in moments), np.int64, len(moments))


def _stack(vectors: list[dict[str, int]], names: Sequence[str]) -> IntArray:
    out = np.zeros((len(vectors), len(names)), dtype=np.int64)
    for col, name in enumerate(names):
        out[:, col] = sliced_column(dict.get, vectors, np.int64, name, 0)
    return out


@dataclass(frozen=True, slots=True)
class PodRows:
    """A Snapshot's pods as rows (rows need not follow the Snapshot's pod order; the cache's have
    free rows, all zero, with key ""). `pods` and `nodes` are the very tuples of the Snapshot the
    rows were made for: a Snapshot copied with other pods or nodes does not use them."""

    pods: tuple[Pod, ...]
    nodes: tuple[Node, ...]
    resources: tuple[str, ...]
    keys: Sequence[str]
    requests: IntArray
    limits: IntArray
    prod: BoolArray
    deleting: BoolArray
    scheduled: IntArray
    node: IntArray  # the row of the pod's node in `nodes`; -1 when unbound or not there
    counted: BoolArray  # bound to one of `nodes` and not terminal: what the node sums count
    index: Mapping[str, int]  # key -> row of the counted pods
    requested: frozenset[str]  # the resources some pod of the Snapshot requests
    # Kept by the cache only (None from `rows_of`): what a quota census reads.
    present: BoolArray | None = None  # the row holds a pod of the Snapshot
    unfinished: BoolArray | None = None  # ... and that pod is not terminal
    unbound: BoolArray | None = None  # ... and that pod has no node
    quota_pair: IntArray | None = None  # the pod's (QUOTA_LABEL value, namespace) as an index of quota_pairs
    quota_pairs: tuple[QuotaPair, ...] = ()

    @property
    def size(self) -> int:
        return len(self.keys)

    def fits(self, pods: tuple[Pod, ...], nodes: tuple[Node, ...]) -> bool:
        return pods is self.pods and nodes is self.nodes


def rows_of(pods: tuple[Pod, ...], nodes: tuple[Node, ...]) -> PodRows:
    """The rows of a Snapshot's pods, one per pod in its order, computed from scratch."""
    columns = pod_columns(pods)
    row_of_node = {node.name: row for row, node in enumerate(nodes)}
    node = sliced_column(row_of_node.get, columns.node_names, np.int64, -1)
    counted = (node >= 0) & ~columns.terminal
    keys = columns.keys
    return PodRows(
        pods=pods,
        nodes=nodes,
        resources=columns.resources,
        keys=keys,
        requests=columns.requests,
        limits=columns.limits,
        prod=columns.prod,
        deleting=columns.deleting,
        scheduled=columns.scheduled,
        node=node,
        counted=counted,
        index=_row_index(keys, np.flatnonzero(counted).tolist()),
        requested=_requested(columns.resources, columns.requests),
    )


def _row_index(keys: Sequence[str], rows: list[int]) -> dict[str, int]:
    """key -> row for `rows`, `SLICE` rows per C-level pass (a comprehension over 150,000 pods makes no
    call a profile hook sees for ~0.1 s)."""
    index: dict[str, int] = {}
    for start in range(0, len(rows), SLICE):
        part = rows[start : start + SLICE]
        index.update(zip(map(keys.__getitem__, part), part, strict=True))
    return index


def _requested(resources: Sequence[str], requests: IntArray) -> frozenset[str]:
    if not len(requests):
        return frozenset()
    nonzero = (requests != 0).any(axis=0)
    return frozenset(name for name, used in zip(resources, nonzero.tolist(), strict=True) if used)


class PodRowStore:
    """The cache's pod rows, one slot per pod, kept as pods change.

    A change only marks the pod (`touch`, the watch event's whole share); `sync` computes the
    marked pods again in one batch before a Snapshot is taken, so a pod changed many times between
    cycles is computed once. Rows handed to a Snapshot are shared until the next change, which
    copies them first (copy on write): a Snapshot's rows never change under it. Not thread-safe:
    the cache calls it under its lock.
    """

    def __init__(self) -> None:
        self.reset(())

    def reset(self, keys: Iterable[str]) -> None:
        """Forget every row; `keys` (the pods now held) are computed at the next `sync`."""
        self.dirty: set[str] = set(keys)
        self._slots: dict[str, int] = {}
        self._free: list[int] = []
        self._keys: list[str] = []
        self._index: dict[str, int] = {}  # key -> slot of bound, non-terminal pods
        self._resources: list[str] = []
        self._column: dict[str, int] = {}
        self._node_ids: dict[str, int] = {}  # node name -> a stable id, for `_node_id`
        self._pair_ids: dict[QuotaPair, int] = {}  # (quota label value, namespace) -> id, for `_pair`
        self._shared = False
        self._allocate(0, 0)

    def _allocate(self, capacity: int, width: int) -> None:
        self._requests = np.zeros((capacity, width), dtype=np.int64)
        self._limits = np.zeros((capacity, width), dtype=np.int64)
        self._prod = np.zeros(capacity, dtype=np.bool_)
        self._deleting = np.zeros(capacity, dtype=np.bool_)
        self._terminal = np.zeros(capacity, dtype=np.bool_)
        self._live = np.zeros(capacity, dtype=np.bool_)
        self._scheduled = np.full(capacity, NO_TIME, dtype=np.int64)
        self._node_id = np.full(capacity, -1, dtype=np.int64)
        self._pair = np.full(capacity, -1, dtype=np.int64)

    @property
    def size(self) -> int:
        return len(self._keys)

    def touch(self, key: str) -> None:
        """The pod `key` was added, changed or deleted."""
        self.dirty.add(key)

    def sync(self, pods: Mapping[str, Pod]) -> None:
        """Bring the rows of the touched pods up to date with `pods` (the cache's records)."""
        if not self.dirty:
            return
        dirty, self.dirty = self.dirty, set()
        self._unshare()
        slots, keys, index = self._slots, self._keys, self._index
        present: list[Pod] = []
        for key in dirty:
            pod = pods.get(key)
            if pod is not None:
                present.append(pod)
                continue
            slot = slots.pop(key, None)
            if slot is not None:
                index.pop(key, None)
                keys[slot] = ""
                self._clear(slot)
                self._free.append(slot)
        if not present:
            return
        columns = pod_columns(present)
        if slots:
            targets = np.fromiter(map(self._slot_for, columns.keys), np.int64, len(present))
        else:  # every pod is new (after a list): slots in a row
            targets = np.arange(len(keys), len(keys) + len(present), dtype=np.int64)
            slots.update(zip(columns.keys, targets.tolist(), strict=True))
            keys.extend(columns.keys)
            if len(keys) > len(self._live):
                self._grow(len(keys), len(self._resources))
        self._widen(columns.resources)
        cols = np.array([self._column[name] for name in columns.resources], dtype=np.int64)
        for store, values in ((self._requests, columns.requests), (self._limits, columns.limits)):
            store[targets] = 0
            if len(cols):
                store[targets[:, None], cols] = values
        self._prod[targets] = columns.prod
        self._deleting[targets] = columns.deleting
        self._terminal[targets] = columns.terminal
        self._scheduled[targets] = columns.scheduled
        self._live[targets] = True
        ids = self._node_ids
        self._node_id[targets] = [ids.setdefault(name, len(ids)) if name else -1 for name in columns.node_names]
        pairs = self._pair_ids
        self._pair[targets] = [pairs.setdefault((p.labels.get(QUOTA_LABEL), p.namespace), len(pairs)) for p in present]
        for key, slot, name, terminal in zip(
            columns.keys, targets.tolist(), columns.node_names, columns.terminal.tolist(), strict=True
        ):
            if name and not terminal:
                index[key] = slot
            else:
                index.pop(key, None)

    def rows(self, pods: tuple[Pod, ...], nodes: tuple[Node, ...], left_out: Collection[str] = ()) -> PodRows:
        """The rows for a Snapshot of `pods` on `nodes` (call `sync` first); `left_out`: keys of pods
        the cache holds that the Snapshot leaves out (bound to a node that does not exist)."""
        size = self.size
        row_of_id = np.full(len(self._node_ids) + 1, -1, dtype=np.int64)  # the last entry: unbound (id -1)
        ids = self._node_ids
        for row, name in enumerate(map(attrgetter("name"), nodes)):
            found = ids.get(name)
            if found is not None:
                row_of_id[found] = row
        node_id = self._node_id[:size]
        node = row_of_id[node_id]
        live = self._live[:size]
        terminal = self._terminal[:size]
        counted = live & (node >= 0) & ~terminal
        unbound = node_id < 0
        present = live & (unbound | (node >= 0))  # not bound to a node the Snapshot leaves out
        index: Mapping[str, int] = self._index
        if left_out:
            index = {key: slot for key, slot in self._index.items() if key not in left_out}
            requests = self._requests[:size][live & ((self._node_id[:size] < 0) | (node >= 0))]
        else:
            requests = self._requests[:size]
        self._shared = True
        return PodRows(
            pods=pods,
            nodes=nodes,
            resources=tuple(self._resources),
            keys=self._keys,
            requests=self._requests[:size],
            limits=self._limits[:size],
            prod=self._prod[:size],
            deleting=self._deleting[:size],
            scheduled=self._scheduled[:size],
            node=node,
            counted=counted,
            index=index,
            requested=_requested(self._resources, requests),
            present=present,
            unfinished=present & ~terminal,
            unbound=present & unbound,
            quota_pair=self._pair[:size],
            quota_pairs=tuple(self._pair_ids),
        )

    def _slot_for(self, key: str) -> int:
        slot = self._slots.get(key)
        if slot is not None:
            return slot
        if self._free:
            slot = self._free.pop()
            self._keys[slot] = key
        else:
            slot = len(self._keys)
            self._keys.append(key)
            if slot >= len(self._live):
                self._grow(max(1024, 2 * len(self._live)), len(self._resources))
        self._slots[key] = slot
        return slot

    def _clear(self, slot: int) -> None:
        self._requests[slot] = 0
        self._limits[slot] = 0
        self._prod[slot] = self._deleting[slot] = self._terminal[slot] = self._live[slot] = False
        self._scheduled[slot] = NO_TIME
        self._node_id[slot] = -1
        self._pair[slot] = -1

    def _widen(self, names: Iterable[str]) -> None:
        new = [name for name in names if name not in self._column]
        if not new:
            return
        for name in new:
            self._column[name] = len(self._resources)
            self._resources.append(name)
        self._grow(len(self._live), len(self._resources))

    def _grow(self, capacity: int, width: int) -> None:
        old = (self._requests, self._limits, self._prod, self._deleting, self._terminal, self._live)
        scheduled, node_id, pair = self._scheduled, self._node_id, self._pair
        self._allocate(capacity, width)
        rows, cols = old[0].shape
        self._requests[:rows, :cols] = old[0]
        self._limits[:rows, :cols] = old[1]
        for mine, was in zip((self._prod, self._deleting, self._terminal, self._live), old[2:], strict=True):
            mine[:rows] = was
        self._scheduled[:rows] = scheduled
        self._node_id[:rows] = node_id
        self._pair[:rows] = pair

    def _unshare(self) -> None:
        """Copy what a Snapshot holds before changing it."""
        if not self._shared:
            return
        self._requests = self._requests.copy()
        self._limits = self._limits.copy()
        self._prod = self._prod.copy()
        self._deleting = self._deleting.copy()
        self._scheduled = self._scheduled.copy()
        self._pair = self._pair.copy()
        self._keys = list(self._keys)
        self._index = dict(self._index)
        self._shared = False
