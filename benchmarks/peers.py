"""The peers as baselines (design: peers.md): upstream descheduler's LowNodeUtilization and
Koordinator's LowNodeLoad, as strategies the benchmarks register (`register_peers()`), never the
product. Each behaves as its peer does, weaknesses included: that is the point of the comparison.

`UpstreamLowNodeUtilization` (peers.md §1), args `thresholds`, `targetThresholds`, `numberOfNodes`,
`metricsUtilization: {source: KubernetesMetrics}` (absent: requests mode), `evictionLimits.node`:
- usage is the sum of the node's pod requests (the planner's requests sums), or in metrics mode the
  node's metric (cpu, memory; other resources by requests) and each victim's PodMetrics; `pods` is
  the pod count. cpu, memory and pods are always tracked: unthresholded, both thresholds are 100%.
- thresholds are floor(percent × allocatable); under ⇔ schedulable and every resource ≤ low
  (inclusive), over ⇔ any resource > high (strict), first match wins. Not-Ready nodes are left out,
  as upstream lists Ready nodes only. In metrics mode a node without a metric stops the whole cycle
  (upstream's usage client fails the plugin); a stale metric is used as it is.
- exits: no under node, #under ≤ numberOfNodes, every node under, no over node.
- one pooled headroom total[r] = Σ over under nodes of (high − usage), not per target; sources by
  the raw sum of their usage numbers (millicores + bytes + pods: memory dominates), descending.
- victims: priority ascending (no priority first), then BestEffort, Burstable, Guaranteed, then the
  prefer-no-eviction annotation last; upstream's sort is not stable, here ties keep the snapshot's
  order, or with `tieSeed` a seeded shuffle's order (the benchmark runs several seeds). Loop while
  the source is above high on some resource and every total[r] > 0; a pod that tolerates no under
  node's taints is skipped; the move is `EvictDirectly` with no target; its usage leaves the source
  and the pool (pods: 1).
- no memory between cycles. The product's per-cycle and per-node caps (`limits`) and PDBs still
  apply (a PDB refusal skips the pod, as upstream's 429 does). `upstream_policy` turns off the
  migration controller's limits upstream does not have (cooldown, per-workload limits, the
  workload rate limiter, maxMigratingPerNode): upstream evicts through the Eviction API alone.
- `nodeFit` (DefaultEvictor's, default false as its defaults.go sets it and as the Helm chart's
  policy leaves it): a victim must fit some Ready node other than its own by upstream's `NodeFit`
  (pkg/descheduler/node/node.go, called through `PodFitsAnyOtherNode` from DefaultEvictor's
  PreEvictionFilter): nodeSelector and required node affinity, NoSchedule/NoExecute taints, requests
  and one free pod slot, the node not unschedulable, and no required anti-affinity against the pods on
  it (here the core's anti-affinity mask, which also looks the other way). It checks no topology
  spread, pod affinity, host ports or volumes.
- the evictor is DefaultEvictor's: the product's `evictor` rules without the product's own refusals of
  pods a scheduling rule pins (`PEER_BLIND`): upstream evicts pods with claims unless ignorePvcPods
  (default false), local volume or not.
- left out: useDeviationThresholds and the metrics collector's smoothing of node usage
  (as its Helm chart ships it, a CronJob, each run is a new process that keeps its first reading).

`KoordinatorLowNodeLoad` (peers.md §2), args `lowThresholds`, `highThresholds`, `numberOfNodes`,
`anomalyCondition.consecutiveAbnormalities` (default 5), `resourceWeights` (default cpu 1,
memory 1), `nodeFit` (default true):
- usage from the node metric: systemUsage + Σ the node's pods' metrics when the metric states
  systemUsage, else the metric's node usage (which holds both); no correction for moves in flight.
  `pods` is the listed count, other resources by requests. A node without a fresh metric is left
  out. The resources are those of `lowThresholds` plus memory (100% when not configured); one named
  only in `highThresholds` is ignored; a resource missing from `highThresholds` is 100%.
- classification as upstream's; a high node is a source only after MORE than
  consecutiveAbnormalities consecutive high cycles (5: the 6th). After it acts, its count starts
  again and it stays a source for the next `ELIGIBLE_AFTER_ACTING` (2) cycles it is high. A node
  that is not high forgets its count.
- exits: no source, no low node, #low ≤ numberOfNodes, every node low.
- candidates: evictable pods with a pod metric (the evictor as upstream's, above: pods with claims
  are evicted); with nodeFit, the pod must fit some low node with that node's usage + the pod's
  metric ≤ its high threshold (low_node_load.go `podFitsAnyNodeWithThreshold`, over the low nodes,
  calling koordinator's own `NodeFit`, pkg/descheduler/node/node.go: nodeSelector and required node
  affinity, NoSchedule/NoExecute taints, requests, unschedulable; no pod count, no anti-affinity, no
  topology spread, pod affinity, host ports or volumes). The first low node (by name) that passes
  keeps the pod's usage for the rest of the cycle, even for a pod never moved: Koordinator's hidden
  headroom reservation.
- one pooled budget B[r] = Σ over low nodes of (high − usage), shared by every source in order.
- sources by the weighted mean of min(used, allocatable)/allocatable, descending. Victims by
  Koordinator priority class (free < batch < mid < prod: the label koordinator.sh/priority-class,
  else the priority bands 3000–3999 free, 5000–5999 batch, 7000–7999 mid, 9000–9999 prod, else
  Koordinator's default by QoS: BestEffort is batch, any other prod), then priority, QoS,
  pod-deletion-cost, eviction-cost, usage fit (the pod whose usage best covers the source's excess
  over high first), newest first.
- loop per source until it is ≤ high on every resource or any B[r] ≤ 0; each move is
  `ReservationFirst` with no target (the product's executor reserves on a node its load-aware
  scheduler picks, standing in for koord-scheduler); the pod's metric usage leaves B and the
  source (pods: 1).
- migration limits (peers.md §2 step 9), as `koordinator_policy` sets them: maxMigratingPerNode 2,
  maxMigratingPerWorkload 1, maxUnavailablePerWorkload 1, objectLimiters.workload 1 per 5 min, job
  TTL 5 min, no cooldown. The product's migration controller enforces all of them and the planner's
  budget looks ahead at the per-workload ones; Koordinator refuses a job at creation where the
  product's arbiter would make it wait, so this strategy also refuses, when planning, a pod whose
  source node (or namespace) has maxMigrating… jobs in flight, and keeps the workload rate limiter
  itself: the times it moved each workload (by controller uid), a sliding window standing in for
  Koordinator's token bucket.
- left out: prodLow/HighThresholds, useDeviationThresholds, nodePools, the namespace and
  pod-selector filters.

Cross-cycle memory (Koordinator's hot counts and workload moves) is the strategy's state, which the
planning loop keeps from one cycle to the next (`PlanContext.state`): a new loop starts clean.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, Self

import numpy as np
from pydantic import BaseModel, Field, model_validator

import strategies
from descheduler.eligibility import PINNED_BY_VOLUME, VOLUMES_UNREADABLE, eviction_refusal
from descheduler.migration import limits as migration_limits
from descheduler.model import (
    ANNOTATION_DELETION_COST,
    ANNOTATION_EVICTION_COST,
    ANNOTATION_PREFER_NO_EVICTION,
    Pod,
)
from descheduler.plan import Migration, Mode, NodeClass, NodeReport, PodKey, Skip
from descheduler.policy import Policy, parse_policy
from descheduler.policy.fields import NonNegativeInt, PolicyModel, RequiredThresholds, Weights
from descheduler.priority import BAND_RANK, annotated_cost, priority_band
from descheduler.refusal import Refusal, define
from descheduler.resources import Resources
from descheduler.scheduling.predicates import anti_affinity_mask, fit_mask, selector_mask, taint_mask
from descheduler.scheduling.table import METRIC_FRESH
from descheduler.strategy import PlanContext, StrategyResult

UPSTREAM = "UpstreamLowNodeUtilization"
KOORDINATOR = "KoordinatorLowNodeLoad"
TRACKED = ("cpu", "memory", "pods")  # upstream tracks these whether thresholded or not
ELIGIBLE_AFTER_ACTING = 2  # Koordinator: high cycles a node stays a source after it acted
MEASURED = ("cpu", "memory")  # what metrics.k8s.io and the NodeMetric report

_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}

# The product's refusals of pods a scheduling rule pins to their node: neither peer has them.
PEER_BLIND = frozenset({PINNED_BY_VOLUME, VOLUMES_UNREADABLE})
FITS_NO_OTHER_NODE = define(
    "FitsNoOtherNode", "fits no other Ready node by upstream's NodeFit (DefaultEvictor nodeFit)"
)
TOLERATES_NO_UNDER_NODE = define("ToleratesNoUnderNode", "tolerates the taints of no underutilized node")
NO_POD_METRICS = define("NoPodMetrics", "no pod metric for the pod")
FITS_NO_LOW_NODE = define(
    "FitsNoLowNode", "fits no low node that stays at or below its high thresholds with the pod's usage (nodeFit)"
)
WORKLOAD_RATE = define(
    "WorkloadObjectLimiter",
    "workload {subject} moved {moves} time(s) in the last {window}s (objectLimiters.workload {limit})",
    brief="workload moved too recently (objectLimiters.workload)",
)

Usage = dict[str, int]


# --- arguments -------------------------------------------------------------------------------


class MetricsUtilization(PolicyModel):
    source: Literal["KubernetesMetrics"]


class EvictionLimits(PolicyModel):
    node: NonNegativeInt | None = None


class UpstreamArgs(PolicyModel):
    """Upstream LowNodeUtilization's arguments: percents of allocatable."""

    thresholds: RequiredThresholds
    target_thresholds: RequiredThresholds
    number_of_nodes: NonNegativeInt = 0
    metrics_utilization: MetricsUtilization | None = None
    eviction_limits: EvictionLimits | None = None
    node_fit: bool = False  # DefaultEvictor's nodeFit (its default)
    # Not upstream's: upstream sorts victims with sort.Slice, which is not stable, so equally ranked
    # pods come in an order that varies from run to run. With a seed, they are shuffled (by the seed,
    # the node and the cycle's instant) before the stable sort; without one, they keep listing order.
    tie_seed: int | None = None

    @model_validator(mode="after")
    def _same_resources(self) -> Self:
        if set(self.thresholds) != set(self.target_thresholds):
            raise ValueError("thresholds and targetThresholds must name the same resources (as upstream requires)")
        return self


class AnomalyCondition(PolicyModel):
    consecutive_abnormalities: NonNegativeInt = 5


class KoordinatorArgs(PolicyModel):
    """Koordinator LowNodeLoad's arguments: percents of allocatable, on measured usage."""

    low_thresholds: RequiredThresholds
    high_thresholds: RequiredThresholds
    number_of_nodes: NonNegativeInt = 0
    anomaly_condition: AnomalyCondition = Field(default_factory=AnomalyCondition)
    resource_weights: Weights = Field(default_factory=lambda: {"cpu": 1, "memory": 1})
    node_fit: bool = True


# --- the nodes of one cycle ------------------------------------------------------------------


@dataclass(slots=True)
class PeerNode:
    """One node as a peer sees it in one cycle: usage changes as the peer plans."""

    name: str
    row: int
    alloc: Usage
    usage: Usage
    low: Usage  # absolute: floor(percent × allocatable)
    high: Usage
    schedulable: bool

    def under(self, resources: Sequence[str]) -> bool:
        return self.schedulable and all(self.usage[r] <= self.low[r] for r in resources)

    def over(self, resources: Sequence[str]) -> bool:
        return any(self.usage[r] > self.high[r] for r in resources)

    def node_class(self, resources: Sequence[str]) -> NodeClass:
        """First match wins: under, then over."""
        if self.under(resources):
            return "low"
        return "high" if self.over(resources) else "normal"


def threshold(percent: float, allocatable: int) -> int:
    """Upstream's and Koordinator's absolute threshold: int64(percent × 0.01 × allocatable)."""
    return int(percent * 0.01 * allocatable)


def _peer_node(
    ctx: PlanContext, row: int, usage: Usage, low_pct: Mapping[str, float], high_pct: Mapping[str, float]
) -> PeerNode:
    table = ctx.table
    alloc = {r: int(table.alloc[row, table.column[r]]) if r in table.column else 0 for r in low_pct}
    return PeerNode(
        name=table.names[row],
        row=row,
        alloc=alloc,
        usage=usage,
        low={r: threshold(low_pct[r], alloc[r]) for r in low_pct},
        high={r: threshold(high_pct[r], alloc[r]) for r in low_pct},
        schedulable=bool(table.schedulable[row]),
    )


def _requested(ctx: PlanContext, row: int, resources: Iterable[str]) -> Usage:
    """The node's pod requests as the planner sums them (`pods`: the pod count)."""
    column = ctx.table.column
    return {r: int(ctx.view.requested[row, column[r]]) if r in column else 0 for r in resources}


def _report(
    node: PeerNode, node_class: NodeClass, resources: Sequence[str], strategy: str, what: str, **kw: Any
) -> NodeReport:
    def ratio(value: int, r: str) -> float:
        return value / node.alloc[r] if node.alloc[r] else 0.0

    words = ", ".join(f"{r} {100 * ratio(node.usage[r], r):.0f}%" for r in resources)
    return NodeReport(
        name=node.name,
        node_class=node_class,
        reason=f"{what} {words}",
        strategy=strategy,
        usage={r: ratio(node.usage[r], r) for r in resources},
        low={r: ratio(node.low[r], r) for r in resources},
        high={r: ratio(node.high[r], r) for r in resources},
        **kw,
    )


def _skip(result: StrategyResult, strategy: str, pod: Pod, node: str, refusal: Refusal) -> None:
    result.skipped.append(Skip(pod=PodKey.of(pod), refusal=refusal, strategy=strategy, node=node))


def peer_eviction_refusal(ctx: PlanContext, pod: Pod) -> Refusal | None:
    """DefaultEvictor's answer: the policy's `evictor` rules, but not the product's refusals of pods a
    rule pins (PEER_BLIND), which neither peer makes."""
    refusal = eviction_refusal(pod, ctx.snapshot, ctx.policy.evictor)
    if refusal is None or refusal.code not in PEER_BLIND:
        return refusal
    return eviction_refusal(pod, replace(ctx.snapshot, pvs={}, volumes_unreadable=""), ctx.policy.evictor)


def _evictable(ctx: PlanContext, node: str, strategy: str, result: StrategyResult) -> list[Pod]:
    """The node's pods the evictor lets go (DefaultEvictor's rules: `peer_eviction_refusal`)."""
    out = []
    for pod in ctx.snapshot.pods_by_node.get(node, ()):
        if pod.terminal or ctx.view.node_of(pod) != node:
            continue
        refusal = ctx.moving_refusal(pod) or peer_eviction_refusal(ctx, pod)
        if refusal is not None:
            _skip(result, strategy, pod, node, refusal)
            continue
        out.append(pod)
    return out


def _pod_metric(ctx: PlanContext, pod: Pod) -> Resources | None:
    found = ctx.snapshot.pod_usage.get(pod.key)
    return None if found is None else found.usage


def _move(ctx: PlanContext, strategy: str, pod: Pod, node: str, mode: Mode, reason: str, usage: Usage) -> Migration:
    ctx.budget.take(pod, node)
    return Migration(
        pod=PodKey.of(pod),
        uid=pod.uid,
        strategy=strategy,
        source_node=node,
        target_node=None,
        mode=mode,
        reason=reason,
        usage=Resources({r: v for r, v in usage.items() if r != "pods"}),
    )


# --- upstream LowNodeUtilization -------------------------------------------------------------


class UpstreamLowNodeUtilization:
    name: ClassVar[str] = UPSTREAM
    args_model: ClassVar[type[BaseModel]] = UpstreamArgs

    def plan(self, ctx: PlanContext, args: UpstreamArgs) -> StrategyResult:
        result = StrategyResult()
        metrics = args.metrics_utilization is not None
        low_pct = {**dict.fromkeys(TRACKED, 100.0), **args.thresholds}
        high_pct = {**dict.fromkeys(TRACKED, 100.0), **args.target_thresholds}
        resources = sorted(low_pct)
        nodes = _upstream_nodes(ctx, resources, low_pct, high_pct, metrics, result)
        if not nodes:
            return result
        classes = {n.name: n.node_class(resources) for n in nodes}
        what = "usage" if metrics else "requests"
        result.nodes += [_report(n, classes[n.name], resources, UPSTREAM, what) for n in nodes]
        under = [n for n in nodes if classes[n.name] == "low"]
        over = [n for n in nodes if classes[n.name] == "high"]
        if not under or len(under) <= args.number_of_nodes or len(under) == len(nodes) or not over:
            return result
        total = {r: sum(n.high[r] - n.usage[r] for n in under) for r in resources}
        tolerated = _tolerated_by_some(ctx, under)
        for node in sorted(over, key=lambda n: (-sum(n.usage[r] for r in resources), n.name)):
            if not _upstream_relieve(ctx, args, node, resources, total, tolerated, metrics, result):
                break
        return result


def _upstream_nodes(
    ctx: PlanContext,
    resources: Sequence[str],
    low_pct: Mapping[str, float],
    high_pct: Mapping[str, float],
    metrics: bool,
    result: StrategyResult,
) -> list[PeerNode]:
    table, snapshot = ctx.table, ctx.snapshot
    nodes = []
    for row in range(table.size):
        name = table.names[row]
        if not ctx.considered[row] or not snapshot.node_by_name[name].ready:
            continue
        usage = _requested(ctx, row, resources)
        if metrics:
            reported = snapshot.node_usage.get(name)
            if reported is None:
                result.warnings.append(f"{UPSTREAM}: no node metrics for {name}: the cycle does nothing")
                return []
            usage.update({r: reported.usage[r] for r in MEASURED if r in usage})
        nodes.append(_peer_node(ctx, row, usage, low_pct, high_pct))
    return nodes


def _tolerated_by_some(ctx: PlanContext, under: Sequence[PeerNode]) -> Callable[[Pod], bool]:
    """Whether a pod tolerates the (NoSchedule, NoExecute) taints of at least one under node."""
    rows = [n.row for n in under]

    def check(pod: Pod) -> bool:
        return bool(taint_mask(pod, ctx.view)[rows].any())

    return check


def _fits_any_other_node(ctx: PlanContext, pod: Pod, row: int) -> bool:
    """Upstream's PodFitsAnyOtherNode over the Ready nodes (node.go `NodeFit`)."""
    view, table = ctx.view, ctx.table
    ready = np.array([ctx.snapshot.node_by_name[name].ready for name in table.names], dtype=np.bool_)
    fits = (
        ready
        & table.schedulable
        & selector_mask(pod, view)
        & taint_mask(pod, view)
        & fit_mask(pod, view)
        & anti_affinity_mask(pod, view)
    )
    fits[row] = False
    return bool(fits.any())


def upstream_order(pod: Pod) -> tuple[bool, int, int, bool]:
    """SortPodsBasedOnPriorityLowToHigh (no priority first), then prefer-no-eviction last."""
    return (
        pod.priority is not None,
        pod.priority or 0,
        _QOS_RANK.get(pod.qos, 1),
        ANNOTATION_PREFER_NO_EVICTION in pod.annotations,
    )


def _upstream_relieve(
    ctx: PlanContext,
    args: UpstreamArgs,
    node: PeerNode,
    resources: Sequence[str],
    total: Usage,
    tolerated: Callable[[Pod], bool],
    metrics: bool,
    result: StrategyResult,
) -> bool:
    """Evict from one source; False when the cycle's eviction cap is reached."""
    per_node = args.eviction_limits.node if args.eviction_limits is not None else None
    evicted = 0
    candidates = _evictable(ctx, node.name, UPSTREAM, result)
    if args.tie_seed is not None:
        random.Random(f"{args.tie_seed}/{node.name}/{ctx.snapshot.now.timestamp()}").shuffle(candidates)
    for pod in sorted(candidates, key=upstream_order):
        if not node.over(resources) or not all(total[r] > 0 for r in resources):
            break
        if per_node is not None and evicted >= per_node:
            break
        if ctx.budget.cycle_exhausted:
            return False
        if ctx.budget.node_refusal(node.name) is not None:
            break
        if not tolerated(pod):
            _skip(result, UPSTREAM, pod, node.name, Refusal(code=TOLERATES_NO_UNDER_NODE))
            continue
        if args.node_fit and not _fits_any_other_node(ctx, pod, node.row):
            _skip(result, UPSTREAM, pod, node.name, Refusal(code=FITS_NO_OTHER_NODE))
            continue
        usage = _upstream_pod_usage(ctx, pod, resources, metrics)
        if usage is None:
            _skip(result, UPSTREAM, pod, node.name, Refusal(code=NO_POD_METRICS))
            continue
        refusal = ctx.budget.refusal(pod, node.name)
        if refusal is not None:
            _skip(result, UPSTREAM, pod, node.name, refusal)
            continue
        for r in resources:
            node.usage[r] -= usage[r]
            total[r] -= usage[r]
        evicted += 1
        reason = f"node {node.name} above targetThresholds ({'usage' if metrics else 'requests'})"
        result.migrations.append(_move(ctx, UPSTREAM, pod, node.name, "EvictDirectly", reason, usage))
    return True


def _upstream_pod_usage(ctx: PlanContext, pod: Pod, resources: Sequence[str], metrics: bool) -> Usage | None:
    """The pod's requests (pods: 1), or in metrics mode its PodMetrics for cpu and memory."""
    column = ctx.table.column
    requests = ctx.table.load_of(pod).requests
    usage = {r: int(requests[column[r]]) if r in column else 0 for r in resources}
    if metrics:
        measured = _pod_metric(ctx, pod)
        if measured is None:
            return None
        usage.update({r: measured[r] for r in MEASURED if r in usage})
    return usage


# --- Koordinator LowNodeLoad -----------------------------------------------------------------


@dataclass(slots=True)
class KoordMemory:
    """What Koordinator keeps between cycles: hot counts, eligibility left, each workload's moves."""

    hot: dict[str, int]
    grace: dict[str, int]
    moves: dict[str, list[float]]  # workload uid -> epoch seconds of its moves

    @classmethod
    def of(cls, state: Mapping[str, Any]) -> KoordMemory:
        return cls(
            hot={k: int(v) for k, v in state.get("hot", {}).items()},
            grace={k: int(v) for k, v in state.get("grace", {}).items()},
            moves={k: [float(t) for t in v] for k, v in state.get("moves", {}).items()},
        )

    def dump(self) -> dict[str, Any]:
        return {"hot": dict(self.hot), "grace": dict(self.grace), "moves": {k: list(v) for k, v in self.moves.items()}}


class KoordinatorLowNodeLoad:
    name: ClassVar[str] = KOORDINATOR
    args_model: ClassVar[type[BaseModel]] = KoordinatorArgs

    def plan(self, ctx: PlanContext, args: KoordinatorArgs) -> StrategyResult:
        result = StrategyResult()
        previous = KoordMemory.of(ctx.state)
        now = ctx.snapshot.now.timestamp()
        window = ctx.policy.migration.object_limiters.workload.duration.total_seconds()
        memory = KoordMemory(
            hot={},
            grace={},
            moves={
                uid: kept for uid, times in previous.moves.items() if (kept := [t for t in times if now - t < window])
            },
        )
        low_pct = {"memory": 100.0, **args.low_thresholds}
        resources = sorted(low_pct)
        high_pct = {r: args.high_thresholds.get(r, 100.0) for r in resources}
        nodes = _koord_nodes(ctx, resources, low_pct, high_pct, result)
        needed = args.anomaly_condition.consecutive_abnormalities
        sources: list[PeerNode] = []
        by_count: set[str] = set()  # sources by their count (not by eligibility left after acting)
        classes = {n.name: n.node_class(resources) for n in nodes}
        for n in nodes:
            if classes[n.name] != "high":
                result.nodes.append(_report(n, classes[n.name], resources, KOORDINATOR, "usage"))
                continue
            count = previous.hot.get(n.name, 0) + 1
            memory.hot[n.name] = count
            left = previous.grace.get(n.name, 0)
            if left > 0:
                memory.grace[n.name] = left - 1
                sources.append(n)
            elif count > needed:
                sources.append(n)
                by_count.add(n.name)
            extra = {"hot_cycles": count, "hot_cycles_needed": needed + 1}
            result.nodes.append(_report(n, "high", resources, KOORDINATOR, "usage", **extra))
        result.state = memory.dump()
        low = [n for n in nodes if classes[n.name] == "low"]
        if not sources or not low or len(low) <= args.number_of_nodes or len(low) == len(nodes):
            return result
        budget = {r: sum(n.high[r] - n.usage[r] for n in low) for r in resources}
        weights = {r: w for r, w in args.resource_weights.items() if r in resources} or dict.fromkeys(resources, 1)
        in_flight = _jobs_in_flight(ctx)
        acted: set[str] = set()
        for node in sorted(sources, key=lambda n: (-_weighted_usage(n, weights), n.name)):
            if ctx.budget.cycle_exhausted:
                break
            moved = _koord_relieve(ctx, args, node, resources, low, budget, weights, in_flight, memory, result)
            if moved:
                acted.add(node.name)
        for name in acted & by_count:
            memory.hot[name] = 0
            memory.grace[name] = ELIGIBLE_AFTER_ACTING
        result.state = memory.dump()
        return result


def _koord_nodes(
    ctx: PlanContext,
    resources: Sequence[str],
    low_pct: Mapping[str, float],
    high_pct: Mapping[str, float],
    result: StrategyResult,
) -> list[PeerNode]:
    """Nodes with a fresh metric, their usage read from it; the others are reported excluded."""
    table, snapshot = ctx.table, ctx.snapshot
    nodes = []
    for row in range(table.size):
        if not ctx.considered[row]:
            continue
        name = table.names[row]
        reported = snapshot.node_usage.get(name)
        if reported is None or table.metric[row] != METRIC_FRESH:
            result.nodes.append(
                NodeReport(name=name, node_class="excluded", reason="no fresh node metric", strategy=KOORDINATOR)
            )
            continue
        measured: Mapping[str, int] = reported.usage
        if reported.system_usage is not None:
            pods = [_pod_metric(ctx, p) for p in snapshot.pods_by_node.get(name, ()) if not p.terminal]
            measured = reported.system_usage + _sum(m for m in pods if m is not None)
        usage = _requested(ctx, row, resources)
        usage.update({r: measured.get(r, 0) for r in MEASURED if r in usage})
        nodes.append(_peer_node(ctx, row, usage, low_pct, high_pct))
    return nodes


def _sum(vectors: Iterable[Resources]) -> Resources:
    out = Resources()
    for vector in vectors:
        out = out + vector
    return out


def _weighted_usage(node: PeerNode, weights: Mapping[str, int]) -> float:
    """Koordinator's source order: the weighted mean of min(used, allocatable) / allocatable."""
    total = sum(weights.values()) or 1
    return (
        sum(w * min(node.usage[r], node.alloc[r]) / node.alloc[r] for r, w in weights.items() if node.alloc[r]) / total
    )


def _jobs_in_flight(ctx: PlanContext) -> dict[tuple[str, str], int]:
    """Active migration jobs per ("node", name) and ("namespace", name)."""
    out: dict[tuple[str, str], int] = {}
    for job in ctx.snapshot.jobs:
        if job.active:
            for key in (("node", job.source_node), ("namespace", job.pod.namespace)):
                out[key] = out.get(key, 0) + 1
    return out


def koord_band_rank(pod: Pod) -> int:
    """Koordinator's priority class rank (free < batch < mid < prod); no class: BestEffort is batch, others prod."""
    band = priority_band(pod)
    if band == "none":
        band = "koord-batch" if pod.qos == "BestEffort" else "koord-prod"
    return BAND_RANK[band]


def usage_fit(usage: Mapping[str, int], excess: Mapping[str, int], weights: Mapping[str, int]) -> float:
    """How well a pod's usage covers the source's excess over high (1 = exactly; higher is better)."""
    total, weight = 0.0, 0
    for r, over in excess.items():
        w = weights.get(r, 0)
        if over <= 0 or w == 0:
            continue
        ratio = usage.get(r, 0) / over
        total += w * (ratio if ratio < 1 else 1 + 1 / ratio)
        weight += w
    return total / weight if weight else 0.0


def _koord_order(
    ctx: PlanContext, excess: Mapping[str, int], weights: Mapping[str, int]
) -> Callable[[Pod], tuple[Any, ...]]:
    def key(pod: Pod) -> tuple[Any, ...]:
        usage = _pod_metric(ctx, pod) or Resources()
        created = pod.created.timestamp() if pod.created is not None else 0.0
        return (
            koord_band_rank(pod),
            pod.priority or 0,
            _QOS_RANK.get(pod.qos, 1),
            annotated_cost(pod, ANNOTATION_DELETION_COST),
            annotated_cost(pod, ANNOTATION_EVICTION_COST),
            -usage_fit(usage, excess, weights),
            -created,
            pod.namespace,
            pod.name,
        )

    return key


def _fits_some_low_node(
    ctx: PlanContext, pod: Pod, low: Sequence[PeerNode], resources: Sequence[str], usage: Mapping[str, int]
) -> bool:
    """Koordinator's nodeFit: the first low node (by name) that fits keeps the pod's usage."""
    view = ctx.view
    feasible = selector_mask(pod, view) & taint_mask(pod, view) & fit_mask(pod, view)
    for node in low:
        if not feasible[node.row]:
            continue
        if all(node.usage[r] + usage.get(r, 0) <= node.high[r] for r in resources):
            for r in resources:
                node.usage[r] += usage.get(r, 0)  # kept, whether or not the pod is ever moved
            return True
    return False


def _koord_relieve(
    ctx: PlanContext,
    args: KoordinatorArgs,
    node: PeerNode,
    resources: Sequence[str],
    low: Sequence[PeerNode],
    budget: Usage,
    weights: Mapping[str, int],
    in_flight: dict[tuple[str, str], int],
    memory: KoordMemory,
    result: StrategyResult,
) -> bool:
    """Plan moves off one source; whether any was planned."""
    migration = ctx.policy.migration
    limiter = migration.object_limiters.workload
    now = ctx.snapshot.now.timestamp()
    candidates = []
    for pod in _evictable(ctx, node.name, KOORDINATOR, result):
        metric = _pod_metric(ctx, pod)
        if metric is None:
            _skip(result, KOORDINATOR, pod, node.name, Refusal(code=NO_POD_METRICS))
        elif args.node_fit and not _fits_some_low_node(ctx, pod, low, resources, metric):
            _skip(result, KOORDINATOR, pod, node.name, Refusal(code=FITS_NO_LOW_NODE))
        else:
            candidates.append(pod)
    excess = {r: node.usage[r] - node.high[r] for r in resources if node.usage[r] > node.high[r]}
    candidates.sort(key=_koord_order(ctx, excess, weights))
    moved = False
    for pod in candidates:
        if not node.over(resources) or any(budget[r] <= 0 for r in resources):
            break
        if ctx.budget.cycle_exhausted or ctx.budget.node_refusal(node.name) is not None:
            break
        refusal = migration_limits.max_migrating_per_node(
            node.name, in_flight.get(("node", node.name), 0), migration
        ) or migration_limits.max_migrating_per_namespace(
            pod.namespace, in_flight.get(("namespace", pod.namespace), 0), migration
        )
        uid = pod.owner.uid if pod.owner is not None else ""
        if refusal is None and uid and len(memory.moves.get(uid, ())) >= limiter.max_migrating:
            refusal = Refusal(
                code=WORKLOAD_RATE,
                subject=uid,
                facts={
                    "moves": len(memory.moves[uid]),
                    "window": int(limiter.duration.total_seconds()),
                    "limit": limiter.max_migrating,
                },
            )
        refusal = refusal or ctx.budget.refusal(pod, node.name)
        if refusal is not None:
            _skip(result, KOORDINATOR, pod, node.name, refusal)
            continue
        metric = _pod_metric(ctx, pod) or Resources()
        usage = {r: 1 if r == "pods" else metric[r] for r in resources}
        for r in resources:
            budget[r] -= usage[r]
            node.usage[r] -= usage[r]
        for key in (("node", node.name), ("namespace", pod.namespace)):
            in_flight[key] = in_flight.get(key, 0) + 1
        if uid:
            memory.moves.setdefault(uid, []).append(now)
        reason = f"node {node.name} above highThresholds (usage)"
        result.migrations.append(_move(ctx, KOORDINATOR, pod, node.name, "ReservationFirst", reason, usage))
        moved = True
    return moved


# --- registration and policies ---------------------------------------------------------------


def register_peers() -> None:
    """Make both peers known to policies and the planner (idempotent; the built-ins load first)."""
    known = strategies.registry()
    for strategy in (UpstreamLowNodeUtilization, KoordinatorLowNodeLoad):
        if strategy.name not in known:
            strategies.register(strategy)


def reset_peer_state() -> None:
    """Nothing to clear: the peers' memory is strategy state, which each planning loop keeps for
    itself (a new run starts clean). Kept so callers can say where a run begins."""


def _flow(values: Mapping[str, float]) -> str:
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in values.items()) + "}"


def _policy(
    interval: str,
    strategy: str,
    args: Sequence[str],
    limits_yaml: str,
    migration: str,
    evict_burst: int,
    load_source: str = "metricsServer",
) -> Policy:
    if "migration:" in limits_yaml:
        raise ValueError("limits_yaml must not set migration: the peer's policy sets it")
    register_peers()
    lines = "".join(f"    {line}\n" for line in args)
    text = f"""
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: {interval}
loadSource: {{type: {load_source}}}
strategies:
- name: {strategy}
  args:
{lines}"""
    return parse_policy(text + limits_yaml.rstrip("\n") + "\n" + migration + f"  evictBurst: {evict_burst}\n")


def upstream_policy(
    mode: Literal["requests", "metrics"],
    interval: str,
    low: Mapping[str, float],
    high: Mapping[str, float],
    limits_yaml: str,
    *,
    extra_args: Mapping[str, str] | None = None,
    evict_burst: int = 1,
) -> Policy:
    """Upstream LowNodeUtilization with `limits_yaml` (evictor, limits), `extra_args` (name ->
    YAML value) and the migration controller's `evict_burst`; evictions go straight to the
    Eviction API: no cooldown and none of the migration controller's per-workload limits."""
    args = [f"thresholds: {_flow(low)}", f"targetThresholds: {_flow(high)}"]
    if mode == "metrics":
        args.append("metricsUtilization: {source: KubernetesMetrics}")
    args += [f"{k}: {v}" for k, v in (extra_args or {}).items()]
    migration = """migration:
  defaultMode: EvictDirectly
  cooldown: 0s
  maxMigratingPerNode: null
  maxMigratingPerWorkload: 100%
  maxUnavailablePerWorkload: 100%
  objectLimiters: {workload: {duration: 1s, maxMigrating: 1000000}}
"""
    return _policy(interval, UPSTREAM, args, limits_yaml, migration, evict_burst)


def koordinator_policy(
    interval: str,
    low: Mapping[str, float],
    high: Mapping[str, float],
    limits_yaml: str,
    *,
    extra_args: Mapping[str, str] | None = None,
    evict_burst: int = 1,
    load_source: str = "metricsServer",
) -> Policy:
    """Koordinator LowNodeLoad with its MigrationController's default limits (peers.md §2 step 9),
    `extra_args` (name -> YAML value), the migration controller's `evict_burst` and the policy's
    `load_source` type (Koordinator reads its NodeMetric: "nodeMetric")."""
    args = [f"lowThresholds: {_flow(low)}", f"highThresholds: {_flow(high)}"]
    args += [f"{k}: {v}" for k, v in (extra_args or {}).items()]
    migration = """migration:
  defaultMode: ReservationFirst
  ttl: 5m
  cooldown: 0s
  maxMigratingPerNode: 2
  maxMigratingPerWorkload: 1
  maxUnavailablePerWorkload: 1
  objectLimiters: {workload: {duration: 5m, maxMigrating: 1}}
"""
    return _policy(interval, KOORDINATOR, args, limits_yaml, migration, evict_burst, load_source)
