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
  default in-tree filters and scores (`descheduler.fakecluster.stock`, and NodePorts as
  `scheduler.HostPortUse` has it: no load filter, no knowledge of Reservations beyond the room they
  hold).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, Field

import strategies
from descheduler.eligibility import eviction_refusal
from descheduler.fakecluster.apiserver import ApiError
from descheduler.fakecluster.apiserver.binding import bind_pod
from descheduler.fakecluster.scheduler import Binding, HostPortUse, Scheduler
from descheduler.fakecluster.stock import summary
from descheduler.model import Pod
from descheduler.plan import Migration, NodeClass, NodeReport, PodKey, Skip
from descheduler.policy.fields import PolicyModel
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


class SpreadScheduler(Scheduler):
    """kube-scheduler without our extender: in-tree filters and default request-based scores; it
    knows nothing of load or Reservations."""

    def step(self, now: float) -> list[Binding]:
        pending = self._pending()
        self.unschedulable = {}
        if not pending:
            return []
        created = {id(p): p["metadata"].get("creationTimestamp") or "" for p in pending}
        # highest priority first, then oldest (RFC 3339 timestamps sort as text), then by key
        pending.sort(
            key=lambda p: (
                -((p.get("spec") or {}).get("priority") or 0),
                created[id(p)],
                p["metadata"]["namespace"],
                p["metadata"]["name"],
            )
        )
        stock = self.stock()
        self._ports = HostPortUse(self.store.list("pods", shared=True))
        done: list[Binding] = []
        for raw in pending:
            namespace, name = raw["metadata"]["namespace"], raw["metadata"]["name"]
            refused = self._in_tree_refusals(stock, raw)
            feasible = [node for node in stock.names if node not in refused]
            if not feasible:
                self.unschedulable[f"{namespace}/{name}"] = summary(len(stock.names), refused)
                continue
            totals = stock.scores(raw, feasible)
            node = min(feasible, key=lambda n: (-totals[n], n))
            try:
                bind_pod(self.store, namespace, name, {"target": {"name": node}})
            except ApiError:
                continue
            stock.place(raw, node)
            self._ports.place(raw, node)
            done.append(Binding(namespace, name, node))
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
