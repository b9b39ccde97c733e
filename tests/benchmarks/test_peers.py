"""The peers as baselines (benchmarks/peers.py, design peers.md): each documented behaviour of
upstream LowNodeUtilization and Koordinator LowNodeLoad, weaknesses included, on tiny clusters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import pytest

from benchmarks.peers import (
    KOORDINATOR,
    UPSTREAM,
    koord_band_rank,
    koordinator_policy,
    register_peers,
    upstream_policy,
)
from descheduler.model import ANNOTATION_PREFER_NO_EVICTION, LABEL_PRIORITY_CLASS
from descheduler.plan import Plan
from descheduler.plan_cycle import Cycle, plan_cycle
from descheduler.policy import Policy
from tests import builders as b
from tests.strategies import test_lownodeload_volumes as volumes

Obj = dict[str, Any]
LIMITS = "evictor: {minReplicas: 1}\nlimits: {maxEvictionsPerCycle: 10, maxEvictionsPerNode: 2}\n"
UNCAPPED = "evictor: {minReplicas: 1}\n"


def _pod(name: str, cpu: str = "1", **kw: Any) -> dict[str, Any]:
    """Pod keyword arguments: its own controller, so no per-workload limit joins two pods."""
    return {"name": name, "cpu": cpu, "owner": kw.pop("owner", f"rs-{name}"), **kw}


def _upstream(
    low: Mapping[str, float] | None = None,
    high: Mapping[str, float] | None = None,
    *,
    mode: str = "requests",
    limits: str = UNCAPPED,
    **extra: str,
) -> Policy:
    return upstream_policy(
        "requests" if mode == "requests" else "metrics",
        "60s",
        low or {"cpu": 50},
        high or {"cpu": 60},
        limits,
        extra_args=extra,
    )


def _koord(
    low: Mapping[str, float] | None = None,
    high: Mapping[str, float] | None = None,
    *,
    limits: str = LIMITS,
    **extra: str,
) -> Policy:
    return koordinator_policy("60s", low or {"cpu": 40}, high or {"cpu": 60}, limits, extra_args=extra)


def _now_acting(**extra: str) -> dict[str, str]:
    """Koordinator args acting on a node's first hot cycle (the debounce has its own tests)."""
    return {"anomalyCondition": "{consecutiveAbnormalities: 0}", **extra}


def _plan(
    objects: Sequence[Obj], policy: Policy, state: Mapping[str, Any] | None = None, now: datetime = b.NOW
) -> Cycle:
    return plan_cycle(b.snapshot(objects, now), policy, state)


def _moved(plan: Plan | Cycle) -> list[str]:
    return [name for name, _, _ in b.moves(plan)]


def _codes(plan: Plan | Cycle) -> dict[str, str]:
    p = plan.plan if isinstance(plan, Cycle) else plan
    return {s.pod.name: s.code for s in p.skipped}


@pytest.fixture(autouse=True)
def _peers() -> None:
    register_peers()  # the conftest restores the registry after each test


# --- upstream LowNodeUtilization -------------------------------------------------------------


def test_upstream_pooled_headroom_lets_a_pod_go_that_fits_no_under_node() -> None:
    # Two under nodes with 1 cpu each below high: pooled, 2 cpu of room lets a 3-cpu pod go.
    objects = b.loaded_node("hot", [(_pod(f"h{i}", "3"), "1") for i in range(3)], cpu="10")
    for name in ("u1", "u2"):
        objects += b.loaded_node(name, [(_pod(f"{name}-x", "5"), "1")], cpu="10")
    plan = _plan(objects, _upstream())
    assert b.moves(plan) == [("h0", "hot", None)]
    assert plan.plan.migrations[0].mode == "EvictDirectly"
    assert plan.plan.migrations[0].strategy == UPSTREAM


def test_upstream_stops_when_the_pool_is_used_up_while_the_source_is_still_over() -> None:
    objects = b.loaded_node("hot", [(_pod(f"h{i}", "2"), "1") for i in range(5)], cpu="10")
    objects += b.loaded_node("u", [(_pod("u-x", "4"), "1")], cpu="10")  # 2 cpu below high
    plan = _plan(objects, _upstream())
    assert _moved(plan) == ["h0"]  # the source is left at 80% > 60%: the pool is empty


def test_upstream_sources_go_by_raw_sum_so_memory_bytes_dominate() -> None:
    # "cpuhot" is at 95% cpu, "memhot" at 65% cpu with 20Gi of requests: bytes outweigh millicores.
    # By percents "cpuhot" would go first (95% + 0.4% against 65% + 7.8%).
    objects = b.loaded_node("cpuhot", [(_pod("c", "9500m", memory="1Gi"), "1")], cpu="10", memory="256Gi")
    objects += b.loaded_node("memhot", [(_pod("m", "6500m", memory="20Gi"), "1")], cpu="10", memory="256Gi")
    objects += b.loaded_node("empty", [], cpu="10")
    plan = _plan(objects, _upstream({"cpu": 20}, {"cpu": 60}, limits="limits: {maxEvictionsPerCycle: 1}\n" + UNCAPPED))
    assert b.moves(plan) == [("m", "memhot", None)]


def test_upstream_low_is_inclusive_and_high_strict() -> None:
    objects: list[Obj] = []
    for name, requested in (("atlow", "5"), ("athigh", "6"), ("above", "6001m"), ("empty", "0")):
        objects += b.loaded_node(name, [(_pod(f"{name}-p", requested), "1")], cpu="10")
    assert b.classes(_plan(objects, _upstream())) == {
        "above": "high",
        "athigh": "normal",
        "atlow": "low",
        "empty": "low",
    }


@pytest.mark.parametrize(
    ("number_of_nodes", "with_under", "moves"),
    [(0, True, 1), (1, True, 0), (0, False, 0)],
    ids=["acts", "under-not-more-than-numberOfNodes", "no-under-node"],
)
def test_upstream_exits_without_enough_under_nodes(number_of_nodes: int, with_under: bool, moves: int) -> None:
    objects = b.loaded_node("hot", [(_pod("h0", "7"), "1")], cpu="10")
    objects += b.loaded_node("u", [(_pod("u-x", "1" if with_under else "5500m"), "1")], cpu="10")
    plan = _plan(objects, _upstream(numberOfNodes=str(number_of_nodes)))
    assert len(_moved(plan)) == moves


def test_upstream_evicts_no_priority_first_then_by_qos_then_prefer_no_eviction_last() -> None:
    guaranteed = {"limits": {"cpu": "100m", "memory": "100Mi"}, "memory": "100Mi"}
    pods = [
        (_pod("high", "100m", priority=100), "1"),
        (_pod("neg", "100m", priority=-5), "1"),
        (_pod("guar", "100m", **guaranteed), "1"),
        (_pod("prefer", "100m", annotations={ANNOTATION_PREFER_NO_EVICTION: "true"}), "1"),
        (_pod("burst", "100m"), "1"),
        (_pod("be", None, memory=None), "1"),
        ({"name": "anchor", "cpu": "9", "owner": None}, "1"),  # a bare pod: keeps the node over
    ]
    objects = b.loaded_node("hot", pods, cpu="10") + b.loaded_node("empty", [], cpu="100")
    plan = _plan(objects, _upstream())
    assert _moved(plan) == ["be", "burst", "prefer", "guar", "neg", "high"]


def test_upstream_tie_seed_shuffles_equally_ranked_victims_only() -> None:
    """Upstream's sort.Slice is unstable: equally ranked pods come in varying order. Without a seed
    they keep listing order; each seed gives its own order, the same every time; ranks still rule."""
    pods = [(_pod(f"p{i}", "100m", priority=0), "1") for i in range(6)]
    pods += [(_pod("zz-low", "100m", priority=-5), "1"), ({"name": "anchor", "cpu": "9", "owner": None}, "1")]
    objects = b.loaded_node("hot", pods, cpu="10") + b.loaded_node("empty", [], cpu="100")
    capped = "evictor: {minReplicas: 1}\nlimits: {maxEvictionsPerNode: 3}\n"
    assert _moved(_plan(objects, _upstream(limits=capped))) == ["zz-low", "p0", "p1"]
    orders = {seed: _moved(_plan(objects, _upstream(limits=capped, tieSeed=str(seed)))) for seed in range(1, 6)}
    assert all(order[0] == "zz-low" for order in orders.values())  # a lower priority still goes first
    assert len({tuple(order) for order in orders.values()}) > 1
    assert orders[2] == _moved(_plan(objects, _upstream(limits=capped, tieSeed="2")))


def test_upstream_skips_a_pod_that_tolerates_no_under_node() -> None:
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    toleration = [{"key": "dedicated", "operator": "Equal", "value": "x", "effect": "NoSchedule"}]
    objects = b.loaded_node(
        "hot",
        [(_pod("plain", "2", priority=0), "1"), (_pod("tolerant", "2", priority=1, tolerations=toleration), "1")],
        cpu="4",
    )
    objects += b.loaded_node("u", [], cpu="10", taints=[taint])
    plan = _plan(objects, _upstream())
    assert _moved(plan) == ["tolerant"]
    assert _codes(plan)["plain"] == "ToleratesNoUnderNode"


def test_upstream_metrics_mode_reads_node_metrics_and_evicts_by_pod_metrics() -> None:
    # Requests are tiny (100m each); the node's metric says 9 cpu and the pod's says 3.
    objects = b.loaded_node("hot", [(_pod("measured", "100m", priority=10), "3")], cpu="10", system="6")
    objects.append(b.pod("unmeasured", "hot", cpu="100m", owner="rs-unmeasured"))  # no PodMetrics, sorts first
    objects += b.loaded_node("cool", [], cpu="10")
    by_metrics = _plan(objects, _upstream(mode="metrics"))
    assert _moved(by_metrics) == ["measured"]
    assert by_metrics.plan.migrations[0].usage["cpu"] == 3000
    assert _codes(by_metrics)["unmeasured"] == "NoPodMetrics"
    assert _moved(_plan(objects, _upstream())) == []  # by requests the node is at 2%


def test_upstream_metrics_mode_does_nothing_when_a_node_has_no_metrics() -> None:
    objects = b.loaded_node("hot", [(_pod("measured", "100m"), "9")], cpu="10")
    objects += [b.node("cool", cpu="10")]
    plan = _plan(objects, _upstream(mode="metrics"))
    assert _moved(plan) == []
    assert any("no node metrics for cool" in w for w in plan.plan.warnings)


def test_upstream_eviction_limits_node_caps_each_source() -> None:
    objects = b.loaded_node("hot", [(_pod(f"h{i}", "2"), "1") for i in range(5)], cpu="10")
    objects += b.loaded_node("empty", [], cpu="100")
    assert len(_moved(_plan(objects, _upstream()))) == 2  # 10 cpu → 6 cpu
    assert len(_moved(_plan(objects, _upstream(evictionLimits="{node: 1}")))) == 1


# --- Koordinator LowNodeLoad -----------------------------------------------------------------


def _hot_and_cool(hot_pods: int = 10) -> list[Obj]:
    objects = b.loaded_node("hot", [(_pod(f"h{i}"), "1") for i in range(hot_pods)], cpu="10")
    return objects + b.loaded_node("cool", [], cpu="100")


def test_koordinator_acts_only_after_more_than_consecutive_abnormalities_hot_cycles() -> None:
    objects, policy = _hot_and_cool(), _koord()
    state: Mapping[str, Any] = {}
    acting = []
    for cycle in range(1, 13):
        plan, state = _plan(objects, policy, state)
        if plan.migrations:
            acting.append(cycle)
            assert {m.mode for m in plan.migrations} == {"ReservationFirst"}
            assert {m.target_node for m in plan.migrations} == {None}
    # The 6th hot cycle acts; after acting the node stays a source 2 more cycles, then counts anew.
    assert acting == [6, 7, 8, 12]


def test_koordinator_forgets_the_count_when_the_node_cools() -> None:
    hot, cool = _hot_and_cool(), _hot_and_cool(hot_pods=5)
    policy = _koord()
    state: Mapping[str, Any] = {}
    for objects in [hot] * 5 + [cool] + [hot] * 5:
        plan, state = _plan(objects, policy, state)
        assert plan.migrations == ()
    plan, state = _plan(hot, policy, state)
    assert plan.migrations != ()


def test_koordinator_pooled_budget_is_shared_by_every_source_in_order() -> None:
    # One low node with 2 cpu below high; "hotter" goes first and uses all of it.
    objects = b.loaded_node("hotter", [(_pod(f"a{i}"), "1") for i in range(9)], cpu="10")
    objects += b.loaded_node("hot", [(_pod(f"b{i}"), "1") for i in range(7)], cpu="10")
    low = b.loaded_node("low", [(_pod("l"), "4")], cpu="10")
    policy = _koord(**_now_acting(nodeFit="false"))
    plan = _plan(objects + low, policy)
    assert [(m.pod.name, m.source_node) for m in plan.plan.migrations] == [("a0", "hotter"), ("a1", "hotter")]
    alone = _plan(b.loaded_node("hot", [(_pod(f"b{i}"), "1") for i in range(7)], cpu="10") + low, policy)
    assert _moved(alone) == ["b0"]


@pytest.mark.parametrize(("unmoved_big_pod", "second_source_moves"), [(True, False), (False, True)])
def test_koordinator_node_fit_keeps_the_usage_of_a_pod_never_moved(
    unmoved_big_pod: bool, second_source_moves: bool
) -> None:
    # "first" is hotter; its "small" pod moves and brings it to ≤ high, "big" never moves, yet
    # nodeFit kept big's 2 cpu on the only low node, so the second source's pod fits nowhere.
    first = [(_pod("small"), "1")] + ([(_pod("big", "2"), "2")] if unmoved_big_pod else [])
    objects = b.loaded_node("first", first, cpu="10", system="3500m" if unmoved_big_pod else "5500m")
    objects += b.loaded_node("second", [(_pod("other"), "1")], cpu="10", system="5200m")
    objects += b.loaded_node("low", [(_pod("l"), "3")], cpu="10")
    plan = _plan(objects, _koord(**_now_acting()))
    assert ("small" in _moved(plan), "big" in _moved(plan)) == (True, False)
    assert ("other" in _moved(plan)) is second_source_moves
    if not second_source_moves:
        assert _codes(plan)["other"] == "FitsNoLowNode"


def test_koordinator_sorts_pods_by_how_well_their_usage_covers_the_excess() -> None:
    # 7 cpu used, high 6: the excess is 1 cpu; 1.1 cpu covers it best, then 3 cpu, then 0.2.
    pods = [
        (_pod("a-big", created=b.NOW - timedelta(minutes=1)), "3"),
        (_pod("m-tiny", created=b.NOW - timedelta(minutes=2)), "200m"),
        (_pod("z-fit", created=b.NOW - timedelta(hours=5)), "1100m"),
    ]
    objects = b.loaded_node("hot", pods, cpu="10", system="2700m") + b.loaded_node("cool", [], cpu="100")
    plan = _plan(objects, _koord(**_now_acting()))
    assert _moved(plan) == ["z-fit"]


def test_koordinator_moves_the_newest_pod_first_when_all_else_ties() -> None:
    pods = [(_pod("a-old", created=b.NOW - timedelta(hours=2)), "1"), (_pod("z-new"), "1")]
    objects = b.loaded_node("hot", pods, cpu="10", system="4500m") + b.loaded_node("cool", [], cpu="100")
    assert _moved(_plan(objects, _koord(**_now_acting()))) == ["z-new"]


@pytest.mark.parametrize(
    ("number_of_nodes", "cool_nodes", "moves"),
    [(0, 1, 1), (1, 1, 0), (1, 2, 1)],
    ids=["acts", "low-not-more-than-numberOfNodes", "more-low-than-numberOfNodes"],
)
def test_koordinator_exits_without_more_low_nodes_than_number_of_nodes(
    number_of_nodes: int, cool_nodes: int, moves: int
) -> None:
    objects = b.loaded_node("hot", [(_pod("h0"), "1")], cpu="10", system="6")
    for i in range(cool_nodes):
        objects += b.loaded_node(f"cool{i}", [], cpu="100")
    plan = _plan(objects, _koord(**_now_acting(numberOfNodes=str(number_of_nodes))))
    assert len(_moved(plan)) == moves


def test_koordinator_leaves_out_a_node_whose_metric_is_stale() -> None:
    objects = b.loaded_node("hot", [(_pod("h0"), "1")], cpu="10", system="6") + b.loaded_node("cool", [], cpu="100")
    later = b.NOW + timedelta(hours=1)
    plan = _plan(objects, _koord(**_now_acting()), now=later)
    assert b.classes(plan) == {"cool": "excluded", "hot": "excluded"}
    assert _moved(plan) == []


@pytest.mark.parametrize(
    ("priority", "qos_cpu", "rank"),
    [(3500, "1", 0), (5500, "1", 1), (7500, "1", 2), (9500, "1", 3), (None, None, 1), (None, "1", 3), (100, "1", 3)],
    ids=["free", "batch", "mid", "prod", "no-band-besteffort-is-batch", "no-band-burstable-is-prod", "other-priority"],
)
def test_koordinator_priority_class_by_band_or_by_qos(priority: int | None, qos_cpu: str | None, rank: int) -> None:
    objects = [b.pod("p", "n", cpu=qos_cpu, memory=None if qos_cpu is None else "1Gi", priority=priority), b.node("n")]
    (pod,) = b.snapshot(objects).pods
    assert koord_band_rank(pod) == rank


def test_koordinator_moves_a_lower_priority_class_first_whatever_its_priority() -> None:
    # The label makes "labelled" batch although its priority (9600) is above "prod-fit"'s (9500).
    batch = {LABEL_PRIORITY_CLASS: "koord-batch"}
    pods = [(_pod("prod-fit", priority=9500), "1100m"), (_pod("labelled", priority=9600, labels=batch), "3")]
    objects = b.loaded_node("hot", pods, cpu="10", system="2900m") + b.loaded_node("cool", [], cpu="100")
    assert _moved(_plan(objects, _koord(**_now_acting()))) == ["labelled"]


@pytest.mark.parametrize(("low_node_memory", "moves"), [(None, 1), ("32Gi", 0)])
def test_koordinator_always_evaluates_memory(low_node_memory: str | None, moves: int) -> None:
    # Thresholds name cpu only; memory is still in the budget at 100%: a low node with its memory
    # all used leaves nothing in B[memory].
    objects = b.loaded_node("hot", [(_pod("h0"), "2")], cpu="2")
    objects += b.loaded_node("low", [], cpu="10", node_memory=low_node_memory)
    plan = _plan(objects, _koord(**_now_acting(nodeFit="false")))
    assert len(_moved(plan)) == moves


def test_koordinator_ignores_a_resource_named_only_in_high_thresholds() -> None:
    # cpu 50% is between the thresholds; pods 100% would be above a pods high threshold of 50%.
    objects = b.loaded_node("busy", [(_pod(f"p{i}", "10m"), "1") for i in range(5)], cpu="10", max_pods="5")
    plan = _plan(objects + b.loaded_node("low", [], cpu="10"), _koord({"cpu": 40}, {"cpu": 60, "pods": 50}))
    assert b.classes(plan)["busy"] == "normal"


def _at(objects: Sequence[Obj], at: datetime) -> list[Obj]:
    """The objects with every metric taken at `at`."""
    out = []
    for obj in objects:
        if obj.get("kind") in ("NodeMetrics", "PodMetrics"):
            obj = {**obj, "timestamp": b.ts(at)}
        out.append(obj)
    return out


def test_koordinator_moves_a_workload_at_most_once_per_five_minutes_across_cycles() -> None:
    pods = [(_pod("solo"), "1")] + [(_pod(f"w{i}", owner="web"), "1") for i in range(2)] + [(_pod("zz"), "1")]
    objects = b.loaded_node("hot", pods, cpu="5", system="500m") + b.loaded_node("cool", [], cpu="100")
    policy = _koord(limits=UNCAPPED, **_now_acting())
    first, state = _plan(objects, policy)
    assert _moved(first) == ["solo", "w0"]  # 4.5 cpu → 2.5 cpu ≤ 3
    later = b.NOW + timedelta(minutes=1)
    second, state = _plan(_at(objects, later), policy, state, now=later)
    # No job is in the snapshot: the strategy itself remembers which workloads moved.
    assert _moved(second) == ["zz"]
    assert _codes(second)["w0"] == _codes(second)["w1"] == _codes(second)["solo"] == "WorkloadObjectLimiter"
    after = b.NOW + timedelta(minutes=6)
    third, _ = _plan(_at(objects, after), policy, state, now=after)
    assert _moved(third) == ["solo", "w0"]


def test_koordinator_refuses_a_pod_whose_node_has_max_migrating_jobs_in_flight() -> None:
    objects = b.loaded_node("hot", [(_pod(f"h{i}"), "1") for i in range(8)], cpu="10") + b.loaded_node(
        "cool", [], cpu="100"
    )
    jobs = [b.migration_job(f"job{i}", f"h{i}", "cool") for i in (6, 7)]
    for job in jobs:
        job["status"]["sourceNode"] = "hot"
    plan = _plan(objects + jobs, _koord(limits=UNCAPPED, **_now_acting()))
    assert _moved(plan) == []
    assert "MaxMigratingPerNode" in _codes(plan).values()


def test_peer_policies_set_the_migration_limits_of_their_peer() -> None:
    upstream = _upstream()
    assert upstream.migration.default_mode == "EvictDirectly"
    assert upstream.migration.cooldown == timedelta(0)
    assert upstream.migration.max_migrating_per_node is None
    koord = _koord()
    assert koord.strategies[0].name == KOORDINATOR
    migration = koord.migration
    assert (migration.default_mode, migration.ttl, migration.cooldown) == (
        "ReservationFirst",
        timedelta(minutes=5),
        timedelta(0),
    )
    assert (migration.max_migrating_per_node, migration.max_migrating_per_workload) == (2, 1)
    assert migration.max_unavailable_per_workload == 1
    assert (migration.object_limiters.workload.duration, migration.object_limiters.workload.max_migrating) == (
        timedelta(minutes=5),
        1,
    )
    with pytest.raises(ValueError, match="migration"):
        koordinator_policy("60s", {"cpu": 40}, {"cpu": 60}, "migration: {cooldown: 0s}\n")


# --- what the peers' evictor and nodeFit check (constrained scenarios) --------------------------


def _pinned_by_local_volume() -> list[Obj]:
    """A hot node whose one pod keeps its claim on a local volume there; a cool node."""
    claimed = {**volumes.claimed("db-0", "data-db-0"), "cpu": "2"}
    return [
        *b.loaded_node("hot", [(claimed, "3")], cpu="4"),
        *b.loaded_node("cool", [], cpu="10"),
        volumes.pvc("data-db-0", "local-hot"),
        volumes.pv("local-hot", volumes.HOSTNAME, "hot"),
    ]


def test_both_peers_evict_a_pod_its_local_volume_pins_which_ours_keeps() -> None:
    objects = _pinned_by_local_volume()
    assert _moved(_plan(objects, _upstream(mode="metrics"))) == ["db-0"]
    assert _moved(_plan(objects, _koord(**_now_acting()))) == ["db-0"]
    ours = _plan(objects, b.policy(b.lnl_policy(low={"cpu": 50}, high={"cpu": 60})))
    assert _moved(ours) == [] and _codes(ours)["db-0"] == "PinnedByVolume"


@pytest.mark.parametrize(("node_fit", "moved"), [("false", ["pinned"]), ("true", [])])
def test_upstream_node_fit_keeps_a_pod_whose_node_selector_fits_no_other_node(node_fit: str, moved: list[str]) -> None:
    pinned = _pod("pinned", "2", node_selector={"kubernetes.io/hostname": "hot"})
    objects = b.loaded_node("hot", [(pinned, "3")], cpu="4", labels={"kubernetes.io/hostname": "hot"})
    objects += b.loaded_node("cool", [], cpu="10", labels={"kubernetes.io/hostname": "cool"})
    plan = _plan(objects, _upstream(mode="metrics", nodeFit=node_fit))
    assert _moved(plan) == moved
    if not moved:
        assert _codes(plan)["pinned"] == "FitsNoOtherNode"
