"""The simulation's own limit checker, counted from the API objects: it must see a limit exceeded by
the jobs in flight, and nothing while none runs."""

from __future__ import annotations

from typing import Any

from descheduler.policy import default_policy
from descheduler.simulate.record import SimulationRecord, limit_violations


def _pod(name: str, node: str, owner: str) -> dict[str, Any]:
    meta = {
        "name": name,
        "namespace": "web",
        "ownerReferences": [{"kind": "ReplicaSet", "name": owner, "controller": True}],
    }
    return {"metadata": meta, "spec": {"nodeName": node}}


def _job(name: str, pod: str, phase: str = "Running") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"podRef": {"namespace": "web", "name": pod}},
        "status": {"phase": phase},
    }


PODS = [_pod("a-1", "n1", "a"), _pod("a-2", "n1", "a"), _pod("b-1", "n1", "b"), _pod("c-1", "n2", "c")]


def test_jobs_running_past_the_node_and_workload_limits_are_violations() -> None:
    policy = default_policy()  # maxMigratingPerNode 2; a workload of 2 replicas: 1 in flight
    jobs = [_job("j1", "a-1"), _job("j2", "a-2"), _job("j3", "b-1"), _job("j4", "c-1")]
    assert sorted(limit_violations(jobs, PODS, policy)) == [
        "node n1: 3 jobs running > 2",
        "workload web/ReplicaSet/a: 2 jobs running > 1",
    ]


def test_jobs_not_running_exceed_nothing() -> None:
    jobs = [_job("j1", "a-1", "Succeeded"), _job("j2", "a-2", "Pending"), _job("j3", "b-1", "Failed")]
    assert limit_violations(jobs, PODS, default_policy()) == []


def test_a_step_remembers_each_new_jobs_source_node_once() -> None:
    record = SimulationRecord(default_policy(), began=0.0)
    record.on_step([_job("j1", "c-1", "Pending")], PODS)
    record.on_step([_job("j1", "c-1", "Succeeded")], [])  # the pod is gone: the source stays
    assert record.sources == {"j1": "n2"} and record.limit_violations == []
