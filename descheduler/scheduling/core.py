"""The load-aware scheduling core: feasibility, score and best node, vectorised over nodes.

Used by the strategies (where can this pod go?), the migration controller (where to reserve)
and the scheduler extender (filter and score real pods). Pure: no I/O, no clock. The predicates
and their refusals are in `predicates.py`: `best_node` keeps their checks, so the reasons a
`Choice` gives for the nodes it refused are read from the very arrays that refused them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from descheduler.model import Node, Pod, Reservation
from descheduler.refusal import Refusal
from descheduler.scheduling.predicates import (
    LOAD_AGGREGATED,
    LOAD_INSTANT,
    LOAD_PROD,
    Checks,
    FitCheck,
    LoadCheck,
    all_columns,
    anti_affinity_mask,
    any_column,
    checks,
    fit_check,
    fit_mask,
    load_check,
    load_mask,
    owned_reservations,
    selector_mask,
    taint_mask,
)
from descheduler.scheduling.table import METRIC_FRESH, BoolArray, IntArray
from descheduler.scheduling.view import ClusterView

__all__ = [
    "LOAD_AGGREGATED",
    "LOAD_INSTANT",
    "LOAD_PROD",
    "MAX_SCORE",
    "Choice",
    "FitCheck",
    "LoadCheck",
    "all_columns",
    "anti_affinity_mask",
    "any_column",
    "best_node",
    "feasible_mask",
    "fit_check",
    "fit_mask",
    "load_check",
    "load_mask",
    "refusal",
    "score",
    "scores",
    "selector_mask",
    "taint_mask",
]

MAX_SCORE = 100


@dataclass(frozen=True)
class Choice:
    """The best node for a pod (or None), its score, and why the other nodes were refused."""

    node: str | None
    score: int
    feasible: BoolArray
    checks: Checks = field(repr=False)
    considered: BoolArray = field(repr=False)

    @cached_property
    def rejected(self) -> Mapping[str, Refusal]:
        """node -> its first failed predicate, for every considered node that was refused."""
        rows = np.flatnonzero(self.considered & ~self.feasible)
        names = self.checks.view.table.names
        return {
            names[row]: found
            for row, found in zip(rows.tolist(), self.checks.refusals(rows), strict=True)
            if found is not None
        }

    def summary(self) -> str:
        """Kube-scheduler style: "0/12 nodes fit: 7 insufficient cpu, 5 taint … not tolerated".
        Counted from one refusal per group of alike rows (`Checks.grouped`), not one per node: a
        plan can ask this of every candidate of every hot node."""
        counts: Counter[tuple[str, str]] = Counter()
        briefs: dict[tuple[str, str], str] = {}
        for found, n in self.checks.grouped(np.flatnonzero(self.considered & ~self.feasible)):
            group = found.code, found.subject
            counts[group] += n
            if group not in briefs:
                briefs[group] = found.brief
        total = int(self.considered.sum())
        fit = int(self.feasible.sum())
        groups = sorted((-n, briefs[group]) for group, n in counts.items())
        detail = ", ".join(f"{-n} {brief}" for n, brief in groups)
        return f"{fit}/{total} nodes fit" + (f": {detail}" if detail else "")


def feasible_mask(
    pod: Pod,
    view: ClusterView,
    *,
    node_fit: bool = True,
    allowed: BoolArray | None = None,
    owned: Sequence[Reservation] = (),
) -> BoolArray:
    """All predicates of scheduling-core.md §2 for every node at once."""
    mask = checks(pod, view, node_fit=node_fit, owned=owned).passed()
    if allowed is not None:
        mask &= allowed
    return mask


def scores(pod: Pod, view: ClusterView, rows: IntArray | None = None) -> IntArray:
    """The load-aware score of every node for this pod (scheduling-core.md §5); with `rows`, of those
    table rows only, in their order (`scores(pod, view)[rows]`, without computing the others)."""
    table = view.table
    args = table.args
    estimate = table.load_of(pod).estimate
    weights = [(table.column[name], w) for name, w in args.resource_weights.items() if name in table.column and w > 0]

    def picked(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return values if rows is None else values.take(rows)

    total = np.zeros(table.size if rows is None else rows.size, dtype=np.int64)
    lowest: IntArray | None = None
    for col, weight in weights:  # one contiguous column at a time (the table is column-major)
        alloc = picked(table.alloc[:, col])
        used = picked(view.estimated[:, col]) + estimate[col]
        least = np.where((alloc > 0) & (used <= alloc), (alloc - used) * MAX_SCORE // np.maximum(alloc, 1), 0)
        total += weight * least
        lowest = least if lowest is None else np.minimum(lowest, least)
    dominant = args.dominant_resource_weight
    if dominant and lowest is not None:
        total += dominant * lowest
    out: IntArray = total // max(sum(w for _, w in weights) + dominant, 1)
    out[picked(table.metric) != METRIC_FRESH] = 0
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
    found = checks(pod, view, node_fit=node_fit, owned=owned)
    feasible = found.passed() & considered
    if not feasible.any():
        return Choice(None, 0, feasible, found, considered)
    for reservation in owned:
        if feasible[table.index[reservation.node_name]]:
            return Choice(reservation.node_name, MAX_SCORE, feasible, found, considered)
    node_scores = scores(pod, view)
    masked = np.where(feasible, node_scores, -1)
    row = int(np.argmax(masked))
    return Choice(table.names[row], int(masked[row]), feasible, found, considered)


def refusal(pod: Pod, node: Node | str, view: ClusterView, node_fit: bool = True) -> Refusal | None:
    """Why the pod cannot go to this node, or None when it can."""
    name = node if isinstance(node, str) else node.name
    owned = owned_reservations(pod, view) if node_fit else []
    return checks(pod, view, node_fit=node_fit, owned=owned).refusal(view.table.index[name])


def score(pod: Pod, node: str, view: ClusterView) -> int:
    if any(r.node_name == node for r in owned_reservations(pod, view)):
        return MAX_SCORE
    return int(scores(pod, view)[view.table.index[node]])
