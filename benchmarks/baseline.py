"""The baseline the quality benchmark compares against: upstream descheduler's LowNodeUtilization with
kube-scheduler's default scoring.

- `LowNodeUtilization`, a strategy registered at run time (`register_baseline()`): utilisation is the
  sum of the pods' *requests* over allocatable (no load metric); a node is underutilised when every
  resource is at or below `thresholds`, overutilised when any is above `targetThresholds`; the
  headroom is pooled (the sum of what every underutilised node has below its target threshold, with
  no per-target accounting); pods are evicted from the most utilised nodes first, lowest priority
  first (BestEffort before Burstable before Guaranteed at equal priority), while the node is above its
  target and the pool has room left; no target node and no reservation (`EvictDirectly`).
  Upstream's `nodeFit` is off by default, so it is not checked here either.
- `SpreadScheduler`, the simulated scheduler's replacement for the baseline runs: kube-scheduler's
  in-tree filters (fit by requests, selectors, taints, anti-affinity; no load filter) and its default
  scores on requests: NodeResourcesFit LeastAllocated plus NodeResourcesBalancedAllocation.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, Field

import strategies
from descheduler.eligibility import eviction_refusal
from descheduler.errors import InputError
from descheduler.fakecluster.apiserver import ApiError
from descheduler.fakecluster.apiserver.binding import bind_pod
from descheduler.fakecluster.scheduler import MAX_NODE_SCORE, Binding, Scheduler, in_tree_filter, in_tree_scores
from descheduler.model import Pod
from descheduler.plan import Migration, NodeClass, NodeReport, PodKey, Skip
from descheduler.policy.fields import PolicyModel
from descheduler.scheduling import ClusterView, build_table
from descheduler.scheduling.table import IntArray
from descheduler.snapshot import load_snapshot_objects
from descheduler.strategy import PlanContext, StrategyResult

NAME = "LowNodeUtilization"
_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


class LowNodeUtilizationArgs(PolicyModel):
    """Upstream's argument names; percents of allocatable, by requests."""

    thresholds: dict[str, float] = Field(min_length=1)
    target_thresholds: dict[str, float] = Field(alias="targetThresholds", min_length=1)
    number_of_nodes: int = Field(0, alias="numberOfNodes", ge=0)


class LowNodeUtilization:
    name: ClassVar[str] = NAME
    args_model: ClassVar[type[BaseModel]] = LowNodeUtilizationArgs

    def plan(self, ctx: PlanContext, args: LowNodeUtilizationArgs) -> StrategyResult:
        result = StrategyResult()
        table = ctx.table
        resources = [r for r in sorted(args.target_thresholds) if r in table.column]
        cols = np.array([table.column[r] for r in resources], dtype=np.int64)
        alloc = table.alloc[:, cols].astype(np.float64)
        requested = ctx.view.requested[:, cols].astype(np.float64)
        low_pct = np.array([args.thresholds.get(r, 100.0) for r in resources])
        high_pct = np.array([args.target_thresholds[r] for r in resources])
        pct = np.divide(requested * 100, alloc, out=np.zeros_like(requested), where=alloc > 0)
        considered = ctx.considered
        low = considered & table.schedulable & np.all(pct <= low_pct, axis=1)
        high = considered & np.any(pct > high_pct, axis=1)
        for row in range(table.size):
            if not considered[row]:
                continue
            node_class: NodeClass = "high" if high[row] else "low" if low[row] else "normal"
            result.nodes.append(
                NodeReport(
                    name=table.names[row],
                    node_class=node_class,
                    reason=", ".join(f"{r} requests {pct[row, j]:.0f}%" for j, r in enumerate(resources)),
                    strategy=NAME,
                    usage={r: float(pct[row, j]) / 100 for j, r in enumerate(resources)},
                    low={r: float(low_pct[j]) / 100 for j, r in enumerate(resources)},
                    high={r: float(high_pct[j]) / 100 for j, r in enumerate(resources)},
                )
            )
        if not high.any() or int(low.sum()) <= args.number_of_nodes:
            return result
        target_abs = alloc * high_pct / 100
        # Pooled headroom: what every underutilised node has below its target, summed.
        available = np.maximum(target_abs[low] - requested[low], 0).sum(axis=0)
        sources = sorted(np.flatnonzero(high), key=lambda row: (-float(pct[row].mean()), table.names[row]))
        for row in sources:
            node = table.names[row]
            for pod in sorted(_movable(ctx, node, result), key=_upstream_order):
                if not np.any(requested[row] > target_abs[row]) or not np.all(available > 0):
                    break
                if ctx.budget.node_refusal(node) is not None or ctx.budget.cycle_exhausted:
                    break
                refusal = ctx.budget.refusal(pod, node)
                if refusal is not None:
                    result.skipped.append(Skip(pod=PodKey.of(pod), reason=refusal, strategy=NAME, node=node))
                    continue
                load = table.load_of(pod).requests[cols]
                requested[row] -= load
                available -= load
                ctx.view.remove(pod)
                ctx.budget.take(pod, node)
                result.migrations.append(
                    Migration(
                        pod=PodKey.of(pod),
                        uid=pod.uid,
                        strategy=NAME,
                        source_node=node,
                        target_node=None,
                        mode="EvictDirectly",
                        reason=f"node {node} requests above targetThresholds",
                        usage=table.to_resources(table.load_of(pod).requests, resources),
                    )
                )
        return result


def _movable(ctx: PlanContext, node: str, result: StrategyResult) -> list[Pod]:
    out = []
    for pod in ctx.snapshot.pods_by_node.get(node, ()):
        if pod.terminal or pod.key in ctx.moving:
            continue
        refusal = eviction_refusal(pod, ctx.snapshot, ctx.policy.evictor)
        if refusal is not None:
            result.skipped.append(Skip(pod=PodKey.of(pod), reason=refusal, strategy=NAME, node=node))
            continue
        out.append(pod)
    return out


def _upstream_order(pod: Pod) -> tuple[int, int, str, str]:
    """SortPodsBasedOnPriorityLowToHigh: lowest priority first, then BestEffort, Burstable, Guaranteed."""
    return (pod.priority or 0, _QOS_RANK.get(pod.qos, 1), pod.namespace, pod.name)


def register_baseline() -> None:
    """Make the baseline strategy known to policies and the planner (the built-ins are loaded first,
    since the registry fills itself with them only while it is empty)."""
    if NAME not in strategies.registry():
        strategies.register(LowNodeUtilization)


def balanced_allocation(pod: Pod, view: ClusterView) -> IntArray:
    """NodeResourcesBalancedAllocation on cpu and memory requests: (1 − std of the fractions) × 100."""
    table = view.table
    cols = [table.column["cpu"], table.column["memory"]]
    alloc = np.maximum(table.alloc[:, cols], 1).astype(np.float64)
    fractions = np.minimum((view.requested[:, cols] + table.load_of(pod).requests[cols]) / alloc, 1.0)
    std = np.abs(fractions[:, 0] - fractions[:, 1]) / 2
    out: IntArray = ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
    return out


class SpreadScheduler(Scheduler):
    """kube-scheduler without our extender: in-tree filters and default request-based scores; it
    knows nothing of load or Reservations."""

    def step(self, now: float) -> list[Binding]:
        raw_pending = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in self._pending(self.store.list("pods"))
        }
        self.unschedulable = {}
        if not raw_pending:
            return []
        instant = datetime.fromtimestamp(now, tz=UTC)
        try:
            snapshot = load_snapshot_objects(self._objects(), instant, source="<simulated cluster>")
        except InputError:
            return []
        view = ClusterView(build_table(snapshot, self.args))
        table = view.table
        pending = sorted(
            (p for p in snapshot.pods if p.key in raw_pending),
            key=lambda p: (-(p.priority or 0), p.created or instant, p.key),
        )
        done: list[Binding] = []
        for pod in pending:
            feasible = in_tree_filter(pod, view)
            if not feasible.any():
                self.unschedulable[pod.key] = f"0/{table.size} nodes are available: in-tree filters"
                continue
            total = in_tree_scores(pod, view) + balanced_allocation(pod, view)
            node = table.names[int(np.argmax(np.where(feasible, total, -1)))]  # ties: the first name
            try:
                bind_pod(self.store, pod.namespace, pod.name, {"target": {"name": node}})
            except ApiError:
                continue
            view.place(pod, node)
            done.append(Binding(pod.namespace, pod.name, node))
        self.bindings += done
        return done


def use_spread_scheduler(cluster: Any) -> SpreadScheduler:
    """Swap a SimulatedCluster's scheduler for the spread one (before it starts)."""
    spread = SpreadScheduler(cluster.store)
    components: list[Any] = cluster.components
    components[components.index(cluster.scheduler)] = spread
    cluster.scheduler = spread
    return spread


def baseline_policy_text(interval: str, low: Mapping[str, float], high: Mapping[str, float]) -> str:
    def flow(values: Mapping[str, float]) -> str:
        return "{" + ", ".join(f"{k}: {v:g}" for k, v in values.items()) + "}"

    return f"""
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
interval: {interval}
strategies:
- name: {NAME}
  args:
    thresholds: {flow(low)}
    targetThresholds: {flow(high)}
"""
