"""Per-cycle move limits and PDB budgets (descheduler/budget.py)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml

from descheduler.budget import EvictionBudget
from descheduler.model import Pod
from descheduler.policy import parse_policy
from descheduler.policy.errors import PolicyError
from descheduler.snapshot import Snapshot
from tests.builders import NOW, Obj, migration_job, node, pdb, pod, snapshot, ts

POLICY = {"apiVersion": "descheduler.dev/v1alpha1", "kind": "DeschedulerPolicy"}


def budget(objs: list[Obj], **limits: Any) -> tuple[EvictionBudget, Snapshot]:
    snap = snapshot([node("n1"), node("n2"), *objs])
    return EvictionBudget(parse_policy(yaml.safe_dump({**POLICY, "limits": limits})).limits, snap), snap


def by_name(snap: Snapshot, name: str) -> Pod:
    return next(p for p in snap.pods if p.name == name)


def test_unset_limits_never_refuse() -> None:
    b, snap = budget([pod(f"p{i}", "n1") for i in range(50)])
    for p in snap.pods:
        assert b.refusal(p, "n1") is None
        b.take(p, "n1")


def test_zero_limit_refuses_the_first_move() -> None:
    b, snap = budget([pod("p", "n1")], maxEvictionsPerCycle=0)
    assert str(b.refusal(by_name(snap, "p"), "n1")) == "limit maxEvictionsPerCycle 0 reached"


def test_per_cycle_per_node_and_per_namespace_limits() -> None:
    objs = [pod("a", "n1"), pod("b", "n1"), pod("c", "n2"), pod("d", "n2", namespace="other")]
    b, snap = budget(objs, maxEvictionsPerCycle=3, maxEvictionsPerNode=1, maxEvictionsPerNamespace=2)
    b.take(by_name(snap, "a"), "n1")
    assert str(b.refusal(by_name(snap, "b"), "n1")) == "limit maxEvictionsPerNode 1 reached on n1"
    assert b.refusal(by_name(snap, "c"), "n2") is None
    b.take(by_name(snap, "c"), "n2")
    assert str(b.refusal(by_name(snap, "b"), "n2")) == "limit maxEvictionsPerNode 1 reached on n2"
    b2, snap2 = budget(objs, maxEvictionsPerNamespace=2)
    b2.take(by_name(snap2, "a"), "n1")
    b2.take(by_name(snap2, "c"), "n2")
    assert str(b2.refusal(by_name(snap2, "b"), "n1")) == "limit maxEvictionsPerNamespace 2 reached in default"
    assert b2.refusal(by_name(snap2, "d"), "n2") is None
    b.take(by_name(snap, "d"), "n2")
    assert str(b.refusal(by_name(snap, "b"), "n1")) == "limit maxEvictionsPerCycle 3 reached"


def test_percent_cycle_limit_is_a_share_of_the_considered_nodes() -> None:
    # Two nodes in the snapshot: 50% is one move; over 7 considered nodes it is four (3.5 rounded up).
    b, snap = budget([pod("a", "n1"), pod("b", "n2")], maxEvictionsPerCycle="50%")
    b.take(by_name(snap, "a"), "n1")
    assert str(b.refusal(by_name(snap, "b"), "n2")) == "limit maxEvictionsPerCycle 50% of 2 nodes = 1 reached"
    wide = EvictionBudget(b.limits, snap, nodes=7)
    assert wide.per_cycle == 4


def test_pdb_disruptions_allowed_are_counted_down() -> None:
    b, snap = budget([pod("a", "n1"), pod("b", "n1"), pod("c", "n1"), pdb("web", {"app": "web"}, allowed=2)])
    b.take(by_name(snap, "a"), "n1")
    assert b.refusal(by_name(snap, "b"), "n1") is None
    b.take(by_name(snap, "b"), "n1")
    assert str(b.refusal(by_name(snap, "c"), "n1")) == "PodDisruptionBudget web allows no more disruptions (2 allowed)"


def test_pdb_with_zero_disruptions_allowed_refuses() -> None:
    b, snap = budget([pod("a", "n1"), pdb("web", {"app": "web"}, allowed=0)])
    assert str(b.refusal(by_name(snap, "a"), "n1")) == "PodDisruptionBudget web allows no more disruptions (0 allowed)"


def test_pdb_in_another_namespace_does_not_apply() -> None:
    b, snap = budget([pod("a", "n1"), pdb("web", {"app": "web"}, allowed=0, namespace="other")])
    assert b.refusal(by_name(snap, "a"), "n1") is None


def test_two_pdbs_selecting_a_pod_refuse_it() -> None:
    b, snap = budget([pod("a", "n1"), pdb("x", {"app": "web"}, allowed=3), pdb("w", {"app": "web"}, allowed=3)])
    expected = "more than one PodDisruptionBudget selects the pod (w, x); eviction would be refused"
    assert str(b.refusal(by_name(snap, "a"), "n1")) == expected


def test_pdb_not_yet_observed_refuses() -> None:
    stale = pdb("web", {"app": "web"}, allowed=3)
    stale["metadata"]["generation"] = 2
    b, snap = budget([pod("a", "n1"), stale])
    assert (
        str(b.refusal(by_name(snap, "a"), "n1"))
        == "PodDisruptionBudget web status is not yet observed by its controller"
    )


# ------------------------------------------------------------------ the migration controller's limits


def _job(name: str, pod: str, phase: str, *, workload: str, source: str, started: int | None, evicted: int | None):  # type: ignore[no-untyped-def]
    from datetime import timedelta

    from descheduler.model import MigrationJob, PodRef
    from tests.builders import NOW

    return MigrationJob(
        name=name,
        pod=PodRef(namespace="shop", name=pod),
        phase=phase,
        workload_uid=workload,
        source_node=source,
        started=NOW - timedelta(seconds=started) if started is not None else None,
        evicted=NOW - timedelta(seconds=evicted) if evicted is not None else None,
    )


def test_the_plan_respects_the_workload_token_bucket_cooldown_and_cooling_sources() -> None:
    import dataclasses

    from descheduler.policy import parse_policy
    from tests.builders import NOW, node, pod, snapshot

    objs = [node("a"), node("b"), *(pod(f"web-{i}", "a", namespace="shop") for i in range(6))]
    snap = snapshot(objs, NOW)
    web = next(p for p in snap.pods if p.name == "web-0")
    assert web.owner is not None
    uid = web.owner.uid
    policy = parse_policy(
        "apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\n"
        "migration: {objectLimiters: {workload: {duration: 10m, maxMigrating: 2}}, cooldown: 5m}\n"
    )
    # No jobs: two tokens, and 6 replicas allow 2 in flight.
    budget = EvictionBudget(policy.limits, snap, policy.migration)
    assert budget.workload_refusal(web) is None
    budget.take(web, "a")
    assert budget.workload_refusal(web) is None
    budget.take(web, "a")
    assert (
        str(budget.workload_refusal(web))
        == "ReplicaSet shop/web may start 2 move(s) per 600s (migration objectLimiters.workload)"
    )
    # One job started 1 minute ago, not yet evicted: one token left.
    started = dataclasses.replace(
        snap, jobs=(_job("j1", "web-9", "Running", workload=uid, source="a", started=60, evicted=None),)
    )
    budget = EvictionBudget(policy.limits, started, policy.migration)
    budget.take(web, "a")
    assert budget.workload_refusal(web) is not None
    assert budget.cooling_nodes == frozenset()
    # A pod of the workload evicted 2 minutes ago: cooldown, and its source node is no target.
    evicted = dataclasses.replace(
        snap, jobs=(_job("j1", "web-9", "Succeeded", workload=uid, source="b", started=130, evicted=120),)
    )
    budget = EvictionBudget(policy.limits, evicted, policy.migration)
    assert str(budget.workload_refusal(web)) == "ReplicaSet shop/web had a pod moved 120s ago (migration cooldown 300s)"
    assert budget.cooling_nodes == frozenset({"b"})
    # Without migration args (a caller that only wants the cycle limits) nothing changes.
    assert EvictionBudget(policy.limits, evicted).workload_refusal(web) is None


def test_each_limit_has_its_code() -> None:
    b, snap = budget([pod("a", "n1"), pdb("web", {"app": "web"}, allowed=0)], maxEvictionsPerNamespace=0)
    refusal = b.refusal(by_name(snap, "a"), "n1")
    assert refusal is not None and (refusal.code, refusal.subject) == ("MaxEvictionsPerNamespace", "default")
    pdb_refusal = b.pdb_refusal(by_name(snap, "a"))
    assert pdb_refusal is not None and (pdb_refusal.code, pdb_refusal.subject) == ("PodDisruptionBudget", "web")
    node_refusal = budget([], maxEvictionsPerNode=0)[0].node_refusal("n1")
    assert node_refusal is not None and (node_refusal.code, node_refusal.subject) == ("MaxEvictionsPerNode", "n1")


def test_a_fork_counts_like_its_budget_and_leaves_it_untouched() -> None:
    from descheduler.policy import parse_policy
    from tests.builders import NOW, snapshot

    snap = snapshot([node("a"), *(pod(f"web-{i}", "a", namespace="shop") for i in range(6))], NOW)
    policy = parse_policy(
        "apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\nlimits: {maxEvictionsPerNode: 5}\n"
        "migration: {objectLimiters: {workload: {duration: 10m, maxMigrating: 2}}}\n"
    )
    original = EvictionBudget(policy.limits, snap, policy.migration)
    web = list(snap.pods)
    original.take(web[0], "a")
    fork = original.fork()
    # The fork knows the move planned before it: one more token of the workload's two is left.
    assert fork.workload_refusal(web[1]) is None
    fork.take(web[1], "a")
    assert fork.workload_refusal(web[2]) is not None
    assert (fork.total, fork.per_node["a"]) == (2, 2)
    # The budget it came from did not see the fork's move.
    assert original.workload_refusal(web[1]) is None
    assert (original.total, original.per_node["a"]) == (1, 1)


def test_the_plan_looks_ahead_at_max_unavailable_per_workload() -> None:
    """Two of four pods are not Ready: with maxUnavailablePerWorkload 3, one Ready pod may move."""
    from descheduler.policy import parse_policy
    from tests.builders import NOW, snapshot

    objs = [node("a"), *(pod(f"web-{i}", "a", namespace="shop") for i in range(2))]
    objs += [pod(f"web-{i}", namespace="shop") for i in range(2, 4)]  # not scheduled, not Ready
    snap = snapshot(objs, NOW)
    policy = parse_policy(
        "apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\n"
        "migration: {maxUnavailablePerWorkload: 3, maxMigratingPerWorkload: 4, "
        "objectLimiters: {workload: {duration: 1s, maxMigrating: 9}}}\n"
    )
    b = EvictionBudget(policy.limits, snap, policy.migration)
    ready = [p for p in snap.pods if p.ready]
    assert b.workload_refusal(ready[0]) is None
    b.take(ready[0], "a")
    refusal = b.workload_refusal(ready[1])
    assert refusal is not None and refusal.code == "MaxUnavailablePerWorkload"
    assert str(refusal) == (
        "3 of 4 pods of ReplicaSet shop/web unavailable or migrating (limit 3); moving this one would make 4"
    )


def _evicted_job(name: str, minutes_ago: float) -> Obj:
    job = migration_job(name, name, "n2", phase="Succeeded")
    job["status"]["conditions"] = [
        {"type": "Evicted", "status": "True", "lastTransitionTime": ts(NOW - timedelta(minutes=minutes_ago))}
    ]
    return job


def test_the_hourly_budget_leaves_a_cycle_what_the_last_hour_did_not_spend() -> None:
    # 2 of 4 nodes' "100%" = 4 an hour; 2 evicted 10 and 50 min ago, one 61 min ago (outside the hour).
    jobs = [_evicted_job("j1", 10), _evicted_job("j2", 50), _evicted_job("j3", 61)]
    pods = [pod("a", "n1"), pod("b", "n1"), pod("c", "n2")]
    b, snap = budget([*pods, *jobs], maxEvictionsPerHour="100%", maxEvictionsPerCycle=10)
    assert b.per_cycle == 0  # 100% of 2 nodes = 2, both spent
    assert str(b.refusal(by_name(snap, "a"), "n1")) == (
        "limit maxEvictionsPerHour 100% of 2 nodes = 2 reached (2 evicted in the last hour)"
    )
    b, snap = budget([*pods, *jobs], maxEvictionsPerHour=3, maxEvictionsPerCycle=10)
    assert b.refusal(by_name(snap, "a"), "n1") is None
    b.take(by_name(snap, "a"), "n1")
    assert (
        str(b.refusal(by_name(snap, "c"), "n2")) == "limit maxEvictionsPerHour 3 reached (2 evicted in the last hour)"
    )
    # The per-cycle cap still binds when it is the smaller one, and names itself.
    b, snap = budget([*pods, *jobs], maxEvictionsPerHour=10, maxEvictionsPerCycle=1)
    b.take(by_name(snap, "a"), "n1")
    assert str(b.refusal(by_name(snap, "c"), "n2")) == "limit maxEvictionsPerCycle 1 reached"


def test_an_hourly_budget_needs_jobs_kept_an_hour() -> None:
    text = yaml.safe_dump({**POLICY, "limits": {"maxEvictionsPerHour": 5}, "migration": {"jobRetention": "30m"}})
    with pytest.raises(PolicyError, match=r"migration.jobRetention: maxEvictionsPerHour .* at least 1h \(is 30m\)"):
        parse_policy(text)
    assert parse_policy(yaml.safe_dump({**POLICY, "limits": {"maxEvictionsPerHour": "0%"}})).limits.never_moves


def test_a_make_before_break_move_cools_down_the_workload_its_replacement_belongs_to() -> None:
    """The rollout gives the moved pod's replacement another ReplicaSet: the move counts for that
    one too, so the replacement is not moved again within the cooldown (a ReservationFirst move's
    replacement keeps its ReplicaSet, so the same rule holds there by the job's workload alone)."""
    import dataclasses

    import msgspec

    from descheduler.model import PodRef
    from descheduler.policy import parse_policy

    objs = [node("a"), node("b"), pod("solo-new", "b", namespace="shop", owner="solo-2")]
    snap = snapshot(objs, NOW)
    new = by_name(snap, "solo-new")
    policy = parse_policy("apiVersion: descheduler.dev/v1alpha1\nkind: DeschedulerPolicy\nmigration: {cooldown: 5m}\n")
    moved = _job("j1", "solo-old", "Succeeded", workload="uid-rs-solo-1", source="a", started=130, evicted=120)
    replaced = msgspec.structs.replace(moved, replacement=PodRef(namespace="shop", name="solo-new", uid=new.uid))
    for mode, refused in (("MakeBeforeBreak", True), ("ReservationFirst", False)):
        jobs = (msgspec.structs.replace(replaced, mode=mode),)
        refusal = EvictionBudget(
            policy.limits, dataclasses.replace(snap, jobs=jobs), policy.migration
        ).workload_refusal(new)
        assert (refusal is not None and refusal.code == "WorkloadCooldown") == refused, (mode, refusal)
