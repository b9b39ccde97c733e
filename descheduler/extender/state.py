"""What the extender decides on between two refreshes, and the pods assumed since the last one.

A `ClusterState` is built once per refresh, off the request path: the node table, a view that
assumed bindings are written into, the node names indexed for bulk lookup (`names.NameIndex`),
and every per-node piece of a response already JSON-encoded, so answering a request is never a loop
over nodes in Python. A compact NodeNames array (as kube-scheduler writes it) is answered by the
compiled kernels, which copy each name from the request's own bytes in order; other requests are
answered with NumPy indexing and one `bytes.join` of the pieces.

Each state carries its own lock: a decision and a change to the view (a binding, a Reservation)
exclude each other, so an answer never sees half a binding. Replacing the state takes no lock a
request holds: requests already running finish on the state they started with.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import msgspec
import numpy as np
import numpy.typing as npt

from descheduler.extender import kernels
from descheduler.extender.decisions import FilterDecision
from descheduler.extender.names import NameIndex, NameSpans
from descheduler.extender.protocol import MAX_EXTENDER_PRIORITY, printable
from descheduler.extender.shapes import Shapes
from descheduler.model import MigrationJob, Pod, Reservation
from descheduler.scheduling.quota import QuotaBook
from descheduler.scheduling.table import (
    IntArray,
    NodeTable,
    count_move_target,
    count_reservation,
    covered_by_reservation,
)
from descheduler.scheduling.view import ClusterView

ObjectArray = npt.NDArray[np.object_]

CANDIDATE_CACHE_SIZE = 64
REASON_LISTS = 256  # lists of reason texts kept encoded; all dropped when full
INCOMING_POD_LOADS = 4096


@dataclass(frozen=True, slots=True)
class Candidates:
    """The node names of one request as table rows; names the table does not know are kept apart."""

    rows: IntArray  # table row of each known name, in request order
    positions: IntArray | None  # where each known name sits in the request (None: every name is known)
    unknown: tuple[tuple[int, bytes], ...] = ()  # (position, JSON-quoted name) of names the table lacks
    size: int = 0
    spans: NameSpans | None = None  # where each name sits in the request's compact NodeNames bytes


class ClusterState:
    """One refresh: the table, the view bindings are assumed into, and pre-encoded response pieces."""

    def __init__(
        self,
        table: NodeTable,
        generation: Hashable,
        taken_at: float,
        names: NameIndex | None = None,
        quota: QuotaBook | None = None,
    ) -> None:
        self.table = table
        self.quota = quota  # the ElasticQuota groups' use, for admission (None: the cluster has no quotas)
        self.view = ClusterView(table)
        self.generation = generation
        self.taken_at = taken_at  # monotonic time the snapshot was read
        self.lock = threading.Lock()  # a decision, or a change to the view and table
        # The previous state's index when the nodes are the same (a refresh rarely changes them).
        same = names is not None and names.names == tuple(table.names)
        self.names = names if names is not None and same else NameIndex(table.names)
        self._cache_lock = threading.Lock()
        quoted = [msgspec.json.encode(name) for name in table.names]
        # `"name"` for NodeNames, `,"name":` for a FailedNodes entry, a HostPriority up to its score;
        # then each score with the end of its HostPriority and the comma after it.
        self.quoted: ObjectArray = _objects(quoted)
        keyed = [b"," + q + b":" for q in quoted]
        self.keyed: ObjectArray = _objects(keyed)
        hosts = [b'{"Host":' + q + b',"Score":' for q in quoted]
        self.hosts: ObjectArray = _objects(hosts)
        self.scored: ObjectArray = _objects([str(s).encode() + b"}," for s in range(MAX_EXTENDER_PRIORITY + 1)])
        self._candidates: OrderedDict[tuple[int, bytes, bytes], tuple[bytes, Candidates]] = OrderedDict()
        self._reason_texts: dict[tuple[str, ...], tuple[list[bytes], kernels.Pieces]] = {}
        self._incoming: OrderedDict[str, str] = OrderedDict()  # pod key -> uid, of pods asked about
        self.shapes = Shapes()  # answers kept per pod shape; every change to the view or table is told to it
        self.released: set[str] = set()  # UIDs of pods gone whose requests the view no longer counts
        self._counted: dict[str, Pod] | None = None

    def counted_pods(self) -> dict[str, Pod]:
        """UID -> pod, for the snapshot's pods whose requests the table counts (bound, not finished);
        built on first use (only a pod's deletion needs it)."""
        if self._counted is None:
            self._counted = {p.uid: p for p in self.table.snapshot.pods if p.node_name and not p.terminal and p.uid}
        return self._counted

    def candidates(self, names_raw: bytes, names: list[str] | None, *, seen: bool = True) -> Candidates | None:
        """Rows for a NodeNames array: from the cache when these exact bytes were seen (looked up only
        with `seen`: a filter's names come in a fresh order each time), else read from the bytes in
        bulk (`NameIndex.locate`), else from the decoded `names`; None when only the decoded names
        would do and `names` is None."""
        if names_raw:
            if seen:
                with self._cache_lock:
                    cached = self._candidates.get(_cache_key(names_raw))
                if cached is not None and cached[0] == names_raw:
                    return cached[1]
            located = self.names.locate(names_raw)
            if located is not None:
                # Not remembered: a filter's names come in a fresh order each time, and this is cheap.
                return Candidates(located.rows, None, (), located.rows.size, located.spans)
        if names is None:
            return None
        index = self.table.index
        try:
            rows = np.fromiter(map(index.__getitem__, names), dtype=np.int64, count=len(names))
        except KeyError:
            rows = None
        if rows is not None:
            found = Candidates(rows, None, (), len(names))
        else:
            looked = list(map(index.get, names))
            positions = [i for i, row in enumerate(looked) if row is not None]
            unknown = tuple((i, msgspec.json.encode(names[i])) for i, row in enumerate(looked) if row is None)
            rows = np.array([looked[i] for i in positions], dtype=np.int64)
            found = Candidates(rows, np.array(positions, dtype=np.int64), unknown, len(names))
        self.remember(names_raw, found)
        return found

    def remember(self, names_raw: bytes, candidates: Candidates) -> None:
        """Keep the rows of a NodeNames array (a filter's answer is the next prioritize's question)."""
        if not names_raw:
            return
        key = _cache_key(names_raw)
        with self._cache_lock:
            self._candidates[key] = (names_raw, candidates)
            self._candidates.move_to_end(key)
            while len(self._candidates) > CANDIDATE_CACHE_SIZE:
                self._candidates.popitem(last=False)

    def host_priorities(self, spans: NameSpans, scores: IntArray) -> bytes:
        """The HostPriorityList of the names at `spans` (all known) with these scores."""
        buffer, out = kernels.output(spans.words.size + 23 * spans.starts.size + 2)
        size = kernels.host_priorities(spans.words, spans.starts, spans.ends, scores, out)
        assert size >= 0, "sized for every name, scores 0-10"
        return buffer[:size].tobytes()

    def filter_answer(
        self, spans: NameSpans, rows: IntArray, decision: FilterDecision, reasons: kernels.Pieces
    ) -> tuple[bytes, bytes, Candidates]:
        """(The ExtenderFilterResult, its NodeNames array, those names as candidates) for a compact
        NodeNames array of known names (`spans`, table `rows`): the names that passed in request order,
        each failed one in FailedNodes or FailedAndUnresolvableNodes with its reason; `reasons`: the
        decision's reasons as JSON strings (`reason_texts`). The candidates' spans point into the
        answer's own bytes, so the prioritize call that sends those names back is answered from them
        without finding them again."""
        n = rows.size
        buffer, out = kernels.output(_ANSWER.offsets[-1] + 2 * spans.words.size + n * reasons.longest + 8)
        kept = np.empty(3 * n, dtype=np.int64)
        size, start, end, count = kernels.filter_answer(
            out,
            buffer,
            _ANSWER.words,
            _ANSWER.offsets,
            spans.words,
            spans.starts,
            spans.ends,
            decision.reason,
            reasons.words,
            reasons.offsets,
            np.array(decision.unresolvable, dtype=np.bool_),
            rows,
            kept,
        )
        assert size >= 0, "sized for every name and every failed entry"
        passed = NameSpans(kept[n : n + count], kept[2 * n : 2 * n + count], out)
        answer, names = buffer[:size].tobytes(), buffer[start:end].tobytes()
        return answer, names, Candidates(kept[:count], None, (), count, passed)

    def reason_texts(self, reasons: Sequence[str]) -> tuple[list[bytes], kernels.Pieces]:
        """A decision's reasons as JSON strings, and the same back to back for the kernels; kept per
        list of reasons (a pod shape's recur request after request)."""
        key = tuple(reasons)
        found = self._reason_texts.get(key)
        if found is None:
            if len(self._reason_texts) >= REASON_LISTS:
                self._reason_texts.clear()
            texts = [msgspec.json.encode(printable(text)) for text in reasons]
            found = self._reason_texts[key] = (texts, kernels.Pieces.of(texts))
        return found

    def asked_about(self, pod: Pod) -> None:
        """Bound the table's per-pod load cache for pods that are not in the snapshot (one per request)."""
        table = self.table
        if pod.key in table.pod_rows:
            return
        seen = self._incoming.get(pod.key)
        if seen is not None and seen != pod.uid:
            table.pod_loads.pop(pod.key, None)  # a new pod under an old name: do not reuse its load
        self._incoming[pod.key] = pod.uid
        self._incoming.move_to_end(pod.key)
        while len(self._incoming) > INCOMING_POD_LOADS:
            key, _ = self._incoming.popitem(last=False)
            if key not in self.view.location:
                table.pod_loads.pop(key, None)


# The fixed parts of an ExtenderFilterResult around its NodeNames, FailedNodes and
# FailedAndUnresolvableNodes (`kernels.filter_answer`).
_ANSWER = kernels.Pieces.of(
    [b'{"Nodes":null,"NodeNames":', b',"FailedNodes":', b',"FailedAndUnresolvableNodes":', b',"Error":""}']
)


def _cache_key(names_raw: bytes) -> tuple[int, bytes, bytes]:
    """A NodeNames array's cache key: its length and ends. Hashing all ~60 KiB of 5,000 names took
    ~30 us per lookup; the bytes are compared in full once found."""
    return len(names_raw), names_raw[:64], names_raw[-64:]


def _objects(items: list[bytes]) -> ObjectArray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


@dataclass(frozen=True, slots=True)
class Assumed:
    pod: Pod
    node: str
    observed_at: float  # monotonic


class AssumedPods:
    """Pods seen bound after the current table's snapshot was read: until a snapshot includes them,
    their requests and estimated usage count on their node (scheduling-core.md §4), so a burst of
    pods does not all land on the node that looked coolest a second ago."""

    def __init__(self, ttl: float = 300.0) -> None:
        self.ttl = ttl
        self._entries: dict[str, Assumed] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, pod: Pod, node: str, at: float, state: ClusterState | None) -> None:
        """Record a binding and, when the state does not know it yet, place the pod in its view."""
        if state is not None and pod.key in state.table.pod_rows:
            return  # the snapshot already counts it
        self._entries[pod.key] = Assumed(pod, node, at)
        if state is not None:
            _place(state, pod, node)

    def forget(self, key: str) -> None:
        """The pod is gone: stop carrying its binding into new states."""
        self._entries.pop(key, None)

    def carry_over(self, state: ClusterState, now: float) -> None:
        """Apply to a new state the bindings its snapshot does not show yet; forget the rest.

        An entry is forgotten when the snapshot counts the pod, when the binding was observed
        before the snapshot was read and the snapshot still does not show it (the pod is gone), or
        after `ttl`.
        """
        keep: dict[str, Assumed] = {}
        bound = state.table.pod_rows
        for key, entry in self._entries.items():
            if key in bound or entry.observed_at < state.taken_at or now - entry.observed_at > self.ttl:
                continue
            keep[key] = entry
            _place(state, entry.pod, entry.node)
        self._entries = keep


def _place(state: ClusterState, pod: Pod, node: str) -> None:
    if state.quota is not None:
        state.quota.bound(pod)
    if node in state.table.index and pod.key not in state.view.location:
        state.view.place(pod, node)
        state.shapes.row_changed(state.table.index[node])


def release_pod(state: ClusterState, pod: Pod) -> bool:
    """A pod deleted from the API gives back, in the state's view, the requests the state counts for it
    on its node (once; the snapshot's pod must be this one, by UID, since a new pod may have the name).
    Its measured usage stays until the node's metrics are read again, as a rebuild would count it. An
    assumed binding of the pod is undone whole. True when anything changed."""
    view, table = state.view, state.table
    if state.quota is not None:
        state.quota.gone(pod)
    assumed = view.location.get(pod.key)
    if assumed:
        view.remove(pod)
        state.shapes.row_changed(table.index[assumed])
        return True
    if pod.uid in state.released or pod.key not in table.pod_rows:
        return False
    counted = state.counted_pods().get(pod.uid)
    row = table.index.get(counted.node_name) if counted is not None else None
    if counted is None or row is None:
        return False
    state.released.add(pod.uid)
    np.maximum(view.requested[row] - table.load_of(counted).requests, 0, out=view.requested[row])
    state.shapes.row_changed(row)
    return True


def apply_reservation(state: ClusterState, name: str, new: Reservation | None) -> bool:
    """Make the state's Reservation `name` be `new` (None: gone) at once, as a rebuild would count it:
    the room it holds on its node, the estimate of the pod it stands in for, and the job-in-flight
    estimate a Reservation replaces on its target (scheduling-core.md §4). True when anything changed."""
    table = state.table
    snapshot = table.snapshot
    old = next((r for r in snapshot.reservations if r.name == name), None)
    if old == new:
        return False
    state.shapes.all_changed()
    kept = tuple(r for r in snapshot.reservations if r.name != name)
    after = kept if new is None else (*kept, new)
    touched = {r.node_name for r in (old, new) if r is not None}
    jobs = [j for j in snapshot.jobs if j.active and j.target_node in touched and j.target_node in table.index]
    moving = _moving_pods(snapshot.pods, jobs) if jobs else {}
    before = [_job_covered(j, moving, snapshot.reservations, table.index) for j in jobs]
    for reservation, sign in ((old, -1), (new, 1)):
        if reservation is not None:
            count_reservation(table, reservation, sign, (state.view,))
    table.snapshot = dataclasses.replace(snapshot, reservations=after)
    for job, was in zip(jobs, before, strict=True):
        now = _job_covered(job, moving, after, table.index)
        pod = moving.get(f"{job.pod.namespace}/{job.pod.name}")
        if now is None or was is None or now == was or pod is None:
            continue
        load = table.load_of(pod)
        for arrays in (table, state.view):
            count_move_target(arrays, table.index[job.target_node], load, -1 if now else 1)
    return True


def _moving_pods(pods: Sequence[Pod], jobs: Sequence[MigrationJob]) -> dict[str, Pod]:
    keys = {f"{j.pod.namespace}/{j.pod.name}" for j in jobs}
    return {p.key: p for p in pods if p.key in keys}


def _job_covered(
    job: MigrationJob, moving: dict[str, Pod], reservations: Sequence[Reservation], index: dict[str, int]
) -> bool | None:
    """Whether a Reservation of the job's pod on its target stands in for the pod (None: the rebuild
    counts no estimate for this job on its target either way)."""
    pod = moving.get(f"{job.pod.namespace}/{job.pod.name}")
    if pod is None or pod.deleting or pod.terminal or pod.node_name not in index:
        return None
    return covered_by_reservation(job.target_node, pod, reservations)
