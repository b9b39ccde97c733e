"""A simulated cluster with a hot node, the real client on it, and helpers to drive the migration
controller on simulated time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

from descheduler.events import EventRecorder
from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.observe import cluster_snapshot
from descheduler.fakecluster.scenario import parse_scenario
from descheduler.migration.controller import MigrationController
from descheduler.migration.executor import Executor
from descheduler.plan import Migration, Plan, PodKey
from descheduler.policy import Policy, parse_policy
from descheduler.snapshot import Snapshot

T0 = 1_768_478_400.0  # 2026-01-15T12:00:00Z
NS = "shop"
JOBS = "podmigrationjobs.descheduler.dev"
RESERVATIONS = "reservations.descheduler.dev"

POLICY = """
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
evictor: {{minReplicas: 2}}
limits: {{maxEvictionsPerCycle: 1}}
scheduling:
  usageThresholds: {{cpu: 65, memory: 95}}
strategies:
- name: LowNodeLoad
  args:
    lowThresholds: {{cpu: 30, memory: 50}}
    highThresholds: {{cpu: 60, memory: 80}}
migration:
  ttl: {ttl}
  evictionPolicy: {eviction_policy}
  objectLimiters: {{workload: {{duration: 5m, maxMigrating: {bucket}}}}}
{extra}
"""


def make_policy(
    ttl: str = "5m", eviction_policy: str = "Eviction", bucket: int = 1, extra: str = "", **migration: Any
) -> Policy:
    lines = "".join(f"  {key}: {value}\n" for key, value in migration.items())
    return parse_policy(POLICY.format(ttl=ttl, eviction_policy=eviction_policy, bucket=bucket, extra=lines + extra))


def node(name: str, cpu: str = "8") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "32Gi", "pods": "110"},
            "capacity": {"cpu": cpu, "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _template(app: str, cpu: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "containers": [
                {
                    "name": app,
                    "image": f"example.com/{app}:1",
                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
                }
            ]
        },
    }


def replicaset(app: str, replicas: int, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": app, "namespace": NS, "uid": f"uid-rs-{app}"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}}, "template": _template(app, cpu)},
    }


def running_pod(app: str, index: int, node_name: str, cpu: str = "1") -> dict[str, Any]:
    template = _template(app, cpu)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{app}-{index}",
            "namespace": NS,
            "uid": f"uid-pod-{app}-{index}",
            "labels": template["metadata"]["labels"],
            "creationTimestamp": "2026-01-15T10:00:00Z",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": f"uid-rs-{app}", "controller": True}
            ],
        },
        "spec": {**template["spec"], "nodeName": node_name},
        "status": {
            "phase": "Running",
            "startTime": "2026-01-15T10:00:00Z",
            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
        },
    }


def pdb(app: str, min_available: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": app, "namespace": NS, "generation": 1},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}},
    }


def hot_cluster_objects(
    web_on_a: int = 3, web_elsewhere: int = 1, extra: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """node-a runs `web_on_a` web pods using 180% of their cpu request: about 70% busy, above the
    60% high threshold; node-b, node-c and node-d are nearly idle."""
    objects: list[dict[str, Any]] = [node(n) for n in ("node-a", "node-b", "node-c", "node-d")]
    objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    objects.append(replicaset("web", web_on_a + web_elsewhere))
    objects += [running_pod("web", i, "node-a") for i in range(web_on_a)]
    objects += [running_pod("web", web_on_a + i, "node-b") for i in range(web_elsewhere)]
    return objects + (extra or [])


def scenario(objects: list[dict[str, Any]], app: str = "web", cpu_fraction: float = 1.8, ready_delay: float = 3) -> Any:
    """The objects on a simulated cluster where the pods of `app` use `cpu_fraction` of their cpu request
    and the others little; pods are Ready `ready_delay` seconds after they start."""
    return parse_scenario(
        {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "Scenario",
            "start": T0,
            "seed": 1,
            "snapshot": objects,
            "usage": {
                "default": {"cpu": {"fraction": 0.1}, "memory": {"fraction": 0.3}},
                "pods": [{"selector": {"matchLabels": {"app": app}}, "cpu": {"fraction": cpu_fraction}}],
            },
            "timing": {"reportIntervalSeconds": 15, "startDelaySeconds": 1, "readyDelaySeconds": ready_delay},
        }
    )


@dataclass
class Harness:
    """The cluster, a client on it, the policy, and the migration parts wired to simulated time."""

    cluster: SimulatedCluster
    policy: Policy
    api: Any = None
    recorder: EventRecorder = field(init=False)

    def __post_init__(self) -> None:
        self.api = self.api or self.cluster.api_client()
        self.recorder = EventRecorder(self.api, instance="test", clock=self.now)

    def now(self) -> datetime:
        return self.cluster.clock.datetime()

    def snapshot(self) -> Snapshot:
        return cluster_snapshot(self.cluster.store)

    def controller(self, api: Any = None) -> MigrationController:
        api = api or self.api
        recorder = EventRecorder(api, instance="test", clock=self.now) if api is not self.api else self.recorder
        return MigrationController(api, lambda: self.policy, self.snapshot, self.now, recorder)

    def executor(self) -> Executor:
        return Executor(self.api, lambda: self.policy)

    def plan_move(
        self, pod: str, target: str | None, mode: str = "ReservationFirst", strategy: str = "LowNodeLoad"
    ) -> Plan:
        obj = self.cluster.store.get("pods", pod, NS)
        move = Migration(
            pod=PodKey(NS, pod),
            uid=obj["metadata"]["uid"],
            strategy=strategy,
            source_node=obj["spec"]["nodeName"],
            target_node=target,
            mode=mode,  # type: ignore[arg-type]
            reason=f"node {obj['spec']['nodeName']} is hot (test)",
        )
        return Plan(now=self.now(), migrations=(move,))

    def submit(self, plan: Plan) -> list[str]:
        return self.executor().submit(plan, self.snapshot())

    def run(
        self,
        controller: MigrationController,
        seconds: float,
        until: Callable[[], bool] | None = None,
        tick: float = 1.0,
    ) -> float:
        """Reconcile, then advance a tick, until `until()` holds or `seconds` pass; returns the time used."""
        used = 0.0
        while used < seconds:
            controller.reconcile_once()
            if until is not None and until():
                return used
            self.cluster.advance(tick)
            used += tick
        controller.reconcile_once()
        return used

    # -- reading the cluster

    def job(self, name: str) -> dict[str, Any]:
        return self.cluster.store.get(JOBS, name)

    def phase(self, name: str) -> str:
        return str((self.job(name).get("status") or {}).get("phase", "Pending"))

    def reservations(self) -> list[dict[str, Any]]:
        return self.cluster.store.list(RESERVATIONS)

    def pods(self, app: str = "web") -> list[dict[str, Any]]:
        return self.cluster.store.list("pods", NS, label_selector=f"app={app}")

    def active_pods(self, app: str = "web") -> list[dict[str, Any]]:
        """Pods that count towards their ReplicaSet's replicas: not terminating."""
        return [p for p in self.pods(app) if not p["metadata"].get("deletionTimestamp")]

    def ready_pods(self, app: str = "web") -> list[dict[str, Any]]:
        return [
            p
            for p in self.pods(app)
            if not p["metadata"].get("deletionTimestamp")
            and any(c.get("type") == "Ready" and c.get("status") == "True" for c in p["status"].get("conditions") or [])
        ]

    def evictions(self) -> int:
        return self.cluster.server.faults.count(verb="create", path="/eviction$")

    def events(self, kind: str, name: str) -> list[dict[str, Any]]:
        return [
            e
            for ns in ("default", NS)
            for e in self.cluster.store.list("events", ns)
            if e["involvedObject"].get("kind") == kind and e["involvedObject"].get("name") == name
        ]


def start_cluster(objects: list[dict[str, Any]], **usage: Any) -> SimulatedCluster:
    """`scenario(objects, **usage)` started, every pod Running and a first metrics report made."""
    cluster = SimulatedCluster(scenario(objects, **usage), start=T0).start()
    cluster.advance(16)  # every pod Running and a first metrics report
    return cluster


@pytest.fixture
def make_harness() -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(objects: list[dict[str, Any]] | None = None, policy: Policy | None = None, **usage: Any) -> Harness:
        harness = Harness(start_cluster(objects or hot_cluster_objects(), **usage), policy or make_policy())
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.api.close()
        harness.cluster.stop()
