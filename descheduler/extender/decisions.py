"""Filter and score one pod over the candidate nodes a scheduler sends: the scheduling core, vectorised.

The answers are the core's (`predicates.checks`, `scores`), and so are the reasons: a refused node
gets the refusal of the first predicate it fails, in scheduling-core.md §2 order, read from the
same checks. What this module adds is grouping: nodes refused for the same cause share one
refusal and one text, its words for kube-scheduler (`predicates.for_scheduler`: "insufficient
cpu", "taint dedicated=gpu:NoSchedule not tolerated", never a `%`), so kube-scheduler's "0/N
nodes are available: …" event can count them, as it does for its own plugins. Each reason also
says whether preempting pods on the node could help (FailedNodes) or not
(FailedAndUnresolvableNodes), by its code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

import numpy as np

from descheduler.extender.protocol import MAX_EXTENDER_PRIORITY
from descheduler.model import Pod, Reservation
from descheduler.refusal import Refusal, define
from descheduler.scheduling import predicates
from descheduler.scheduling.core import MAX_SCORE, scores
from descheduler.scheduling.predicates import RESOLVABLE, Stage, for_scheduler
from descheduler.scheduling.table import BoolArray, IntArray, NodeTable
from descheduler.scheduling.view import ClusterView

FEW_KEYS = 16  # distinct keys of one stage up to which they are grouped without sorting every row

# A node that passed, refused because the pod owns an Available Reservation elsewhere.
STEERED = define("SteeredToReservation", "the pod's Reservation {subject} holds room for it on node {node}")


@dataclass(frozen=True, slots=True)
class FilterDecision:
    """Per candidate row: passed, or the index of its reason in `reasons` (and `refusals`)."""

    reason: IntArray  # -1 where the node passed
    reasons: list[str]  # the words kube-scheduler shows
    refusals: list[Refusal]  # what each reason says, as data
    unresolvable: list[bool]  # per reason: preemption on the node would not help
    steered: int = -1  # the reason given to every other node when the pod was steered to its Reservation

    @property
    def passed(self) -> BoolArray:
        passed: BoolArray = self.reason < 0
        return passed


class Reasons:
    """Reasons in first-use order, one per distinct text; `mark` assigns first failures only."""

    def __init__(self, size: int) -> None:
        self.reason = np.full(size, -1, dtype=np.int64)
        self.texts: list[str] = []
        self.refusals: list[Refusal] = []
        self.unresolvable: list[bool] = []
        self._ids: dict[str, int] = {}

    def id(self, refusal: Refusal, text: str | None = None) -> int:
        text = for_scheduler(refusal) if text is None else text
        found = self._ids.get(text)
        if found is None:
            found = self._ids[text] = len(self.texts)
            self.texts.append(text)
            self.refusals.append(refusal)
            self.unresolvable.append(refusal.code not in RESOLVABLE)
        return found

    def mark(self, failed: BoolArray, ids: IntArray | int) -> None:
        fresh = failed & (self.reason < 0)
        if isinstance(ids, int):
            self.reason[fresh] = ids
        else:
            self.reason[fresh] = ids[fresh]

    def stage(self, stage: Stage, rows: IntArray) -> None:
        """Give each row this predicate refuses first one reason per key: the refusal of one of its rows."""
        where = np.flatnonzero(stage.failed & (self.reason < 0))
        if not where.size:
            return
        keys = stage.keys(where)
        values = keys.tolist()
        distinct = sorted(set(values))
        if len(distinct) > FEW_KEYS:
            _, first_at, inverse = np.unique(keys, return_index=True, return_inverse=True)
            ids = np.array([self.id(stage.refusal(int(rows[where[i]]))) for i in first_at.tolist()], dtype=np.int64)
            self.reason[where] = ids[inverse.reshape(-1)]
            return
        # What np.unique gives (keys in sorted order, each with its first row), without its sorts:
        # a stage's failed rows fall under a handful of keys.
        ids = np.array([self.id(stage.refusal(int(rows[where[values.index(v)]]))) for v in distinct], dtype=np.int64)
        if len(distinct) == 1:
            self.reason[where] = ids[0]
        else:
            self.reason[where] = ids[np.searchsorted(np.array(distinct, dtype=keys.dtype), keys)]

    def decision(self, steered: int = -1) -> FilterDecision:
        return FilterDecision(self.reason, self.texts, self.refusals, self.unresolvable, steered)


def refuse_everywhere(size: int, refusal: Refusal) -> FilterDecision:
    """Every candidate refused for one reason no node can change (a quota refusal), names the table does
    not know included (`steered`); preempting pods on a node would not help."""
    return FilterDecision(np.zeros(size, dtype=np.int64), [for_scheduler(refusal)], [refusal], [True], steered=0)


def steering(pod: Pod, view: ClusterView) -> tuple[list[Reservation], list[Reservation]]:
    """(reservations whose room the pod may use, the Available ones among them that steer it)."""
    owned = predicates.owned_reservations(pod, view)
    return owned, [r for r in owned if r.phase == "Available"]


def filter_rows(pod: Pod, view: ClusterView, rows: IntArray) -> FilterDecision:
    """The extender's filter over table `rows`, in the order of scheduling-core.md §2."""
    owned, steer = steering(pod, view)
    out = Reasons(len(rows))
    # Only what is ours (Reservations' room, the load filter): kube-scheduler ran its own filters
    # before calling us, on fresher data (scheduling-core.md §2).
    found = predicates.checks(pod, view, owned=owned, scheduler_filtered=True)
    if not found.passed().take(rows).all():  # else no stage refuses a row (a changed row mostly passes)
        for stage in found.stages(rows):
            out.stage(stage, rows)
    return out.decision(_steer(steer, view.table, rows, out))


# What the load filter refuses for (scheduling-core.md §3): over a threshold, or a metric too old.
LOAD_REFUSALS: Final = frozenset({*predicates.LOAD_CODES, predicates.METRIC_EXPIRED_CODE})


def waive_load(decision: FilterDecision) -> FilterDecision | None:
    """When every candidate is refused, and some only by the load filter, those pass: answered as if
    the extender were not there, since refusing them keeps the pod Pending where kube-scheduler alone
    would bind it (scheduling-core.md §2), and nothing else would make room (a cluster autoscaler
    simulates kube-scheduler's filters, not ours). None when that is not the case."""
    reason = decision.reason
    if not reason.size or (reason < 0).any():
        return None
    load = np.array([r.code in LOAD_REFUSALS for r in decision.refusals], dtype=np.bool_)
    only_load = load[reason]
    if not only_load.any():
        return None
    return replace(decision, reason=np.where(only_load, -1, reason))


def _steer(steer: Sequence[Reservation], table: NodeTable, rows: IntArray, out: Reasons) -> int:
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
    refusals = [Refusal(code=STEERED, subject=name, facts={"node": node}) for name, node in held]
    steered = out.id(refusals[0], "; ".join(str(r) for r in refusals))
    out.mark(passed & ~on_target, steered)
    return steered


def extender_scores(pod: Pod, view: ClusterView, rows: IntArray) -> IntArray:
    """The core's score (0–100) of each row mapped to the extender range 0–10, rounded half up; a node
    holding the pod's Available Reservation scores 10."""
    # Only the candidate rows when they are fewer than the table's (kube-scheduler may send a subset).
    core = scores(pod, view, rows) if rows.size < view.table.size else scores(pod, view).take(rows)
    out: IntArray = (core * MAX_EXTENDER_PRIORITY + MAX_SCORE // 2) // MAX_SCORE
    _, steer = steering(pod, view)
    for reservation in steer:
        out[rows == view.table.index[reservation.node_name]] = MAX_EXTENDER_PRIORITY
    return out
