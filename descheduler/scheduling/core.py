"""The load-aware scheduling core: feasibility, score and best node, vectorised over nodes.

Used by the strategies (where can this pod go?), the migration controller (where to reserve)
and the scheduler extender (filter and score real pods). Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import numpy.typing as npt

from descheduler.model import Node, Pod, Reservation
from descheduler.scheduling import predicates
from descheduler.scheduling.predicates import owned_reservations
from descheduler.scheduling.table import METRIC_EXPIRED, METRIC_FRESH, METRIC_NONE, BoolArray, FloatArray, IntArray
from descheduler.scheduling.view import ClusterView

MAX_SCORE = 100


@dataclass(frozen=True)
class Choice:
    """The best node for a pod (or None), its score, and why the other nodes were refused."""

    node: str | None
    score: int
    feasible: BoolArray
    pod: Pod
    view: ClusterView
    node_fit: bool = True
    considered: BoolArray | None = field(default=None, repr=False)

    @cached_property
    def rejected(self) -> Mapping[str, str]:
        """node -> first failed predicate, for every considered node that was refused."""
        table = self.view.table
        out: dict[str, str] = {}
        considered = self.considered if self.considered is not None else np.ones(table.size, dtype=np.bool_)
        for row in np.flatnonzero(considered & ~self.feasible):
            node = table.snapshot.node_by_name[table.names[row]]
            out[node.name] = (
                predicates.first_failure(self.pod, node, self.view, self.node_fit) or "excluded by the caller"
            )
        return out

    def summary(self) -> str:
        """Kube-scheduler style: "0/12 nodes fit: 7 insufficient cpu, 5 taint … not tolerated"."""
        counts = Counter(_category(reason) for reason in self.rejected.values())
        total = int(self.considered.sum()) if self.considered is not None else self.view.table.size
        fit = int(self.feasible.sum())
        detail = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
        return f"{fit}/{total} nodes fit" + (f": {detail}" if detail else "")


def _category(reason: str) -> str:
    """A reason without its numbers, to group nodes in a summary."""
    for marker in (":", " would reach", " ("):
        if marker in reason:
            head = reason.split(marker, 1)[0]
            if head:
                return head
    return reason


def selector_mask(pod: Pod, view: ClusterView) -> BoolArray:
    """nodeSelector and required node affinity, through the label index."""
    table = view.table
    n = table.size
    mask = np.ones(n, dtype=np.bool_)
    index = table.label_index()
    for key, value in pod.node_selector.items():
        rows = index.get(key, {}).get(value, [])
        hit = np.zeros(n, dtype=np.bool_)
        hit[rows] = True
        mask &= hit
    terms = pod.required_node_affinity
    if terms is not None:
        any_term = np.zeros(n, dtype=np.bool_)
        for term in terms:
            if not term.match_expressions and not term.match_fields:
                continue
            term_mask = np.ones(n, dtype=np.bool_)
            for req in term.match_expressions:
                values = index.get(req.key, {})
                hit = np.zeros(n, dtype=np.bool_)
                for value, rows in values.items():
                    if req.matches(value):
                        hit[rows] = True
                if req.matches(None):  # NotIn / DoesNotExist also match nodes without the key
                    has_key = np.zeros(n, dtype=np.bool_)
                    for rows in values.values():
                        has_key[rows] = True
                    hit |= ~has_key
                term_mask &= hit
            for req in term.match_fields:
                hit = np.array([req.matches(name if req.key == "metadata.name" else None) for name in table.names])
                term_mask &= hit
            any_term |= term_mask
        mask &= any_term
    return mask


def taint_mask(pod: Pod, view: ClusterView) -> BoolArray:
    table = view.table
    tolerated = np.array(
        [all(any(t.tolerates(taint) for t in pod.tolerations) for taint in group) for group in table.taint_groups],
        dtype=np.bool_,
    )
    if tolerated.size == 0:
        return np.ones(table.size, dtype=np.bool_)
    return tolerated[table.taint_group]


def any_column(matrix: BoolArray) -> BoolArray:
    """Row-wise any of a (nodes × resources) matrix. NumPy reduces a short contiguous axis slowly:
    made column-major first, this takes 12 µs instead of 145 µs at 5,000 × 3."""
    out: BoolArray = np.asarray(np.asfortranarray(matrix).any(axis=1))
    return out


def all_columns(matrix: BoolArray) -> BoolArray:
    """Row-wise all of a (nodes × resources) matrix (see `any_column`)."""
    out: BoolArray = np.asarray(np.asfortranarray(matrix).all(axis=1))
    return out


@dataclass(frozen=True, slots=True)
class FitCheck:
    """The resources-fit predicate for every node, kept per resource so a caller can say which one failed."""

    columns: IntArray  # table columns the pod requests
    need: IntArray  # the pod's request in each of those columns
    free: IntArray  # nodes × columns: room left, counting the pod's own reservations as free
    others_reserved: IntArray  # nodes × columns: room held by reservations the pod does not own
    unknown: tuple[str, ...]  # requested resources no node has a column for

    def fits(self) -> BoolArray:
        if self.unknown:
            return np.zeros(self.free.shape[0], dtype=np.bool_)
        return all_columns(self.free >= self.need)


def fit_check(pod: Pod, view: ClusterView, owned: Iterable[Reservation] = ()) -> FitCheck:
    table = view.table
    need = table.load_of(pod).requests
    unknown = tuple(name for name in pod.requests if name not in table.column and pod.requests[name] > 0)
    cols = np.flatnonzero(need > 0)
    every = cols.size == need.size  # the usual case (cpu, memory, pods): no column gathers

    def columns(matrix: IntArray) -> IntArray:
        picked: IntArray = matrix if every else matrix[:, cols]
        return picked

    reserved = columns(table.reserved)
    owned = list(owned)
    if owned:
        reserved = reserved.copy(order="F")
        for reservation in owned:
            reserved[table.index[reservation.node_name]] -= table.vector(reservation.resources)[cols]
    free = columns(table.alloc) - columns(view.requested) - reserved
    return FitCheck(cols, need[cols], free, reserved, unknown)


def fit_mask(pod: Pod, view: ClusterView, owned: Iterable[Reservation] = ()) -> BoolArray:
    return fit_check(pod, view, owned).fits()


def anti_affinity_mask(pod: Pod, view: ClusterView) -> BoolArray:
    table = view.table
    mask = np.ones(table.size, dtype=np.bool_)
    snapshot = table.snapshot
    for term in pod.anti_affinity:
        taken = {
            snapshot.node_by_name[node].labels.get(term.topology_key)
            for _, node in predicates._term_nodes(pod, term, view)
        }
        taken.discard(None)
        index = table.label_index().get(term.topology_key, {})
        for domain in taken:
            assert domain is not None
            mask[index.get(domain, [])] = False
    return mask


LOAD_INSTANT, LOAD_AGGREGATED, LOAD_PROD = 0, 1, 2


@dataclass(frozen=True, slots=True)
class LoadCheck:
    """The load filter for every node (scheduling-core.md §3), with what decided it."""

    over: BoolArray  # nodes × resources: estimated usage after placement above the threshold
    thresholds: FloatArray  # nodes × resources: the percent each node was checked against
    basis: npt.NDArray[np.int8]  # per node: LOAD_INSTANT, LOAD_AGGREGATED or LOAD_PROD usage
    expired: BoolArray  # nodes refused because their metric is stale
    accepted: BoolArray


def load_check(pod: Pod, view: ClusterView, owned: Iterable[Reservation] = ()) -> LoadCheck:
    """The load filter; a node the pod holds a reservation on already counts the pod's estimate once."""
    table = view.table
    args = table.args
    n = table.size
    basis = np.zeros(n, dtype=np.int8)
    if pod.is_daemonset:
        none = np.zeros((n, len(table.resources)), dtype=np.bool_)
        return LoadCheck(none, table.thresholds, basis, np.zeros(n, dtype=np.bool_), np.ones(n, dtype=np.bool_))
    load = table.load_of(pod)
    base = view.estimated
    aggregated = view.aggregated
    thresholds = table.thresholds
    credit = [(table.index[r.node_name], table.reservation_estimate(r)) for r in owned]
    if credit:
        base, aggregated = base.copy(), aggregated.copy()
        for row, estimate in credit:
            base[row] -= estimate
            aggregated[row] -= estimate
    if args.aggregated is not None:
        rows = table.has_aggregated
        base = np.where(rows[:, None], aggregated, base)
        thresholds = np.where(rows[:, None], table.aggregated_thresholds, thresholds)
        basis[rows] = LOAD_AGGREGATED
    if load.prod:
        prod_rows = any_column(table.prod_thresholds > 0)
        base = np.where(prod_rows[:, None], view.prod_estimated, base)
        thresholds = np.where(prod_rows[:, None], table.prod_thresholds, thresholds)
        basis[prod_rows] = LOAD_PROD
    after = base + load.estimate
    over: BoolArray = (thresholds > 0) & (table.alloc > 0) & (after * 100 > thresholds * table.alloc)
    any_over = any_column(over)
    reject: BoolArray = np.asarray(any_over & (table.metric != METRIC_NONE))
    expired = np.zeros(n, dtype=np.bool_)
    if args.filter_expired_node_metrics:
        stale = np.asarray(table.metric == METRIC_EXPIRED)
        # Stale metrics make a node unschedulable for load-aware placement, unless explicitly allowed.
        if args.enable_schedule_when_node_metrics_expired:
            reject &= ~stale
        else:
            expired = stale
            reject = stale.copy()
        reject |= np.asarray(any_over & (table.metric == METRIC_FRESH))
    return LoadCheck(over, thresholds, basis, expired, ~reject)


def load_mask(pod: Pod, view: ClusterView, owned: Iterable[Reservation] = ()) -> BoolArray:
    """Nodes the load filter accepts (scheduling-core.md §3)."""
    return load_check(pod, view, owned).accepted


def feasible_mask(
    pod: Pod,
    view: ClusterView,
    *,
    node_fit: bool = True,
    allowed: BoolArray | None = None,
    owned: Iterable[Reservation] = (),
) -> BoolArray:
    """All predicates of scheduling-core.md §2 for every node at once."""
    table = view.table
    mask = table.schedulable.copy()
    if allowed is not None:
        mask &= allowed
    if node_fit:
        mask &= selector_mask(pod, view)
        mask &= taint_mask(pod, view)
        mask &= fit_mask(pod, view, owned)
        if pod.anti_affinity:
            mask &= anti_affinity_mask(pod, view)
    mask &= load_mask(pod, view, owned)
    return mask


def scores(pod: Pod, view: ClusterView) -> IntArray:
    """The load-aware score of every node for this pod (scheduling-core.md §5)."""
    table = view.table
    args = table.args
    estimate = table.load_of(pod).estimate
    weights = [(table.column[name], w) for name, w in args.resource_weights.items() if name in table.column and w > 0]
    total = np.zeros(table.size, dtype=np.int64)
    lowest: IntArray | None = None
    for col, weight in weights:  # one contiguous column at a time (the table is column-major)
        alloc = table.alloc[:, col]
        used = view.estimated[:, col] + estimate[col]
        least = np.where((alloc > 0) & (used <= alloc), (alloc - used) * MAX_SCORE // np.maximum(alloc, 1), 0)
        total += weight * least
        lowest = least if lowest is None else np.minimum(lowest, least)
    dominant = args.dominant_resource_weight
    if dominant and lowest is not None:
        total += dominant * lowest
    out: IntArray = total // max(sum(w for _, w in weights) + dominant, 1)
    out[table.metric != METRIC_FRESH] = 0
    return out


def best_node(
    pod: Pod,
    view: ClusterView,
    *,
    exclude: Iterable[str] = (),
    allowed: BoolArray | None = None,
    node_fit: bool = True,
) -> Choice:
    """The highest-scoring feasible node (ties by name); a node the pod has reserved wins."""
    table = view.table
    considered = np.ones(table.size, dtype=np.bool_) if allowed is None else allowed.copy()
    for name in exclude:
        row = table.index.get(name)
        if row is not None:
            considered[row] = False
    owned = owned_reservations(pod, view) if node_fit else []
    feasible = feasible_mask(pod, view, node_fit=node_fit, allowed=considered, owned=owned)
    if not feasible.any():
        return Choice(None, 0, feasible, pod, view, node_fit, considered)
    for reservation in owned:
        if feasible[table.index[reservation.node_name]]:
            return Choice(reservation.node_name, MAX_SCORE, feasible, pod, view, node_fit, considered)
    node_scores = scores(pod, view)
    masked = np.where(feasible, node_scores, -1)
    row = int(np.argmax(masked))
    return Choice(table.names[row], int(masked[row]), feasible, pod, view, node_fit, considered)


def feasible(pod: Pod, node: Node | str, view: ClusterView, node_fit: bool = True) -> str | None:
    """Why the pod cannot go to this node, or None when it can."""
    if isinstance(node, str):
        node = view.table.snapshot.node_by_name[node]
    return predicates.first_failure(pod, node, view, node_fit)


def score(pod: Pod, node: str, view: ClusterView) -> int:
    if any(r.node_name == node for r in owned_reservations(pod, view)):
        return MAX_SCORE
    return int(scores(pod, view)[view.table.index[node]])
