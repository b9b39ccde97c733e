"""The node table: a snapshot's nodes as NumPy arrays, built once per cycle.

Rows are nodes sorted by name (so argmax breaks ties by name); columns are resources. All
quantities are int64 integer units. The table is immutable; `ClusterView` layers assumed moves
on top of it.
"""

from __future__ import annotations

import dataclasses
import gc
import json
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from itertools import repeat
from operator import is_not
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from descheduler.labels import LabelSelector
from descheduler.model import ANNOTATION_USAGE_THRESHOLDS, Node, Pod, Reservation, Taint
from descheduler.podrows import PodRows, micros, pod_columns, rows_of, sliced, sliced_column
from descheduler.policy import SchedulingArgs
from descheduler.priority import is_prod
from descheduler.resources import Resources
from descheduler.scheduling.estimator import estimate_matrix
from descheduler.snapshot import Snapshot

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

METRIC_NONE, METRIC_FRESH, METRIC_EXPIRED = 0, 1, 2
_BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")
_AGGREGATION_SECONDS = {"avg", "p50", "p90", "p95", "p99"}


@dataclass(frozen=True, slots=True)
class PodLoad:
    """What one pod weighs: requests, measured usage and estimate, as vectors over the table's resources."""

    requests: IntArray
    usage: IntArray
    estimate: IntArray
    has_metric: bool
    prod: bool


class LoadArrays(Protocol):
    """Per-node sums a pod's load counts in: the node table's, or a view's over it."""

    requested: IntArray
    usage: IntArray
    prod_usage: IntArray
    estimated: IntArray
    prod_estimated: IntArray
    aggregated: IntArray


def shift_load(arrays: LoadArrays, row: int, load: PodLoad, sign: int, *, requests: bool = True) -> None:
    """How a pod's load lands on (`sign` 1) or leaves (-1) node `row` (scheduling-core.md §4).

    Landing, it adds its measured usage to `usage` and max(usage, estimate) to the estimated and
    aggregated sums, since the node's metrics cannot show it yet; leaving, it takes away the usage
    it was measured at. A prod pod counts in the prod sums too. `requests`: whether its requests
    move as well (a pod whose move is in flight still holds them on its source)."""
    landed = np.maximum(load.usage, load.estimate) if sign > 0 else load.usage
    if requests:
        arrays.requested[row] += sign * load.requests
    arrays.usage[row] += sign * load.usage
    arrays.estimated[row] += sign * landed
    arrays.aggregated[row] += sign * landed
    if load.prod:
        arrays.prod_usage[row] += sign * load.usage
        arrays.prod_estimated[row] += sign * landed


def count_move_target(arrays: LoadArrays, row: int, load: PodLoad, sign: int) -> None:
    """A move in flight that no Reservation stands in for: the pod's load counts on its target
    (`sign` 1, or -1 to take it back) before it runs there, as max(usage, estimate).

    Unlike `shift_load`, the aggregated and prod sums of the target are left alone and the usage
    sum takes the estimate too: the rule as it was before the two were written once each. Making
    it `shift_load(…, requests=False)` would change plans and is left for its own change."""
    incoming = sign * np.maximum(load.usage, load.estimate)
    arrays.usage[row] += incoming
    arrays.estimated[row] += incoming


def covered_by_reservation(target: str, pod: Pod, reservations: Iterable[Reservation]) -> bool:
    """Whether a Reservation of the moved pod on `target` stands in for it there: one made for it, or
    one its workload's next pod would take."""
    return any(
        r.holds_room
        and r.node_name == target
        and ((r.replaces is not None and r.replaces.uid == pod.uid) or r.owned_by(pod))
        for r in reservations
    )


SHAPED_LOADS = 4096  # loads kept per pod shape (requests, limits, prod) for pods outside the snapshot
# NodeTable's fields that hold one entry per node (`subset` cuts them down; a test holds the list whole).
PER_NODE_ARRAYS = (
    "alloc",
    "requested",
    "reserved",
    "usage",
    "prod_usage",
    "estimated",
    "prod_estimated",
    "aggregated",
    "has_aggregated",
    "metric",
    "schedulable",
    "thresholds",
    "prod_thresholds",
    "aggregated_thresholds",
    "taint_group",
)
PER_NODE_LISTS = ("names", "metric_age")


class PerNode(Protocol):
    """What a table derives from its node arrays (`NodeTable.derived`): it holds one entry per node,
    so a subset of the table cuts it down to its rows."""

    def cut(self, rows: IntArray) -> PerNode: ...


@dataclass(slots=True)
class NodeTable:
    """Per-node arrays for vectorised predicates, load checks and scores."""

    snapshot: Snapshot
    args: SchedulingArgs
    names: list[str]
    index: dict[str, int]
    resources: list[str]
    column: dict[str, int]
    measured: frozenset[str]
    alloc: IntArray
    requested: IntArray
    reserved: IntArray
    usage: IntArray  # lownodeload.md §3.1 usage, corrected for moves in flight
    prod_usage: IntArray
    estimated: IntArray  # usage + what metrics cannot show yet (scheduling-core.md §4)
    prod_estimated: IntArray
    aggregated: IntArray
    has_aggregated: BoolArray
    metric: npt.NDArray[np.int8]
    metric_age: list[float | None]
    schedulable: BoolArray
    thresholds: FloatArray
    prod_thresholds: FloatArray
    aggregated_thresholds: FloatArray
    taint_group: npt.NDArray[np.int32]
    taint_groups: list[tuple[Taint, ...]]
    pod_loads: dict[str, PodLoad] = field(default_factory=dict)
    shaped_loads: dict[Hashable, PodLoad] = field(default_factory=dict)  # see `_pod_load`
    pod_rows: Mapping[str, int] = field(default_factory=dict)  # key -> row of `pods`, for the pods the sums count
    pods: PodMatrix | None = None
    # UIDs of pods known to be leaving (terminating or gone) that the snapshot still shows running:
    # the extender adds them as watch events arrive, before its next rebuild.
    leaving: set[str] = field(default_factory=set)
    _labels: dict[str, dict[str, list[int]]] | None = None
    _running: frozenset[str] | None = None
    _guards: list[Pod] | None = None
    # What the pod-level rules (`pod_rules`) find once per table: per-node pod counts per selector,
    # domains per topology key, the pods holding host ports. Per node, so a subset starts it afresh.
    rule_cache: dict[Hashable, Any] = field(default_factory=dict, repr=False, compare=False)
    # Arrays derived from the node arrays alone (never from a view), computed once per table.
    derived: dict[Hashable, PerNode] = field(default_factory=dict, repr=False, compare=False)

    @property
    def size(self) -> int:
        return len(self.names)

    def subset(self, rows: IntArray) -> NodeTable:
        """A table of just these rows, in this order, over the same snapshot, arguments and pods: what
        the predicates and scores say of its row i they say of this table's row rows[i], for a pod
        whose answer on a node does not look at other nodes (no Reservation of its own elsewhere, no
        inter-pod anti-affinity in play: `extender.shapes.shape_key`). The fields that hold one entry
        per node are cut down, and so are the derived arrays (`PerNode`); the label index is built
        afresh, the rest is shared. (Field by field: `dataclasses.replace` cost ~20 us here.)"""
        other = object.__new__(NodeTable)
        for name in _FIELDS:
            setattr(other, name, getattr(self, name))
        # Not take(axis=0): on a column-major matrix it copies the whole matrix first.
        for name in PER_NODE_ARRAYS:
            setattr(other, name, getattr(self, name)[rows])
        picked = rows.tolist()
        for name in PER_NODE_LISTS:
            values = getattr(self, name)
            setattr(other, name, [values[row] for row in picked])
        other.index = {name: i for i, name in enumerate(other.names)}
        other._labels = None
        other.derived = {key: value.cut(rows) for key, value in self.derived.items()}
        other._guards = self.guards()  # the pods found once per snapshot, for the subset to share
        other.rule_cache = {}
        return other

    def guards(self) -> list[Pod]:
        """The snapshot's pods with a required anti-affinity (found once per snapshot)."""
        if self._guards is None:
            self._guards = [p for p in self.snapshot.pods if p.anti_affinity]
        return self._guards

    def running(self, uid: str) -> bool:
        """Whether the pod with this UID is in the snapshot, not terminating and not finished."""
        if self._running is None:
            self._running = frozenset(p.uid for p in self.snapshot.pods if not p.deleting and not p.terminal)
        return uid in self._running and uid not in self.leaving

    def vector(self, values: Mapping[str, int]) -> IntArray:
        """A resource vector as a row over the table's columns (unknown resources dropped)."""
        row: IntArray = self._row(values, np.int64)
        return row

    def percents(self, values: Mapping[str, float]) -> FloatArray:
        """Percent thresholds as a row over the table's columns (0 = no check)."""
        row: FloatArray = self._row(values, np.float64)
        return row

    def _row(self, values: Mapping[str, float], dtype: type[np.generic]) -> npt.NDArray[Any]:
        row = np.zeros(len(self.resources), dtype=dtype)
        for name, value in values.items():
            col = self.column.get(name)
            if col is not None:
                row[col] = value
        return row

    def matching(self, selector: LabelSelector) -> BoolArray:
        """Nodes whose labels the selector matches."""
        by_name = self.snapshot.node_by_name
        return np.array([selector.matches(by_name[name].labels) for name in self.names], dtype=np.bool_)

    def to_resources(self, row: IntArray, names: Sequence[str] | None = None) -> Resources:
        cols = names if names is not None else self.resources
        return Resources({n: int(row[self.column[n]]) for n in cols if n in self.column})

    def label_index(self) -> dict[str, dict[str, list[int]]]:
        """label key -> value -> node rows; built on first use."""
        if self._labels is None:
            index: dict[str, dict[str, list[int]]] = {}
            for row, name in enumerate(self.names):
                for key, value in self.snapshot.node_by_name[name].labels.items():
                    index.setdefault(key, {}).setdefault(value, []).append(row)
            self._labels = index
        return self._labels

    def reservation_estimate(self, reservation: Reservation) -> IntArray:
        """What the estimator expects of the pod a Reservation stands in for (its node already counts it)."""
        held = self.vector(reservation.resources)[None]
        row: IntArray = estimate_matrix(held, held, self.args.estimated_scaling_factors, self.column)[0]
        return row

    def load_of(self, pod: Pod) -> PodLoad:
        """The pod's requests, measured usage and estimate (cached per pod)."""
        cached = self.pod_loads.get(pod.key)
        if cached is not None:
            return cached
        load = _pod_load(self, pod)
        self.pod_loads[pod.key] = load
        return load


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic GC: building the table makes ~10 short-lived objects per pod and none form cycles,
    but each collection would walk every object of the snapshot (it halved build time at 150,000 pods)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_table(snapshot: Snapshot, args: SchedulingArgs, extra_resources: Sequence[str] = ()) -> NodeTable:
    """Index a snapshot for the scheduling core."""
    with _gc_paused():
        return _build_table(snapshot, args, extra_resources)


def pod_rows(snapshot: Snapshot) -> PodRows:
    """The snapshot's pod rows: the cache's, kept as events arrived, else computed from its pods
    (and kept for the next caller: a cycle's node table and its trend both read them)."""
    global _computed_rows
    for rows in (snapshot.pod_rows, _computed_rows):
        if rows is not None and rows.fits(snapshot.pods, snapshot.nodes):
            return rows
    _computed_rows = rows_of(snapshot.pods, snapshot.nodes)
    return _computed_rows


# The rows `pod_rows` computed last (for a snapshot without the cache's rows, e.g. a snapshot file's).
# One slot: a cycle reads one snapshot's rows more than once; they hold that snapshot's pods alive
# until the next such snapshot.
_computed_rows: PodRows | None = None


def _build_table(snapshot: Snapshot, args: SchedulingArgs, extra_resources: Sequence[str]) -> NodeTable:
    nodes = snapshot.nodes
    rows = pod_rows(snapshot)
    names = [n.name for n in nodes]
    index = {name: i for i, name in enumerate(names)}
    measured = frozenset({"cpu", "memory"}).union(*(u.usage.keys() for u in snapshot.node_usage.values()))
    resource_names: set[str] = {"cpu", "memory", "pods", *extra_resources}
    for node in nodes:
        resource_names.update(node.allocatable)
    resource_names.update(rows.requested)
    resource_names.update(args.usage_thresholds)
    resources = ["cpu", "memory", "pods", *sorted(resource_names - {"cpu", "memory", "pods"})]
    column = {name: i for i, name in enumerate(resources)}
    n, r = len(nodes), len(resources)

    table = NodeTable(
        snapshot=snapshot,
        args=args,
        names=names,
        index=index,
        resources=resources,
        column=column,
        measured=measured,
        alloc=np.zeros((n, r), dtype=np.int64, order="F"),
        requested=np.zeros((n, r), dtype=np.int64, order="F"),
        reserved=np.zeros((n, r), dtype=np.int64, order="F"),
        usage=np.zeros((n, r), dtype=np.int64, order="F"),
        prod_usage=np.zeros((n, r), dtype=np.int64, order="F"),
        estimated=np.zeros((n, r), dtype=np.int64, order="F"),
        prod_estimated=np.zeros((n, r), dtype=np.int64, order="F"),
        aggregated=np.zeros((n, r), dtype=np.int64, order="F"),
        has_aggregated=np.zeros(n, dtype=np.bool_),
        metric=np.zeros(n, dtype=np.int8),
        metric_age=[None] * n,
        schedulable=np.array([nd.ready and not nd.unschedulable for nd in nodes], dtype=np.bool_),
        thresholds=np.zeros((n, r), dtype=np.float64, order="F"),
        prod_thresholds=np.zeros((n, r), dtype=np.float64, order="F"),
        aggregated_thresholds=np.zeros((n, r), dtype=np.float64, order="F"),
        taint_group=np.zeros(n, dtype=np.int32),
        taint_groups=[],
    )
    _fill_nodes(table, nodes, args)
    _fill_pods(table, snapshot, rows)
    _fill_in_flight(table, snapshot)
    return table


def _fill_nodes(table: NodeTable, nodes: Sequence[Node], args: SchedulingArgs) -> None:
    groups: dict[tuple[Taint, ...], int] = {}
    expiration = args.node_metric_expiration_seconds
    aggregation = args.aggregated
    duration = (
        int(aggregation.usage_aggregated_duration.total_seconds())
        if aggregation is not None and isinstance(aggregation.usage_aggregated_duration, timedelta)
        else None
    )
    table.alloc[:] = _stacked(table, [node.allocatable.as_dict() for node in nodes])
    # The policy's thresholds on every node, then the nodes that override them by annotation.
    policy = _policy_thresholds(args)
    for array, values in zip(
        (table.thresholds, table.prod_thresholds, table.aggregated_thresholds), policy, strict=True
    ):
        array[:] = table.percents(values)
    taint_group: list[int] = []
    node_usage, now = table.snapshot.node_usage, table.snapshot.now
    for row, node in enumerate(nodes):
        blocking = tuple(t for t in node.taints if t.effect in _BLOCKING_EFFECTS) if node.taints else ()
        taint_group.append(groups.setdefault(blocking, len(groups)))
        if node.annotations.get(ANNOTATION_USAGE_THRESHOLDS):
            usage, prod, agg = _thresholds(node, args)
            table.thresholds[row] = table.percents(usage)
            table.prod_thresholds[row] = table.percents(prod)
            table.aggregated_thresholds[row] = table.percents(agg)
        metric = node_usage.get(node.name)
        if metric is None:
            continue
        age = (now - metric.timestamp).total_seconds()
        table.metric_age[row] = age
        table.metric[row] = METRIC_FRESH if age <= expiration else METRIC_EXPIRED
        if aggregation is not None:
            value = metric.aggregate(aggregation.usage_aggregation_type, duration)
            if value is not None:
                table.aggregated[row] = table.vector(value)
                table.has_aggregated[row] = True
    table.taint_group[:] = taint_group
    table.taint_groups = list(groups)


def _policy_thresholds(args: SchedulingArgs) -> tuple[Mapping[str, float], Mapping[str, float], Mapping[str, float]]:
    """The load thresholds of a node without the usage-thresholds annotation."""
    usage: Mapping[str, float] = args.usage_thresholds
    prod: Mapping[str, float] = args.prod_usage_thresholds or {}
    agg: Mapping[str, float] = args.aggregated.usage_thresholds if args.aggregated is not None else {}
    return usage, prod, agg


def _thresholds(
    node: Node, args: SchedulingArgs
) -> tuple[Mapping[str, float], Mapping[str, float], Mapping[str, float]]:
    """The node's load thresholds: the policy's, replaced part by part by the node annotation."""
    usage, prod, agg = _policy_thresholds(args)
    raw = node.annotations.get(ANNOTATION_USAGE_THRESHOLDS)
    if raw:
        try:
            custom = json.loads(raw)
        except ValueError:
            custom = None
        if isinstance(custom, dict):
            usage = _percent_map(custom.get("usageThresholds"), usage)
            prod = _percent_map(custom.get("prodUsageThresholds"), prod)
            aggregated = custom.get("aggregatedUsage")
            if isinstance(aggregated, dict):
                agg = _percent_map(aggregated.get("usageThresholds"), agg)
    return usage, prod, agg


def _percent_map(raw: object, fallback: Mapping[str, float]) -> Mapping[str, float]:
    """A valid {resource: 0..100} map from an annotation, else the fallback (a bad one is ignored)."""
    if not isinstance(raw, dict):
        return fallback
    out: dict[str, float] = {}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
            return fallback
        out[str(key)] = float(value)
    return out


_FIELDS = tuple(f.name for f in dataclasses.fields(NodeTable))


@dataclass(frozen=True, slots=True)
class PodMatrix:
    """Requests, measured usage and estimate of many pods, one row each."""

    requests: IntArray
    usage: IntArray
    estimate: IntArray
    has_metric: BoolArray
    prod: BoolArray


def pod_matrix(table: NodeTable, pods: Sequence[Pod], keys: Sequence[str] | None = None) -> PodMatrix:
    """Bulk version of `PodLoad` for many pods; the single-pod path uses it too, so both agree.
    `keys`: the pods' keys, when the caller has them."""
    columns = pod_columns(pods)
    keys = keys if keys is not None else columns.keys
    return _matrix(table, columns.resources, columns.requests, columns.limits, keys, columns.prod)


def _matrix(
    table: NodeTable,
    resources: Sequence[str],
    requests: IntArray,
    limits: IntArray,
    keys: Sequence[str],
    prod: BoolArray,
) -> PodMatrix:
    """Pod rows (requests and limits over `resources`) as a `PodMatrix` over the table's columns,
    with the measured usage of the snapshot's load reading (looked up by key)."""
    column, measured = table.column, table.measured
    rows_requested = _columns(table, resources, requests, [n for n in table.resources if n != "pods"])
    rows_limits = _columns(table, resources, limits, list(table.args.estimated_scaling_factors))
    usage_of = table.snapshot.pod_usage
    metrics = sliced(usage_of.get, keys)  # in slices: this runs over every pod while requests are served
    has_metric = sliced_column(is_not, metrics, np.bool_, None)
    vectors = [_NO_USAGE if m is None else m.usage.as_dict() for m in metrics]
    usage = np.zeros((len(vectors), len(table.resources)), dtype=np.int64)
    for name in measured:
        col = column.get(name)
        if col is not None:
            usage[:, col] = sliced_column(dict.get, vectors, np.int64, name, 0)
    rows_requested[:, column["pods"]] = 1
    estimate = _estimate_matrix(table, rows_requested, rows_limits)
    # Resources the load source does not measure (extended resources, pods) count by requests.
    others = [column[name] for name in table.resources if name not in measured]
    usage[:, others] = rows_requested[:, others]
    estimate[:, others] = rows_requested[:, others]
    return PodMatrix(rows_requested, usage, estimate, has_metric, prod)


_NO_USAGE: dict[str, int] = {}


def _stacked(table: NodeTable, vectors: Sequence[dict[str, int]]) -> IntArray:
    """Resource vectors as rows over the table's columns (resources it has no column for dropped)."""
    out = np.zeros((len(vectors), len(table.resources)), dtype=np.int64)
    for name, col in table.column.items():
        out[:, col] = np.fromiter(map(dict.get, vectors, repeat(name), repeat(0)), np.int64, len(vectors))
    return out


def _columns(table: NodeTable, resources: Sequence[str], values: IntArray, names: Sequence[str]) -> IntArray:
    """A (rows × table columns) matrix holding `values`' columns (named by `resources`) for `names`;
    other columns are 0."""
    out = np.zeros((len(values), len(table.resources)), dtype=np.int64)
    source = {name: i for i, name in enumerate(resources)}
    for name in names:
        col, src = table.column.get(name), source.get(name)
        if col is not None and src is not None:
            out[:, col] = values[:, src]
    return out


def _estimate_matrix(table: NodeTable, requests: IntArray, limits: IntArray) -> IntArray:
    """The estimator (scheduling-core.md §4) over the table's columns, every row at once."""
    return estimate_matrix(requests, limits, table.args.estimated_scaling_factors, table.column)


def _pod_load(table: NodeTable, pod: Pod) -> PodLoad:
    row = table.pod_rows.get(pod.key)
    if row is None or table.pods is None:
        if pod.key in table.snapshot.pod_usage:
            return one_pod_load(table, pod)
        # Without usage of its own a pod's load is a function of these: pods of one workload share it.
        shape = (tuple(pod.requests.items()), tuple(pod.limits.items()), is_prod(pod))
        found = table.shaped_loads.get(shape)
        if found is None:
            found = one_pod_load(table, pod)
            if len(table.shaped_loads) >= SHAPED_LOADS:
                table.shaped_loads.clear()
            table.shaped_loads[shape] = found
        return found
    matrix, i = table.pods, row
    return PodLoad(
        requests=matrix.requests[i],
        usage=matrix.usage[i],
        estimate=matrix.estimate[i],
        has_metric=bool(matrix.has_metric[i]),
        prod=bool(matrix.prod[i]),
    )


def one_pod_load(table: NodeTable, pod: Pod) -> PodLoad:
    """`pod_matrix(table, [pod])`'s row, read straight from the pod's maps: the extender asks this for
    every pod it is sent, and the batch path costs ~100 us for one pod. It follows `_matrix` step by
    step; tests/scheduling/test_one_pod_load.py holds the two equal."""
    column, measured, size = table.column, table.measured, len(table.resources)
    requested, limited = pod.requests.as_dict(), pod.limits.as_dict()
    requests = [0] * size
    for name, col in column.items():
        requests[col] = requested.get(name, 0)
    requests[column["pods"]] = 1
    limits = [0] * size
    for name in table.args.estimated_scaling_factors:
        if name in column:
            limits[column[name]] = limited.get(name, 0)
    metric = table.snapshot.pod_usage.get(pod.key)
    reported = _NO_USAGE if metric is None else metric.usage.as_dict()
    usage = [0] * size
    for name in measured:
        if name in column:
            usage[column[name]] = reported.get(name, 0)
    request_row = np.array([requests], dtype=np.int64)
    estimate = _estimate_matrix(table, request_row, np.array([limits], dtype=np.int64))[0]
    # Resources the load source does not measure (extended resources, pods) count by requests.
    for name, col in column.items():
        if name not in measured:
            usage[col] = estimate[col] = requests[col]
    return PodLoad(
        requests=request_row[0],
        usage=np.array(usage, dtype=np.int64),
        estimate=estimate,
        has_metric=metric is not None,
        prod=is_prod(pod),
    )


def _by_node(rows: IntArray, values: IntArray, size: int) -> IntArray:
    """Per node, the sum of `values` over the pods whose entry of `rows` is that node; entries equal
    to `size` are pods no node sum counts."""
    out = np.zeros((size + 1, values.shape[1]), dtype=np.int64, order="F")
    for col in range(values.shape[1]):
        np.add.at(out[:, col], rows, values[:, col])
    return out[:size]


_NEVER = int(np.iinfo(np.int64).max)


def _report_cutoffs(table: NodeTable, snapshot: Snapshot) -> IntArray:
    """Per node (and the extra row for uncounted pods), the latest PodScheduled time (µs) the node's
    last metric report can include: a pod scheduled by then is reported (scheduling-core.md §4).
    A node with no metric reports every pod; a pod with no PodScheduled time is reported too
    (`NO_TIME` is below every cutoff)."""
    cutoffs = np.full(table.size + 1, _NEVER, dtype=np.int64)
    for row, name in enumerate(table.names):
        metric = snapshot.node_usage.get(name)
        if metric is not None:
            cutoffs[row] = micros(metric.timestamp) - metric.report_interval_seconds * 1_000_000
    return cutoffs


def _fill_pods(table: NodeTable, snapshot: Snapshot, rows: PodRows) -> None:
    """Per-node sums of the bound, non-terminal pods, and the usage rule of lownodeload.md §3.1."""
    table.pod_rows = rows.index
    matrix = table.pods = _matrix(table, rows.resources, rows.requests, rows.limits, rows.keys, rows.prod)
    n = table.size
    node = np.where(rows.counted, rows.node, n)  # uncounted pods sum into a row that is dropped
    deleting = rows.deleting
    reported = matrix.has_metric & (rows.scheduled <= _report_cutoffs(table, snapshot)[node])
    staying = ~deleting
    # Terminating pods still hold their requests but their load is already leaving.
    extra = np.maximum(matrix.estimate - matrix.usage, 0) * (staying & ~reported)[:, None]
    table.requested[:] = _by_node(node, matrix.requests, n)
    pod_sum = _by_node(node, matrix.usage, n)
    leaving = _by_node(np.where(deleting, node, n), matrix.usage, n)
    unreported = _by_node(node, extra, n)
    prod = _by_node(np.where(matrix.prod & staying, node, n), matrix.usage, n)
    prod_unreported = _by_node(np.where(matrix.prod, node, n), extra, n)
    measured_cols = [table.column[name] for name in table.measured if name in table.column]
    usage = pod_sum - leaving
    # System usage: what the node metric reports beyond its pods, unless the source reports it.
    reported_by = [snapshot.node_usage.get(name) for name in table.names]
    measured = _stacked(table, [_NO_USAGE if m is None else m.usage.as_dict() for m in reported_by])
    beyond_pods = np.maximum(measured - pod_sum - _departed(table, snapshot), 0)
    given = [m is not None and m.system_usage is not None for m in reported_by]
    if any(given):
        stated = _stacked(
            table,
            [
                m.system_usage.as_dict() if m is not None and m.system_usage is not None else _NO_USAGE
                for m in reported_by
            ],
        )
        beyond_pods = np.where(np.array(given)[:, None], stated, beyond_pods)
    beyond_pods[np.array([m is None for m in reported_by], dtype=np.bool_)] = 0
    usage[:, measured_cols] += beyond_pods[:, measured_cols]
    table.usage[:] = usage
    table.prod_usage[:] = prod
    table.estimated[:] = usage + unreported
    table.prod_estimated[:] = prod + prod_unreported
    aggregated = np.maximum(table.aggregated - leaving, 0) + unreported
    table.aggregated[:] = np.where(table.has_aggregated[:, None], aggregated, 0)


def _departed(table: NodeTable, snapshot: Snapshot) -> IntArray:
    """Per node, the usage of pods our jobs evicted that are gone but that the node's last metric may
    still include (evicted within its window). Without this, a node metric taken before the move
    would count the moved pod's load as system load, and the source would look hot again until the
    next report (scheduling-core.md §4: moves count until the metrics have caught up)."""
    out = np.zeros((table.size, len(table.resources)), dtype=np.int64)
    present: tuple[set[str], set[str]] | None = None
    for job in snapshot.jobs:
        row = table.index.get(job.source_node)
        metric = snapshot.node_usage.get(job.source_node)
        if job.evicted is None or not job.pod_usage or row is None or metric is None:
            continue
        span = max(metric.window_seconds, metric.report_interval_seconds)
        if job.evicted <= metric.timestamp - timedelta(seconds=span):
            continue  # the report covers only time after the eviction
        if present is None:
            present = ({p.uid for p in snapshot.pods}, {p.key for p in snapshot.pods})
        uids, keys = present
        if (job.pod.uid in uids) if job.pod.uid else (f"{job.pod.namespace}/{job.pod.name}" in keys):
            continue  # still there: its own metric counts it (and leaving if it is being deleted)
        out[row] += table.vector(job.pod_usage)
    return out


def count_reservation(table: NodeTable, reservation: Reservation, sign: int, views: Iterable[LoadArrays] = ()) -> None:
    """A Reservation on its node (`sign` 1, or -1 to take it back), in the table and `views`: the
    room it holds, and, since the pod it stands in for does not run yet, what the estimator expects
    of its requests, counted as usage (scheduling-core.md §4)."""
    row = table.index.get(reservation.node_name)
    if row is None or not reservation.holds_room:
        return
    table.reserved[row] += sign * table.vector(reservation.resources)
    incoming = sign * table.reservation_estimate(reservation)
    for arrays in (table, *views):
        arrays.usage[row] += incoming
        arrays.estimated[row] += incoming
        arrays.aggregated[row] += incoming


def _fill_in_flight(table: NodeTable, snapshot: Snapshot) -> None:
    """Moves already under way count where they are going, not where they were (scheduling-core.md §4)."""
    active = {f"{j.pod.namespace}/{j.pod.name}" for j in snapshot.jobs if j.active}
    pods = {p.key: p for p in snapshot.pods if p.key in active} if active else {}
    for reservation in snapshot.reservations:
        count_reservation(table, reservation, 1)
    for job in snapshot.jobs:
        pod = pods.get(f"{job.pod.namespace}/{job.pod.name}")
        if not job.active or pod is None or pod.deleting or pod.terminal or pod.node_name not in table.index:
            continue
        load = table.load_of(pod)
        # Its load is leaving; its requests stay until the pod is gone.
        shift_load(table, table.index[pod.node_name], load, -1, requests=False)
        target = table.index.get(job.target_node)
        if target is not None and not covered_by_reservation(job.target_node, pod, snapshot.reservations):
            count_move_target(table, target, load, 1)
    np.maximum(table.usage, 0, out=table.usage)
    np.maximum(table.estimated, 0, out=table.estimated)
    np.maximum(table.aggregated, 0, out=table.aggregated)
