"""Filter and score one pod over the candidate nodes a scheduler sends: the scheduling core, vectorised.

The answers are the core's (`feasible_mask`, `scores`); what this module adds is the words. A
refused node gets the reason of the first predicate it fails, in scheduling-core.md §2 order, and
the text is the same for every node refused for the same cause ("insufficient cpu", "taint
dedicated=gpu:NoSchedule not tolerated"), so kube-scheduler's "0/N nodes are available: …" event
can count them, as it does for its own plugins. No text holds a `%`: kube-scheduler passes the
reasons through a format string, where "65%" reads "65%!,(MISSING)"; thresholds say "65 percent".
Each reason also says whether preempting pods on the node could help (FailedNodes) or not
(FailedAndUnresolvableNodes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from descheduler.extender.protocol import MAX_EXTENDER_PRIORITY
from descheduler.model import Node, Pod, Reservation
from descheduler.scheduling import predicates
from descheduler.scheduling.core import (
    LOAD_AGGREGATED,
    LOAD_PROD,
    MAX_SCORE,
    anti_affinity_mask,
    fit_check,
    load_check,
    scores,
    selector_mask,
)
from descheduler.scheduling.table import BoolArray, IntArray, NodeTable
from descheduler.scheduling.view import ClusterView

NOT_READY = "node is not Ready"
CORDONED = "node is cordoned (unschedulable)"
AFFINITY = "node does not match the pod's nodeSelector or required node affinity"
ANTI_AFFINITY = "pod anti-affinity: a pod it must not share {keys} with already runs there"


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What the extender needs per node beyond the table, computed once per table."""

    not_ready: BoolArray
    cordoned: BoolArray
    taint_nodes: list[Node]  # one node of each of the table's taint groups, to word its refusal

    @classmethod
    def of(cls, table: NodeTable) -> NodeFacts:
        nodes = [table.snapshot.node_by_name[name] for name in table.names]
        ready = np.array([node.ready for node in nodes], dtype=np.bool_)
        cordoned = np.array([node.unschedulable for node in nodes], dtype=np.bool_)
        first: dict[int, Node] = {}
        for row, group in enumerate(table.taint_group.tolist()):
            first.setdefault(group, nodes[row])
        return cls(~ready, cordoned & ready, [first[group] for group in range(len(table.taint_groups))])


@dataclass(frozen=True, slots=True)
class FilterDecision:
    """Per candidate row: passed, or the index of its reason in `reasons`."""

    reason: IntArray  # -1 where the node passed
    reasons: list[str]
    unresolvable: list[bool]  # per reason: preemption on the node would not help
    steered: int = -1  # the reason given to every other node when the pod was steered to its Reservation

    @property
    def passed(self) -> BoolArray:
        passed: BoolArray = self.reason < 0
        return passed


class _Reasons:
    """Reason texts in first-use order, each with its resolvability; `mark` assigns first failures only."""

    def __init__(self, size: int) -> None:
        self.reason = np.full(size, -1, dtype=np.int64)
        self.texts: list[str] = []
        self.unresolvable: list[bool] = []
        self._ids: dict[str, int] = {}

    def id(self, text: str, unresolvable: bool) -> int:
        found = self._ids.get(text)
        if found is None:
            found = self._ids[text] = len(self.texts)
            self.texts.append(text)
            self.unresolvable.append(unresolvable)
        return found

    def mark(self, failed: BoolArray, ids: IntArray | int) -> None:
        fresh = failed & (self.reason < 0)
        if isinstance(ids, int):
            self.reason[fresh] = ids
        else:
            self.reason[fresh] = ids[fresh]

    def decision(self, steered: int = -1) -> FilterDecision:
        return FilterDecision(self.reason, self.texts, self.unresolvable, steered)


def steering(pod: Pod, view: ClusterView) -> tuple[list[Reservation], list[Reservation]]:
    """(reservations whose room the pod may use, the Available ones among them that steer it)."""
    owned = predicates.owned_reservations(pod, view)
    return owned, [r for r in owned if r.phase == "Available"]


def filter_rows(pod: Pod, view: ClusterView, facts: NodeFacts, rows: IntArray) -> FilterDecision:
    """The extender's filter over table `rows`, in the order of scheduling-core.md §2."""
    table = view.table
    out = _Reasons(len(rows))
    out.mark(facts.not_ready.take(rows), out.id(NOT_READY, True))
    out.mark(facts.cordoned.take(rows), out.id(CORDONED, True))
    if pod.node_selector or pod.required_node_affinity is not None:
        out.mark(~selector_mask(pod, view).take(rows), out.id(AFFINITY, True))
    _taints(pod, table, facts, rows, out)
    owned, steer = steering(pod, view)
    _fit(pod, view, owned, rows, out)
    if pod.anti_affinity:
        keys = ", ".join(sorted({term.topology_key for term in pod.anti_affinity}))
        out.mark(~anti_affinity_mask(pod, view).take(rows), out.id(ANTI_AFFINITY.format(keys=keys), False))
    _load(pod, view, owned, rows, out)
    return out.decision(_steer(steer, table, rows, out))


def _taints(pod: Pod, table: NodeTable, facts: NodeFacts, rows: IntArray, out: _Reasons) -> None:
    groups = table.taint_groups
    if not any(groups):
        return
    ids = np.full(len(groups), -1, dtype=np.int64)
    for group, taints in enumerate(groups):
        reason = predicates.taints(pod, facts.taint_nodes[group]) if taints else None
        if reason is not None:
            ids[group] = out.id(reason, True)
    per_row = ids.take(table.taint_group.take(rows))
    out.mark(per_row >= 0, per_row)


def _fit(pod: Pod, view: ClusterView, owned: Sequence[Reservation], rows: IntArray, out: _Reasons) -> None:
    check = fit_check(pod, view, owned)
    table = view.table
    if check.unknown:
        out.mark(np.ones(len(rows), dtype=np.bool_), out.id(f"insufficient {check.unknown[0]}", False))
        return
    where = np.flatnonzero(~check.fits().take(rows))
    if not where.size:
        return
    # Only the refused rows are looked at resource by resource.
    picked = rows.take(where)
    free = check.free.take(picked, axis=0)
    # The first short resource by name, as the scalar predicate words it.
    by_name = np.argsort([table.resources[int(c)] for c in check.columns], kind="stable")
    first = by_name[np.argmax((free < check.need)[:, by_name], axis=1)]
    held = (free + check.others_reserved.take(picked, axis=0) >= check.need)[np.arange(where.size), first]
    # One reason per (resource, whether reservations hold the missing room).
    unique, inverse = np.unique(first * 2 + held, return_inverse=True)
    ids = []
    for code in unique.tolist():
        name = table.resources[int(check.columns[code // 2])]
        ids.append(out.id(f"insufficient {name}" + (" (room held by reservations)" if code % 2 else ""), False))
    _mark_rows(out, where, np.array(ids, dtype=np.int64)[inverse.reshape(-1)])


def _mark_rows(out: _Reasons, where: IntArray, ids: IntArray) -> None:
    per_row = np.full(out.reason.size, -1, dtype=np.int64)
    per_row[where] = ids
    out.mark(per_row >= 0, per_row)


def _load(pod: Pod, view: ClusterView, owned: Sequence[Reservation], rows: IntArray, out: _Reasons) -> None:
    check = load_check(pod, view, owned)
    refused = ~check.accepted.take(rows)
    if not refused.any():
        return
    table = view.table
    args = table.args
    expired = check.expired.take(rows)
    if expired.any():
        out.mark(expired, out.id(f"node metric expired (older than {args.node_metric_expiration_seconds}s)", True))
    over = refused & ~expired
    if not over.any():
        return
    where = np.flatnonzero(over)
    picked = rows.take(where)
    first = np.argmax(check.over.take(picked, axis=0), axis=1)
    thresholds = check.thresholds.take(picked, axis=0)[np.arange(where.size), first]
    # One reason per (basis, resource, threshold): a 1-D key (thresholds are percents, below 1024).
    columns = len(table.resources)
    code = check.basis.take(picked).astype(np.int64) * columns + first
    unique, inverse = np.unique(code * 1024.0 + thresholds, return_inverse=True)
    kind = args.aggregated.usage_aggregation_type if args.aggregated is not None else ""
    ids = []
    for key in unique.tolist():
        combined = int(key // 1024)
        threshold = key - combined * 1024
        basis, col = divmod(combined, columns)
        what = "prod " if basis == LOAD_PROD else f"{kind} " if basis == LOAD_AGGREGATED else ""
        resource = table.resources[col]
        ids.append(out.id(f"load-aware: estimated {what}{resource} usage would exceed {threshold:g} percent", True))
    _mark_rows(out, where, np.array(ids, dtype=np.int64)[inverse.reshape(-1)])


def _steer(steer: Sequence[Reservation], table: NodeTable, rows: IntArray, out: _Reasons) -> int:
    """A pod that owns an Available Reservation on a node that passed goes there and nowhere else;
    returns the reason the other nodes get (-1 when the pod was not steered)."""
    if not steer:
        return -1
    targets = {table.index[r.node_name]: r for r in steer}
    passed = out.reason < 0
    on_target = np.isin(rows, list(targets)) & passed
    if not on_target.any():
        return -1
    chosen = set(rows[on_target].tolist())
    held = sorted({(r.name, r.node_name) for row, r in targets.items() if row in chosen})
    text = "; ".join(f"the pod's Reservation {name} holds room for it on node {node}" for name, node in held)
    steered = out.id(text, True)
    out.mark(passed & ~on_target, steered)
    return steered


def extender_scores(pod: Pod, view: ClusterView, rows: IntArray) -> IntArray:
    """The core's score (0–100) of each row mapped to the extender range 0–10, rounded half up; a node
    holding the pod's Available Reservation scores 10."""
    core = scores(pod, view).take(rows)
    out: IntArray = (core * MAX_EXTENDER_PRIORITY + MAX_SCORE // 2) // MAX_SCORE
    _, steer = steering(pod, view)
    for reservation in steer:
        out[rows == view.table.index[reservation.node_name]] = MAX_EXTENDER_PRIORITY
    return out
