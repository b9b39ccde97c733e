"""The migration limits, defined once (descheduler/migration/limits.py), and their two callers.

The arbiter and the planner's budget apply the same functions to the same facts, so a limit reads
the same in a plan's skip and in a waiting job's status.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import timedelta

import pytest

from descheduler.budget import EvictionBudget
from descheduler.migration import limits
from descheduler.migration.admission import snapshot_job_facts, workload_facts
from descheduler.migration.arbiter import arbitrate
from descheduler.migration.limits import JobFacts, WorkloadFacts
from descheduler.model import MigrationJob, Pod, PodRef
from descheduler.policy import MigrationArgs, Policy, parse_policy
from descheduler.snapshot import Snapshot
from tests.builders import NOW, node, pod, snapshot, workload

WEB = WorkloadFacts("w1", "ReplicaSet shop/web", 4, frozenset({"shop/a", "shop/b", "shop/c", "shop/d"}))


def args(**kwargs: object) -> MigrationArgs:
    return MigrationArgs.model_validate(kwargs)


def moves(**kwargs: object) -> limits.WorkloadMoves:
    base = limits.WorkloadMoves(in_flight=0, before=0, starts=(), evicted=(), migrating=frozenset())
    return dataclasses.replace(base, **kwargs)  # type: ignore[arg-type]


# --- each rule, its code and words ----------------------------------------------------------


def test_cluster_wide_limits_count_jobs_in_flight_and_zero_means_never() -> None:
    a = args(maxMigratingGlobally=3, maxMigratingPerNode=2, maxMigratingPerNamespace=1)
    assert limits.max_migrating_globally(2, a) is None
    assert str(limits.max_migrating_globally(3, a)) == "3 jobs in flight (maxMigratingGlobally 3)"
    assert str(limits.max_migrating_per_node("n1", 2, a)) == "2 jobs in flight from node n1 (maxMigratingPerNode 2)"
    refusal = limits.max_migrating_per_namespace("shop", 1, a)
    assert refusal is not None and refusal.code == "MaxMigratingPerNamespace" and refusal.subject == "shop"
    assert str(refusal) == "1 jobs in flight in namespace shop (maxMigratingPerNamespace 1)"
    assert limits.never_moves(a) is None
    never = limits.never_moves(args(maxMigratingPerNode=0))
    assert never is not None and never.code == "MaxMigratingPerNode"
    assert str(never) == "maxMigratingPerNode is 0: no pod may ever move"


def test_pod_already_moving() -> None:
    assert limits.pod_already_moving("shop/a", {"shop/b"}) is None
    assert str(limits.pod_already_moving("shop/a", {"shop/a"})) == "another job is moving pod shop/a"


def test_workload_limits_that_resolve_to_zero_are_permanent() -> None:
    assert limits.workload_never(WEB, args()) is None
    never = limits.workload_never(WEB, args(maxMigratingPerWorkload=0))
    assert never is not None and never.code == "MaxMigratingPerWorkload"
    assert str(never) == "ReplicaSet shop/web with 4 replicas allows 0 pods migrating at once"
    never = limits.workload_never(WEB, args(maxUnavailablePerWorkload="0%"))
    assert str(never) == "ReplicaSet shop/web with 4 replicas allows 0 unavailable pods"
    assert str(limits.min_replicas(WEB, 5)) == "workload has 4 replica(s) < minReplicas 5"
    assert limits.min_replicas(WEB, 4) is None


def test_in_flight_per_workload_says_how_many_are_in_flight_and_how_many_an_earlier_cycle_started() -> None:
    a = args(maxMigratingPerWorkload=2)
    assert limits.max_migrating_per_workload(WEB, moves(in_flight=1, before=1), a) is None
    refusal = limits.max_migrating_per_workload(WEB, moves(in_flight=2, before=1), a)
    assert str(refusal) == (
        "ReplicaSet shop/web allows 2 pod(s) migrating at once (2 in flight, 1 of them from earlier cycles)"
    )


def test_unavailable_counts_pods_not_ready_or_moving_and_this_one_if_ready() -> None:
    a = args(maxUnavailablePerWorkload=1)
    assert limits.max_unavailable_per_workload(WEB, "shop/a", moves(), a) is None
    refusal = limits.max_unavailable_per_workload(WEB, "shop/a", moves(migrating=frozenset({"shop/b"})), a)
    assert str(refusal) == (
        "1 of 4 pods of ReplicaSet shop/web unavailable or migrating (limit 1); moving this one would make 2"
    )
    # A pod that is not Ready costs no availability when it moves.
    assert limits.max_unavailable_per_workload(WEB, "shop/x", moves(migrating=frozenset({"shop/b"})), a) is None


def test_token_bucket_and_cooldown_know_when_to_retry() -> None:
    a = args(objectLimiters={"workload": {"duration": "5m", "maxMigrating": 1}}, cooldown="10m")
    rate = limits.workload_rate(WEB, moves(starts=(NOW - timedelta(minutes=2),)), a, NOW)
    assert rate is not None and rate.code == "WorkloadRateLimited"
    assert str(rate) == "ReplicaSet shop/web may start 1 move(s) per 300s (migration objectLimiters.workload)"
    assert limits.retry_after(rate) == pytest.approx(180)
    assert limits.workload_rate(WEB, moves(starts=(NOW - timedelta(minutes=5),)), a, NOW) is None
    cooling = limits.workload_cooldown(WEB, moves(evicted=(NOW - timedelta(minutes=4),)), a.cooldown, NOW)
    assert str(cooling) == "ReplicaSet shop/web had a pod moved 240s ago (migration cooldown 600s)"
    assert cooling is not None and limits.retry_after(cooling) == pytest.approx(360)
    assert limits.workload_cooldown(WEB, moves(evicted=(NOW - timedelta(minutes=11),)), a.cooldown, NOW) is None


def test_a_workloads_limits_are_checked_in_one_order() -> None:
    """Cooldown, token bucket, jobs in flight, unavailable pods: the first in the way is named."""
    a = args(objectLimiters={"workload": {"duration": "5m", "maxMigrating": 1}}, maxMigratingPerWorkload=1)
    crowded = moves(in_flight=1, starts=(NOW,), evicted=(NOW - timedelta(minutes=1),), migrating=frozenset(WEB.ready))
    order = []
    while (refusal := limits.workload_limits(WEB, "shop/a", crowded, a, NOW)) is not None:
        order.append(refusal.code)
        crowded = {
            "WorkloadCooldown": lambda m: dataclasses.replace(m, evicted=()),
            "WorkloadRateLimited": lambda m: dataclasses.replace(m, starts=()),
            "MaxMigratingPerWorkload": lambda m: dataclasses.replace(m, in_flight=0),
            "MaxUnavailablePerWorkload": lambda m: dataclasses.replace(m, migrating=frozenset()),
        }[refusal.code](crowded)
    assert order == ["WorkloadCooldown", "WorkloadRateLimited", "MaxMigratingPerWorkload", "MaxUnavailablePerWorkload"]


def test_moves_of_counts_one_workloads_jobs_for_a_cycle() -> None:
    def job(name: str, phase: str, workload: str = "w1", cycle: str = "c0", **kw: object) -> JobFacts:
        return JobFacts(name, "shop", f"shop/{name}", phase, NOW, workload=workload, cycle=cycle, **kw)  # type: ignore[arg-type]

    jobs = [
        job("a", "Running", started=NOW),
        job("b", "Running", cycle="c1", started=NOW),
        job("c", "Succeeded", started=NOW - timedelta(hours=1), evicted=NOW - timedelta(minutes=50)),
        job("d", "Succeeded", cycle="c1", evicted=NOW),
        job("e", "Running", workload="w2"),
        job("f", "Pending"),
    ]
    counted = limits.moves_of("w1", jobs, "c1")
    assert (counted.in_flight, counted.before) == (2, 1)
    assert counted.starts == (NOW, NOW, NOW - timedelta(hours=1))
    assert counted.evicted == (NOW - timedelta(minutes=50),)  # not its own cycle's
    assert counted.migrating == {"shop/a", "shop/b", "shop/e"}  # every pod in flight


def test_cooling_sources() -> None:
    def job(name: str, node: str, evicted: int | None) -> JobFacts:
        at = NOW - timedelta(minutes=evicted) if evicted is not None else None
        return JobFacts(name, "ns", f"ns/{name}", "Succeeded", NOW, source_node=node, evicted=at)

    jobs = [job("a", "n1", 3), job("b", "n2", 30), job("c", "n3", None)]
    assert limits.cooling_sources(jobs, timedelta(minutes=10), NOW) == {"n1"}
    assert limits.cooling_sources(jobs, timedelta(0), NOW) == set()


# --- the plan and the job's status read the same ---------------------------------------------


def _world(*jobs: MigrationJob, migration: dict[str, object]) -> tuple[Snapshot, Policy, Pod]:
    """Four Ready pods of ReplicaSet shop/web on node a; the cluster-wide in-flight limits unset."""
    objs = [node("a"), node("b"), workload("web", 4, namespace="shop")]
    objs += [pod(f"web-{i}", "a", namespace="shop", owner="web") for i in range(4)]
    snap = dataclasses.replace(snapshot(objs, NOW), jobs=jobs)
    doc = {"apiVersion": "descheduler.dev/v1alpha1", "kind": "DeschedulerPolicy"}
    policy = parse_policy(json.dumps({**doc, "migration": {"maxMigratingPerNode": None, **migration}}))
    web = next(p for p in snap.pods if p.name == "web-0")
    return snap, policy, web


def _earlier(name: str, web: Pod, phase: str, started: int, evicted: int | None = None) -> MigrationJob:
    assert web.owner is not None
    return MigrationJob(
        name=name,
        pod=PodRef(namespace="shop", name=f"{name}-pod"),
        phase=phase,
        workload_uid=web.owner.uid,
        source_node="b",
        created=NOW - timedelta(seconds=started),
        started=NOW - timedelta(seconds=started),
        evicted=NOW - timedelta(seconds=evicted) if evicted is not None else None,
    )


def _job_of(pod: Pod, planned: int) -> JobFacts:
    assert pod.owner is not None
    return JobFacts(
        f"new-{planned}", pod.namespace, pod.key, "Pending", NOW, source_node="a", workload=pod.owner.uid, cycle="c9"
    )


FREE_BUCKET = {"workload": {"duration": "1s", "maxMigrating": 9}}


@pytest.mark.parametrize(
    ("migration", "earlier", "planned", "code"),
    [
        ({"cooldown": "10m"}, ("Succeeded", 200, 100), 0, "WorkloadCooldown"),
        (
            {"objectLimiters": {"workload": {"duration": "10m", "maxMigrating": 2}}},
            ("Running", 60),
            1,
            "WorkloadRateLimited",
        ),
        ({"maxMigratingPerWorkload": 2, "objectLimiters": FREE_BUCKET}, ("Running", 60), 1, "MaxMigratingPerWorkload"),
        ({"maxMigratingPerWorkload": 0}, None, 0, "MaxMigratingPerWorkload"),
        (
            {"maxUnavailablePerWorkload": 1, "maxMigratingPerWorkload": 3, "objectLimiters": FREE_BUCKET},
            None,
            1,
            "MaxUnavailablePerWorkload",
        ),
    ],
)
def test_the_budget_refuses_the_move_the_arbiter_refuses_in_the_same_words(
    migration: dict[str, object], earlier: tuple[str, int] | tuple[str, int, int] | None, planned: int, code: str
) -> None:
    """Plan moves of one workload until the budget refuses; the arbiter, given those moves as jobs
    of a new cycle, admits the planned ones and refuses the next with the same Refusal."""
    snap, policy, web = _world(migration=migration)
    if earlier is not None:
        snap, policy, web = _world(_earlier("old", web, *earlier), migration=migration)
    budget = EvictionBudget(policy.limits, snap, policy.migration)
    pods = [p for p in snap.pods if p.owner is not None]
    for moved in pods[:planned]:
        assert budget.workload_refusal(moved) is None
        budget.take(moved, "a")
    refusal = budget.workload_refusal(pods[planned])
    assert refusal is not None and refusal.code == code
    new = [_job_of(p, i) for i, p in enumerate(pods[: planned + 1])]
    live = [snapshot_job_facts(j) for j in snap.jobs]
    verdicts = arbitrate(new, [*live, *new], workload_facts(snap, {new[0].workload}), policy.migration, NOW, 1)
    by_name = {v.job: v for v in verdicts}
    assert [by_name[j.name].admit for j in new[:-1]] == [True] * planned
    last = by_name[new[-1].name]
    assert not last.admit and last.refusal == refusal
    assert (last.reason, last.message) == (refusal.code, str(refusal))
