"""Builders of raw quota-world objects (nodes, ElasticQuotas, pods, PDBs) and a one-call planner.

Objects go through the real decode path (`load_snapshot_objects`), then one planning cycle with
a policy that runs only QuotaReclaim. Pods are created an hour before `NOW` unless told otherwise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from descheduler.plan import Plan
from descheduler.plan_cycle import plan_cycle
from descheduler.policy import parse_policy
from descheduler.snapshot import load_snapshot_objects

Obj = dict[str, Any]

NOW = datetime(2026, 1, 15, 12, 0, 0, tzinfo=UTC)
GPU = "nvidia.com/gpu"
QUOTA_LABEL = "quota.scheduling.koordinator.sh/name"
PARENT_LABEL = "quota.scheduling.koordinator.sh/parent"


def ts(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def node(name: str, cpu: str = "8", memory: str = "64Gi", gpu: int = 0, *, unschedulable: bool = False) -> Obj:
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110"}
    if gpu:
        allocatable[GPU] = str(gpu)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {"allocatable": allocatable, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def quota(
    name: str,
    min: Mapping[str, str | int] | None = None,
    max: Mapping[str, str | int] | None = None,
    *,
    parent: str | None = None,
    namespace: str | None = None,
    api_group: str = "scheduling.sigs.k8s.io",
    over_max_since: datetime | None = None,
) -> Obj:
    meta: Obj = {"name": name, "namespace": namespace or name}
    if parent:
        meta["labels"] = {PARENT_LABEL: parent}
    if over_max_since is not None:
        meta["annotations"] = {"descheduler.dev/over-max-since": ts(over_max_since)}
    spec: Obj = {}
    if min is not None:
        spec["min"] = {k: str(v) for k, v in min.items()}
    if max is not None:
        spec["max"] = {k: str(v) for k, v in max.items()}
    return {"apiVersion": f"{api_group}/v1alpha1", "kind": "ElasticQuota", "metadata": meta, "spec": spec}


def pod(
    name: str,
    namespace: str,
    *,
    node: str | None = None,
    cpu: str | int | None = None,
    gpu: int = 0,
    memory: str | None = None,
    priority: int | None = None,
    quota: str | None = None,
    age: int = 3600,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owner: tuple[str, str] | None = ("ReplicaSet", ""),
    deleting: bool = False,
    preemption_policy: str | None = None,
) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": f"uid-{namespace}-{name}",
        "creationTimestamp": ts(NOW - timedelta(seconds=age)),
        "labels": {**({QUOTA_LABEL: quota} if quota else {}), **(labels or {})},
        "annotations": dict(annotations or {}),
    }
    if owner is not None:
        kind, owner_name = owner
        owner_name = owner_name or f"{name}-owner"
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": kind,
                "name": owner_name,
                "uid": f"uid-{kind}-{owner_name}",
                "controller": True,
            }
        ]
    if deleting:
        meta["deletionTimestamp"] = ts(NOW)
    requests: dict[str, str] = {}
    if cpu is not None:
        requests["cpu"] = str(cpu)
    if memory is not None:
        requests["memory"] = memory
    if gpu:
        requests[GPU] = str(gpu)
    spec: Obj = {"containers": [{"name": "main", "resources": {"requests": requests, "limits": dict(requests)}}]}
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    if preemption_policy:
        spec["preemptionPolicy"] = preemption_policy
    phase = "Running" if node else "Pending"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {"phase": phase}}


def pdb(name: str, namespace: str, match_labels: Mapping[str, str], allowed: int) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"selector": {"matchLabels": dict(match_labels)}},
        "status": {"disruptionsAllowed": allowed, "observedGeneration": 1},
    }


def policy_text(args: Mapping[str, Any] | None = None, limits: Mapping[str, Any] | None = None) -> str:
    doc: Obj = {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "DeschedulerPolicy",
        "strategies": [{"name": "QuotaReclaim", "args": {"pendingGraceSeconds": 0, **(args or {})}}],
    }
    if limits:
        doc["limits"] = dict(limits)
    # Limits of the migration controller that never bind: these tests test the strategy alone.
    doc["migration"] = {
        "maxMigratingPerWorkload": "100%",
        "maxUnavailablePerWorkload": "100%",
        "objectLimiters": {"workload": {"duration": "1s", "maxMigrating": 1000}},
        "cooldown": "0s",
    }
    return json.dumps(doc)


def run(
    objects: Sequence[Obj],
    args: Mapping[str, Any] | None = None,
    *,
    limits: Mapping[str, Any] | None = None,
    state: Mapping[str, Any] | None = None,
    now: datetime = NOW,
) -> tuple[Plan, dict[str, Any]]:
    """One cycle with only QuotaReclaim; returns the plan and the strategy's new state."""
    snapshot = load_snapshot_objects(objects, now)
    policy = parse_policy(policy_text(args, limits))
    plan, new_state = plan_cycle(snapshot, policy, {"QuotaReclaim": dict(state or {})})
    return plan, new_state.get("QuotaReclaim", {})


def victims(plan: Plan) -> list[str]:
    return [f"{m.pod.namespace}/{m.pod.name}" for m in plan.migrations]


def skip_reason(plan: Plan, key: str) -> str | None:
    return next((s.reason for s in plan.skipped if f"{s.pod.namespace}/{s.pod.name}" == key), None)


def skip_code(plan: Plan, key: str) -> str | None:
    """The code of the rule that kept this pod (namespace/name) from being a victim or being served."""
    return next((s.code for s in plan.skipped if f"{s.pod.namespace}/{s.pod.name}" == key), None)
