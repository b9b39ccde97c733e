"""The load-aware scheduling core (scheduling-core.md): requests, predicates, load filter, estimator, score, view."""

from __future__ import annotations

import json
from collections import Counter
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from descheduler.model import Node, NodeSelectorRequirement, Pod
from descheduler.policy import parse_policy
from descheduler.quantity import to_units
from descheduler.refusal import Refusal
from descheduler.scheduling import (
    ClusterView,
    best_node,
    build_table,
    estimate,
    feasible_mask,
    predicates,
    refusal,
    score,
    scores,
)
from descheduler.scheduling.core import Choice
from descheduler.snapshot import Snapshot
from tests.builders import (
    NOW,
    Obj,
    container,
    migration_job,
    node,
    node_metric,
    node_metrics,
    pod,
    pod_metrics,
    reservation,
    snapshot,
)


def view_of(objects: list[Obj], **scheduling: Any) -> tuple[Snapshot, ClusterView]:
    """A snapshot and a fresh view with these scheduling args (defaults otherwise)."""
    doc = {"apiVersion": "descheduler.dev/v1alpha1", "kind": "DeschedulerPolicy", "scheduling": scheduling}
    args = parse_policy(yaml.safe_dump(doc)).scheduling
    snap = snapshot(objects)
    return snap, ClusterView(build_table(snap, args))


def the_pod(snap: Snapshot, name: str) -> Pod:
    return next(p for p in snap.pods if p.name == name)


def why(pod: Pod, node_name: str, view: ClusterView, node_fit: bool = True) -> str | None:
    """The words of the pod's refusal on the node, None when it fits."""
    found = refusal(pod, node_name, view, node_fit)
    return None if found is None else str(found)


def reason(objects: list[Obj], pod_name: str, node_name: str, **scheduling: Any) -> str | None:
    snap, view = view_of(objects, **scheduling)
    return why(the_pod(snap, pod_name), node_name, view)


# --- requests, QoS, quantities ------------------------------------------------------------


def test_init_container_larger_than_app_containers_sets_the_request() -> None:
    p = pod("p", init_containers=[container("init", "2", "512Mi")], cpu="1", memory="1Gi")
    got = the_pod(snapshot([p]), "p").requests
    assert (got["cpu"], got["memory"]) == (2000, 2**30)


def test_sidecar_init_containers_add_to_the_sum_and_to_later_init_containers() -> None:
    sidecar = container("proxy", "500m", "128Mi", restart_policy="Always")
    later_init = container("migrate", "2", "64Mi")
    p = pod("p", cpu="1", memory="1Gi", init_containers=[sidecar, later_init])
    got = the_pod(snapshot([p]), "p").requests
    # cpu: max(1 + 0.5, 2 + 0.5) = 2.5; memory: max(1Gi + 128Mi, 64Mi + 128Mi)
    assert (got["cpu"], got["memory"]) == (2500, 2**30 + 128 * 2**20)


def test_pod_overhead_is_added_to_requests() -> None:
    p = pod("p", cpu="1", memory="1Gi", overhead={"cpu": "250m", "memory": "64Mi"})
    got = the_pod(snapshot([p]), "p").requests
    assert (got["cpu"], got["memory"]) == (1250, 2**30 + 64 * 2**20)


@pytest.mark.parametrize(
    ("requests", "limits", "qos"),
    [
        ({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}, "Guaranteed"),
        ({"cpu": None, "memory": None}, {"cpu": "1", "memory": "1Gi"}, "Guaranteed"),  # request defaults to limit
        ({"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}, "Burstable"),
        ({"cpu": "1", "memory": None}, None, "Burstable"),
        ({"cpu": None, "memory": None}, None, "BestEffort"),
    ],
)
def test_qos_class(requests: dict[str, str | None], limits: dict[str, str] | None, qos: str) -> None:
    p = pod("p", cpu=requests["cpu"], memory=requests["memory"], limits=limits)
    assert the_pod(snapshot([p]), "p").qos == qos


@pytest.mark.parametrize(
    ("resource", "text", "units"),
    [
        ("cpu", "500m", 500),
        ("cpu", "1.5", 1500),
        ("cpu", "100u", 1),  # fractions of a millicore round up
        ("cpu", "2", 2000),
        ("memory", "1Gi", 2**30),
        ("memory", "1G", 10**9),
        ("memory", "1e3", 1000),
        ("memory", "128974848", 128974848),
        ("pods", "110", 110),
        ("nvidia.com/gpu", "2", 2),
    ],
)
def test_quantity_units(resource: str, text: str, units: int) -> None:
    assert to_units(resource, text) == units


# --- predicates ---------------------------------------------------------------------------


def test_not_ready_node_is_refused() -> None:
    assert reason([node("n1", ready=False), pod("p")], "p", "n1") == "node n1 is not Ready"


def test_cordoned_node_is_refused() -> None:
    assert reason([node("n1", unschedulable=True), pod("p")], "p", "n1") == "node n1 is cordoned (unschedulable)"


def test_node_selector() -> None:
    objs = [
        node("ssd", labels={"disk": "ssd"}),
        node("hdd", labels={"disk": "hdd"}),
        pod("p", node_selector={"disk": "ssd"}),
    ]
    assert reason(objs, "p", "ssd") is None
    assert reason(objs, "p", "hdd") == "nodeSelector disk=ssd does not match"


def affinity(*expressions: Obj, fields: list[Obj] | None = None) -> Obj:
    term: Obj = {"matchExpressions": list(expressions)} if expressions else {}
    if fields:
        term["matchFields"] = fields
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


NODES_BY_ZONE = [
    node("zone-a", labels={"zone": "a", "cores": "16"}),
    node("no-zone"),
    node("zone-b", labels={"zone": "b", "cores": "4"}),
]


@pytest.mark.parametrize(
    ("expression", "fits"),
    [
        ({"key": "zone", "operator": "In", "values": ["a"]}, {"zone-a"}),
        ({"key": "zone", "operator": "NotIn", "values": ["a"]}, {"no-zone", "zone-b"}),  # missing key matches NotIn
        ({"key": "zone", "operator": "Exists"}, {"zone-a", "zone-b"}),
        ({"key": "zone", "operator": "DoesNotExist"}, {"no-zone"}),
        ({"key": "cores", "operator": "Gt", "values": ["8"]}, {"zone-a"}),
        ({"key": "cores", "operator": "Lt", "values": ["8"]}, {"zone-b"}),
    ],
)
def test_required_node_affinity_operators(expression: Obj, fits: set[str]) -> None:
    objs = [*NODES_BY_ZONE, pod("p", affinity=affinity(expression))]
    snap, view = view_of(objs)
    p = the_pod(snap, "p")
    got = {n: why(p, n, view) for n in ("zone-a", "no-zone", "zone-b")}
    assert {n for n, r in got.items() if r is None} == fits
    assert all(r == "required node affinity does not match" for n, r in got.items() if n not in fits)


def test_required_node_affinity_match_fields_on_metadata_name() -> None:
    field = {"key": "metadata.name", "operator": "In", "values": ["zone-b"]}
    objs = [*NODES_BY_ZONE, pod("p", affinity=affinity(fields=[field]))]
    snap, view = view_of(objs)
    assert [n for n in ("zone-a", "no-zone", "zone-b") if why(the_pod(snap, "p"), n, view) is None] == ["zone-b"]


GPU_TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("taint", "tolerations", "expected"),
    [
        (GPU_TAINT, [], "taint dedicated=gpu:NoSchedule not tolerated"),
        (GPU_TAINT, [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}], None),
        (GPU_TAINT, [{"key": "dedicated", "value": "gpu"}], None),  # operator defaults to Equal; no effect = all
        (GPU_TAINT, [{"key": "dedicated", "value": "tpu"}], "taint dedicated=gpu:NoSchedule not tolerated"),
        (GPU_TAINT, [{"key": "dedicated", "operator": "Exists"}], None),  # Exists ignores the value
        (GPU_TAINT, [{"operator": "Exists"}], None),  # empty key with Exists tolerates every key
        (
            GPU_TAINT,
            [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}],
            "taint dedicated=gpu:NoSchedule not tolerated",
        ),
        ({"key": "spot", "effect": "NoExecute"}, [{"key": "spot", "operator": "Exists"}], None),
        ({"key": "spot", "effect": "NoExecute"}, [], "taint spot:NoExecute not tolerated"),
        ({"key": "spot", "effect": "PreferNoSchedule"}, [], None),  # only NoSchedule/NoExecute block
        (GPU_TAINT, [{"value": "gpu"}], "taint dedicated=gpu:NoSchedule not tolerated"),  # empty key needs Exists
    ],
)
def test_taints_by_the_standard_toleration_rule(taint: Obj, tolerations: list[Obj], expected: str | None) -> None:
    assert reason([node("n1", taints=[taint]), pod("p", tolerations=tolerations)], "p", "n1") == expected


def test_resources_fit_counts_pods_on_the_node() -> None:
    objs = [node("n1", cpu="4"), pod("a", "n1", cpu="3"), pod("p", cpu="2")]
    assert reason(objs, "p", "n1") == "insufficient cpu: requests 2, free 1"


def test_resources_fit_extended_resource_missing_from_allocatable_is_zero() -> None:
    objs = [node("n1"), pod("p", extra={"nvidia.com/gpu": "1"})]
    assert reason(objs, "p", "n1") == "insufficient nvidia.com/gpu: requests 1, free 0"


def test_resources_fit_pods_count() -> None:
    objs = [node("n1", pods="2"), pod("a", "n1"), pod("b", "n1"), pod("p")]
    assert reason(objs, "p", "n1") == "insufficient pods: requests 1, free 0"


def test_terminal_pods_do_not_hold_resources() -> None:
    objs = [node("n1", cpu="4"), pod("done", "n1", cpu="3", phase="Succeeded"), pod("p", cpu="2")]
    assert reason(objs, "p", "n1") is None


def test_reservation_held_for_another_pod_takes_room() -> None:
    objs = [node("n1", cpu="4"), reservation("r1", "n1", {"cpu": "3"}, owner="other"), pod("p", cpu="2", owner="web")]
    assert reason(objs, "p", "n1") == "insufficient cpu: requests 2, free 1 (3 held by reservations)"


def test_reservation_owned_by_the_pod_is_usable() -> None:
    objs = [node("n1", cpu="4"), reservation("r1", "n1", {"cpu": "3"}, owner="web"), pod("p", cpu="2", owner="web")]
    assert reason(objs, "p", "n1") is None


def test_consumed_or_failed_reservation_holds_nothing() -> None:
    objs = [
        node("n1", cpu="4"),
        reservation("r1", "n1", {"cpu": "3"}, owner="other", phase="Failed"),
        pod("p", cpu="2"),
    ]
    assert reason(objs, "p", "n1") is None


def test_required_anti_affinity_on_hostname() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    objs = [node("n1"), node("n2"), pod("db-0", "n1", owner="db"), pod("p", owner="db", affinity=anti)]
    snap, view = view_of(objs)
    p = the_pod(snap, "p")
    assert why(p, "n1", view) == "pod anti-affinity: default/db-0 already in kubernetes.io/hostname=n1"
    assert why(p, "n2", view) is None


def test_a_running_pods_anti_affinity_keeps_the_pod_out_of_its_domain() -> None:
    # kube-scheduler's InterPodAffinity also checks existing pods' required anti-affinity against the
    # incoming pod: "guard" on n1 refuses any app=web pod beside it, and web carries no terms itself.
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    objs = [
        node("n1"),
        node("n2"),
        pod("guard", "n1", affinity=anti),
        pod("p", labels={"app": "web"}),
        pod("q", labels={"app": "db"}),
    ]
    snap, view = view_of(objs)
    assert why(the_pod(snap, "p"), "n1", view) == (
        "anti-affinity of default/guard: keeps the pod out of kubernetes.io/hostname=n1"
    )
    assert why(the_pod(snap, "p"), "n2", view) is None
    assert why(the_pod(snap, "q"), "n1", view) is None


@pytest.mark.parametrize(("value", "matches"), [("16", True), ("+16", True), ("1_6", False), (" 16", False)])
def test_gt_reads_label_values_as_go_parseint_does(value: str, matches: bool) -> None:
    requirement = NodeSelectorRequirement(key="cores", operator="Gt", values=("8",))
    assert requirement.matches(value) is matches


# --- load filter --------------------------------------------------------------------------


def loaded(name: str, cpu_used: str, *, at: Any = NOW, **kw: Any) -> list[Obj]:
    """A node of 8 cpu with the given metrics-server cpu usage (memory 1Gi)."""
    return [node(name, **kw), node_metrics(name, cpu_used, "1Gi", at=at)]


def test_load_filter_rejects_when_estimated_usage_after_placing_exceeds_threshold() -> None:
    # 4.8 cpu used + estimate 850m (1 cpu × 85%) = 5.65 / 8 = 70.6% > 65%.
    objs = [*loaded("hot", "4800m"), *loaded("ok", "4"), pod("p", cpu="1")]
    assert reason(objs, "p", "hot") == "usage: cpu would reach 71% > threshold 65%"
    assert reason(objs, "p", "ok") is None  # 4.85 / 8 = 60.6%


def test_load_filter_zero_threshold_disables_the_check() -> None:
    objs = [*loaded("hot", "7900m"), pod("p", cpu="1")]
    assert reason(objs, "p", "hot", usageThresholds={"cpu": 0, "memory": 95}) is None


def test_load_filter_prod_pods_use_prod_usage_and_prod_thresholds() -> None:
    # Node usage 6 cpu of which prod pods use 1; a prod pod is checked on prod usage only.
    objs = [
        node("n1"),
        pod("prod-a", "n1", cpu="1", priority=9500),
        pod("batch-a", "n1", cpu="1", priority=5500),
        node_metric("n1", "6", "2Gi", system=("0", "0"), pods=[("prod-a", "1", "1Gi"), ("batch-a", "5", "1Gi")]),
        pod("prod-new", cpu="1", priority=9500),
        pod("batch-new", cpu="1", priority=5500),
    ]
    args = {"usageThresholds": {"cpu": 65}, "prodUsageThresholds": {"cpu": 30}}
    assert reason(objs, "prod-new", "n1", **args) is None  # (1 + 0.85) / 8 = 23%
    assert reason(objs, "batch-new", "n1", **args) == "usage: cpu would reach 86% > threshold 65%"
    args["prodUsageThresholds"] = {"cpu": 20}
    assert reason(objs, "prod-new", "n1", **args) == "prod usage: cpu would reach 23% > threshold 20%"


def test_load_filter_aggregated_percentile_replaces_instant_value() -> None:
    objs = [
        node("n1"),
        node_metric("n1", "1", "1Gi", aggregated={"p95": ("5", "1Gi"), "avg": ("1", "1Gi")}),
        pod("p", cpu="1"),
    ]
    agg = {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p95"}
    assert reason(objs, "p", "n1", aggregated=agg) == "p95 usage: cpu would reach 73% > threshold 60%"
    agg["usageAggregationType"] = "avg"
    assert reason(objs, "p", "n1", aggregated=agg) is None


STALE = NOW - timedelta(seconds=600)


@pytest.mark.parametrize(
    ("filter_expired", "enable_when_expired", "cpu_used", "expected"),
    [
        (True, False, "1", "node metric expired (600s old > 180s)"),
        (True, True, "1", None),
        (True, True, "7", None),  # allowed: the stale load is not held against it
        (False, False, "1", None),  # not filtered: the stale value is used as is
        (False, False, "7", "usage: cpu would reach 98% > threshold 65%"),
        (False, True, "7", "usage: cpu would reach 98% > threshold 65%"),
    ],
)
def test_load_filter_expired_metric_flags(
    filter_expired: bool, enable_when_expired: bool, cpu_used: str, expected: str | None
) -> None:
    objs = [*loaded("n1", cpu_used, at=STALE), pod("p", cpu="1")]
    args = {"filterExpiredNodeMetrics": filter_expired, "enableScheduleWhenNodeMetricsExpired": enable_when_expired}
    assert reason(objs, "p", "n1", **args) == expected


def test_expired_metric_does_not_refuse_the_pod_its_own_reservation() -> None:
    # The room was checked on fresh metrics when it was reserved; a metrics pause after that must not
    # leave the moved workload without its replacement. Other pods are still refused the stale node.
    objs = [
        *loaded("n1", "7", at=STALE),
        reservation("r1", "n1", {"cpu": "1"}, owner="web"),
        pod("p", cpu="1", owner="web"),
        pod("q", cpu="1", owner="other"),
    ]
    assert reason(objs, "p", "n1") is None
    assert reason(objs, "q", "n1") == "node metric expired (600s old > 180s)"


def test_load_filter_node_without_metric_passes() -> None:
    objs = [node("n1"), pod("busy", "n1", cpu="7"), pod("p", cpu="500m")]
    assert reason(objs, "p", "n1") is None


def test_load_filter_per_node_annotation_overrides_thresholds() -> None:
    custom = {"scheduling.koordinator.sh/usage-thresholds": json.dumps({"usageThresholds": {"cpu": 90}})}
    objs = [*loaded("custom", "6", annotations=custom), *loaded("plain", "6"), pod("p", cpu="1")]
    assert reason(objs, "p", "custom") is None  # 6.85 / 8 = 86% ≤ 90%
    assert reason(objs, "p", "plain") == "usage: cpu would reach 86% > threshold 65%"


def test_load_filter_daemonset_pods_always_pass() -> None:
    objs = [*loaded("hot", "7900m"), pod("ds", cpu="1", owner="agent", owner_kind="DaemonSet")]
    assert reason(objs, "ds", "hot") is None


def test_load_filter_counts_pods_the_last_report_cannot_include() -> None:
    # A pod scheduled after updateTime − reportInterval adds max(0, estimate − reported).
    fresh = NOW - timedelta(seconds=10)
    objs = [
        node("n1"),
        pod("new", "n1", cpu="4", scheduled=fresh),
        node_metric("n1", "1", "1Gi", system=("1", "1Gi"), pods=[("new", "0", "0")]),
        pod("p", cpu="1"),
    ]
    # 1 (system) + 0 (reported) + 3.4 (estimate of new) + 0.85 = 5.25 / 8 = 65.6%
    assert reason(objs, "p", "n1") == "usage: cpu would reach 66% > threshold 65%"


# --- estimator ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requests", "limits", "expected"),
    [
        ({"cpu": 1000, "memory": 1000}, {}, {"cpu": 850, "memory": 700}),
        ({"cpu": 1000}, {"cpu": 2000}, {"cpu": 1700, "memory": 200 * 2**20}),  # limit > request: the limit
        ({"cpu": 1000}, {"cpu": 1000}, {"cpu": 850, "memory": 200 * 2**20}),
        ({}, {}, {"cpu": 250, "memory": 200 * 2**20}),  # nothing requested: 250m / 200Mi
        ({"cpu": 3}, {}, {"cpu": 3, "memory": 200 * 2**20}),  # round(2.55) = 3
    ],
)
def test_estimator(requests: dict[str, int], limits: dict[str, int], expected: dict[str, int]) -> None:
    assert dict(estimate(requests, limits, {"cpu": 85, "memory": 70})) == expected


def test_estimator_factors_are_configurable() -> None:
    assert dict(estimate({"cpu": 1000}, {}, {"cpu": 50})) == {"cpu": 500}


# --- score --------------------------------------------------------------------------------


def test_score_formula_least_used_mean() -> None:
    # n1: cpu (8 − 2 − 0.85)/8 → 64, memory (32Gi − 16Gi − 200Mi)/32Gi → 49; mean (64 + 49) // 2 = 56
    objs = [node("n1"), node_metrics("n1", "2", "16Gi"), pod("p", cpu="1", memory=None)]
    snap, view = view_of(objs)
    p = the_pod(snap, "p")
    cpu = (8000 - 2000 - 850) * 100 // 8000
    mem = (32 * 2**30 - 16 * 2**30 - 200 * 2**20) * 100 // (32 * 2**30)
    assert score(p, "n1", view) == (cpu + mem) // 2
    _, view_d = view_of(objs, dominantResourceWeight=2)
    assert score(p, "n1", view_d) == (cpu + mem + 2 * min(cpu, mem)) // 4


def test_score_weights() -> None:
    objs = [node("n1"), node_metrics("n1", "2", "16Gi"), pod("p", cpu="1", memory=None)]
    snap, view = view_of(objs, resourceWeights={"cpu": 3, "memory": 1})
    cpu = (8000 - 2000 - 850) * 100 // 8000
    mem = (32 * 2**30 - 16 * 2**30 - 200 * 2**20) * 100 // (32 * 2**30)
    assert score(the_pod(snap, "p"), "n1", view) == (3 * cpu + mem) // 4


def test_best_node_prefers_least_used_and_breaks_ties_by_name() -> None:
    objs = [*loaded("b", "1"), *loaded("a", "1"), *loaded("c", "500m"), *loaded("d", "500m"), pod("p", cpu="1")]
    snap, view = view_of(objs)
    assert best_node(the_pod(snap, "p"), view).node == "c"
    assert best_node(the_pod(snap, "p"), view, exclude=["c", "d"]).node == "a"


def test_best_node_owned_reservation_wins_over_a_cooler_node() -> None:
    objs = [*loaded("cool", "0"), *loaded("warm", "3"), reservation("r1", "warm", {"cpu": "1"}, owner="web"), pod("p")]
    snap, view = view_of(objs)
    choice = best_node(the_pod(snap, "p"), view)
    assert (choice.node, choice.score) == ("warm", 100)
    assert score(the_pod(snap, "p"), "warm", view) == 100


def test_best_node_reports_why_each_node_was_refused() -> None:
    objs = [node("n1", unschedulable=True), node("n2", cpu="1"), pod("p", cpu="2")]
    snap, view = view_of(objs)
    choice = best_node(the_pod(snap, "p"), view)
    assert choice.node is None
    assert {node: str(why) for node, why in choice.rejected.items()} == {
        "n1": "node n1 is cordoned (unschedulable)",
        "n2": "insufficient cpu: requests 2, free 1",
    }


# --- copy-on-write view -------------------------------------------------------------------


def test_view_fork_is_independent_and_move_updates_both_sides() -> None:
    objs = [node("n1"), node("n2"), pod("a", "n1", cpu="2"), pod_metrics("a", "1500m", "1Gi"), pod("p", cpu="1")]
    objs += [node_metrics("n1", "1500m", "1Gi"), node_metrics("n2", "0", "0")]
    snap, view = view_of(objs)
    table = view.table
    a = the_pod(snap, "a")
    cpu = table.column["cpu"]
    fork = view.fork()
    fork.move(a, "n2")
    n1, n2 = table.index["n1"], table.index["n2"]
    assert (fork.requested[n1, cpu], fork.requested[n2, cpu]) == (0, 2000)
    assert (fork.usage[n1, cpu], fork.usage[n2, cpu]) == (0, 1500)
    assert fork.estimated[n2, cpu] == 1700  # max(usage 1500, estimate 2 × 85%)
    assert fork.node_of(a) == "n2"
    # The original view and the table are untouched.
    assert (view.requested[n1, cpu], view.requested[n2, cpu]) == (2000, 0)
    assert (view.usage[n1, cpu], table.usage[n1, cpu]) == (1500, 1500)
    assert view.node_of(a) == "n1"


# --- vectorised mask equals the scalar predicates -------------------------------------------

LABEL_VALUES = st.sampled_from(["a", "b", None])


@st.composite
def clusters(draw: st.DrawFn) -> list[Obj]:
    objs: list[Obj] = []
    count = draw(st.integers(1, 6))
    for i in range(count):
        name = f"n{i}"
        zone = draw(LABEL_VALUES)
        taints = draw(st.lists(st.sampled_from([GPU_TAINT, {"key": "spot", "effect": "NoExecute"}]), max_size=1))
        objs.append(
            node(
                name,
                cpu=str(draw(st.integers(1, 8))),
                pods=str(draw(st.integers(1, 4))),
                labels={"zone": zone} if zone else {},
                taints=taints,
                unschedulable=draw(st.booleans()),
                ready=draw(st.integers(0, 5)) > 0,
            )
        )
        metric = draw(st.sampled_from(["fresh", "aggregated", "stale", "none"]))
        cpu_used = f"{draw(st.integers(0, 8000))}m"
        if metric == "aggregated":
            p95 = f"{draw(st.integers(0, 8000))}m"
            objs.append(node_metric(name, cpu_used, "1Gi", aggregated={"p95": (p95, "1Gi")}))
        elif metric != "none":
            objs.append(node_metrics(name, cpu_used, "1Gi", at=NOW if metric == "fresh" else STALE))
        for j in range(draw(st.integers(0, 2))):
            objs.append(
                pod(
                    f"{name}-p{j}",
                    name,
                    cpu=f"{draw(st.integers(0, 3000))}m",
                    owner=draw(st.sampled_from(["web", "db"])),
                )
            )
    zone = draw(LABEL_VALUES)
    operator = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
    expression: Obj = {"key": "zone", "operator": operator}
    if operator in ("In", "NotIn"):
        expression["values"] = [zone or "a"]
    tolerations = draw(
        st.lists(st.sampled_from([{"operator": "Exists"}, {"key": "spot", "operator": "Exists"}]), max_size=1)
    )
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    aff = affinity(expression) if draw(st.booleans()) else {}
    if draw(st.booleans()):
        aff = {**aff, **anti}
    objs.append(
        pod(
            "incoming",
            cpu=f"{draw(st.integers(0, 4000))}m",
            owner=draw(st.sampled_from(["db", "db", "agent"])),
            owner_kind="ReplicaSet" if draw(st.integers(0, 4)) else "DaemonSet",
            priority=draw(st.sampled_from([None, 9500, 5500])),
            affinity=aff or None,
            tolerations=tolerations,
            node_selector={"zone": zone} if zone and draw(st.booleans()) else None,
        )
    )
    if draw(st.booleans()):
        objs.append(
            reservation(
                "r", "n0", {"cpu": f"{draw(st.integers(0, 4000))}m"}, owner=draw(st.sampled_from(["db", "web"]))
            )
        )
    return objs


LOAD_ARGS = st.fixed_dictionaries(
    {
        "usageThresholds": st.sampled_from([{}, {"cpu": 65}, {"cpu": 40, "memory": 95}]),
        "filterExpiredNodeMetrics": st.booleans(),
        "enableScheduleWhenNodeMetricsExpired": st.booleans(),
    },
    optional={
        "prodUsageThresholds": st.sampled_from([{"cpu": 30}, {"memory": 50}]),
        "aggregated": st.just({"usageThresholds": {"cpu": 50}, "usageAggregationType": "p95"}),
    },
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.booleans(), LOAD_ARGS)
def test_a_node_is_refused_exactly_when_it_has_a_refusal_that_holds(
    objs: list[Obj], node_fit: bool, load_args: dict[str, Any]
) -> None:
    snap, view = view_of(objs, **load_args)
    incoming = the_pod(snap, "incoming")
    from descheduler.scheduling.predicates import owned_reservations

    owned = owned_reservations(incoming, view) if node_fit else []
    mask = feasible_mask(incoming, view, node_fit=node_fit, owned=owned)
    found = {n: refusal(incoming, n, view, node_fit) for n in view.table.names}
    assert mask.tolist() == [found[n] is None for n in view.table.names]
    for name, said in found.items():
        if said is not None:
            _assert_holds(said, incoming, snap.node_by_name[name], node_fit)
    choice = best_node(incoming, view, node_fit=node_fit)
    assert (choice.node is None) == (not mask.any())
    assert {n: str(r) for n, r in choice.rejected.items()} == {n: str(r) for n, r in found.items() if r is not None}
    assert choice.summary() == _summary_node_by_node(choice)
    if choice.node is not None and not any(
        r.owned_by(incoming) and r.node_name == choice.node for r in snap.reservations
    ):
        node_scores = scores(incoming, view)
        best = max(int(node_scores[i]) for i in np.flatnonzero(mask))
        assert choice.score == best


def _assert_holds(said: Refusal, pod: Pod, node: Node, node_fit: bool) -> None:
    """The refusal states a fact about this pod and node that does rule the node out (scheduling-core.md §2-3)."""
    facts = said.facts
    if said.code == predicates.NODE_NOT_READY:
        assert not node.ready
    elif said.code == predicates.NODE_CORDONED:
        assert node.ready and node.unschedulable
    else:
        assert node_fit or said.code in (*predicates.LOAD_CODES, predicates.METRIC_EXPIRED_CODE), said
        if said.code == predicates.NODE_AFFINITY and said.subject:
            key, value = said.subject.split("=", 1)
            assert pod.node_selector[key] == value != node.labels.get(key)
        elif said.code == predicates.TAINT_NOT_TOLERATED:
            taint = next(t for t in node.taints if str(t) == said.subject)
            assert not any(t.tolerates(taint) for t in pod.tolerations)
        elif said.code == predicates.INSUFFICIENT:
            assert int(facts["requested"]) > int(facts["free"])
        elif said.code in predicates.LOAD_CODES:
            assert float(facts["percent"]) > float(facts["threshold"]) > 0


def test_a_move_in_flight_takes_its_pod_off_the_source_in_the_aggregated_usage_too() -> None:
    # The pod leaving n1 used 3 cpu of the p95 5: the load filter judges n1 without it, as it judges
    # the instant usage, so the room the move frees is seen before the metric window has passed.
    objs = [
        node("n1"),
        node("n2"),
        pod("leaving", "n1", cpu="1"),
        node_metric("n1", "5", "1Gi", pods=[("leaving", "3", "1Gi")], aggregated={"p95": ("5", "1Gi")}),
        node_metric("n2", "0", "1Gi"),
        pod("p", cpu="1"),
    ]
    agg = {"usageThresholds": {"cpu": 60}, "usageAggregationType": "p95"}
    assert reason(objs, "p", "n1", aggregated=agg) == "p95 usage: cpu would reach 73% > threshold 60%"
    assert reason([*objs, migration_job("job", "leaving", "n2")], "p", "n1", aggregated=agg) is None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), LOAD_ARGS, st.data())
def test_scores_of_some_rows_are_those_rows_of_every_score(
    objs: list[Obj], load_args: dict[str, Any], data: st.DataObject
) -> None:
    snap, view = view_of(objs, **load_args)
    incoming = the_pod(snap, "incoming")
    size = view.table.size
    rows = np.array(data.draw(st.lists(st.integers(0, size - 1), max_size=2 * size)), dtype=np.int64)
    some = scores(incoming, view, rows)
    assert some.tolist() == scores(incoming, view)[rows].tolist()


def _summary_node_by_node(choice: Choice) -> str:
    """`Choice.summary` from one refusal per refused node (what it counts by groups of alike nodes)."""
    counts = Counter((r.code, r.subject) for r in choice.rejected.values())
    briefs = {(r.code, r.subject): r.brief for r in choice.rejected.values()}
    detail = ", ".join(f"{-n} {brief}" for n, brief in sorted((-n, briefs[g]) for g, n in counts.items()))
    fit = f"{int(choice.feasible.sum())}/{int(choice.considered.sum())} nodes fit"
    return fit + (f": {detail}" if detail else "")
