"""LowNodeLoad (lownodeload.md), rule by rule, with exact pod and node names.

Unless a test says otherwise: nodes have 8 cpu / 32Gi / 110 pods; pods request 1 cpu / 1Gi and
use 1Gi memory; thresholds are cpu only, low 40% (3.2 cpu) and high 60% (4.8 cpu); the
scheduling core's load filter is off (usageThresholds {}), so only LowNodeLoad's own rules decide.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import numpy as np
import pytest

from descheduler.plan import NodeReport, Plan
from descheduler.plan_cycle import Cycle
from descheduler.policy import PolicyError
from strategies.victims import minimal_cover
from tests.builders import (
    CREATED,
    NOW,
    Obj,
    classes,
    lnl_policy,
    loaded_node,
    migration_job,
    moves,
    node,
    node_metric,
    node_metrics,
    pdb,
    plan,
    pod,
    pod_metrics,
    reservation,
    skips,
    ts,
)

COOL = loaded_node("cool", [])
# hot: 5 cpu = 62.5% > 60%, excess 0.2 cpu; a (1 cpu) covers it best and fits on an empty node.
HOT = loaded_node("hot", [("a", "1"), ("b", "4")])


def reports(result: Plan | Cycle) -> dict[str, NodeReport]:
    plan = result.plan if isinstance(result, Cycle) else result
    return {n.name: n for n in plan.nodes}


# --- the basic move -----------------------------------------------------------------------


def test_hot_node_moves_the_pod_that_best_covers_its_excess_to_a_low_node() -> None:
    # hot: 5 cpu = 62.5% > 60%; excess 0.2 cpu; d (500m) is the smallest pod that covers it.
    objs = [*loaded_node("hot", [("a", "2"), ("b", "1500m"), ("c", "1"), ("d", "500m")]), *COOL]
    result = plan(objs, lnl_policy())
    assert moves(result) == [("d", "hot", "cool")]
    migration = result.plan.migrations[0]
    assert migration.mode == "ReservationFirst"
    assert migration.reason == "node hot cpu 62% > high 60%"
    assert dict(migration.usage) == {"cpu": 500}
    assert classes(result) == {"cool": "low", "hot": "high"}


def test_same_snapshot_and_policy_give_the_same_plan() -> None:
    objs = [*loaded_node("hot", [("a", "2"), ("b", "1500m"), ("c", "1"), ("d", "500m")]), *COOL]
    assert plan(objs, lnl_policy())[0] == plan(objs, lnl_policy())[0]


# --- classification -----------------------------------------------------------------------


def test_cordoned_cool_node_is_normal_not_low_and_never_a_target() -> None:
    objs = [*HOT, *loaded_node("cordoned", [], unschedulable=True)]
    result = plan(objs, lnl_policy())
    assert classes(result) == {"cordoned": "normal", "hot": "high"}
    assert reports(result)["cordoned"].reason == "cool but not schedulable (cordoned or not Ready)"
    assert moves(result) == []
    assert "LowNodeLoad pool default: 1 hot node(s) but no low node to move load to" in result.plan.warnings


def test_nodes_without_a_fresh_metric_are_excluded_with_their_reason() -> None:
    stale = [node("stale"), node_metrics("stale", "0", "0", at=NOW - timedelta(seconds=600))]
    objs = [*HOT, node("blind"), *stale]
    result = plan(objs, lnl_policy())
    assert classes(result) == {"blind": "excluded", "hot": "high", "stale": "excluded"}
    assert reports(result)["blind"].reason == "no node metric"
    assert reports(result)["stale"].reason == "node metric is stale (600s old > 180s)"
    assert moves(result) == []  # excluded nodes are never targets


def test_usage_is_system_usage_plus_pods_with_metrics_server() -> None:
    # metrics-server: system = node usage − Σ pods = 1 cpu; usage = 1 + 2 = 3 cpu.
    objs = loaded_node("n1", [("a", "2")], system="1")
    assert reports(plan(objs, lnl_policy()))["n1"].usage == {"cpu": 3 / 8}


def test_each_node_report_carries_its_own_ratios_and_thresholds_and_an_excluded_node_no_usage() -> None:
    objs = [*HOT, *COOL, node("blind")]
    r = reports(plan(objs, lnl_policy({"cpu": 40, "memory": 30}, {"cpu": 60, "memory": 90})))
    assert r["hot"].usage == {"cpu": 5 / 8, "memory": 2 / 32}  # 5 of 8 cpu, 2Gi of 32Gi
    assert r["cool"].usage == {"cpu": 0.0, "memory": 0.0}
    assert r["blind"].usage == {}
    assert {name: (n.low, n.high) for name, n in r.items()} == {
        name: ({"cpu": 0.4, "memory": 0.3}, {"cpu": 0.6, "memory": 0.9}) for name in ("hot", "cool", "blind")
    }


def test_system_usage_is_floored_at_zero_when_node_usage_is_below_the_pods_sum() -> None:
    objs = [node("n1"), pod("a", "n1"), pod_metrics("a", "3", "1Gi"), node_metrics("n1", "1", "1Gi")]
    assert reports(plan(objs, lnl_policy()))["n1"].usage == {"cpu": 3 / 8}


def test_node_metric_system_usage_is_used_as_reported() -> None:
    # NodeMetric reports 7 cpu for the node but systemUsage 1: usage = 1 + the pods' 2 = 3.
    objs = [node("n1"), pod("a", "n1"), node_metric("n1", "7", "1Gi", system=("1", "0"), pods=[("a", "2", "1Gi")])]
    assert reports(plan(objs, lnl_policy()))["n1"].usage == {"cpu": 3 / 8}


def test_extended_resources_and_pods_count_use_requests() -> None:
    gpu = {"nvidia.com/gpu": "4"}
    objs = [
        *loaded_node(
            "hot",
            [
                ({"name": "t1", "extra": {"nvidia.com/gpu": "2"}}, "0"),
                ({"name": "t2", "extra": {"nvidia.com/gpu": "1"}}, "0"),
            ],
            max_pods="4",
            extra=gpu,
        ),
        *loaded_node("cool", [], max_pods="4", extra=gpu),
    ]
    policy = lnl_policy({"nvidia.com/gpu": 25, "pods": 50}, {"nvidia.com/gpu": 50, "pods": 75})
    result = plan(objs, policy)
    assert reports(result)["hot"].usage == {"nvidia.com/gpu": 3 / 4, "pods": 2 / 4}
    # excess: 1 gpu over 2; t2 (1 gpu) covers it exactly.
    assert moves(result) == [("t2", "hot", "cool")]
    assert dict(result.plan.migrations[0].usage) == {"nvidia.com/gpu": 1}


def test_only_the_named_resources_are_evaluated() -> None:
    # [fix] memory is not named: a node at 97% memory is still a low target for a cpu move.
    full_memory = loaded_node("cool", [("m", "0", "31Gi")])
    objs = [*loaded_node("hot", [("a", "2"), ("b", "3")]), *full_memory]
    result = plan(objs, lnl_policy())
    assert reports(result)["cool"].usage == {"cpu": 0.0}
    assert moves(result) == [("a", "hot", "cool")]


def test_a_resource_only_in_high_thresholds_never_reaches_the_planner() -> None:
    # [fix] Koordinator ignores it silently; here it is a policy error (tests/policy/test_policy.py has the details).
    with pytest.raises(PolicyError, match="memory is in highThresholds but not in lowThresholds"):
        plan(COOL, lnl_policy({"cpu": 40}, {"cpu": 60, "memory": 80}))


# --- deviation thresholds -----------------------------------------------------------------


def test_deviation_thresholds_are_offsets_from_the_mean_of_fresh_nodes_including_cordoned() -> None:
    # Fresh nodes: a 20%, b 30%, c (cordoned) 80%, d 20%: mean 37.5% → low 27.5%, high 47.5%.
    # stale is not in the mean.
    objs = [
        *loaded_node("a", [("a1", "1600m")]),
        *loaded_node("b", [("b1", "2400m")]),
        *loaded_node("c", [("c1", "1400m"), ("c2", "1400m"), ("c3", "3600m")], unschedulable=True),
        *loaded_node("d", [("d1", "1600m")]),
        node("stale"),
        node_metrics("stale", "8", "1Gi", at=NOW - timedelta(seconds=600)),
    ]
    result = plan(objs, lnl_policy({"cpu": 10}, {"cpu": 10}, useDeviationThresholds=True))
    r = reports(result)
    assert (r["a"].low, r["a"].high) == ({"cpu": pytest.approx(0.275)}, {"cpu": pytest.approx(0.475)})
    assert classes(result) == {"a": "low", "b": "normal", "c": "high", "d": "low", "stale": "excluded"}
    # c's excess is 6.4 − 3.8 = 2.6 cpu; a and d have 2.2 cpu of room each below high: c3 (3.6) fits
    # nowhere, c1 and c2 go one to each low node.
    assert moves(result) == [("c1", "c", "a"), ("c2", "c", "d")]
    assert skips(result)["c3"] == "no low node can take its usage and stay at or below its high threshold"


def test_deviation_thresholds_are_clamped_to_0_and_100() -> None:
    objs = [*loaded_node("a", [("a1", "800m")]), *loaded_node("b", [("b1", "4000m")])]
    result = plan(objs, lnl_policy({"cpu": 90}, {"cpu": 90}, useDeviationThresholds=True))
    assert (reports(result)["a"].low, reports(result)["a"].high) == ({"cpu": 0.0}, {"cpu": 1.0})


# --- node pools ---------------------------------------------------------------------------


def test_node_pools_first_match_wins_fields_inherit_and_the_rest_form_the_default_pool() -> None:
    objs = [
        *loaded_node("gpu-and-big", [], labels={"accelerator": "a100", "size": "big"}),
        *loaded_node("big", [], labels={"size": "big"}),
        *loaded_node("plain", []),
    ]
    pools = [
        {"name": "gpu", "nodeSelector": {"matchLabels": {"accelerator": "a100"}}, "highThresholds": {"cpu": 90}},
        {"name": "large", "nodeSelector": {"matchLabels": {"size": "big"}}, "lowThresholds": {"cpu": 20}},
    ]
    r = reports(plan(objs, lnl_policy(nodePools=pools)))
    assert {name: (n.pool, n.low["cpu"], n.high["cpu"]) for name, n in r.items()} == {
        "gpu-and-big": ("gpu", 0.4, 0.9),
        "big": ("large", 0.2, 0.6),
        "plain": ("default", 0.4, 0.6),
    }


def test_a_pool_never_moves_load_to_another_pool() -> None:
    objs = [*loaded_node("hot", [("a", "5")], labels={"pool": "x"}), *COOL]
    pools = [{"name": "x", "nodeSelector": {"matchLabels": {"pool": "x"}}}]
    result = plan(objs, lnl_policy(nodePools=pools))
    assert moves(result) == []
    assert "LowNodeLoad pool x: 1 hot node(s) but no low node to move load to" in result.plan.warnings


# --- guards -------------------------------------------------------------------------------


@pytest.mark.parametrize(("number_of_nodes", "acts"), [(0, True), (1, False), (2, False)])
def test_number_of_nodes_guard_needs_strictly_more_low_nodes(number_of_nodes: int, acts: bool) -> None:
    objs = [*HOT, *COOL]
    result = plan(objs, lnl_policy(numberOfNodes=number_of_nodes))
    assert moves(result) == ([("a", "hot", "cool")] if acts else [])
    if number_of_nodes == 1:
        assert "LowNodeLoad pool default: 1 low node(s) ≤ numberOfNodes 1; not acting" in result.plan.warnings


def test_every_node_low_means_nothing_to_do() -> None:
    objs = [*loaded_node("a", [("a1", "1")]), *COOL]
    result = plan(objs, lnl_policy())
    assert (moves(result), skips(result), classes(result)) == ([], {}, {"a": "low", "cool": "low"})


# --- debounce -----------------------------------------------------------------------------


def test_debounce_acts_after_exactly_n_consecutive_hot_cycles() -> None:
    # [fix] consecutiveAbnormalities: 3 means the third hot cycle acts, not the fourth.
    objs = [*HOT, *COOL]
    policy = lnl_policy(anomalyCondition={"consecutiveAbnormalities": 3})
    state = None
    for cycle in (1, 2):
        result, state = plan(objs, policy, state=state)
        assert moves(result) == []
        report = reports(result)["hot"]
        assert (report.hot_cycles, report.hot_cycles_needed) == (cycle, 3)
        assert report.reason == f"cpu 62% > high 60% (hot for {cycle} of 3 cycles; not acting yet)"
    result, state = plan(objs, policy, state=state)
    assert moves(result) == [("a", "hot", "cool")]


def test_debounce_counter_resets_when_the_node_cools_down() -> None:
    hot = [*HOT, *COOL]
    cooled = [*loaded_node("hot", [("a", "4")]), *COOL]
    policy = lnl_policy(anomalyCondition={"consecutiveAbnormalities": 2})
    _, state = plan(hot, policy)
    _, state = plan(cooled, policy, state=state)
    result, state = plan(hot, policy, state=state)
    assert moves(result) == []
    assert reports(result)["hot"].hot_cycles == 1


def test_debounce_of_one_acts_at_once() -> None:
    objs = [*HOT, *COOL]
    assert moves(plan(objs, lnl_policy(anomalyCondition={"consecutiveAbnormalities": 1}))) == [("a", "hot", "cool")]


# --- source order and per-target accounting ------------------------------------------------


def test_sources_are_taken_hottest_first_by_normalised_usage() -> None:
    # [fix] hot-a: cpu 95%, memory 20% → 57.5; hot-b: cpu 65%, memory 30% → 47.5. Summing raw units
    # (memory bytes) would put hot-b first. With one move allowed, it comes from hot-a.
    objs = [
        *loaded_node("hot-a", [(f"a{i}", "1900m", "1638Mi") for i in range(1, 5)]),
        *loaded_node("hot-b", [(f"b{i}", "2600m", "4915Mi") for i in range(1, 3)]),
        *COOL,
    ]
    policy = lnl_policy({"cpu": 40, "memory": 40}, {"cpu": 60, "memory": 90}, limits={"maxEvictionsPerCycle": 1})
    result = plan(objs, policy)
    assert moves(result) == [("a1", "hot-a", "cool")]
    assert "b1" not in skips(result)
    assert any("maxEvictionsPerCycle 1 reached; not relieved this cycle: hot-b" in w for w in result.plan.warnings)


def test_per_target_accounting_two_pods_cannot_both_take_the_last_room_on_a_target() -> None:
    # [fix] hot: 6.4 cpu, excess 1.6 → needs a and b (1.2 each). cool: 3 cpu, room 1.8 below high: one pod.
    objs = [
        *loaded_node("hot", [("a", "1200m"), ("b", "1200m"), ("c", "4000m")]),
        *loaded_node("cool", [("x", "3")]),
    ]
    result = plan(objs, lnl_policy(podSortKeys=["name"]))
    assert moves(result) == [("a", "hot", "cool")]
    assert skips(result)["b"] == "no low node can take its usage and stay at or below its high threshold"


def test_per_target_accounting_spreads_over_targets() -> None:
    objs = [
        *loaded_node("hot", [("a", "1200m"), ("b", "1200m"), ("c", "4000m")]),
        *loaded_node("cool", [("x", "3")]),
        *loaded_node("cool2", [("y", "3")]),
    ]
    assert moves(plan(objs, lnl_policy(podSortKeys=["name"]))) == [("a", "hot", "cool"), ("b", "hot", "cool2")]


def test_target_must_stay_at_or_below_its_high_threshold() -> None:
    # cool: 3 cpu; a (2 cpu) would bring it to 5 > 4.8.
    objs = [*loaded_node("hot", [("a", "2"), ("b", "3")]), *loaded_node("cool", [("x", "3")])]
    result = plan(objs, lnl_policy(podSortKeys=["name"]))
    assert moves(result) == []
    assert skips(result) == {
        "a": "no low node can take its usage and stay at or below its high threshold",
        "b": "no low node can take its usage and stay at or below its high threshold",
    }


def test_a_pod_using_none_of_the_over_resources_is_skipped() -> None:
    # [fix] hot is over on memory only (26Gi of 32Gi > 75%); idle uses no memory, so moving it relieves nothing.
    objs = [
        *loaded_node("hot", [("idle", "1", "0"), ("m1", "1", "3Gi"), ("m2", "1", "23Gi")]),
        *COOL,
    ]
    policy = lnl_policy({"cpu": 40, "memory": 40}, {"cpu": 60, "memory": 75}, podSortKeys=["name"])
    result = plan(objs, policy)
    assert skips(result)["idle"] == "uses none of the resources the node is over on (memory)"
    assert moves(result) == [("m1", "hot", "cool")]


# --- prod pass ------------------------------------------------------------------------------

PROD = {"priority": 9500}
PROD_THRESHOLDS = {"prodLowThresholds": {"cpu": 20}, "prodHighThresholds": {"cpu": 30}}


def test_prod_pass_runs_after_the_node_pass_on_the_updated_view() -> None:
    # hot: three prod pods, 5 cpu. Node pass (excess 0.2): p1 → cool. Then prod usage 3.5 > 2.4:
    # prod pass moves p2, but not to cool, whose prod usage (1.5 + 1.5) would pass its prod high 2.4.
    objs = [
        *loaded_node(
            "hot", [({"name": "p1", **PROD}, "1500m"), ({"name": "p2", **PROD}, "1500m"), ({"name": "p3", **PROD}, "2")]
        ),
        *COOL,
        *loaded_node("cool2", []),
    ]
    result = plan(objs, lnl_policy(**PROD_THRESHOLDS))
    assert moves(result) == [("p1", "hot", "cool"), ("p2", "hot", "cool2")]
    assert reports(result)["hot"].prod_class == "high"


def test_prod_pass_targets_prod_low_nodes_and_moves_only_prod_pods() -> None:
    # hot is normal on node usage (3.5 = 44%) but prod-high (3 = 37.5% > 30%). The batch pod is never a candidate.
    objs = [
        *loaded_node(
            "hot",
            [
                ({"name": "p1", **PROD}, "1500m"),
                ({"name": "p2", **PROD}, "1500m"),
                ({"name": "b1", "priority": 5500}, "500m"),
            ],
        ),
        *loaded_node("prod-warm", [({"name": "w", **PROD}, "2")]),  # prod 25%: not prod-low
        *COOL,
    ]
    result = plan(objs, lnl_policy(**PROD_THRESHOLDS))
    assert classes(result)["hot"] == "normal"
    assert reports(result)["hot"].prod_class == "high"
    assert reports(result)["prod-warm"].prod_class == "normal"
    assert moves(result) == [("p1", "hot", "cool")]


def test_node_pass_move_must_keep_the_targets_prod_tier_cool() -> None:
    # cool is node-low (25%) but its prod usage 2 + p1's 1 would pass its prod high 2.4.
    hot = loaded_node("hot", [({"name": "p1", **PROD}, "1"), ({"name": "p2", **PROD}, "4")])
    target = loaded_node("cool", [({"name": "w", **PROD}, "2")])
    assert moves(plan([*hot, *target], lnl_policy())) == [("p1", "hot", "cool")]
    result = plan([*hot, *target], lnl_policy(**PROD_THRESHOLDS))
    assert ("p1", "hot", "cool") not in moves(result)
    assert skips(result)["p1"] == "no low node can take its usage and stay at or below its high threshold"


# --- nodeFit ------------------------------------------------------------------------------

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def test_node_fit_true_checks_scheduling_predicates() -> None:
    objs = [*HOT, *loaded_node("tainted", [], taints=[TAINT])]
    result = plan(objs, lnl_policy())
    assert moves(result) == []
    assert skips(result)["a"] == "no feasible low node: 0/1 nodes fit: 1 taint dedicated=gpu:NoSchedule not tolerated"


def test_node_fit_false_skips_predicates_and_plans_evict_directly() -> None:
    objs = [*HOT, *loaded_node("tainted", [], taints=[TAINT])]
    result = plan(objs, lnl_policy(nodeFit=False))
    assert moves(result) == [("a", "hot", "tainted")]
    assert result.plan.migrations[0].mode == "EvictDirectly"


def test_node_fit_false_keeps_the_load_check() -> None:
    # The scheduling core's load filter (cpu 10%) still applies: a's estimate 1 × 85% = 10.6% > 10%.
    objs = [*HOT, *loaded_node("tainted", [], taints=[TAINT])]
    result = plan(objs, lnl_policy(nodeFit=False, scheduling={"usageThresholds": {"cpu": 10}}))
    assert moves(result) == []
    assert skips(result)["a"] == "no feasible low node: 0/1 nodes fit: 1 cpu usage over threshold"


# --- limits and PDBs ----------------------------------------------------------------------

SEVEN = [(f"p{i}", "1") for i in range(7)]  # 7 cpu: excess 2.2 → three moves


def spread_targets(count: int = 3) -> list[Obj]:
    return [o for i in range(count) for o in loaded_node(f"cool{i}", [])]


@pytest.mark.parametrize(
    ("limits", "moved"),
    [
        ({}, 3),
        ({"maxEvictionsPerCycle": 2}, 2),
        ({"maxEvictionsPerCycle": 0}, 0),
        ({"maxEvictionsPerCycle": "40%"}, 2),  # 40% of the 4 nodes, rounded up
        ({"maxEvictionsPerCycle": "0%"}, 0),
        ({"maxEvictionsPerNode": 1}, 1),
        ({"maxEvictionsPerNamespace": 2}, 2),
    ],
)
def test_limits(limits: dict[str, int | str], moved: int) -> None:
    objs = [*loaded_node("hot", SEVEN), *spread_targets()]
    result = plan(objs, lnl_policy(limits=limits, podSortKeys=["name"]))
    assert [m[0] for m in moves(result)] == ["p0", "p1", "p2"][:moved]
    if moved < 3:
        # A namespace limit refuses pod by pod; cycle and node limits stop the node with one warning.
        limit_skips = [r for r in skips(result).values() if r.startswith("limit ")]
        limit_warnings = [w for w in result.plan.warnings if "limit maxEvictions" in w]
        if "maxEvictionsPerNamespace" in limits:
            assert len(limit_skips) == 7 - moved
        else:
            assert limit_skips == [] and len(limit_warnings) == 1


def test_percent_cycle_limit_counts_only_the_nodes_the_policy_considers() -> None:
    # 5 nodes, 4 of them labelled: 25% of the 4 considered is one move (of all 5 it would be two).
    labelled = {"labels": {"pool": "a"}}
    objs = [
        *loaded_node("hot", SEVEN, **labelled),
        *[o for i in range(3) for o in loaded_node(f"cool{i}", [], **labelled)],
        *loaded_node("other", []),
    ]
    text = lnl_policy(limits={"maxEvictionsPerCycle": "25%"}, podSortKeys=["name"]) + "nodeSelector: {pool: a}\n"
    result = plan(objs, text)
    assert [m[0] for m in moves(result)] == ["p0"]
    assert any("limit maxEvictionsPerCycle 25% of 4 nodes = 1 reached" in w for w in result.plan.warnings)


def test_limit_reasons_name_the_limit() -> None:
    objs = [*loaded_node("hot", SEVEN), *spread_targets()]
    warnings = plan(objs, lnl_policy(limits={"maxEvictionsPerNode": 1}, podSortKeys=["name"])).plan.warnings
    assert "node hot is still hot: limit maxEvictionsPerNode 1 reached on hot" in warnings
    sk = skips(plan(objs, lnl_policy(limits={"maxEvictionsPerNamespace": 1}, podSortKeys=["name"])))
    assert sk["p1"] == "limit maxEvictionsPerNamespace 1 reached in default"


@pytest.mark.parametrize("zero", [0, "0%", "00%"])
def test_zero_cycle_limit_warns_that_nothing_will_move(zero: int | str) -> None:
    result = plan([*loaded_node("hot", SEVEN), *COOL], lnl_policy(limits={"maxEvictionsPerCycle": zero}))
    assert "limits.maxEvictionsPerCycle is 0: nothing will ever move" in result.plan.warnings


def test_namespace_limit_counts_per_namespace() -> None:
    pods = [({"name": f"{ns}-{i}", "namespace": ns}, "1") for ns in ("a", "b") for i in range(4)]
    objs = [*loaded_node("hot", pods[:7]), *spread_targets()]
    result = plan(objs, lnl_policy(limits={"maxEvictionsPerNamespace": 1}, podSortKeys=["name"]))
    assert [m[0] for m in moves(result)] == ["a-0", "b-0"]


def test_pdb_budget_is_counted_across_moves() -> None:
    objs = [*loaded_node("hot", SEVEN), *spread_targets(), pdb("web-pdb", {"app": "web"}, allowed=1)]
    result = plan(objs, lnl_policy(podSortKeys=["name"]))
    assert [m[0] for m in moves(result)] == ["p0"]
    assert skips(result)["p1"] == "PodDisruptionBudget web-pdb allows no more disruptions (1 allowed)"


def test_pod_selected_by_two_pdbs_is_skipped() -> None:
    objs = [
        *HOT,
        *COOL,
        pdb("one", {"app": "web"}, allowed=5),
        pdb("two", {"app": "web"}, allowed=5),
    ]
    result = plan(objs, lnl_policy())
    assert moves(result) == []
    assert (
        skips(result)["a"] == "more than one PodDisruptionBudget selects the pod (one, two); eviction would be refused"
    )


# --- candidate filters --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("namespaces", "moved"),
    [({"include": ["apps"]}, "in-apps"), ({"exclude": ["apps"]}, "in-default")],
)
def test_evictable_namespaces(namespaces: dict[str, list[str]], moved: str) -> None:
    pods = [({"name": "in-apps", "namespace": "apps"}, "3"), ({"name": "in-default"}, "3")]
    objs = [*loaded_node("hot", pods), *COOL]
    result = plan(objs, lnl_policy(evictableNamespaces=namespaces))
    assert [m[0] for m in moves(result)] == [moved]
    other = "in-default" if moved == "in-apps" else "in-apps"
    ns = "default" if moved == "in-apps" else "apps"
    assert skips(result)[other] == f"namespace {ns} is not in evictableNamespaces"


def test_pod_selectors_a_candidate_must_match_one() -> None:
    pods = [({"name": "batch", "labels": {"tier": "batch"}}, "3"), ({"name": "web"}, "3")]
    objs = [*loaded_node("hot", pods), *COOL]
    selectors = [{"name": "batch-only", "selector": {"matchLabels": {"tier": "batch"}}}]
    result = plan(objs, lnl_policy(podSelectors=selectors))
    assert moves(result) == [("batch", "hot", "cool")]
    assert skips(result)["web"] == "matches none of podSelectors"


def test_evictor_refusals_are_reported_as_skips() -> None:
    pods = [
        ({"name": "agent", "owner": "agent", "owner_kind": "DaemonSet"}, "3"),
        ({"name": "bare", "owner": None}, "3"),
        ("web", "3"),
    ]
    result = plan([*loaded_node("hot", pods), *COOL], lnl_policy(podSortKeys=["name"]))
    assert moves(result) == [("web", "hot", "cool")]
    sk = skips(result)
    assert sk["agent"] == "daemonset pod"
    assert sk["bare"] == "bare pod: no controller would recreate it (evictBarePods is off)"


def test_pod_without_usage_metric_is_not_a_candidate() -> None:
    objs = [*HOT, pod("no-metric", "hot"), *COOL]
    result = plan(objs, lnl_policy())
    assert skips(result)["no-metric"] == "no usage metric for the pod"
    assert moves(result) == [("a", "hot", "cool")]


# --- victim order -------------------------------------------------------------------------

LATER = CREATED + timedelta(minutes=5)
# Last by every key below: a filler that makes the node hot.
Z = {"name": "z", "priority": 999, "annotations": {"scheduling.koordinator.sh/eviction-cost": "100"}}


@pytest.mark.parametrize(
    ("key", "x", "y", "moved"),
    [
        (
            "priorityClass",
            {"labels": {"koordinator.sh/priority-class": "koord-mid"}},
            {"labels": {"koordinator.sh/priority-class": "koord-batch"}},
            "y",
        ),
        ("priorityClass", {"priority": 9500}, {}, "x"),  # prod before none
        ("priority", {"priority": 100}, {"priority": 10}, "y"),
        (
            "qos",
            {"limits": {"cpu": "1", "memory": "1Gi"}},
            {"cpu": None, "memory": None},
            "y",
        ),  # Guaranteed vs BestEffort
        ("deletionCost", {"annotations": {"controller.kubernetes.io/pod-deletion-cost": "10"}}, {}, "y"),
        (
            "evictionCost",
            {"annotations": {"scheduling.koordinator.sh/eviction-cost": "10"}},
            {"annotations": {"scheduling.koordinator.sh/eviction-cost": "1"}},
            "y",
        ),
        ("age", {}, {"created": LATER}, "y"),  # newest first
        ("name", {}, {}, "x"),
    ],
)
def test_each_sort_key(key: str, x: dict[str, Any], y: dict[str, Any], moved: str) -> None:
    objs = [*loaded_node("hot", [({"name": "x", **x}, "1"), ({"name": "y", **y}, "1"), (Z, "3")]), *COOL]
    # Only this key (and the name tie-break) orders; z (4th by every key here) fills the node.
    assert moves(plan(objs, lnl_policy(podSortKeys=[key])))[0][0] == moved


def test_usage_fit_prefers_the_pod_that_best_covers_the_excess() -> None:
    # excess 0.2: y (500m) covers it with least waste; x (2) does too but with more; w (100m) does not.
    objs = [*loaded_node("hot", [("w", "100m"), ("x", "2"), ("y", "500m"), ("z", "2400m")]), *COOL]
    assert moves(plan(objs, lnl_policy(podSortKeys=["usageFit"]))) == [("y", "hot", "cool")]


def test_reordered_sort_keys_change_the_victim() -> None:
    pods = [
        ({"name": "old-low", "priority": 10}, "1"),
        ({"name": "new-high", "priority": 100, "created": LATER}, "1"),
        (Z, "3"),
    ]
    objs = [*loaded_node("hot", pods), *COOL]
    assert moves(plan(objs, lnl_policy()))[0][0] == "old-low"  # default: priority before age
    assert moves(plan(objs, lnl_policy(podSortKeys=["age", "priority"])))[0][0] == "new-high"


def test_prefer_no_eviction_pods_go_last() -> None:
    pods = [
        ({"name": "a", "annotations": {"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""}}, "1"),
        ("b", "1"),
        ("z", "3"),
    ]
    objs = [*loaded_node("hot", pods), *COOL]
    assert moves(plan(objs, lnl_policy(podSortKeys=["name"]))) == [("b", "hot", "cool")]


@pytest.mark.parametrize(("recent", "moved"), [("1h", "old"), ("0s", "new")])
def test_recent_pods_go_after_every_other_candidate(recent: str, moved: str) -> None:
    # "new" started 10 min ago and would go first (lower priority); within recentPodsLast it goes after
    # "old", and before a pod that asks not to be evicted.
    pods = [
        ({"name": "new", "priority": 1, "created": NOW - timedelta(minutes=10)}, "1"),
        ({"name": "old", "priority": 100, "created": NOW - timedelta(hours=2)}, "1"),
        ({"name": "shy", "annotations": {"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""}}, "1"),
        (Z, "3"),
    ]
    objs = [*loaded_node("hot", pods), *COOL]
    assert moves(plan(objs, lnl_policy(podSortKeys=["priority"], recentPodsLast=recent)))[0][0] == moved


def test_recent_pods_still_move_when_nothing_else_can() -> None:
    # Only recent pods on the node: the rule orders, it never refuses (z goes last by its priority).
    pods = [({"name": "new", "created": NOW - timedelta(minutes=10)}, "1"), ({**Z, "created": NOW}, "4")]
    objs = [*loaded_node("hot", pods), *COOL]
    assert moves(plan(objs, lnl_policy(recentPodsLast="1h"))) == [("new", "hot", "cool")]


# --- lookAhead: usage rising over the last two cycles --------------------------------------
# lookAheadBasis pods first (each node by its own pods' rises), then cluster (the default).


def _at(objs: list[Obj], when: datetime) -> list[Obj]:
    """The objects with their metrics read at `when`."""
    return [{**o, "timestamp": ts(when)} if "timestamp" in o else o for o in objs]


def _warm(a_cpu: str, b_cpu: str = "2800m", *, also: tuple[tuple[Any, ...], ...] = ()) -> list[Obj]:
    # warm: 8 cpu, high 60% = 4.8; a and b are the same pods from cycle to cycle.
    return loaded_node("warm", [("a", a_cpu), ("b", b_cpu), *also])


def _three_cycles(
    readings: list[list[Obj]], look_ahead: str, *, others: list[Obj] = COOL, basis: str = "pods", every: int = 10
) -> Plan:
    """A cycle every `every` minutes, one per reading (with `others` beside it); the last cycle's result."""
    state = None
    policy = lnl_policy(lookAhead=look_ahead, lookAheadBasis=basis)
    for k, objs in enumerate(readings):
        when = NOW + timedelta(minutes=every * k)
        result, state = plan(_at([*objs, *others], when), policy, now=when, state=state)
    return result


def test_a_node_whose_pods_keep_rising_is_relieved_before_it_crosses_high() -> None:
    # a rises 0.4 cpu a cycle: warm is at 4.6 (57.5%), and at 5.0 (62.5%) in 10 min.
    readings = [_warm("1"), _warm("1400m"), _warm("1800m")]
    ahead = _three_cycles(readings, "10m")
    assert reports(ahead)["warm"].reason == "cpu 58% rising to 62% in 10m > high 60%"
    assert moves(ahead) == [("a", "warm", "cool")]
    assert not [w for w in ahead.warnings if "lookAhead" in w]
    first = plan(_at([*readings[0], *COOL], NOW), lnl_policy(lookAhead="10m", lookAheadBasis="pods"))
    assert "LowNodeLoad: lookAhead 10m needs the usage of the two cycles before" in first.plan.warnings[0]
    assert moves(_three_cycles(readings, "0s")) == []
    assert reports(_three_cycles(readings, "0s"))["warm"].node_class == "normal"


@pytest.mark.parametrize(
    "a_cpu",
    [
        pytest.param(("1", "1", "1800m"), id="a single burst"),
        pytest.param(("1800m", "1", "1800m"), id="up after down"),
    ],
)
def test_a_pod_counts_only_while_it_rose_over_both_cycles(a_cpu: tuple[str, str, str]) -> None:
    assert moves(_three_cycles([_warm(cpu) for cpu in a_cpu], "10m")) == []


def test_a_pod_moved_in_or_started_is_not_a_rise() -> None:
    # c appears at the second and grows at the third reading: not on the node for two steps.
    readings = [_warm("1"), _warm("1", also=(("c", "400m"),)), _warm("1", "2800m", also=(("c", "800m"),))]
    assert reports(_three_cycles(readings, "10m"))["warm"].node_class == "normal"


def test_the_rise_is_the_smaller_of_the_two_steps() -> None:
    # a rose 0.1 then 0.8: counted at 0.1 a cycle, so warm (4.6 → 4.7) stays under high.
    assert moves(_three_cycles([_warm("900m"), _warm("1"), _warm("1800m")], "10m")) == []


def test_a_target_must_stay_cool_as_its_own_pods_rise() -> None:
    # The only low node, filling: t rises 1 cpu a cycle; at 3 cpu it is low, but 3 + 1 (its rise) + 1
    # (a, the pod hot would move) = 5 > 4.8.
    filling = [loaded_node("filling", [("t", cpu), ("u", "800m")]) for cpu in ("200m", "1200m", "2200m")]
    readings = [[*HOT, *objs] for objs in filling]
    assert moves(_three_cycles(readings, "0s", others=[])) == [("a", "hot", "filling")]
    ahead = _three_cycles(readings, "10m", others=[])
    assert moves(ahead) == [] and skips(ahead)["a"].startswith("no low node can take its usage")


def _steady(count: int, cpu: str) -> list[Obj]:
    """`count` nodes of pods whose usage does not change (the rest of the cluster)."""
    return [o for i in range(count) for o in loaded_node(f"steady-{i}", [(f"s{i}", cpu)])]


def test_cluster_basis_meets_a_ramp_the_whole_cluster_shares() -> None:
    # Every pod's usage rises 10% a cycle: warm is at 3.7, 4.07, 4.48 cpu (56%), judged at 4.48 x 1.1 =
    # 4.92 > 4.8, so it is relieved before it crosses high.
    def reading(factor: float) -> list[Obj]:
        warm = loaded_node("warm", [("a", f"{round(1000 * factor)}m"), ("b", f"{round(2700 * factor)}m")])
        peers = [o for i in range(3) for o in loaded_node(f"peer-{i}", [(f"p{i}", f"{round(2000 * factor)}m")])]
        return [*warm, *peers]

    readings = [reading(1.0), reading(1.1), reading(1.21)]
    ahead = _three_cycles(readings, "10m", basis="cluster")
    assert reports(ahead)["warm"].reason == "cpu 56% rising to 62% in 10m > high 60%"
    assert moves(ahead) == [("a", "warm", "cool")]
    assert moves(_three_cycles(readings, "0s", basis="cluster")) == []
    # Cycles every 5 min: the spans are still 10 min (readings 0, 10 and 20 min in), whatever lies between.
    between = [reading(1.0), reading(0.9), reading(1.1), reading(1.3), reading(1.21)]
    assert moves(_three_cycles(between, "10m", basis="cluster", every=5)) == [("a", "warm", "cool")]
    early = _three_cycles(between[:4], "10m", basis="cluster", every=5)  # 15 min in: one span and a half
    assert "LowNodeLoad: lookAhead 10m needs the usage of the last 20m" in early.warnings[0]


def test_cluster_basis_needs_a_rise_over_each_span_not_over_each_cycle() -> None:
    # Cycles every 5 min with lookAhead 10m: the cluster rose over both of the last two 5-min steps but
    # was flat over the first 10-min span, so there is no trend.
    readings = [loaded_node("warm", [("a", f"{cpu}m"), ("b", "3200m")]) for cpu in (1000, 1000, 1000, 1200, 1400)]
    assert moves(_three_cycles(readings, "10m", basis="cluster", every=5)) == []
    assert moves(_three_cycles(readings[2:], "5m", basis="cluster", every=5)) == [("a", "warm", "cool")]


def test_cluster_basis_does_not_extend_one_pods_burst() -> None:
    # a rises 0.4 cpu a cycle on warm, the rest of a 20-node cluster is flat: the cluster rose ~1% a
    # cycle, so warm (4.6) is judged at ~4.65 < 4.8, where the pods basis reads 5.0.
    readings = [[*_warm(cpu), *_steady(20, "3")] for cpu in ("1", "1400m", "1800m")]
    assert moves(_three_cycles(readings, "10m", basis="cluster")) == []
    assert moves(_three_cycles(readings, "10m", basis="pods")) == [("a", "warm", "cool")]


@pytest.mark.parametrize(
    "factors", [pytest.param((1.0, 1.0, 1.1), id="a single rise"), pytest.param((1.1, 1.0, 1.1), id="up after down")]
)
def test_cluster_basis_counts_the_cluster_only_while_it_rose_over_both_cycles(factors: tuple[float, ...]) -> None:
    readings = [[*loaded_node("warm", [("a", f"{round(1000 * f)}m"), ("b", f"{round(3200 * f)}m")])] for f in factors]
    assert moves(_three_cycles(readings, "10m", basis="cluster")) == []


@pytest.mark.parametrize(("ceiling", "expected"), [("high", [("a", "hot", "target")]), ("goal", [])])
def test_target_ceiling_goal_fills_a_target_no_higher_than_sources_are_relieved_to(
    ceiling: str, expected: list[tuple[str, str, str]]
) -> None:
    # reliefDepth 0.5: the goal is 50% (4 of 8 cpu). hot (5 cpu) sheds a (1 cpu); target is low at 3.2
    # cpu and would be at 4.2: under high (4.8), over the goal.
    objs = [*HOT, *loaded_node("target", [("t", "3200m")])]
    result = plan(objs, lnl_policy(reliefDepth=0.5, targetCeiling=ceiling))
    assert moves(result) == expected
    if not expected:
        assert (
            skips(result)["a"]
            == "no low node can take its usage and stay at or below its relief goal (targetCeiling: goal)"
        )


# hot: 6 cpu of 8, pods in priority order a (0.5), b (0.5), c (1.5), f (3.5).
BY_PRIORITY = [
    ({"name": "a", "priority": 1}, "500m"),
    ({"name": "b", "priority": 2}, "500m"),
    ({"name": "c", "priority": 3}, "1500m"),
    ({"name": "f", "priority": 10}, "3500m"),
]


def test_victim_selection_minimal_vs_greedy() -> None:
    # excess 6 − 4.8 = 1.2. Sorted by priority: a (0.5), b (0.5), c (1.5), f (3.5).
    # greedy: a, b (still 0.2 over), c → three moves. minimal: {c} alone covers it.
    objs = [*loaded_node("hot", BY_PRIORITY), *spread_targets(2)]
    greedy = plan(objs, lnl_policy(podSortKeys=["priority"]))
    minimal = plan(objs, lnl_policy(podSortKeys=["priority"], victimSelection="minimal"))
    assert [m[0] for m in moves(greedy)] == ["a", "b", "c"]
    assert [m[0] for m in moves(minimal)] == ["c"]


def test_victim_selection_minimal_falls_back_to_the_next_set_when_a_pod_cannot_move() -> None:
    # Minimal first picks {c}; c fits no low node (its nodeSelector matches none), so it re-solves without c: {f}.
    pods = [
        ({"name": "a", "priority": 1}, "500m"),
        ({"name": "b", "priority": 2}, "500m"),
        ({"name": "c", "priority": 3, "node_selector": {"disk": "ssd"}}, "1500m"),
        ({"name": "d", "priority": 4}, "300m"),
        ({"name": "f", "priority": 10}, "3200m"),
    ]
    objs = [*loaded_node("hot", pods), *spread_targets(2)]
    result = plan(objs, lnl_policy(podSortKeys=["priority"], victimSelection="minimal"))
    assert [m[0] for m in moves(result)] == ["f"]
    assert skips(result)["c"] == "no feasible low node: 0/2 nodes fit: 2 nodeSelector disk=ssd does not match"


# --- relief depth -------------------------------------------------------------------------


def test_relief_depth_relieves_a_hot_node_part_of_the_way_down_to_low() -> None:
    # hot: 5 cpu = 62.5%; low 40%, high 60%. Depth 0: goal 60% (4.8 cpu), shed 0.2: d (500m) alone.
    # Depth 0.5: goal 50% (4 cpu), shed 1: c (1 cpu) covers it best. Depth 1: goal 40% (3.2), shed 1.8: a (2) alone.
    objs = [*loaded_node("hot", [("a", "2"), ("b", "1500m"), ("c", "1"), ("d", "500m")]), *spread_targets(2)]
    by_depth = {depth: plan(objs, lnl_policy(reliefDepth=depth)) for depth in (0, 0.5, 1)}
    assert {depth: sorted(m[0] for m in moves(r)) for depth, r in by_depth.items()} == {
        0: ["d"],
        0.5: ["c"],
        1: ["a"],
    }
    assert by_depth[0].plan.migrations[0].reason == "node hot cpu 62% > high 60%"
    assert by_depth[0.5].plan.migrations[0].reason == "node hot cpu 62% > high 60% (relieve to ≤ 50%)"
    assert reports(by_depth[0.5])["hot"].reason == "cpu 62% > high 60% (relieve to ≤ 50%)"


def test_relief_depth_relieves_only_the_resources_the_node_is_over_high_on() -> None:
    # cpu 62.5% > 60%; memory 20 of 32Gi = 62.5%, between low 40% and high 80%. Depth 1: cpu goes down to
    # 40% (shed 1.8 cpu); memory is not over high, so its goal is not pursued: a (2 cpu, 1Gi) is enough,
    # where e (500m, 12Gi) would have been needed to bring memory to 40% too.
    thresholds = {"low": {"cpu": 40, "memory": 40}, "high": {"cpu": 60, "memory": 80}}
    pods = [("a", "2", "1Gi"), ("b", "2", "1Gi"), ("c", "500m", "6Gi"), ("e", "500m", "12Gi")]
    objs = [*loaded_node("hot", pods), *spread_targets(2)]
    result = plan(objs, lnl_policy(**thresholds, reliefDepth=1, podSortKeys=["usageFit", "name"]))
    assert moves(result) == [("a", "hot", "cool0")]
    assert result.plan.migrations[0].reason == "node hot cpu 62% > high 60% (relieve to ≤ 40%)"


def test_relief_depth_minimal_covers_the_distance_to_the_goal() -> None:
    # hot: 6 cpu. Depth 0: excess 6 − 4.8 = 1.2, and c (1.5) is the first single pod that covers it.
    # Depth 0.5: excess 6 − 4 = 2, which only f (3.5) covers alone.
    objs = [*loaded_node("hot", BY_PRIORITY), *spread_targets(2)]
    picked = {
        depth: [
            m[0]
            for m in moves(
                plan(objs, lnl_policy(podSortKeys=["priority"], victimSelection="minimal", reliefDepth=depth))
            )
        ]
        for depth in (0, 0.5)
    }
    assert picked == {0: ["c"], 0.5: ["f"]}


def test_relief_depth_per_pool_and_no_still_hot_warning_once_under_high() -> None:
    # Pool x relieves to low (depth 1: 5 cpu to 3.2), the default pool just under high (z, 500m, as in the
    # first test). One eviction a node stops hot-x at 4 cpu = 50%: above its goal but under high, so no
    # "still hot" warning.
    objs = [
        *loaded_node("hot-x", [(p, "1") for p in "abcde"], labels={"pool": "x"}),
        *loaded_node("cool-x", [], labels={"pool": "x"}),
        *loaded_node("hot", [("w", "2"), ("x", "1500m"), ("y", "1"), ("z", "500m")]),
        *COOL,
    ]
    pools = [{"name": "x", "nodeSelector": {"matchLabels": {"pool": "x"}}, "reliefDepth": 1}]
    result = plan(objs, lnl_policy(nodePools=pools, limits={"maxEvictionsPerNode": 1}))
    assert sorted(moves(result)) == [("a", "hot-x", "cool-x"), ("z", "hot", "cool")]
    assert not [w for w in result.plan.warnings if "still hot" in w]


# --- warnings -----------------------------------------------------------------------------


def test_configurations_that_can_never_move_anything_are_warned_about() -> None:
    objs = [*HOT, *COOL]
    warnings = plan(objs, lnl_policy({"cpu": 0}, {"cpu": 60})).plan.warnings
    assert (
        "LowNodeLoad pool default: lowThresholds cpu are 0%, so only a node with no usage at all can be low" in warnings
    )
    warnings = plan(objs, lnl_policy({"cpu": 40}, {"cpu": 100})).plan.warnings
    assert "LowNodeLoad pool default: every highThreshold is 100%, so no node can ever be high" in warnings
    warnings = plan(objs, lnl_policy(numberOfNodes=2)).plan.warnings
    assert "LowNodeLoad pool default: numberOfNodes 2 needs more low nodes than the pool's 2 node(s)" in warnings


# --- moves in flight ----------------------------------------------------------------------


def test_pod_already_moved_by_an_active_job_is_skipped_and_its_load_has_left() -> None:
    # a (1 cpu) is being moved to cool: hot drops to 4.8 cpu (not above high), cool gains 1.
    objs = [*loaded_node("hot", [("a", "1"), ("b", "4")]), *COOL, migration_job("job-a", "a", "cool")]
    result = plan(objs, lnl_policy())
    assert classes(result) == {"cool": "low", "hot": "normal"}
    assert reports(result)["cool"].usage == {"cpu": 1 / 8}
    assert moves(result) == []


def test_active_job_pod_is_skipped_with_a_reason_when_its_node_is_still_hot() -> None:
    # hot: 6 cpu; a's 1 cpu is leaving, so 5 remain: excess 0.2, b (2) covers it better than c (3).
    objs = [*loaded_node("hot", [("a", "1"), ("b", "2"), ("c", "3")]), *COOL, *loaded_node("cool2", [])]
    objs.append(migration_job("job-a", "a", "cool"))
    result = plan(objs, lnl_policy())
    assert skips(result)["a"] == "already being moved by a migration job"
    assert moves(result) == [("b", "hot", "cool2")]  # cool carries a's incoming 1 cpu, cool2 is cooler


def test_finished_job_does_not_shift_load() -> None:
    objs = [
        *loaded_node("hot", [("a", "1"), ("b", "4")]),
        *COOL,
        migration_job("job-a", "a", "cool", phase="Succeeded"),
    ]
    assert classes(plan(objs, lnl_policy()))["hot"] == "high"


def test_reservation_in_flight_counts_on_its_node() -> None:
    # A 4-cpu reservation on cool counts its estimate 3.4 cpu: 42.5% > low 40%, so cool is no longer low.
    objs = [*HOT, *COOL, reservation("r1", "cool", {"cpu": "4", "memory": "1Gi"}, owner="other")]
    result = plan(objs, lnl_policy())
    assert classes(result) == {"cool": "normal", "hot": "high"}
    assert reports(result)["cool"].usage == {"cpu": pytest.approx(3.4 / 8)}
    assert moves(result) == []


# --- minimal cover ------------------------------------------------------------------------


def vectors(*values: int) -> list[Any]:
    return [np.array([v], dtype=np.int64) for v in values]


@pytest.mark.parametrize(
    ("usages", "excess", "expected"),
    [
        ((5, 5, 15, 35), 12, [2]),  # one item suffices: the first in order that covers
        ((5, 5, 15, 35), 0, []),  # nothing to cover
        ((5, 5, 3), 14, None),  # all together cannot cover
        ((2, 3, 8, 1), 9, [0, 2]),  # smallest size 2; lexicographically first pair that covers
        ((1, 1, 1, 1), 4, [0, 1, 2, 3]),
    ],
)
def test_minimal_cover(usages: tuple[int, ...], excess: int, expected: list[int] | None) -> None:
    assert minimal_cover(vectors(*usages), np.array([float(excess)])) == expected


def test_minimal_cover_needs_every_resource_covered() -> None:
    usages = [np.array([10, 0]), np.array([0, 10]), np.array([6, 6])]
    assert minimal_cover(usages, np.array([5.0, 5.0])) == [2]
    assert minimal_cover(usages, np.array([8.0, 8.0])) == [0, 1]
