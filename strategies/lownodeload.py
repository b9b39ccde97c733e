"""LowNodeLoad: move load off hot nodes onto cool ones (design: lownodeload.md).

Pure: a snapshot view and arguments in, moves and reasons out. Each pool's nodes are sorted into
high, low, normal and excluded by a `Classification` (the node tier, then the prod tier when the
pool has prod thresholds); the hot nodes of one are relieved onto its low nodes. A pod that stays
is a `Skip` carrying the `Refusal` that kept it: the evictor's (descheduler.eligibility), the
budget's as the budget returns it, or one of this strategy's own codes defined below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar, Literal

import msgspec
import numpy as np
from pydantic import BaseModel

from descheduler.durations import format_duration
from descheduler.eligibility import eviction_refusal, moves_first
from descheduler.model import (
    ANNOTATION_DELETION_COST,
    ANNOTATION_EVICTION_COST,
    ANNOTATION_PREFER_NO_EVICTION,
    Pod,
)
from descheduler.plan import Migration, Mode, NodeClass, NodeReport, PodKey, Skip
from descheduler.policy import LowNodeLoadArgs, PoolArgs
from descheduler.priority import BAND_RANK, annotated_cost, priority_band
from descheduler.refusal import Refusal, define
from descheduler.scheduling import best_node
from descheduler.scheduling.pod_rules import RULE_NOT_JUDGED
from descheduler.scheduling.predicates import unjudged_rule
from descheduler.scheduling.table import METRIC_EXPIRED, METRIC_FRESH, BoolArray, FloatArray, IntArray
from descheduler.strategy import PlanContext, StrategyResult
from strategies.trend import node_rise
from strategies.victims import minimal_cover

_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}
_EPOCH = datetime.fromtimestamp(0).astimezone()

EVICTABLE_NAMESPACES = define(
    "EvictableNamespaces",
    "namespace {subject} is not in evictableNamespaces",
    brief="namespace not in evictableNamespaces",
)
POD_SELECTORS = define("PodSelectors", "matches none of podSelectors")
NO_POD_METRIC = define("NoPodMetric", "no usage metric for the pod")
NOT_OVER_RESOURCES = define(
    "NotOverResources",
    "uses none of the resources the node is over on ({resources})",
    brief="uses none of the resources the node is over on",
)
NO_COOL_LOW_NODE = define("NoCoolLowNode", "no low node can take its usage and stay at or below its high threshold")
NO_LOW_NODE_UNDER_GOAL = define(
    "NoLowNodeUnderGoal", "no low node can take its usage and stay at or below its relief goal (targetCeiling: goal)"
)
NO_FEASIBLE_LOW_NODE = define("NoFeasibleLowNode", "no feasible low node: {summary}", brief="no feasible low node")

Tier = Literal["node", "prod"]


@dataclass(slots=True)
class Classification:
    """One classification of a pool's nodes: by the node tier's thresholds, or by the prod tier's."""

    kind: Tier
    pool: PoolArgs
    rows: IntArray  # table rows of the pool's nodes
    resources: list[str]
    cols: list[int]
    low: FloatArray  # absolute thresholds per (pool row, resource) in units
    high: FloatArray
    low_pct: FloatArray
    high_pct: FloatArray
    goal: FloatArray  # where relief stops, per (pool row, resource), in units: between low and high
    classes: list[NodeClass]
    reasons: list[str]
    hot_cycles: list[int]
    rise: FloatArray  # per (pool row, resource), in units: how much usage will rise within lookAhead


class LowNodeLoad:
    name: ClassVar[str] = "LowNodeLoad"
    args_model: ClassVar[type[BaseModel]] = LowNodeLoadArgs

    def plan(self, ctx: PlanContext, args: LowNodeLoadArgs) -> StrategyResult:
        result = StrategyResult()
        table = ctx.table
        pools = args.effective_pools()
        considered = ctx.considered.copy()
        if not considered.any():
            return result  # the planner warns that there is no node to plan on
        if args.node_selector is not None:
            considered &= table.matching(args.node_selector)
            if not considered.any():
                scope = f"{int(ctx.considered.sum())} nodes"
                if ctx.policy.node_selector is not None:
                    scope += " the policy's nodeSelector selects"
                result.warnings.append(
                    f"LowNodeLoad: nodeSelector {args.node_selector} matches none of the {scope}: nothing to plan"
                )
                return result
        rise = node_rise(ctx, args.look_ahead.total_seconds(), result.state, args.look_ahead_basis)
        if args.look_ahead > timedelta(0) and not rise.known:
            needed = (
                f"the last {format_duration(2 * args.look_ahead)}"
                if args.look_ahead_basis == "cluster"
                else "the two cycles before"
            )
            result.warnings.append(
                f"LowNodeLoad: lookAhead {format_duration(args.look_ahead)} needs the usage of {needed}; "
                "until then nodes are judged by their usage now"
            )
        assigned = np.zeros(table.size, dtype=np.bool_)
        for pool in pools:
            members = considered & ~assigned
            if pool.node_selector is not None:
                members &= table.matching(pool.node_selector)
            assigned |= members
            rows = np.flatnonzero(members)
            if rows.size == 0:
                if pool.node_selector is not None:
                    result.warnings.append(f"LowNodeLoad: node pool {pool.name} selects no node")
                continue
            _warn_never(pool, rows, result)
            by_node = _classify(ctx, pool, rows, "node", result, rise.per_node, args.look_ahead)
            result.nodes.extend(_node_reports(ctx, by_node))
            _relieve(ctx, args, by_node, result)
            if pool.has_prod_thresholds:
                by_prod = _classify(ctx, pool, rows, "prod", result, None, args.look_ahead)
                _attach_prod_class(ctx, result, by_prod)
                _relieve(ctx, args, by_prod, result)
        return result


# --- classification ----------------------------------------------------------------------


def _classify(
    ctx: PlanContext,
    pool: PoolArgs,
    rows: IntArray,
    kind: Tier,
    result: StrategyResult,
    rise_all: FloatArray | None,
    look_ahead: timedelta,
) -> Classification:
    """Each node of the pool high, low, normal or excluded; a node is high when its usage, plus what it
    will rise within lookAhead (node tier only), is over a high threshold."""
    table, view = ctx.table, ctx.view
    if kind == "prod":
        assert pool.prod_low_thresholds is not None and pool.prod_high_thresholds is not None
        low_map, high_map, usage = pool.prod_low_thresholds, pool.prod_high_thresholds, view.prod_usage
    else:
        low_map, high_map, usage = pool.low_thresholds, pool.high_thresholds, view.usage
    resources = sorted(high_map)
    cols = [table.column[r] for r in resources]
    alloc = table.alloc[np.ix_(rows, np.asarray(cols, dtype=np.int64))].astype(np.float64)
    used = usage[np.ix_(rows, np.asarray(cols, dtype=np.int64))].astype(np.float64)
    fresh = table.metric[rows] == METRIC_FRESH
    low_pct = np.tile(np.array([low_map[r] for r in resources], dtype=np.float64), (rows.size, 1))
    high_pct = np.tile(np.array([high_map[r] for r in resources], dtype=np.float64), (rows.size, 1))
    if pool.use_deviation_thresholds:
        # Offsets around the pool's mean usage percent, over every node with a fresh metric.
        pct = np.divide(used * 100, alloc, out=np.zeros_like(used), where=alloc > 0)
        mean = pct[fresh].mean(axis=0) if fresh.any() else np.zeros(len(resources))
        low_pct = np.clip(mean - low_pct, 0, 100)
        high_pct = np.clip(mean + high_pct, 0, 100)
    goal_pct = high_pct - pool.relief_depth * (high_pct - low_pct)
    low_abs, high_abs, goal_abs = low_pct * alloc / 100, high_pct * alloc / 100, goal_pct * alloc / 100
    rise = rise_all[np.ix_(rows, np.asarray(cols, dtype=np.int64))] if rise_all is not None else np.zeros_like(used)
    over = used + rise > high_abs
    under = used <= low_abs
    # Per node below, Python values read from whole-pool arrays (tolist): numpy scalars one at a
    # time cost more than the rest of the loop, which runs for every node of the pool.
    schedulable: list[bool] = table.schedulable[rows].tolist()
    pcts: list[list[float]] = _percents(used, alloc).tolist()
    ahead: list[list[float]] = _percents(used + rise, alloc).tolist()
    rising: list[list[bool]] = (rise > 0).tolist()
    horizon = format_duration(look_ahead)
    overs: list[list[bool]] = over.tolist()
    unders: list[list[bool]] = under.tolist()
    any_over = list(map(any, overs))
    all_under = list(map(all, unders))
    lows: list[list[float]] = low_pct.tolist()
    highs: list[list[float]] = high_pct.tolist()
    goals: list[list[float]] = goal_pct.tolist() if pool.relief_depth > 0 else []
    states: list[int] = table.metric[rows].tolist()
    previous = ctx.state.get("hot", {})
    classes: list[NodeClass] = []
    reasons: list[str] = []
    hot_cycles: list[int] = []
    for i, row in enumerate(rows.tolist()):
        name = table.names[row]
        key = f"{kind}:{name}"
        state = states[i]
        if state != METRIC_FRESH:
            classes.append("excluded")
            if state == METRIC_EXPIRED:
                age = table.metric_age[row] or 0.0
                limit = table.args.node_metric_expiration_seconds
                reasons.append(f"node metric is stale ({age:.0f}s old > {limit}s)")
            else:
                reasons.append("no node metric")
            hot_cycles.append(0)
            continue
        node_pct = pcts[i]
        if any_over[i]:
            classes.append("high")
            hot = int(previous.get(key, 0)) + 1
            hot_cycles.append(hot)
            result.state.setdefault("hot", {})[key] = hot
            words = [
                f"{r} {node_pct[j]:.0f}%"
                + (f" rising to {ahead[i][j]:.0f}% in {horizon}" if rising[i][j] else "")
                + f" > {_label(kind)}high {highs[i][j]:.0f}%"
                + (f" (relieve to ≤ {goals[i][j]:.0f}%)" if goals else "")
                for j, r in enumerate(resources)
                if overs[i][j]
            ]
            reasons.append(f"{kind + ' ' if kind == 'prod' else ''}" + ", ".join(words))
        elif all_under[i] and schedulable[i]:
            classes.append("low")
            hot_cycles.append(0)
            reasons.append(
                ", ".join(
                    f"{r} {node_pct[j]:.0f}% ≤ {_label(kind)}low {lows[i][j]:.0f}%" for j, r in enumerate(resources)
                )
            )
        else:
            classes.append("normal")
            hot_cycles.append(0)
            if all_under[i]:
                reasons.append("cool but not schedulable (cordoned or not Ready)")
            else:
                reasons.append(
                    ", ".join(
                        f"{r} {node_pct[j]:.0f}% between {lows[i][j]:.0f}% and {highs[i][j]:.0f}%"
                        for j, r in enumerate(resources)
                        if not unders[i][j]
                    )
                )
    return Classification(
        kind,
        pool,
        rows,
        resources,
        cols,
        low_abs,
        high_abs,
        low_pct,
        high_pct,
        goal_abs,
        classes,
        reasons,
        hot_cycles,
        rise,
    )


def _label(kind: Tier) -> str:
    return "prod " if kind == "prod" else ""


def _percents(used: FloatArray, alloc: FloatArray) -> FloatArray:
    out: FloatArray = np.divide(used * 100, alloc, out=np.zeros_like(used), where=alloc > 0)
    return out


def _node_reports(ctx: PlanContext, classified: Classification) -> list[NodeReport]:
    table = ctx.table
    needed = classified.pool.anomaly_condition.consecutive_abnormalities
    # Every node's ratios and thresholds at once, element by element the same float64 operations
    # a per-node loop would do: this runs for every node of the pool.
    block = np.ix_(classified.rows, np.asarray(classified.cols, dtype=np.int64))
    alloc = table.alloc[block].astype(np.float64)
    used = ctx.view.usage[block].astype(np.float64)
    ratios = np.divide(used, alloc, out=np.zeros_like(used), where=alloc > 0).tolist()
    lows = (np.asarray(classified.low_pct, dtype=np.float64) / 100).tolist()
    highs = (np.asarray(classified.high_pct, dtype=np.float64) / 100).tolist()
    resources = classified.resources
    names = table.names
    reports = []
    for i, row in enumerate(classified.rows.tolist()):
        reason = classified.reasons[i]
        node_class = classified.classes[i]
        if node_class == "high" and classified.hot_cycles[i] < needed:
            reason += f" (hot for {classified.hot_cycles[i]} of {needed} cycles; not acting yet)"
        reports.append(
            NodeReport(
                name=names[row],
                node_class=node_class,
                reason=reason,
                pool=classified.pool.name,
                strategy=LowNodeLoad.name,
                usage={} if node_class == "excluded" else dict(zip(resources, ratios[i], strict=True)),
                low=dict(zip(resources, lows[i], strict=True)),
                high=dict(zip(resources, highs[i], strict=True)),
                hot_cycles=classified.hot_cycles[i],
                hot_cycles_needed=needed,
            )
        )
    return reports


def _attach_prod_class(ctx: PlanContext, result: StrategyResult, classified: Classification) -> None:
    """Add the prod tier's class (and its reason when hot) to the node tier's reports."""
    by_name = {r.name: i for i, r in enumerate(result.nodes) if r.pool == classified.pool.name}
    for i, row in enumerate(classified.rows):
        index = by_name.get(ctx.table.names[row])
        if index is None:
            continue
        report = result.nodes[index]
        extra = f"; {classified.reasons[i]}" if classified.classes[i] == "high" else ""
        result.nodes[index] = msgspec.structs.replace(
            report, prod_class=classified.classes[i], reason=report.reason + extra
        )


def _warn_never(pool: PoolArgs, rows: IntArray, result: StrategyResult) -> None:
    """Configurations that can never move anything are reported, not silently ignored."""
    prefix = f"LowNodeLoad pool {pool.name}"
    if not pool.use_deviation_thresholds:
        zero = sorted(r for r, v in pool.low_thresholds.items() if v <= 0)
        if zero:
            result.warnings.append(
                f"{prefix}: lowThresholds {', '.join(zero)} are 0%, so only a node with no usage at all can be low"
            )
        full = sorted(r for r, v in pool.high_thresholds.items() if v >= 100)
        if len(full) == len(pool.high_thresholds):
            result.warnings.append(f"{prefix}: every highThreshold is 100%, so no node can ever be high")
    if pool.number_of_nodes >= rows.size:
        result.warnings.append(
            f"{prefix}: numberOfNodes {pool.number_of_nodes} needs more low nodes than the pool's {rows.size} node(s)"
        )


# --- relieving hot nodes -----------------------------------------------------------------


def _relieve(ctx: PlanContext, args: LowNodeLoadArgs, classified: Classification, result: StrategyResult) -> None:
    table = ctx.table
    needed = classified.pool.anomaly_condition.consecutive_abnormalities
    highs = [i for i, c in enumerate(classified.classes) if c == "high"]
    sources = [i for i in highs if classified.hot_cycles[i] >= needed]
    lows = [i for i, c in enumerate(classified.classes) if c == "low"]
    where = f"LowNodeLoad pool {classified.pool.name}{' prod pass' if classified.kind == 'prod' else ''}"
    if not sources:
        return
    if not lows:
        result.warnings.append(f"{where}: {len(sources)} hot node(s) but no low node to move load to")
        return
    if len(lows) <= classified.pool.number_of_nodes:
        result.warnings.append(
            f"{where}: {len(lows)} low node(s) ≤ numberOfNodes {classified.pool.number_of_nodes}; not acting"
        )
        return
    if len(lows) == len(classified.rows):
        return
    low_mask = np.zeros(table.size, dtype=np.bool_)
    low_mask[classified.rows[lows]] = True
    high_abs = np.zeros((table.size, len(classified.cols)), dtype=np.float64)
    high_abs[classified.rows] = classified.high
    prod_high = _prod_high(ctx, classified)
    # Once per pass: how high a target may go; a target must stay cool as its own pods rise too.
    target_high = _node_high(ctx, classified, high_abs)
    below_goal = args.target_ceiling == "goal" and classified.kind == "node" and classified.pool.relief_depth > 0
    no_target = NO_LOW_NODE_UNDER_GOAL if below_goal else NO_COOL_LOW_NODE  # the refusal when no target is left
    if below_goal:
        # Targets are filled no higher than sources are relieved to: the band between the goal and high
        # is what a moved pod's usage may grow by before its new node is hot.
        target_high = target_high.copy()
        target_high[classified.rows] = np.minimum(target_high[classified.rows], classified.goal)
    if classified.rise.any():
        target_high = target_high.copy()
        target_high[classified.rows] -= classified.rise
    weights = np.array([classified.pool.resource_weights.get(r, 0) for r in classified.resources], dtype=np.float64)
    if weights.sum() <= 0:
        weights = np.ones(len(classified.resources))

    def hotness(i: int) -> float:
        row = classified.rows[i]
        alloc = table.alloc[row, classified.cols].astype(np.float64)
        used = _usage(ctx, classified)[row, classified.cols].astype(np.float64)
        return float((weights * _percents(used, alloc)).sum() / weights.sum())

    ordered = sorted(sources, key=lambda i: (-hotness(i), table.names[classified.rows[i]]))
    for position, i in enumerate(ordered):
        if ctx.budget.cycle_exhausted:
            # One line instead of a skip for every pod of every remaining hot node.
            left = ", ".join(table.names[classified.rows[j]] for j in ordered[position:])
            result.warnings.append(f"{where}: {ctx.budget.cap_refusal}; not relieved this cycle: {left}")
            return
        _relieve_node(ctx, args, classified, i, low_mask, high_abs, target_high, prod_high, weights, no_target, result)


def _usage(ctx: PlanContext, classified: Classification) -> IntArray:
    return ctx.view.prod_usage if classified.kind == "prod" else ctx.view.usage


def _prod_high(ctx: PlanContext, classified: Classification) -> FloatArray | None:
    """Absolute prod high thresholds for every node of the pool, for the every-tier-stays-cool check."""
    pool = classified.pool
    if pool.prod_high_thresholds is None:
        return None
    table = ctx.table
    out = np.full((table.size, len(classified.cols)), np.inf)
    pct = np.array([pool.prod_high_thresholds.get(r, 100.0) for r in classified.resources], dtype=np.float64)
    out[classified.rows] = table.alloc[np.ix_(classified.rows, np.asarray(classified.cols, dtype=np.int64))] * pct / 100
    return out


def _relieve_node(
    ctx: PlanContext,
    args: LowNodeLoadArgs,
    classified: Classification,
    i: int,
    low_mask: BoolArray,
    high_abs: FloatArray,
    target_high: FloatArray,
    prod_high: FloatArray | None,
    weights: FloatArray,
    no_target: str,
    result: StrategyResult,
) -> None:
    """Move pods off hot node `i` until every resource it was over high on is at or below its relief
    goal (between low and high: reliefDepth)."""
    table, view = ctx.table, ctx.view
    row = int(classified.rows[i])
    node = table.names[row]
    usage = _usage(ctx, classified)
    rise = classified.rise[i]
    was_over = usage[row, classified.cols] + rise > high_abs[row]
    goal = classified.goal[i]

    def excess() -> FloatArray:
        """What is still to shed, per resource (0 on those the node was not over high on), counting
        what it will rise within lookAhead."""
        left: FloatArray = np.where(was_over, np.maximum(usage[row, classified.cols] + rise - goal, 0), 0.0)
        return left

    candidates = _candidates(ctx, args, classified, node, result)
    candidates.sort(key=_sort_key(ctx, args, classified, excess(), weights))
    mode: Mode = "ReservationFirst" if args.node_fit else "EvictDirectly"
    if ctx.policy.migration.default_mode == "EvictDirectly":
        mode = "EvictDirectly"

    def over() -> BoolArray:
        over_now: BoolArray = excess() > 0
        return over_now

    def reason() -> str:
        return f"node {node} {classified.reasons[i]}"

    def try_move(pod: Pod) -> bool:
        """Plan one move; False (with a skip recorded) when the pod cannot go anywhere."""
        if ctx.budget.node_refusal(node) is not None:
            return False
        over_now = over()
        load = table.load_of(pod)
        pod_usage = load.usage[classified.cols]
        if not (pod_usage[over_now] > 0).any():
            over_names = ", ".join(r for j, r in enumerate(classified.resources) if over_now[j])
            _skip(result, pod, node, Refusal(code=NOT_OVER_RESOURCES, facts={"resources": over_names}))
            return False
        first = moves_first(pod, ctx.snapshot, ctx.policy.evictor)
        refusal = ctx.budget.refusal(pod, node, surge=first)
        if refusal is not None:
            _skip(result, pod, node, refusal)
            return False
        allowed = low_mask & ctx.targets
        allowed[row] = False
        # Every tier of the target must stay cool after the move (lownodeload.md §3.7).
        cool = np.all(view.usage[:, classified.cols] + pod_usage <= target_high, axis=1)
        if classified.kind == "prod":
            cool &= np.all(view.prod_usage[:, classified.cols] + pod_usage <= high_abs, axis=1)
        elif prod_high is not None:
            # A node already over its prod threshold is no target even for a non-prod pod.
            prod_after = view.prod_usage[:, classified.cols] + (pod_usage if load.prod else 0)
            cool &= np.all(prod_after <= prod_high, axis=1)
        allowed_cool = allowed & cool
        if not allowed_cool.any():
            _skip(result, pod, node, Refusal(code=no_target))
            return False
        choice = best_node(pod, view, allowed=allowed_cool, node_fit=args.node_fit)
        if choice.node is None:
            _skip(result, pod, node, Refusal(code=NO_FEASIBLE_LOW_NODE, facts={"summary": choice.summary()}))
            return False
        view.move(pod, choice.node)
        ctx.budget.take(pod, node)
        result.migrations.append(
            Migration(
                pod=PodKey.of(pod),
                uid=pod.uid,
                strategy=LowNodeLoad.name,
                source_node=node,
                target_node=choice.node,
                mode="MakeBeforeBreak" if first else mode,
                reason=reason(),
                usage=table.to_resources(load.usage, [r for r in classified.resources if r != "pods"] or None),
            )
        )
        return True

    if args.victim_selection == "minimal":
        _minimal(ctx, classified, row, candidates, excess, try_move)
    else:
        for pod in candidates:
            if not over().any() or ctx.budget.node_refusal(node) is not None:
                break
            try_move(pod)
    stopped = ctx.budget.node_refusal(node)
    if stopped is not None and (usage[row, classified.cols] > high_abs[row]).any():
        result.warnings.append(f"node {node} is still hot: {stopped}")


def _node_high(ctx: PlanContext, classified: Classification, high_abs: FloatArray) -> FloatArray:
    """Node-pass high thresholds as absolute units for every node (prod pass: the node tier too)."""
    if classified.kind == "node":
        return high_abs
    pool = classified.pool
    pct = np.array([pool.high_thresholds.get(r, 100.0) for r in classified.resources], dtype=np.float64)
    out = np.full_like(high_abs, np.inf)
    out[classified.rows] = (
        ctx.table.alloc[np.ix_(classified.rows, np.asarray(classified.cols, dtype=np.int64))] * pct / 100
    )
    return out


def _minimal(
    ctx: PlanContext,
    classified: Classification,
    row: int,
    candidates: list[Pod],
    excess: Callable[[], FloatArray],
    try_move: Callable[[Pod], bool],
) -> None:
    """Move the smallest set of pods that brings the node to its relief goal; ties by the sort order."""
    table = ctx.table
    remaining = list(candidates)
    while remaining and (excess() > 0).any() and ctx.budget.node_refusal(table.names[row]) is None:
        vectors = [table.load_of(pod).usage[classified.cols] for pod in remaining]
        chosen = minimal_cover(vectors, excess())
        picks = [remaining[k] for k in chosen] if chosen is not None else list(remaining)
        for pod in picks:
            remaining.remove(pod)
            if not (excess() > 0).any():
                return
            if not try_move(pod):
                break  # re-solve without the pod that could not move
        else:
            if chosen is not None:
                return


def _candidates(
    ctx: PlanContext, args: LowNodeLoadArgs, classified: Classification, node: str, result: StrategyResult
) -> list[Pod]:
    """Movable pods on the node (lownodeload.md §3.7); every refusal is recorded with its reason."""
    out = []
    evictor = ctx.policy.evictor
    for pod in ctx.snapshot.pods_by_node.get(node, ()):
        if ctx.view.node_of(pod) != node or pod.terminal:
            continue
        load = ctx.table.load_of(pod)
        if classified.kind == "prod" and not load.prod:
            continue
        moving = ctx.moving_refusal(pod)
        if moving is not None:
            _skip(result, pod, node, moving)
            continue
        refusal = eviction_refusal(pod, ctx.snapshot, evictor)
        if (
            refusal is None
            and args.evictable_namespaces is not None
            and not args.evictable_namespaces.allows(pod.namespace)
        ):
            refusal = Refusal(code=EVICTABLE_NAMESPACES, subject=pod.namespace)
        if (
            refusal is None
            and args.pod_selectors
            and not any(s.selector.matches(pod.labels) for s in args.pod_selectors)
        ):
            refusal = Refusal(code=POD_SELECTORS)
        if refusal is None and not load.has_metric:
            refusal = Refusal(code=NO_POD_METRIC)
        if refusal is None and args.node_fit and (unjudged := unjudged_rule(pod, ctx.view)):
            # A hard rule of kube-scheduler we cannot judge for it: not moved rather than a guess.
            refusal = Refusal(code=RULE_NOT_JUDGED, subject=unjudged)
        if refusal is not None:
            _skip(result, pod, node, refusal)
            continue
        out.append(pod)
    return out


def _skip(result: StrategyResult, pod: Pod, node: str, refusal: Refusal) -> None:
    result.skipped.append(Skip(pod=PodKey.of(pod), refusal=refusal, strategy=LowNodeLoad.name, node=node))


def _sort_key(
    ctx: PlanContext, args: LowNodeLoadArgs, classified: Classification, excess: FloatArray, weights: FloatArray
) -> Callable[[Pod], tuple[Any, ...]]:
    """Victim order (lownodeload.md §5), after two rules of ours: pods asking not to be evicted go last,
    and before them pods started within recentPodsLast (a replacement moved again soon after its
    move is churn: a bursty pod would hop from node to node); names end every tie."""
    table = ctx.table
    now, recent = ctx.snapshot.now, args.recent_pods_last
    over_cols = [j for j in range(len(classified.cols)) if excess[j] > 0]

    def usage_fit(pod: Pod) -> float:
        used = table.load_of(pod).usage[classified.cols]
        total, weight = 0.0, 0.0
        for j in over_cols:
            ratio = float(used[j]) / float(excess[j])
            score = ratio if ratio < 1 else 1 + 1 / ratio
            total += weights[j] * score
            weight += weights[j]
        return -(total / weight) if weight else 0.0

    keys: Mapping[str, Callable[[Pod], Any]] = {
        "priorityClass": lambda pod: BAND_RANK[priority_band(pod)],
        "priority": lambda pod: pod.priority or 0,
        "qos": lambda pod: _QOS_RANK[pod.qos],
        "deletionCost": lambda pod: annotated_cost(pod, ANNOTATION_DELETION_COST),
        "evictionCost": lambda pod: annotated_cost(pod, ANNOTATION_EVICTION_COST),
        "usageFit": usage_fit,
        "age": lambda pod: -(pod.created or _EPOCH).timestamp(),
        "name": lambda pod: (pod.namespace, pod.name),
    }
    order: Sequence[str] = [*args.pod_sort_keys, *([] if "name" in args.pod_sort_keys else ["name"])]
    funcs = [keys[k] for k in order]

    def key(pod: Pod) -> tuple[Any, ...]:
        prefer_not = pod.annotations.get(ANNOTATION_PREFER_NO_EVICTION) is not None
        settling = pod.created is not None and now - pod.created < recent
        return (prefer_not, settling, *(f(pod) for f in funcs))

    return key
