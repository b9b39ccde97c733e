"""QuotaReclaim never plans a move the migration arbiter would refuse (issue 16, problem 2).

A workload's migration limits (the cooldown, the workload token bucket, maxMigratingPerWorkload,
maxUnavailablePerWorkload) apply to neither side for quota victims: the planner's budget skips them
and the arbiter does not hold QuotaReclaim's jobs by them. Every victim QuotaReclaim plans, handed to
`arbitrate` as a new job next to the jobs the snapshot holds, must be admitted.

The cluster-wide in-flight limits (maxMigratingGlobally/PerNode/PerNamespace) are left unset here:
the planner does not look ahead at them, and a job they hold back starts as the jobs before it
finish. The evictor's minReplicas keeps its default (2): QuotaReclaim applies only the evictor's hard
rules, and the arbiter does not hold its jobs to minReplicas either.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from descheduler.migration.admission import job_facts, snapshot_job_facts, workload_facts
from descheduler.migration.arbiter import Verdict, arbitrate
from descheduler.migration.executor import job_body
from descheduler.migration.objects import parse_job
from descheduler.plan_cycle import plan_cycle
from descheduler.policy import Policy, parse_policy
from descheduler.snapshot import Snapshot, load_snapshot_objects
from descheduler.timestamps import format_time
from tests.quota_builders import NOW, node, pod, quota, ts

WORKLOADS = ("web", "api")


def job(name: str, victim: str, workload: str, phase: str, started: int, evicted: int | None) -> dict[str, Any]:
    """A PodMigrationJob of an earlier cycle that moved (or is moving) a pod of `workload`."""
    conditions = (
        [{"type": "Evicted", "status": "True", "lastTransitionTime": ts(NOW - timedelta(seconds=evicted))}]
        if evicted is not None
        else []
    )
    return {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "PodMigrationJob",
        "metadata": {"name": name, "namespace": "lend", "creationTimestamp": ts(NOW - timedelta(seconds=started))},
        "spec": {"podRef": {"namespace": "lend", "name": victim}, "mode": "EvictDirectly"},
        "status": {
            "phase": phase,
            "sourceNode": "n1",
            "workload": {"kind": "ReplicaSet", "name": workload, "uid": f"uid-ReplicaSet-{workload}"},
            "startTime": ts(NOW - timedelta(seconds=started)),
            "conditions": conditions,
        },
    }


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    """A lender group `lend` (min 0) running pods of two ReplicaSets on a full node, a group `need`
    (min 8) with pending pods, migration limits and earlier jobs drawn at random."""
    running = [
        (draw(st.sampled_from(WORKLOADS)), draw(st.integers(1, 3)), draw(st.sampled_from([True, True, True, False])))
        for _ in range(draw(st.integers(2, 7)))
    ]
    earlier = [
        (
            draw(st.sampled_from(WORKLOADS)),
            draw(st.sampled_from(["Running", "Succeeded"])),
            draw(st.integers(30, 1800)),  # started this many seconds ago
        )
        for _ in range(draw(st.integers(0, 2)))
    ]
    migration = {
        "maxMigratingPerNode": None,
        "maxMigratingPerWorkload": draw(st.sampled_from([None, 1, 2, 3])),
        "maxUnavailablePerWorkload": draw(st.sampled_from([None, 1, 2, 4])),
        "objectLimiters": {"workload": {"duration": "5m", "maxMigrating": draw(st.integers(1, 3))}},
        "cooldown": draw(st.sampled_from(["0s", "10m"])),
    }
    pending = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    return {"running": running, "earlier": earlier, "migration": migration, "pending": pending}


def world_objects(world: dict[str, Any]) -> list[dict[str, Any]]:
    used = sum(cpu for _, cpu, _ in world["running"])
    objects: list[dict[str, Any]] = [
        node("n1", cpu=str(used)),
        quota("lend", min={"cpu": 0}),
        quota("need", min={"cpu": 8}),
    ]
    for i, (workload, cpu, ready) in enumerate(world["running"]):
        raw = pod(f"{workload}-{i}", "lend", node="n1", cpu=cpu, age=3600 - i, owner=("ReplicaSet", workload))
        raw["status"]["conditions"] = [{"type": "Ready", "status": "True" if ready else "False"}]
        objects.append(raw)
    objects += [pod(f"wait-{i}", "need", cpu=cpu, age=600 - i) for i, cpu in enumerate(world["pending"])]
    for i, (workload, phase, started) in enumerate(world["earlier"]):
        evicted = started - 10 if phase == "Succeeded" else None
        objects.append(job(f"earlier-{i}", f"{workload}-gone-{i}", workload, phase, started, evicted))
    return objects


def world_policy(world: dict[str, Any]) -> Policy:
    return parse_policy(
        json.dumps(
            {
                "apiVersion": "descheduler.dev/v1alpha1",
                "kind": "DeschedulerPolicy",
                "migration": world["migration"],
                "strategies": [{"name": "QuotaReclaim", "args": {"pendingGraceSeconds": 0}}],
            }
        )
    )


def verdicts_for_the_plan(snapshot: Snapshot, policy: Policy) -> list[Verdict]:
    """Plan one cycle, write its jobs as the executor does, and hand them to the arbiter."""
    plan, _ = plan_cycle(snapshot, policy)
    pods = {p.key: p for p in snapshot.pods}
    new = []
    for move in plan.migrations:
        body = job_body(move, pods.get(str(move.pod)), "this-cycle", policy, snapshot)
        body["metadata"]["creationTimestamp"] = format_time(snapshot.now)
        new.append(job_facts(parse_job(body), pods))
    earlier = [snapshot_job_facts(j) for j in snapshot.jobs]
    workloads = workload_facts(snapshot, {j.workload for j in new})
    return arbitrate(new, [*earlier, *new], workloads, policy.migration, snapshot.now, policy.evictor.min_replicas)


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_quota_reclaim_never_plans_a_move_the_arbiter_would_refuse(world: dict[str, Any]) -> None:
    snapshot = load_snapshot_objects(world_objects(world), NOW)
    refused = [v for v in verdicts_for_the_plan(snapshot, world_policy(world)) if not v.admit]
    assert refused == []


def test_two_victims_of_one_workload_are_planned_and_admitted_together() -> None:
    """The example issue 16 was found with: the default token bucket lets one pod of `web` start per
    5 minutes, and the pending pod needs both of its pods' room. A workload's migration limits do not
    apply to quota victims, in the plan or in the arbiter, so both go in one round."""
    world = {
        "running": [("web", 2, True), ("web", 2, True)],
        "earlier": [],
        "migration": {"maxMigratingPerNode": None},
        "pending": [4],
    }
    snapshot = load_snapshot_objects(world_objects(world), NOW)
    plan, _ = plan_cycle(snapshot, world_policy(world))
    assert sorted(str(m.pod) for m in plan.migrations) == ["lend/web-0", "lend/web-1"]
    verdicts = verdicts_for_the_plan(snapshot, world_policy(world))
    assert [v.admit for v in verdicts] == [True, True]
