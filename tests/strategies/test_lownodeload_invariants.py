"""LowNodeLoad invariants (testing.md §1) on random clusters and policies.

Every node has 8 cpu / 32Gi; pods request 1 cpu / 1Gi and report random usage; nodes add a random
system usage. The invariants are checked against usage recomputed from the generated objects,
not against the planner's own numbers.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from descheduler.eligibility import eviction_refusal
from descheduler.plan import Plan
from descheduler.policy import parse_policy
from descheduler.priority import is_prod
from tests.builders import Obj, lnl_policy, node, node_metrics, pdb, plan, pod, pod_metrics, snapshot

ALLOC = {"cpu": 8000, "memory": 32 * 2**30}
KINDS = ["ordinary", "ordinary", "ordinary", "daemonset", "bare", "local-storage", "other-ns", "prefer-not"]


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[Obj], dict[str, dict[str, int]]]:
    """Objects, and each pod's usage {"cpu": millicores, "memory": bytes} by name."""
    objs: list[Obj] = []
    usage: dict[str, dict[str, int]] = {}
    for i in range(draw(st.integers(2, 6))):
        name = f"n{i}"
        objs.append(node(name, unschedulable=draw(st.integers(0, 9)) == 0))
        system_cpu = draw(st.integers(0, 500))
        total = {"cpu": system_cpu, "memory": 0}
        for j in range(draw(st.integers(0, 6))):
            pod_name = f"{name}-p{j}"
            kind = draw(st.sampled_from(KINDS))
            kw: dict[str, Any] = {"owner": draw(st.sampled_from(["web", "db", "batch"]))}
            if kind == "daemonset":
                kw.update(owner="agent", owner_kind="DaemonSet")
            elif kind == "bare":
                kw.update(owner=None)
            elif kind == "local-storage":
                kw.update(volumes=[{"name": "scratch", "emptyDir": {}}])
            elif kind == "other-ns":
                kw.update(namespace="jobs")
            elif kind == "prefer-not":
                kw.update(annotations={"descheduler.alpha.kubernetes.io/prefer-no-eviction": ""})
            kw["priority"] = draw(st.sampled_from([None, 0, 100, 5500, 9500]))
            objs.append(pod(pod_name, name, **kw))
            cpu = draw(st.integers(0, 3000))
            memory = draw(st.integers(0, 8)) * 2**30
            objs.append(pod_metrics(pod_name, f"{cpu}m", str(memory), namespace=kw.get("namespace", "default")))
            usage[pod_name] = {"cpu": cpu, "memory": memory}
            total["cpu"] += cpu
            total["memory"] += memory
        objs.append(node_metrics(name, f"{total['cpu']}m", str(total["memory"])))
    if draw(st.booleans()):
        objs.append(pdb("web-pdb", {"app": "web"}, allowed=draw(st.integers(0, 3))))
    return objs, usage


@st.composite
def policies(draw: st.DrawFn) -> str:
    resources = draw(st.sampled_from([["cpu"], ["cpu", "memory"], ["memory"]]))
    low, high = {}, {}
    for r in resources:
        lo = draw(st.integers(10, 50))
        low[r], high[r] = lo, draw(st.integers(lo, 90))
    limits = {
        key: draw(st.integers(0, 4))
        for key in ("maxEvictionsPerCycle", "maxEvictionsPerNode", "maxEvictionsPerNamespace")
        if draw(st.booleans())
    }
    args: dict[str, Any] = {
        "nodeFit": draw(st.booleans()),
        "victimSelection": draw(st.sampled_from(["greedy", "minimal"])),
    }
    if draw(st.booleans()):
        args["evictableNamespaces"] = {"exclude": ["jobs"]}
    return lnl_policy(low, high, limits=limits, **args)


def node_usage(objs: list[Obj], usage: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Each node's usage as the design defines it: system (node − Σ pods, ≥ 0) + Σ pods = the node metric here."""
    out = {}
    for obj in objs:
        if obj["kind"] == "NodeMetrics":
            u = obj["usage"]
            out[obj["metadata"]["name"]] = {"cpu": int(u["cpu"][:-1]), "memory": int(u["memory"])}
    return out


def thresholds(policy_yaml: str) -> dict[str, float]:
    args = parse_policy(policy_yaml).strategies[0].args
    return dict(args.high_thresholds)  # type: ignore[attr-defined]


def over(used: dict[str, int], high: dict[str, float]) -> bool:
    return any(used[r] * 100 > high[r] * ALLOC[r] for r in high)


def run(case: tuple[list[Obj], dict[str, dict[str, int]]], policy_yaml: str) -> Plan:
    return plan(case[0], policy_yaml)[0]


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(clusters(), policies())
def test_no_target_ends_above_its_high_threshold(
    case: tuple[list[Obj], dict[str, dict[str, int]]], policy_yaml: str
) -> None:
    objs, usage = case
    result = run(case, policy_yaml)
    high = thresholds(policy_yaml)
    final = node_usage(objs, usage)
    for m in result.migrations:
        for r in ("cpu", "memory"):
            final[m.source_node][r] -= usage[m.pod.name][r]
            assert m.target_node is not None
            final[m.target_node][r] += usage[m.pod.name][r]
    for target in {m.target_node for m in result.migrations}:
        assert target is not None
        assert not over(final[target], high), (target, final[target], high)


@SETTINGS
@given(clusters(), policies())
def test_never_moves_more_than_needed(case: tuple[list[Obj], dict[str, dict[str, int]]], policy_yaml: str) -> None:
    """Before a source's last move it was still above high: at most one pod past the point."""
    objs, usage = case
    result = run(case, policy_yaml)
    high = thresholds(policy_yaml)
    current = node_usage(objs, usage)
    by_source: dict[str, list[str]] = {}
    for m in result.migrations:
        by_source.setdefault(m.source_node, []).append(m.pod.name)
    for source, pods in by_source.items():
        used = dict(current[source])
        for name in pods:
            assert over(used, high), f"{source} was already ≤ high before moving {name}"
            for r in used:
                used[r] -= usage[name][r]


@SETTINGS
@given(clusters(), policies())
def test_never_moves_a_pod_the_evictor_forbids(
    case: tuple[list[Obj], dict[str, dict[str, int]]], policy_yaml: str
) -> None:
    result = run(case, policy_yaml)
    snap = snapshot(case[0])
    evictor = parse_policy(policy_yaml).evictor
    pods = {p.name: p for p in snap.pods}
    for m in result.migrations:
        assert eviction_refusal(pods[m.pod.name], snap, evictor) is None
        assert pods[m.pod.name].owner is not None and pods[m.pod.name].owner.kind != "DaemonSet"  # type: ignore[union-attr]


@SETTINGS
@given(clusters(), policies())
def test_never_exceeds_a_limit(case: tuple[list[Obj], dict[str, dict[str, int]]], policy_yaml: str) -> None:
    result = run(case, policy_yaml)
    policy = parse_policy(policy_yaml)
    limits = policy.limits
    per_node = Counter(m.source_node for m in result.migrations)
    per_ns = Counter(m.pod.namespace for m in result.migrations)
    if limits.max_evictions_per_cycle is not None:
        assert len(result.migrations) <= limits.max_evictions_per_cycle
    if limits.max_evictions_per_node is not None:
        assert max(per_node.values(), default=0) <= limits.max_evictions_per_node
    if limits.max_evictions_per_namespace is not None:
        assert max(per_ns.values(), default=0) <= limits.max_evictions_per_namespace
    snap = snapshot(case[0])
    pods = {p.name: p for p in snap.pods}
    for budget in snap.pdbs:
        moved = sum(1 for m in result.migrations if budget.selects(pods[m.pod.name]))
        assert moved <= budget.disruptions_allowed
    assert len({m.pod.name for m in result.migrations}) == len(result.migrations)  # no pod moved twice


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), policies(), st.randoms(use_true_random=False))
def test_same_snapshot_and_policy_give_the_same_plan(
    case: tuple[list[Obj], dict[str, dict[str, int]]], policy_yaml: str, rng: random.Random
) -> None:
    objs = case[0]
    shuffled = list(objs)
    rng.shuffle(shuffled)
    first = run(case, policy_yaml)
    assert run(case, policy_yaml) == first
    assert plan(shuffled, policy_yaml)[0] == first  # the order objects were listed in does not matter


@st.composite
def prod_policies(draw: st.DrawFn) -> str:
    low, high = draw(st.integers(10, 50)), draw(st.integers(50, 90))
    prod_low = draw(st.integers(5, low))
    prod_high = draw(st.integers(prod_low, high))
    return lnl_policy(
        {"cpu": low},
        {"cpu": high},
        prodLowThresholds={"cpu": prod_low},
        prodHighThresholds={"cpu": prod_high},
        nodeFit=draw(st.booleans()),
        victimSelection=draw(st.sampled_from(["greedy", "minimal"])),
    )


@SETTINGS
@given(clusters(), prod_policies())
def test_no_target_ends_above_its_high_or_prod_high_threshold(
    case: tuple[list[Obj], dict[str, dict[str, int]]], policy_yaml: str
) -> None:
    objs, usage = case
    result = run(case, policy_yaml)
    args = parse_policy(policy_yaml).strategies[0].args
    high, prod_high = dict(args.high_thresholds), dict(args.prod_high_thresholds)  # type: ignore[attr-defined]
    snap = snapshot(objs)
    prod = {p.name for p in snap.pods if is_prod(p)}
    final = node_usage(objs, usage)
    final_prod = {n.name: {"cpu": 0, "memory": 0} for n in snap.nodes}
    for p in snap.pods:
        if p.name in prod:
            final_prod[p.node_name]["cpu"] += usage[p.name]["cpu"]
    for m in result.migrations:
        assert m.target_node is not None
        final[m.source_node]["cpu"] -= usage[m.pod.name]["cpu"]
        final[m.target_node]["cpu"] += usage[m.pod.name]["cpu"]
        if m.pod.name in prod:
            final_prod[m.source_node]["cpu"] -= usage[m.pod.name]["cpu"]
            final_prod[m.target_node]["cpu"] += usage[m.pod.name]["cpu"]
    for target in {m.target_node for m in result.migrations}:
        assert target is not None
        assert not over(final[target], high), (target, final[target], high)
        assert not over(final_prod[target], prod_high), (target, final_prod[target], prod_high)
