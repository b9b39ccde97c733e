"""The quality benchmark's parts on tiny clusters: the exact minimum of moves, the upstream-like
baseline strategy and spread scheduler, and one short simulated run with its metrics (no timing)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.baseline import SpreadScheduler, baseline_policy_text, register_baseline
from benchmarks.quality import (
    HIGH,
    LOW,
    QualitySimulation,
    baseline_policy,
    coarse,
    minimum_moves,
    ours_policy,
    run_one,
)
from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.clock import SimClock
from descheduler.fakecluster.traces import trace_scenario, traces_dir
from descheduler.plan_cycle import plan_cycle
from tests import builders as b

T0 = 1_768_478_400.0


def _owned(name: str, cpu: str = "2", priority: int | None = None) -> dict[str, Any]:
    return {"name": name, "cpu": cpu, "owner": f"rs-{name}", "priority": priority}


def _cluster(hot_usage: list[str], others: dict[str, list[str]], **node: Any) -> list[dict[str, Any]]:
    objects = b.loaded_node("hot", [(_owned(f"h{i}"), u) for i, u in enumerate(hot_usage)], cpu="10", **node)
    for name, usages in others.items():
        objects += b.loaded_node(name, [(_owned(f"{name}{i}"), u) for i, u in enumerate(usages)], cpu="10")
    return objects


def test_minimum_is_zero_without_a_hot_node() -> None:
    snapshot = b.snapshot(_cluster(["2", "2", "2"], {"cool": []}))
    assert minimum_moves(snapshot, ours_policy()) == (0, True)


def test_minimum_moves_the_fewest_pods_and_keeps_targets_at_or_below_high() -> None:
    # hot: 4 × 2 cpu = 80% > 70%: one pod must go; the only other node at 60% cannot take 2 cpu.
    assert minimum_moves(b.snapshot(_cluster(["2"] * 4, {"warm": ["2", "2", "2"]})), ours_policy()) == (None, True)
    # With an empty node too, one move does it.
    objects = _cluster(["2"] * 4, {"warm": ["2", "2", "2"], "empty": []})
    assert minimum_moves(b.snapshot(objects), ours_policy()) == (1, True)
    # 100%: 3 cpu over; pods of 2 cpu: two must go (the empty node takes both, 40%).
    objects = _cluster(["2"] * 5, {"empty": []})
    assert minimum_moves(b.snapshot(objects), ours_policy()) == (2, True)


def test_minimum_respects_the_targets_requests() -> None:
    # The empty node has no memory room for a 1Gi request: nothing can move.
    objects = _cluster(["2"] * 4, {})
    objects += b.loaded_node("tiny", [], cpu="10", memory="512Mi")
    assert minimum_moves(b.snapshot(objects), ours_policy()) == (None, True)


def test_baseline_evicts_by_requests_with_pooled_headroom_lowest_priority_first() -> None:
    # full: 4 pods requesting 2 cpu = 80% > 70% of requests, whatever their usage (tiny here).
    objects = b.loaded_node(
        "full",
        [
            (_owned("a", priority=10), "10m"),
            (_owned("b", priority=0), "10m"),
            (_owned("c", priority=10), "10m"),
            (_owned("d", priority=10), "10m"),
        ],
        cpu="10",
    )
    objects += b.loaded_node("empty", [], cpu="10")
    plan, _ = plan_cycle(b.snapshot(objects), baseline_policy())
    assert [(m.pod.name, m.source_node, m.target_node, m.mode) for m in plan.migrations] == [
        ("b", "full", None, "EvictDirectly")
    ]
    assert {n.name: n.node_class for n in plan.nodes} == {"full": "high", "empty": "low"}


def test_baseline_stops_when_the_pooled_headroom_is_used_up() -> None:
    # The one low node (45% requested) pools 2.5 cpu below its 70% target; the full node would need
    # six 500m evictions to get to 70%, but eviction stops once the pool is used up: five.
    register_baseline()
    policy = b.policy(baseline_policy_text("60s", LOW, HIGH) + "evictor: {minReplicas: 1}\n")
    objects = b.loaded_node("full", [(_owned(f"p{i}", cpu="500m"), "10m") for i in range(20)], cpu="10")
    objects += b.loaded_node("low", [(_owned("x", cpu="4500m"), "10m")], cpu="10")
    plan, _ = plan_cycle(b.snapshot(objects), policy)
    assert len(plan.migrations) == 5


def test_spread_scheduler_places_by_requests_not_load() -> None:
    store = Store(clock=SimClock(T0), pod_termination_delay=None)
    store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}])
    store.load(
        [b.node("busy", cpu="10"), b.node("idle", cpu="10"), b.pod("big", "busy", cpu="6"), b.pod("new", cpu="1")]
    )
    bindings = SpreadScheduler(store).step(T0)
    assert [(x.pod, x.node) for x in bindings] == [("new", "idle")]


@pytest.mark.skipif(traces_dir() is None, reason="the public traces are not next to the repository")
def test_a_short_simulated_run_reports_moves_ping_pong_and_hot_node_minutes() -> None:
    loaded = coarse(trace_scenario(nodes=8, seed=1))
    off = run_one(loaded, ours_policy(dry_run=True), 3, spread=False, keep=True)
    assert off["moves"] == 0 and off["minimum"]["cyclesSolved"] == 3
    baseline = run_one(loaded, baseline_policy(), 3, spread=True, keep=False)
    for run in (off, baseline):
        assert {"moves", "pingPong", "hotNodeMinutes", "peakHotNodes", "limitViolations"} <= run.keys()
        assert run["hotNodeMinutes"] >= 0 and run["limitViolations"] == 0


def test_hot_samples_and_ping_pong_are_read_from_the_cluster() -> None:
    loaded = coarse(trace_scenario(nodes=4, seed=2)) if traces_dir() is not None else None
    if loaded is None:
        pytest.skip("the public traces are not next to the repository")
    simulation = QualitySimulation(loaded, ours_policy(), 1, spread=False, keep=False)
    simulation.samples = [(0.0, frozenset({"a"})), (60.0, frozenset()), (120.0, frozenset({"a", "b"}))]
    assert simulation.hot_at(90.0) == frozenset() and simulation.hot_at(120.0) == {"a", "b"}
    assert simulation.hot_node_minutes() == 3.0
    simulation.close()
