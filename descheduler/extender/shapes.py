"""Filter reasons and scores kept per pod shape, and brought up to date row by row.

Pods of one workload ask the extender the same question: the same requests and estimate, the same
selectors and tolerations. Within one state their answers differ only on the rows that changed in
between, and between refreshes only a binding changes a row (it adds the bound pod's load there).
So each shape keeps the reason of every table row (-1: passes) and every row's extender score,
and a request recomputes only the rows changed since the shape was last brought up to date, with
the same `filter_rows` and `extender_scores` as a fresh answer, then reads its own rows out.
Anything else that changes the state (a Reservation, a pod seen leaving) starts every shape afresh.

A refused row's reason text depends only on the key its predicate groups it by (the resource
short, the taint, the threshold crossed), not on which rows were asked about together: that is
what lets rows computed at different times share one list of reasons. A pod whose answer depends on
more than its shape and the rows is answered afresh each time: a pod owning a Reservation (its room,
and the steering to it). Inter-pod affinity, which looks at other pods, is not the extender's to
apply (kube-scheduler did, on fresher data: `decisions.filter_rows`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass

import numpy as np

from descheduler.extender.decisions import FilterDecision, Reasons, extender_scores, filter_rows
from descheduler.model import Pod
from descheduler.scheduling import predicates
from descheduler.scheduling.table import IntArray
from descheduler.scheduling.view import ClusterView

SHAPES = 64  # shapes kept per state, least recently used dropped
FULL_AFTER = 1024  # rows changed since a shape's last answer beyond which all its rows are recomputed
SUBSET_SHARE = 8  # changed rows are recomputed on a view of just them when fewer than 1/8 of the table


@dataclass(slots=True)
class _Shape:
    mark: int  # how many changed rows it has taken in
    reasons: Reasons  # per table row
    scores: IntArray  # per table row, extender range


class Shapes:
    """The shapes of one state, and the rows changed since it was served. Callers hold the state's lock."""

    def __init__(self) -> None:
        self._shapes: OrderedDict[Hashable, _Shape] = OrderedDict()
        self._changed: list[int] = []  # rows, in the order bindings changed them
        self._last: tuple[Pod, Hashable | None] | None = None  # the last pod asked about and its key

    def row_changed(self, row: int) -> None:
        """One row's sums changed (a binding): shapes recompute it when next asked."""
        self._changed.append(row)

    def all_changed(self) -> None:
        """Something not tied to rows changed (a Reservation, a pod leaving): every shape starts afresh."""
        self._changed.clear()
        self._shapes.clear()
        self._last = None  # its owned Reservations may have changed

    def filter(self, pod: Pod, view: ClusterView, rows: IntArray) -> FilterDecision:
        """`filter_rows(pod, view, rows)`, read from the pod's shape when it has one."""
        shape = self._current(pod, view)
        if shape is None:
            return filter_rows(pod, view, rows)
        found = shape.reasons
        return FilterDecision(found.reason.take(rows), found.texts, found.refusals, found.unresolvable)

    def scores(self, pod: Pod, view: ClusterView, rows: IntArray) -> IntArray:
        """`extender_scores(pod, view, rows)`, read from the pod's shape when it has one."""
        shape = self._current(pod, view)
        if shape is None:
            return extender_scores(pod, view, rows)
        return shape.scores.take(rows)

    def _current(self, pod: Pod, view: ClusterView) -> _Shape | None:
        # Prioritize asks about the very pod object filter did (the extender caches it by its bytes).
        if self._last is not None and self._last[0] is pod:
            key = self._last[1]
        else:
            key = shape_key(pod, view)
            self._last = (pod, key)
        if key is None:
            return None
        shape = self._shapes.get(key)
        size = view.table.size
        if shape is None or len(self._changed) - shape.mark > FULL_AFTER:
            shape = _Shape(0, Reasons(size), np.zeros(size, dtype=np.int64))
            _update(shape, pod, view, np.arange(size, dtype=np.int64))
        elif shape.mark < len(self._changed):
            _update(shape, pod, view, np.unique(np.array(self._changed[shape.mark :], dtype=np.int64)))
        shape.mark = len(self._changed)
        self._shapes[key] = shape
        self._shapes.move_to_end(key)
        while len(self._shapes) > SHAPES:
            self._shapes.popitem(last=False)
        return shape


def _update(shape: _Shape, pod: Pod, view: ClusterView, rows: IntArray) -> None:
    """Recompute these rows of the shape, its reasons renumbered into the shape's list. A few rows are
    computed on a view of just them (`ClusterView.subset`): the predicates' whole-table passes then
    cost a few microseconds instead of ~0.2 ms at 5,000 nodes."""
    few = rows.size * SUBSET_SHARE < view.table.size
    on, at = (view.subset(rows), np.arange(rows.size, dtype=np.int64)) if few else (view, rows)
    fresh = filter_rows(pod, on, at)
    ids = [shape.reasons.id(refusal, text) for refusal, text in zip(fresh.refusals, fresh.reasons, strict=True)]
    renumber = np.array([*ids, -1], dtype=np.int64)  # a reason of -1 (passed) reads the last entry
    shape.reasons.reason[rows] = renumber.take(fresh.reason)
    shape.scores[rows] = extender_scores(pod, on, at)


def shape_key(pod: Pod, view: ClusterView) -> Hashable | None:
    """Everything of the pod that `filter_rows` and `extender_scores` read, or None when they read
    more than the pod and the rows (see the module's note)."""
    if predicates.owned_reservations(pod, view):
        return None
    table = view.table
    load = table.load_of(pod)
    unknown = tuple((name, value) for name, value in pod.requests.items() if name not in table.column and value > 0)
    return (
        tuple(sorted(pod.node_selector.items())),
        pod.required_node_affinity,
        pod.tolerations,
        pod.is_daemonset,
        load.requests.tobytes(),
        load.estimate.tobytes(),
        load.prod,
        unknown,
    )
