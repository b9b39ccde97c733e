"""Small builders of raw Kubernetes objects (as the API's JSON has them) for planning tests.

Every timestamp is fixed: metrics are taken at `NOW` unless a test says otherwise, pods are
created an hour before. `plan(objects, policy_yaml)` runs one planning cycle on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml

from descheduler.plan import Plan
from descheduler.plan_cycle import Cycle, State, plan_cycle
from descheduler.policy import Policy, parse_policy
from descheduler.quantity import to_units
from descheduler.snapshot import Snapshot, load_snapshot_objects

Obj = dict[str, Any]

NOW = datetime(2026, 1, 15, 12, 0, 30, tzinfo=UTC)
CREATED = NOW - timedelta(hours=1)


def ts(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def uid(kind: str, namespace: str, name: str) -> str:
    return f"uid-{kind}-{namespace}-{name}".lower()


# --- nodes ---------------------------------------------------------------------------------


def node(
    name: str,
    cpu: str = "8",
    memory: str = "32Gi",
    pods: str = "110",
    *,
    labels: Mapping[str, str] | None = None,
    taints: Iterable[Mapping[str, str]] = (),
    unschedulable: bool = False,
    ready: bool = True,
    annotations: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> Obj:
    """A Ready node with allocatable cpu/memory/pods (+ `extra` resources such as nvidia.com/gpu)."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": uid("node", "", name),
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            "annotations": dict(annotations or {}),
        },
        "spec": {"taints": [dict(t) for t in taints], "unschedulable": unschedulable},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


# --- pods and their owners -----------------------------------------------------------------


def container(
    name: str = "app",
    cpu: str | None = None,
    memory: str | None = None,
    *,
    limits: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
    restart_policy: str | None = None,
) -> Obj:
    requests = {k: v for k, v in {"cpu": cpu, "memory": memory, **(extra or {})}.items() if v is not None}
    out: Obj = {"name": name, "image": "example", "resources": {"requests": requests}}
    if limits:
        out["resources"]["limits"] = dict(limits)
    if restart_policy:
        out["restartPolicy"] = restart_policy
    return out


def pod(
    name: str,
    node_name: str = "",
    cpu: str | None = "1",
    memory: str | None = "1Gi",
    *,
    namespace: str = "default",
    owner: str | None = "web",
    owner_kind: str = "ReplicaSet",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    priority: int | None = None,
    limits: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
    containers: list[Obj] | None = None,
    init_containers: list[Obj] | None = None,
    overhead: Mapping[str, str] | None = None,
    tolerations: list[Obj] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: Obj | None = None,
    volumes: list[Obj] | None = None,
    created: datetime = CREATED,
    scheduled: datetime | None = None,
    phase: str | None = None,
    deleting: bool = False,
) -> Obj:
    """A running pod (when `node_name` is set) owned by controller `owner` (None: a bare pod)."""
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "uid": uid("pod", namespace, name),
        "labels": {"app": owner or name, **(labels or {})},
        "annotations": dict(annotations or {}),
        "creationTimestamp": ts(created),
    }
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": owner_kind,
                "name": owner,
                "uid": uid(owner_kind, namespace, owner),
                "controller": True,
            }
        ]
    if deleting:
        meta["deletionTimestamp"] = ts(NOW)
    spec: Obj = {"containers": containers or [container(cpu=cpu, memory=memory, limits=limits, extra=extra)]}
    if node_name:
        spec["nodeName"] = node_name
    for key, value in (
        ("initContainers", init_containers),
        ("overhead", overhead),
        ("tolerations", tolerations),
        ("nodeSelector", node_selector),
        ("affinity", affinity),
        ("volumes", volumes),
        ("priority", priority),
    ):
        if value is not None:
            spec[key] = value
    status: Obj = {"phase": phase or ("Running" if node_name else "Pending")}
    if node_name:
        status["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(scheduled or created)},
            {"type": "Ready", "status": "True"},
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def workload(name: str, replicas: int, *, kind: str = "ReplicaSet", namespace: str = "default") -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace, "uid": uid(kind, namespace, name)},
        "spec": {"replicas": replicas},
    }


def pdb(name: str, match_labels: Mapping[str, str], allowed: int, *, namespace: str = "default") -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace, "generation": 1},
        "spec": {"selector": {"matchLabels": dict(match_labels)}},
        "status": {"disruptionsAllowed": allowed, "observedGeneration": 1},
    }


# --- load ----------------------------------------------------------------------------------


def node_metrics(name: str, cpu: str, memory: str, *, at: datetime = NOW) -> Obj:
    """metrics.k8s.io NodeMetrics (the whole node's usage, system included)."""
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": name},
        "timestamp": ts(at),
        "window": "30s",
        "usage": {"cpu": cpu, "memory": memory},
    }


def pod_metrics(name: str, cpu: str, memory: str, *, namespace: str = "default", at: datetime = NOW) -> Obj:
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {"name": name, "namespace": namespace},
        "timestamp": ts(at),
        "window": "30s",
        "containers": [{"name": "app", "usage": {"cpu": cpu, "memory": memory}}],
    }


def node_metric(
    name: str,
    cpu: str,
    memory: str,
    *,
    system: tuple[str, str] | None = None,
    pods: Iterable[tuple[str, str, str]] = (),
    namespace: str = "default",
    aggregated: Mapping[str, tuple[str, str]] | None = None,
    at: datetime = NOW,
    report_interval: int = 60,
) -> Obj:
    """Koordinator NodeMetric: node usage, optional systemUsage, pod usage as (name, cpu, memory)."""
    node_metric_status: Obj = {"nodeUsage": {"resources": {"cpu": cpu, "memory": memory}}}
    if system is not None:
        node_metric_status["systemUsage"] = {"resources": {"cpu": system[0], "memory": system[1]}}
    if aggregated:
        node_metric_status["aggregatedNodeUsages"] = [
            {
                "duration": "5m",
                "usage": {kind: {"resources": {"cpu": c, "memory": m}} for kind, (c, m) in aggregated.items()},
            }
        ]
    return {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": name},
        "spec": {"metricCollectPolicy": {"reportIntervalSeconds": report_interval}},
        "status": {
            "updateTime": ts(at),
            "nodeMetric": node_metric_status,
            "podsMetric": [
                {"namespace": namespace, "name": p, "podUsage": {"resources": {"cpu": c, "memory": m}}}
                for p, c, m in pods
            ],
        },
    }


def loaded_node(
    name: str,
    pods: Iterable[tuple[Any, ...]],
    *,
    system: str = "0",
    node_memory: str | None = None,
    max_pods: str = "110",
    **kw: Any,
) -> list[Obj]:
    """A node, its pods and their metrics-server metrics.

    Each pod is `(name or pod() keyword arguments, cpu usage[, memory usage])`; a bare name makes a
    pod requesting 1 cpu / 1Gi; memory usage defaults to 1Gi. The node's usage is the pods' sum plus `system` cpu
    (memory: the pods' sum, or `node_memory`). Other keywords go to `node` (`max_pods` is its pods).
    """
    objs = [node(name, pods=max_pods, **kw)]
    cpu_total, memory_total = _milli(system), 0
    for item in pods:
        spec, cpu, memory = (*item, "1Gi") if len(item) == 2 else item
        obj = pod(spec, name) if isinstance(spec, str) else pod(node_name=name, **spec)
        objs.append(obj)
        objs.append(pod_metrics(obj["metadata"]["name"], cpu, memory, namespace=obj["metadata"]["namespace"]))
        cpu_total += _milli(cpu)
        memory_total += to_units("memory", memory)
    objs.append(node_metrics(name, f"{cpu_total}m", node_memory or str(memory_total)))
    return objs


def _milli(cpu: str) -> int:
    return int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)


def reservation(
    name: str, node_name: str, resources: Mapping[str, str], *, owner: str, phase: str = "Available"
) -> Obj:
    """A Reservation held for the pods of controller `owner` (a ReplicaSet in `default`)."""
    return {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": name},
        "spec": {
            "nodeName": node_name,
            "resources": dict(resources),
            "owners": [
                {"controller": {"kind": "ReplicaSet", "name": owner, "uid": uid("ReplicaSet", "default", owner)}}
            ],
        },
        "status": {"phase": phase},
    }


def migration_job(name: str, pod_name: str, target: str, *, phase: str = "Running") -> Obj:
    return {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "PodMigrationJob",
        "metadata": {"name": name, "creationTimestamp": ts(NOW)},
        "spec": {
            "podRef": {"namespace": "default", "name": pod_name},
            "mode": "ReservationFirst",
            "targetNode": target,
            "strategy": "LowNodeLoad",
        },
        "status": {"phase": phase},
    }


# --- policy and planning -------------------------------------------------------------------


def lnl_policy(
    low: Mapping[str, float] | None = None,
    high: Mapping[str, float] | None = None,
    *,
    evictor: Mapping[str, Any] | None = None,
    limits: Mapping[str, Any] | None = None,
    scheduling: Mapping[str, Any] | None = None,
    migration: Mapping[str, Any] | None = None,
    **args: Any,
) -> str:
    """A policy with one LowNodeLoad strategy; cpu-only thresholds 40/60 by default, minReplicas 1.

    `args` are LowNodeLoad args by their YAML names (pass them as keyword dicts: {"nodeFit": False}).
    reliefDepth is 0, recentPodsLast 0s and lookAhead 0s unless given: a hot node is relieved to just
    under high, the victim order is lownodeload.md §5's alone, and nodes are judged by their usage now,
    as the rule-by-rule tests count their moves; tests of those arguments set them.
    """
    doc: Obj = {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "DeschedulerPolicy",
        "evictor": {"minReplicas": 1, **(evictor or {})},
        "limits": dict(limits or {}),
        "scheduling": {"usageThresholds": {}, **(scheduling or {})},
        "strategies": [
            {
                "name": "LowNodeLoad",
                "args": {
                    "lowThresholds": dict(low or {"cpu": 40}),
                    "highThresholds": dict(high or {"cpu": 60}),
                    "reliefDepth": 0,
                    "recentPodsLast": "0s",
                    "lookAhead": "0s",
                    **args,
                },
            }
        ],
    }
    if migration:
        doc["migration"] = dict(migration)
    return yaml.safe_dump(doc, sort_keys=False)


def snapshot(objects: Iterable[Mapping[str, Any]], now: datetime = NOW) -> Snapshot:
    return load_snapshot_objects(objects, now)


# The migration controller's per-workload limits (one move per workload per 5 minutes by default)
# bound the plan too; strategy tests that do not set `migration:` get limits that never bind, so
# they test the strategy alone. Tests of the limits themselves set `migration:`.
UNBOUND_MIGRATION = """
migration:
  maxMigratingPerWorkload: 100%
  maxUnavailablePerWorkload: 100%
  objectLimiters: {workload: {duration: 1s, maxMigrating: 1000}}
  cooldown: 0s
"""


def policy(policy_yaml: str) -> Policy:
    if "\nmigration:" not in policy_yaml:
        policy_yaml = policy_yaml.rstrip("\n") + "\n" + UNBOUND_MIGRATION
    return parse_policy(policy_yaml)


def plan(
    objects: Iterable[Mapping[str, Any]], policy_yaml: str, now: datetime = NOW, state: State | None = None
) -> Cycle:
    """One planning cycle over these objects; the Plan and the state for the next cycle."""
    return plan_cycle(snapshot(objects, now), policy(policy_yaml), state)


def moves(result: Plan | Cycle) -> list[tuple[str, str, str | None]]:
    """(pod name, source, target) of every migration, in plan order."""
    p = result.plan if isinstance(result, Cycle) else result
    return [(m.pod.name, m.source_node, m.target_node) for m in p.migrations]


def skips(result: Plan | Cycle) -> dict[str, str]:
    """pod name -> reason of every skipped candidate (the last reason when skipped twice)."""
    p = result.plan if isinstance(result, Cycle) else result
    return {s.pod.name: s.reason for s in p.skipped}


def classes(result: Plan | Cycle) -> dict[str, str]:
    p = result.plan if isinstance(result, Cycle) else result
    return {n.name: n.node_class for n in p.nodes}
