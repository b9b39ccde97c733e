"""Which limits hold QuotaReclaim's victims back: the policy's `limits`, PDBs and QuotaReclaim's own
pacing do; a workload's migration limits (cooldown, objectLimiters.workload, maxMigratingPerWorkload,
maxUnavailablePerWorkload) do not, in the plan or in the arbiter."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import yaml

from descheduler.migration.arbiter import arbitrate
from descheduler.migration.limits import JobFacts, WorkloadFacts
from descheduler.plan_cycle import plan_cycle
from descheduler.policy import parse_policy
from descheduler.snapshot import load_snapshot_objects
from tests.quota_builders import NOW, node, pod, quota, ts
from tests.strategies.test_quotareclaim_admitted import verdicts_for_the_plan

ROOT = Path(__file__).resolve().parents[2]
WEB = ("ReplicaSet", "web")
WEB_UID = "uid-ReplicaSet-web"


def default_policy_with_quota_reclaim() -> Any:
    """config/policy.yaml as shipped, with QuotaReclaim enabled (a 20 s grace, as on the control plane)."""
    doc = yaml.safe_load((ROOT / "config/policy.yaml").read_text())
    doc["strategies"].append({"name": "QuotaReclaim", "args": {"pendingGraceSeconds": 20}})
    return parse_policy(json.dumps(doc))


def earlier_eviction(seconds_ago: int) -> dict[str, Any]:
    """A QuotaReclaim job of an earlier round that evicted a pod of `web` a moment ago."""
    at = ts(NOW - timedelta(seconds=seconds_ago))
    return {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "PodMigrationJob",
        "metadata": {"name": "earlier", "creationTimestamp": at},
        "spec": {
            "podRef": {"namespace": "team-a", "name": "a-gone"},
            "mode": "EvictDirectly",
            "strategy": "QuotaReclaim",
        },
        "status": {
            "phase": "Succeeded",
            "sourceNode": "n1",
            "workload": {"kind": "ReplicaSet", "name": "web", "uid": WEB_UID},
            "startTime": at,
            "conditions": [{"type": "Evicted", "status": "True", "lastTransitionTime": at}],
        },
    }


def one_workload_lends() -> list[dict[str, Any]]:
    """team-a's twelve pods are one ReplicaSet on three full nodes; team-b waits for six."""
    objects: list[dict[str, Any]] = [
        *[node(f"n{i}", cpu="4") for i in range(1, 4)],
        quota("team-a", min={"cpu": 4}, max={"cpu": 16}),
        quota("team-b", min={"cpu": 8}, max={"cpu": 16}),
    ]
    for i in range(12):
        raw = pod(f"a-{i:02}", "team-a", node=f"n{1 + i % 3}", cpu=1, age=3600 - i, owner=WEB)
        raw["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
        objects.append(raw)
    objects += [pod(f"w-{i}", "team-b", cpu=1, age=600 - i) for i in range(6)]
    return [*objects, earlier_eviction(20)]


def test_default_policy_gives_a_reclaim_of_six_its_six_evictions_in_one_round() -> None:
    policy = default_policy_with_quota_reclaim()
    snapshot = load_snapshot_objects(one_workload_lends(), NOW)
    plan, _ = plan_cycle(snapshot, policy)
    planned = [m for m in plan.migrations if m.strategy == "QuotaReclaim"]
    assert len(planned) == 6
    assert not [s for s in plan.skipped if s.code in ("WorkloadCooldown", "WorkloadRateLimited")]
    # The migration controller admits every one of them too.
    assert [v.admit for v in verdicts_for_the_plan(snapshot, policy)] == [True] * 6


def test_the_policy_limits_still_bind_quota_victims() -> None:
    doc = yaml.safe_load((ROOT / "config/policy.yaml").read_text())
    doc["limits"] = {"maxEvictionsPerCycle": 4}
    doc["strategies"].append({"name": "QuotaReclaim", "args": {"pendingGraceSeconds": 20}})
    plan, _ = plan_cycle(load_snapshot_objects(one_workload_lends(), NOW), parse_policy(json.dumps(doc)))
    assert len([m for m in plan.migrations if m.strategy == "QuotaReclaim"]) == 4


def facts(strategy: str) -> JobFacts:
    return JobFacts(
        name=f"job-{strategy}",
        namespace="team-a",
        pod="team-a/a-00",
        phase="Pending",
        created=NOW,
        source_node="n1",
        workload=WEB_UID,
        cycle="now",
        strategy=strategy,
    )


def test_the_arbiter_skips_a_workloads_limits_for_quota_victims_only() -> None:
    policy = default_policy_with_quota_reclaim()
    workload = WorkloadFacts(WEB_UID, "ReplicaSet team-a/web", replicas=12, ready=frozenset({"team-a/a-00"}))
    evicted = NOW - timedelta(seconds=20)
    earlier = JobFacts(
        name="earlier",
        namespace="team-a",
        pod="team-a/a-gone",
        phase="Succeeded",
        created=evicted,
        source_node="n1",
        workload=WEB_UID,
        cycle="before",
        started=evicted,
        evicted=evicted,
        strategy="QuotaReclaim",
    )
    verdicts = {}
    for strategy in ("QuotaReclaim", "LowNodeLoad"):
        job = facts(strategy)
        [verdict] = arbitrate([job], [earlier, job], {WEB_UID: workload}, policy.migration, NOW)
        verdicts[strategy] = verdict.reason
    assert verdicts == {"QuotaReclaim": "Admitted", "LowNodeLoad": "WorkloadCooldown"}
