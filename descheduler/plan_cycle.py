"""One planning cycle: every configured strategy over one snapshot, one view, one budget.

`plan_cycle` returns the `Plan` and each strategy's state for the next cycle, as a `Cycle`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

import strategies
from descheduler.budget import EvictionBudget
from descheduler.plan import Plan
from descheduler.policy import LowNodeLoadArgs, Policy
from descheduler.scheduling import ClusterView, build_table
from descheduler.scheduling.table import METRIC_FRESH, BoolArray
from descheduler.snapshot import Snapshot
from descheduler.strategy import PlanContext, StrategyResult

State = Mapping[str, Mapping[str, Any]]


def _threshold_resources(policy: Policy) -> list[str]:
    names: set[str] = set()
    for config in policy.strategies:
        if isinstance(config.args, LowNodeLoadArgs):
            for pool in config.args.effective_pools():
                names.update(pool.high_thresholds, pool.prod_high_thresholds or {})
    return sorted(names)


class Cycle(NamedTuple):
    """What one planning cycle gives: the plan, and the state each strategy keeps for the next."""

    plan: Plan
    state: dict[str, Any]


def plan_cycle(snapshot: Snapshot, policy: Policy, state: State | None = None) -> Cycle:
    """The Plan for this snapshot, and each strategy's state to pass to the next cycle."""
    state = state or {}
    table = build_table(snapshot, policy.scheduling, _threshold_resources(policy))
    view = ClusterView(table)
    considered = np.ones(table.size, dtype=np.bool_)
    if policy.node_selector is not None:
        considered = table.matching(policy.node_selector)
    moving = frozenset(f"{j.pod.namespace}/{j.pod.name}" for j in snapshot.jobs if j.active)
    budget = EvictionBudget(policy.limits, snapshot, policy.migration, nodes=int(considered.sum()))
    cooling = budget.cooling_nodes
    targets = np.array([name not in cooling for name in table.names], dtype=np.bool_)
    merged = StrategyResult(warnings=[*snapshot.warnings, *_node_warnings(policy, snapshot, considered)])
    new_state: dict[str, Any] = {}
    for config in policy.strategies:
        strategy = strategies.get(config.name)
        ctx = PlanContext(
            snapshot=snapshot,
            policy=policy,
            table=table,
            view=view,
            budget=budget,
            considered=considered,
            moving=moving,
            targets=targets,
            state=state.get(config.name, {}),
        )
        result = strategy.plan(ctx, config.args)
        merged.migrations += result.migrations
        merged.skipped += result.skipped
        merged.nodes += result.nodes
        merged.warnings += result.warnings
        merged.unreclaimable += result.unreclaimable
        merged.reclaim_stalls += result.reclaim_stalls
        new_state[config.name] = result.state
    merged.warnings += _policy_warnings(policy, snapshot, table.metric)
    return Cycle(
        Plan(
            now=snapshot.now,
            nodes=tuple(merged.nodes),
            migrations=tuple(merged.migrations),
            skipped=tuple(merged.skipped),
            warnings=tuple(merged.warnings),
            unreclaimable=tuple(merged.unreclaimable),
            reclaim_stalls=tuple(merged.reclaim_stalls),
        ),
        new_state,
    )


def _node_warnings(policy: Policy, snapshot: Snapshot, considered: BoolArray) -> list[str]:
    """No node to plan on is a warning, not a silent plan of nothing."""
    if not snapshot.nodes:
        held = f" ({len(snapshot.pods)} pod(s), none on a node)" if snapshot.pods else ""
        return [f"the snapshot has no nodes: nothing to plan{held}"]
    if policy.node_selector is not None and not considered.any():
        return [f"nodeSelector {policy.node_selector} matches none of the {len(snapshot.nodes)} nodes: nothing to plan"]
    return []


def _policy_warnings(policy: Policy, snapshot: Snapshot, metric: Any) -> list[str]:
    warnings = []
    if not policy.strategies:
        warnings.append("the policy configures no strategy: nothing will ever move")
    if policy.limits.never_moves:
        warnings.append("limits.maxEvictionsPerCycle is 0: nothing will ever move")
    uses_load = any(isinstance(config.args, LowNodeLoadArgs) for config in policy.strategies)
    if uses_load and snapshot.nodes and not (metric == METRIC_FRESH).any():
        warnings.append(
            f"no node has a fresh metric (at {snapshot.now.isoformat()}): every node is excluded; "
            "check the load source, or pass --now for an old snapshot"
        )
    return warnings
