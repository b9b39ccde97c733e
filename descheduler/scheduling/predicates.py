"""The predicates of scheduling-core.md §2, vectorised over nodes, and the refusal each one gives.

One implementation: `checks(pod, view)` runs every predicate for all nodes at once and keeps what
each found (which nodeSelector key, which taint, which resource was short and by how much, which
load threshold was crossed on which basis). `Checks.passed()` is the feasibility mask the core
chooses from; `Checks.refusals(rows)` reads the first failed predicate of each refused node, in §2
order, from the same arrays — so a node is refused exactly when it has a refusal, and the words
cannot drift from the rule. Each refusal code is defined here, once, with its words (`str(refusal)`)
and its figure-free `brief`; `for_scheduler` gives the words kube-scheduler shows for it.

Also here: which Reservations a pod may count as its own (`owned_reservations`, `claimable`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from descheduler.model import Pod, PodAffinityTerm, Reservation
from descheduler.quantity import format_units
from descheduler.refusal import Refusal, define
from descheduler.scheduling import dynamic_resources, pod_rules, volume_rules
from descheduler.scheduling.node_terms import terms_mask
from descheduler.scheduling.pod_rules import (
    RULE_NOT_JUDGED,
    AffinityCheck,
    PortsCheck,
    SpreadCheck,
    affinity_check,
    ports_check,
    spread_check,
    term_namespaces,
)
from descheduler.scheduling.table import (
    METRIC_EXPIRED,
    METRIC_FRESH,
    METRIC_NONE,
    BoolArray,
    FloatArray,
    IntArray,
    NodeTable,
)
from descheduler.scheduling.view import ClusterView
from descheduler.scheduling.volume_rules import ReasonCheck, volume_check, volume_needs

Keys = npt.NDArray[Any]


def _insufficient(refusal: Refusal) -> str:
    name, facts = refusal.subject, refusal.facts
    held = int(facts["held"])
    note = f" ({format_units(name, held)} held by reservations)" if held else ""
    requested, free = format_units(name, int(facts["requested"])), format_units(name, max(int(facts["free"]), 0))
    return f"insufficient {name}: requests {requested}, free {free}{note}"


def _node_affinity(refusal: Refusal) -> str:
    if refusal.subject:
        return f"nodeSelector {refusal.subject} does not match"
    return "required node affinity does not match"


NODE_NOT_READY = define("NodeNotReady", "node {node} is not Ready", brief="node is not Ready")
NODE_CORDONED = define(
    "NodeUnschedulable", "node {node} is cordoned (unschedulable)", brief="node is cordoned (unschedulable)"
)
# subject: the first nodeSelector pair that does not match ("disk=ssd"), or "" for required node affinity.
NODE_AFFINITY = define("NodeAffinity", _node_affinity)
TAINT_NOT_TOLERATED = define("TaintNotTolerated", "taint {subject} not tolerated")
# facts: requested, free (may be negative), held (all reserved room on the node), others (held by
# reservations the pod does not own).
INSUFFICIENT = define("InsufficientResource", _insufficient, brief="insufficient {subject}")
# facts: other (the pod already there), key and domain (the topology it holds), keys (all the pod's keys).
ANTI_AFFINITY = define(
    "PodAntiAffinity", "pod anti-affinity: {other} already in {key}={domain}", brief="pod anti-affinity"
)
# A running pod's required anti-affinity selects the incoming pod (kube-scheduler's InterPodAffinity
# "existing pods' anti-affinity").
EXISTING_ANTI_AFFINITY = define(
    "ExistingPodAntiAffinity",
    "anti-affinity of {other}: keeps the pod out of {key}={domain}",
    brief="another pod's anti-affinity",
)
METRIC_EXPIRED_CODE = define(
    "NodeMetricExpired", "node metric expired ({age:.0f}s old > {limit}s)", brief="node metric expired"
)
# subject: the resource; facts: percent (estimated usage after placing the pod), threshold, kind (aggregation).
LOAD_OVER = define(
    "LoadOverThreshold",
    "usage: {subject} would reach {percent:.0f}% > threshold {threshold:g}%",
    brief="{subject} usage over threshold",
)
AGGREGATED_LOAD_OVER = define(
    "AggregatedLoadOverThreshold",
    "{kind} usage: {subject} would reach {percent:.0f}% > threshold {threshold:g}%",
    brief="{kind} {subject} usage over threshold",
)
PROD_LOAD_OVER = define(
    "ProdLoadOverThreshold",
    "prod usage: {subject} would reach {percent:.0f}% > threshold {threshold:g}%",
    brief="prod {subject} usage over threshold",
)

LOAD_INSTANT, LOAD_AGGREGATED, LOAD_PROD = 0, 1, 2
LOAD_CODES = (LOAD_OVER, AGGREGATED_LOAD_OVER, PROD_LOAD_OVER)

# What kube-scheduler shows for a refusal (the extender's FailedNodes): the same text for every
# node refused for the same cause, so its "0/N nodes are available: …" event can count them, and
# never a `%` (kube-scheduler passes reasons through a Go format string, where "65%" reads
# "65%!,(MISSING)").
_FOR_SCHEDULER: dict[str, Callable[[Refusal], str]] = {
    NODE_AFFINITY: lambda r: "node does not match the pod's nodeSelector or required node affinity",
    INSUFFICIENT: lambda r: (
        f"insufficient {r.subject}" + (" (room held by reservations)" if _held_room_would_fit(r) else "")
    ),
    ANTI_AFFINITY: lambda r: f"pod anti-affinity: a pod it must not share {r.facts['keys']} with already runs there",
    EXISTING_ANTI_AFFINITY: lambda r: (
        f"anti-affinity of a pod already there: it keeps this pod out of {r.facts['key']}"
    ),
    METRIC_EXPIRED_CODE: lambda r: f"node metric expired (older than {r.facts['limit']}s)",
    LOAD_OVER: lambda r: _load_words("", r),
    AGGREGATED_LOAD_OVER: lambda r: _load_words(f"{r.facts['kind']} ", r),
    PROD_LOAD_OVER: lambda r: _load_words("prod ", r),
    **pod_rules.FOR_SCHEDULER,
    **volume_rules.FOR_SCHEDULER,
    **dynamic_resources.FOR_SCHEDULER,
}
# Refusals that preempting pods on the node could resolve (kube-scheduler's FailedNodes); the
# others are FailedAndUnresolvableNodes.
RESOLVABLE = frozenset({INSUFFICIENT, ANTI_AFFINITY, EXISTING_ANTI_AFFINITY})


def for_scheduler(refusal: Refusal) -> str:
    """The words kube-scheduler shows for this refusal: its brief, or the scheduler's wording of it."""
    words = _FOR_SCHEDULER.get(refusal.code)
    return words(refusal) if words is not None else refusal.brief


def _load_words(what: str, refusal: Refusal) -> str:
    threshold = float(refusal.facts["threshold"])
    return f"load-aware: estimated {what}{refusal.subject} usage would exceed {threshold:g} percent"


def _held_room_would_fit(refusal: Refusal) -> bool:
    """Whether the room other pods' reservations hold on the node is what the pod is short of."""
    facts = refusal.facts
    return int(facts["free"]) + int(facts["others"]) >= int(facts["requested"])


def over_thresholds(used: IntArray, alloc: IntArray, thresholds: FloatArray) -> BoolArray:
    """Where usage is above its load threshold percent (scheduling-core.md §3); a threshold of 0, or
    a resource the node does not have, checks nothing."""
    over: BoolArray = (thresholds > 0) & (alloc > 0) & (used * 100 > thresholds * alloc)
    return over


# --- reservations the pod may count as its own -----------------------------------------------


def owned_reservations(pod: Pod, view: ClusterView) -> list[Reservation]:
    """Reservations holding room on a known node that this pod owns and may take (it may use their room)."""
    table = view.table
    return [
        r
        for r in table.snapshot.reservations
        if r.holds_room and r.node_name in table.index and r.owned_by(pod) and claimable(r, table)
    ]


def claimable(reservation: Reservation, table: NodeTable) -> bool:
    """Owner pods may take the room once the pod it was made for is leaving or gone (migration.md §3):
    until then the workload's next pod is another move's replacement, and the room is not its. A
    MakeBeforeBreak room is taken at once: its owner matches that move's replacement alone."""
    replaced = reservation.replaces
    return replaced is None or not replaced.uid or reservation.replacement_first or not table.running(replaced.uid)


def owned_reserved(pod: Pod, node_name: str, view: ClusterView) -> IntArray:
    """Room on the node held by Reservations this pod owns."""
    total = view.table.vector({})
    for reservation in owned_reservations(pod, view):
        if reservation.node_name == node_name:
            total += view.table.vector(reservation.resources)
    return total


# --- the predicates, one array each --------------------------------------------------------


def any_column(matrix: BoolArray) -> BoolArray:
    """Row-wise any of a (nodes × resources) matrix. NumPy reduces a short contiguous axis slowly:
    made column-major first, this takes 12 µs instead of 145 µs at 5,000 × 3."""
    out: BoolArray = np.asarray(np.asfortranarray(matrix).any(axis=1))
    return out


def take_rows(matrix: npt.NDArray[Any], rows: IntArray) -> npt.NDArray[Any]:
    """`matrix.take(rows, axis=0)` of a (nodes × resources) matrix, a column at a time: on a
    column-major 5,000 × 3 matrix, 500 rows cost ~50 us in one take, ~8 us this way."""
    out = np.empty((rows.size, matrix.shape[1]), dtype=matrix.dtype, order="F")
    for col in range(matrix.shape[1]):
        out[:, col] = matrix[:, col].take(rows)
    return out


def all_columns(matrix: BoolArray) -> BoolArray:
    """Row-wise all of a (nodes × resources) matrix (see `any_column`)."""
    out: BoolArray = np.asarray(np.asfortranarray(matrix).all(axis=1))
    return out


@dataclass(frozen=True, slots=True)
class SelectorCheck:
    """nodeSelector and required node affinity for every node."""

    first_key: IntArray  # per node: index of the first nodeSelector pair it does not match, -1 if none
    affinity: BoolArray  # per node: the required node affinity matches

    def passed(self) -> BoolArray:
        passed: BoolArray = (self.first_key < 0) & self.affinity
        return passed


def selector_check(pod: Pod, view: ClusterView) -> SelectorCheck:
    """nodeSelector and required node affinity, through the label index."""
    table = view.table
    n = table.size
    first_key = np.full(n, -1, dtype=np.int64)
    index = table.label_index()
    for i, (key, value) in enumerate(pod.node_selector.items()):
        hit = np.zeros(n, dtype=np.bool_)
        hit[index.get(key, {}).get(value, [])] = True
        first_key[~hit & (first_key < 0)] = i
    terms = pod.required_node_affinity
    affinity = np.ones(n, dtype=np.bool_) if terms is None else terms_mask(table, terms)
    return SelectorCheck(first_key, affinity)


def selector_mask(pod: Pod, view: ClusterView) -> BoolArray:
    return selector_check(pod, view).passed()


def untolerated_taints(pod: Pod, table: NodeTable) -> IntArray:
    """Per taint group: the index in the group of the first blocking taint the pod does not tolerate, or -1."""
    return np.array(
        [
            next((i for i, taint in enumerate(group) if not any(t.tolerates(taint) for t in pod.tolerations)), -1)
            for group in table.taint_groups
        ],
        dtype=np.int64,
    )


def taint_mask(pod: Pod, view: ClusterView) -> BoolArray:
    table = view.table
    first = untolerated_taints(pod, table)
    if first.size == 0:
        return np.ones(table.size, dtype=np.bool_)
    tolerated: BoolArray = first[table.taint_group] < 0
    return tolerated


@dataclass(frozen=True, slots=True)
class FitCheck:
    """The resources-fit predicate for every node, kept per resource so a caller can say which one failed."""

    columns: IntArray  # table columns the pod requests
    need: IntArray  # the pod's request in each of those columns
    free: IntArray  # nodes × columns: room left, counting the pod's own reservations as free
    others_reserved: IntArray  # nodes × columns: room held by reservations the pod does not own
    unknown: tuple[str, ...]  # requested resources no node has a column for
    order: IntArray  # positions in `columns` + `unknown`, by resource name: the order refusals name them
    # Only a shortage of room that other pods' reservations hold counts (the extender's filter: kube-
    # scheduler's NodeResourcesFit has judged the node's requests, on fresher data).
    held_only: bool = False

    def fits(self) -> BoolArray:
        if self.held_only:
            return ~any_column((self.free < self.need) & (self.others_reserved > 0))
        if self.unknown:
            return np.zeros(self.free.shape[0], dtype=np.bool_)
        return all_columns(self.free >= self.need)

    def first_short(self, rows: IntArray) -> IntArray:
        """Per row, the first resource by name it is short of: a position in `columns` + `unknown`."""
        short = take_rows(self.free, rows) < self.need
        if self.held_only:
            short &= take_rows(self.others_reserved, rows) > 0
        elif self.unknown:
            short = np.hstack([short, np.ones((rows.size, len(self.unknown)), dtype=np.bool_)])
        picked: IntArray = self.order[np.argmax(short[:, self.order], axis=1)]
        return picked


def fit_check(
    pod: Pod, view: ClusterView, owned: Iterable[Reservation] = (), *, held_only: bool = False
) -> FitCheck:
    """`held_only`: see `FitCheck.held_only`."""
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
    names = [table.resources[c] for c in cols.tolist()] + list(unknown)
    order = np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)
    return FitCheck(cols, need[cols], free, reserved, () if held_only else unknown, order, held_only)


def fit_mask(pod: Pod, view: ClusterView, owned: Iterable[Reservation] = ()) -> BoolArray:
    return fit_check(pod, view, owned).fits()


def _term_nodes(pod: Pod, term: PodAffinityTerm, view: ClusterView) -> Iterator[tuple[Pod, str]]:
    """(matching pod, its node) for existing pods that the term selects."""
    if term.label_selector is None:
        return
    snapshot = view.table.snapshot
    namespaces = term_namespaces(pod.namespace, term, snapshot)
    for other in snapshot.pods:
        if other.key == pod.key or other.terminal or other.namespace not in namespaces:
            continue
        node = view.node_of(other)
        if node and term.label_selector.matches(other.labels):
            yield other, node


def inter_pod(pod: Pod, view: ClusterView) -> bool:
    """Whether the pod's answer depends on where other pods run: it has required anti-affinity, or a
    placed pod has one (whose selector may pick it)."""
    return bool(pod.anti_affinity or view.table.guards())


def _guarded(pod: Pod, view: ClusterView) -> dict[tuple[str, str], str]:
    """(topology key, domain) -> the placed pod whose required anti-affinity selects `pod` there."""
    snapshot = view.table.snapshot
    by_name = snapshot.node_by_name
    out: dict[tuple[str, str], str] = {}
    for other in view.table.guards():
        if other.key == pod.key or other.terminal:
            continue
        node = view.node_of(other)
        if not node or node not in by_name:
            continue
        for term in other.anti_affinity:
            if term.label_selector is None or not term.label_selector.matches(pod.labels):
                continue
            if pod.namespace not in term_namespaces(other.namespace, term, snapshot):
                continue
            domain = by_name[node].labels.get(term.topology_key)
            if domain is not None:
                out.setdefault((term.topology_key, domain), other.key)
    return out


@dataclass(frozen=True, slots=True)
class AntiAffinityCheck:
    """Required anti-affinity for every node: per term of the pod's own, the topology domains already
    taken; and the domains placed pods' anti-affinity keeps the pod out of."""

    taken: tuple[dict[str, str], ...]  # per term: domain -> the first pod (key) found in it
    guarded: dict[tuple[str, str], str]  # (topology key, domain) -> the pod whose anti-affinity excludes it
    passed: BoolArray


def anti_affinity_check(pod: Pod, view: ClusterView) -> AntiAffinityCheck:
    table = view.table
    mask = np.ones(table.size, dtype=np.bool_)
    by_name = table.snapshot.node_by_name
    taken: list[dict[str, str]] = []
    for term in pod.anti_affinity:
        domains: dict[str, str] = {}
        for other, node in _term_nodes(pod, term, view):
            domain = by_name[node].labels.get(term.topology_key)
            if domain is not None:
                domains.setdefault(domain, other.key)
        index = table.label_index().get(term.topology_key, {})
        for domain in domains:
            mask[index.get(domain, [])] = False
        taken.append(domains)
    guarded = _guarded(pod, view)
    for key, domain in guarded:
        mask[table.label_index().get(key, {}).get(domain, [])] = False
    return AntiAffinityCheck(tuple(taken), guarded, mask)


def anti_affinity_mask(pod: Pod, view: ClusterView) -> BoolArray:
    return anti_affinity_check(pod, view).passed


@dataclass(frozen=True, slots=True)
class LoadCheck:
    """The load filter for every node (scheduling-core.md §3), with what decided it."""

    over: BoolArray  # nodes × resources: estimated usage after placement above the threshold
    after: IntArray  # nodes × resources: estimated usage after placement, on the basis checked
    thresholds: FloatArray  # nodes × resources: the percent each node was checked against
    basis: npt.NDArray[np.int8]  # per node: LOAD_INSTANT, LOAD_AGGREGATED or LOAD_PROD usage
    expired: BoolArray  # nodes refused because their metric is stale
    accepted: BoolArray

    def first_over(self, rows: IntArray) -> IntArray:
        """Per refused (not expired) row, the first resource column over its threshold."""
        first: IntArray = np.argmax(take_rows(self.over, rows), axis=1)
        return first


def load_check(pod: Pod, view: ClusterView, owned: Iterable[Reservation] = ()) -> LoadCheck:
    """The load filter; a node the pod holds a reservation on already counts the pod's estimate once."""
    table = view.table
    args = table.args
    n = table.size
    if pod.is_daemonset:
        none = np.zeros((n, len(table.resources)), dtype=np.bool_)
        ones = np.ones(n, dtype=np.bool_)
        basis = np.zeros(n, dtype=np.int8)
        return LoadCheck(none, view.estimated, table.thresholds, basis, np.zeros(n, dtype=np.bool_), ones)
    load = table.load_of(pod)
    base = view.estimated
    aggregated = view.aggregated
    credit = [(table.index[r.node_name], table.reservation_estimate(r)) for r in owned]
    if credit:
        base, aggregated = base.copy(), aggregated.copy()
        for row, estimate in credit:
            base[row] -= estimate
            aggregated[row] -= estimate
    limits = _load_limits(table, load.prod)
    if args.aggregated is not None:
        base = np.where(table.has_aggregated[:, None], aggregated, base)
    if limits.prod_rows is not None:
        base = np.where(limits.prod_rows[:, None], view.prod_estimated, base)
    basis, thresholds = limits.basis.copy(), limits.thresholds
    after = base + load.estimate
    # over_thresholds(after, table.alloc, thresholds), its node-only parts computed once per table.
    over: BoolArray = limits.checked & (after * 100 > limits.cap)
    any_over = any_column(over)
    reject: BoolArray = np.asarray(any_over & (table.metric != METRIC_NONE))
    expired = np.zeros(n, dtype=np.bool_)
    if args.filter_expired_node_metrics:
        stale = np.asarray(table.metric == METRIC_EXPIRED)
        # Stale metrics make a node unschedulable for load-aware placement, unless explicitly allowed,
        # or unless the pod holds a reservation there: that room was checked on fresh metrics when it
        # was made, and refusing it while metrics pause would leave the moved workload short.
        if args.enable_schedule_when_node_metrics_expired:
            reject &= ~stale
        else:
            expired = stale.copy()
            for row, _ in credit:
                expired[row] = False
            reject = expired.copy()
        reject |= np.asarray(any_over & (table.metric == METRIC_FRESH))
    return LoadCheck(over, after, thresholds, basis, expired, ~reject)


@dataclass(frozen=True, slots=True)
class _LoadLimits:
    """What the load filter compares a node's estimated usage with, for pods of one class (prod or
    not): it depends on the node arrays only, so a table computes it once (`NodeTable.derived`)."""

    thresholds: FloatArray  # nodes × resources: the percent each node is checked against
    basis: npt.NDArray[np.int8]  # per node: LOAD_INSTANT, LOAD_AGGREGATED or LOAD_PROD
    prod_rows: BoolArray | None  # nodes checked on prod usage (None: not a prod pod)
    checked: BoolArray  # nodes × resources: a threshold above 0 on a resource the node has
    cap: FloatArray  # thresholds × alloc: usage × 100 above it is over

    def cut(self, rows: IntArray) -> _LoadLimits:
        prod_rows = None if self.prod_rows is None else self.prod_rows[rows]
        return _LoadLimits(self.thresholds[rows], self.basis[rows], prod_rows, self.checked[rows], self.cap[rows])


def _load_limits(table: NodeTable, prod: bool) -> _LoadLimits:
    key = ("load limits", prod)
    found = table.derived.get(key)
    if found is not None:
        assert isinstance(found, _LoadLimits)
        return found
    basis = np.zeros(table.size, dtype=np.int8)
    thresholds = table.thresholds
    if table.args.aggregated is not None:
        rows = table.has_aggregated
        thresholds = np.where(rows[:, None], table.aggregated_thresholds, thresholds)
        basis[rows] = LOAD_AGGREGATED
    prod_rows = None
    if prod:
        prod_rows = any_column(table.prod_thresholds > 0)
        thresholds = np.where(prod_rows[:, None], table.prod_thresholds, thresholds)
        basis[prod_rows] = LOAD_PROD
    checked: BoolArray = (thresholds > 0) & (table.alloc > 0)
    found = _LoadLimits(thresholds, basis, prod_rows, checked, thresholds * table.alloc)
    table.derived[key] = found
    return found


def load_mask(pod: Pod, view: ClusterView, owned: Iterable[Reservation] = ()) -> BoolArray:
    """Nodes the load filter accepts (scheduling-core.md §3)."""
    return load_check(pod, view, owned).accepted


# --- all of them, and why a node was refused ----------------------------------------------


@dataclass(frozen=True, slots=True)
class Stage:
    """One predicate's verdict over some rows: which failed, a key per row (rows with equal keys
    get equal briefs and scheduler words), and the refusal of one table row."""

    failed: BoolArray
    keys: Callable[[IntArray], Keys]  # positions (into the rows) of failed rows -> their keys
    refusal: Callable[[int], Refusal]


@dataclass(frozen=True, slots=True)
class Checks:
    """Every predicate of §2 for one pod over every node. Without `node_fit` only the node's
    condition and the load filter apply (the strategies' nodeFit: false)."""

    pod: Pod
    view: ClusterView
    selector: SelectorCheck | None  # None: the pod has neither nodeSelector nor required affinity
    taints: IntArray | None  # per taint group, see `untolerated_taints`; None: not checked
    fit: FitCheck | None
    anti_affinity: AntiAffinityCheck | None
    load: LoadCheck
    # The pod-level rules (`pod_rules`); None: the pod has none, or they were not asked for.
    ports: PortsCheck | None = None
    affinity: AffinityCheck | None = None
    spread: SpreadCheck | None = None
    volumes: ReasonCheck | None = None  # `volume_rules`
    devices: ReasonCheck | None = None  # `dynamic_resources`
    unjudged: str = ""  # a rule the core cannot judge for the pod: every node is refused for it
    node_condition: bool = True  # whether a node must be Ready and not cordoned

    def passed(self) -> BoolArray:
        """The feasibility mask."""
        table = self.view.table
        mask = table.schedulable.copy() if self.node_condition else np.ones(table.size, dtype=np.bool_)
        if self.unjudged:
            mask[:] = False
        if self.selector is not None:
            mask &= self.selector.passed()
        if self.taints is not None:
            mask &= self.taints[table.taint_group] < 0
        if self.fit is not None:
            mask &= self.fit.fits()
        if self.ports is not None:
            mask &= self.ports.passed
        if self.anti_affinity is not None:
            mask &= self.anti_affinity.passed
        if self.affinity is not None:
            mask &= self.affinity.passed
        if self.spread is not None:
            mask &= self.spread.passed
        if self.volumes is not None:
            mask &= self.volumes.passed
        if self.devices is not None:
            mask &= self.devices.passed
        mask &= self.load.accepted
        return mask

    def refusals(self, rows: IntArray) -> list[Refusal | None]:
        """Why each of these table rows is refused (its first failed predicate), None where it passes."""
        out: list[Refusal | None] = [None] * rows.size
        open_ = np.ones(rows.size, dtype=np.bool_)
        for stage in self.stages(rows):
            fresh = np.flatnonzero(stage.failed & open_)
            for position in fresh.tolist():
                out[position] = stage.refusal(int(rows[position]))
            open_[fresh] = False
        return out

    def refusal(self, row: int) -> Refusal | None:
        return self.refusals(np.array([row], dtype=np.int64))[0]

    def grouped(self, rows: IntArray) -> list[tuple[Refusal, int]]:
        """Why these table rows are refused, in groups: per stage and key (rows with equal keys have
        equal briefs), the refusal of one of its rows and how many rows it stands for. Rows that
        pass are left out. What `refusals` says row by row, at the cost of one refusal per group."""
        out: list[tuple[Refusal, int]] = []
        open_ = np.ones(rows.size, dtype=np.bool_)
        for stage in self.stages(rows):
            where = np.flatnonzero(stage.failed & open_)
            if not where.size:
                continue
            _, first_at, counts = np.unique(stage.keys(where), return_index=True, return_counts=True)
            for first, n in zip(first_at.tolist(), counts.tolist(), strict=True):
                out.append((stage.refusal(int(rows[where[first]])), n))
            open_[where] = False
        return out

    def stages(self, rows: IntArray) -> Iterator[Stage]:
        """The predicates over `rows`, in scheduling-core.md §2 order."""
        table = self.view.table
        nodes = table.snapshot.node_by_name

        def one(positions: IntArray) -> Keys:
            return np.zeros(positions.size, dtype=np.int64)

        def ready(positions: IntArray) -> Keys:
            return np.array([nodes[table.names[row]].ready for row in rows.take(positions).tolist()])

        def condition(row: int) -> Refusal:
            name = table.names[row]
            return Refusal(code=NODE_NOT_READY if not nodes[name].ready else NODE_CORDONED, facts={"node": name})

        if self.node_condition:
            yield Stage(~table.schedulable.take(rows), ready, condition)
        if self.unjudged:
            unjudged = Refusal(code=RULE_NOT_JUDGED, subject=self.unjudged)
            yield Stage(np.ones(rows.size, dtype=np.bool_), one, lambda row: unjudged)
        if self.selector is not None:
            yield self._selector_stage(self.selector, rows, one)
        if self.taints is not None:
            yield self._taint_stage(self.taints, rows)
        if self.fit is not None:
            yield self._fit_stage(self.fit, rows)
        if self.ports is not None:
            yield self._ports_stage(self.ports, rows)
        if self.anti_affinity is not None:
            yield self._anti_affinity_stage(self.anti_affinity, rows, one)
        if self.affinity is not None:
            yield self._affinity_stage(self.affinity, rows)
        if self.spread is not None:
            yield self._spread_stage(self.spread, rows)
        if self.volumes is not None:
            yield self._reason_stage(self.volumes, rows)
        if self.devices is not None:
            yield self._reason_stage(self.devices, rows)
        yield from self._load_stages(rows, one)

    @staticmethod
    def _reason_stage(check: ReasonCheck, rows: IntArray) -> Stage:
        def keys(positions: IntArray) -> Keys:
            out: Keys = check.first.take(rows.take(positions))
            return out

        return Stage(~check.passed.take(rows), keys, check.refusal)

    def _ports_stage(self, check: PortsCheck, rows: IntArray) -> Stage:
        def keys(positions: IntArray) -> Keys:
            return np.array([check.taken[row][0] for row in rows.take(positions).tolist()], dtype=np.int64)

        return Stage(~check.passed.take(rows), keys, lambda row: pod_rules.ports_refusal(self.pod, check, row))

    def _affinity_stage(self, check: AffinityCheck, rows: IntArray) -> Stage:
        table = self.view.table

        def keys(positions: IntArray) -> Keys:
            picked = rows.take(positions)
            out: Keys = check.first.take(picked) * 2 + check.no_label.take(picked)
            return out

        return Stage(
            ~check.passed.take(rows), keys, lambda row: pod_rules.affinity_refusal(self.pod, check, row, table)
        )

    def _spread_stage(self, check: SpreadCheck, rows: IntArray) -> Stage:
        table = self.view.table

        def keys(positions: IntArray) -> Keys:
            out: Keys = check.first.take(rows.take(positions))
            return out

        return Stage(~check.passed.take(rows), keys, lambda row: pod_rules.spread_refusal(self.pod, check, row, table))

    def _selector_stage(self, check: SelectorCheck, rows: IntArray, one: Callable[[IntArray], Keys]) -> Stage:
        pairs = list(self.pod.node_selector.items())

        def refusal(row: int) -> Refusal:
            key = int(check.first_key[row])
            return Refusal(code=NODE_AFFINITY, subject=f"{pairs[key][0]}={pairs[key][1]}" if key >= 0 else "")

        return Stage(~check.passed().take(rows), lambda positions: check.first_key.take(rows.take(positions)), refusal)

    def _taint_stage(self, first: IntArray, rows: IntArray) -> Stage:
        table = self.view.table
        per_row = first.take(table.taint_group.take(rows)) if first.size else np.full(rows.size, -1, dtype=np.int64)

        def refusal(row: int) -> Refusal:
            group = int(table.taint_group[row])
            return Refusal(code=TAINT_NOT_TOLERATED, subject=str(table.taint_groups[group][int(first[group])]))

        return Stage(
            per_row >= 0, lambda positions: table.taint_group.take(rows.take(positions)).astype(np.int64), refusal
        )

    def _fit_stage(self, check: FitCheck, rows: IntArray) -> Stage:
        table = self.view.table
        known = len(check.columns)

        def keys(positions: IntArray) -> Keys:
            picked = rows.take(positions)
            first = check.first_short(picked)
            # One key per (resource, whether the room other pods' reservations hold is what is missing).
            col = np.minimum(first, max(known - 1, 0))
            held = np.zeros(picked.size, dtype=np.bool_)
            if known:
                free = check.free[picked, col]
                others = check.others_reserved[picked, col]
                held = (first < known) & (free + others >= check.need.take(col))
            out: Keys = first * 2 + held
            return out

        def refusal(row: int) -> Refusal:
            j = int(check.first_short(np.array([row], dtype=np.int64))[0])
            if j >= known:
                name = check.unknown[j - known]
                facts = {"requested": self.pod.requests[name], "free": 0, "held": 0, "others": 0}
                return Refusal(code=INSUFFICIENT, subject=name, facts=facts)
            col = int(check.columns[j])
            facts = {
                "requested": int(check.need[j]),
                "free": int(check.free[row, j]),
                "held": int(table.reserved[row, col]),
                "others": int(check.others_reserved[row, j]),
            }
            return Refusal(code=INSUFFICIENT, subject=table.resources[col], facts=facts)

        return Stage(~check.fits().take(rows), keys, refusal)

    def _anti_affinity_stage(self, check: AntiAffinityCheck, rows: IntArray, one: Callable[[IntArray], Keys]) -> Stage:
        terms = self.pod.anti_affinity
        nodes = self.view.table.snapshot.node_by_name
        names = self.view.table.names
        keys = ", ".join(sorted({term.topology_key for term in terms}))

        def refusal(row: int) -> Refusal:
            labels = nodes[names[row]].labels
            for term, taken in zip(terms, check.taken, strict=True):
                domain = labels.get(term.topology_key)
                if domain is not None and domain in taken:
                    facts = {"other": taken[domain], "key": term.topology_key, "domain": domain, "keys": keys}
                    return Refusal(code=ANTI_AFFINITY, facts=facts)
            for (key, domain), other in check.guarded.items():
                if labels.get(key) == domain:
                    return Refusal(code=EXISTING_ANTI_AFFINITY, facts={"other": other, "key": key, "domain": domain})
            raise AssertionError(f"node {names[row]} passes the pod's anti-affinity")

        return Stage(~check.passed.take(rows), one, refusal)

    def _load_stages(self, rows: IntArray, one: Callable[[IntArray], Keys]) -> Iterator[Stage]:
        check = self.load
        table = self.view.table
        args = table.args
        refused = ~check.accepted.take(rows)
        expired = check.expired.take(rows)

        def stale(row: int) -> Refusal:
            facts = {"age": table.metric_age[row] or 0.0, "limit": args.node_metric_expiration_seconds}
            return Refusal(code=METRIC_EXPIRED_CODE, facts=facts)

        yield Stage(expired, one, stale)
        kind = args.aggregated.usage_aggregation_type if args.aggregated is not None else ""
        columns = len(table.resources)

        def keys(positions: IntArray) -> Keys:
            # One key per (basis, resource, threshold): thresholds are percents, below 1024.
            picked = rows.take(positions)
            first = check.first_over(picked)
            thresholds = check.thresholds[picked, first]
            code = check.basis.take(picked).astype(np.int64) * columns + first
            out: Keys = code * 1024.0 + thresholds
            return out

        def over(row: int) -> Refusal:
            col = int(check.first_over(np.array([row], dtype=np.int64))[0])
            alloc = table.alloc[row, col]
            facts: dict[str, float | str] = {
                "percent": float(check.after[row, col] * 100 / alloc),
                "threshold": float(check.thresholds[row, col]),
            }
            basis = int(check.basis[row])
            if basis == LOAD_AGGREGATED:
                facts["kind"] = kind
            return Refusal(code=LOAD_CODES[basis], subject=table.resources[col], facts=facts)

        yield Stage(refused & ~expired, keys, over)


def checks(
    pod: Pod,
    view: ClusterView,
    *,
    node_fit: bool = True,
    owned: Sequence[Reservation] = (),
    scheduler_filtered: bool = False,
) -> Checks:
    """Run every predicate of §2 for the pod over all nodes; `owned`: reservations whose room it may
    use. `scheduler_filtered`: kube-scheduler's own filters have passed these nodes (the extender's
    filter, called after them on fresher data), so only what is ours is checked: the room other pods'
    Reservations hold and the load filter (scheduling-core.md §2). A node refused for one of
    kube-scheduler's rules on our older picture (a node uncordoned a moment ago, a pod gone) would keep
    a pod Pending that kube-scheduler alone would bind."""
    if scheduler_filtered:
        fit = fit_check(pod, view, owned, held_only=True) if node_fit else None
        load = load_check(pod, view, owned)
        return Checks(pod, view, None, None, fit, None, load, node_condition=False)
    table = view.table
    selector = taints = fit = anti = None
    ports = affinity = spread = volumes = devices = None
    unjudged = ""
    if node_fit:
        if pod.node_selector or pod.required_node_affinity is not None:
            selector = selector_check(pod, view)
        if any(table.taint_groups):
            taints = untolerated_taints(pod, table)
        fit = fit_check(pod, view, owned)
        if inter_pod(pod, view):
            anti = anti_affinity_check(pod, view)
        unjudged = pod.unjudged
        if not unjudged and (pod.claims or pod.ephemeral):
            needs = volume_needs(pod, table.snapshot)
            unjudged = needs.unjudged
            volumes = volume_check(pod, view, needs) if not needs.empty and not unjudged else None
        if not unjudged and pod.resource_claims:
            unjudged, claim_rules = dynamic_resources.claim_rules(pod, table.snapshot)
            devices = dynamic_resources.claim_check(view, claim_rules) if claim_rules else None
        if pod.host_ports:
            ports = ports_check(pod, view)
        if pod.affinity:
            affinity = affinity_check(pod, view)
        if pod.spread:
            node_affinity = selector.passed() if selector is not None else np.ones(table.size, dtype=np.bool_)
            tolerated = taints[table.taint_group] < 0 if taints is not None else np.ones(table.size, dtype=np.bool_)
            spread = spread_check(pod, view, node_affinity, tolerated)
    load = load_check(pod, view, owned)
    return Checks(pod, view, selector, taints, fit, anti, load, ports, affinity, spread, volumes, devices, unjudged)


def unjudged_rule(pod: Pod, view: ClusterView) -> str:
    """The hard rule of kube-scheduler the core cannot judge for the pod (scheduling-core.md §2), named;
    "" when it judges them all. Such a pod is not moved."""
    snapshot = view.table.snapshot
    return pod.unjudged or volume_rules.unjudged(pod, snapshot) or dynamic_resources.unjudged(pod, snapshot)
