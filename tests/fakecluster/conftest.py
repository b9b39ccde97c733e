"""Small builders for the simulated-cluster tests: a store on a simulated clock, nodes, pods, workloads."""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.clock import SimClock

T0 = 1_768_478_400.0  # 2026-01-15T12:00:00Z


@pytest.fixture
def clock() -> SimClock:
    return SimClock(T0)


@pytest.fixture
def store(clock: SimClock) -> Store:
    s = Store(clock=clock, pod_termination_delay=None)
    # The descheduler's namespace holds the simulated scheduler's Lease.
    s.load(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in ("default", "descheduler-system")
    )
    return s


def node(name: str, cpu: str = "8", memory: str = "32Gi", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def template(app: str, cpu: str = "1", memory: str = "1Gi") -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": app, "resources": {"requests": {"cpu": cpu, "memory": memory}}}]},
    }


def pod(
    name: str,
    *,
    node_name: str = "",
    app: str = "web",
    cpu: str = "1",
    memory: str = "1Gi",
    phase: str = "Pending",
    ready: bool = False,
    owner: dict[str, Any] | None = None,
    priority: int | None = None,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": {**template(app, cpu, memory)["spec"]},
        "status": {"phase": phase},
    }
    if node_name:
        obj["spec"]["nodeName"] = node_name
    if ready:
        obj["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    if priority is not None:
        obj["spec"]["priority"] = priority
    if owner is not None:
        obj["metadata"]["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
            }
        ]
    return obj


def replicaset(name: str, replicas: int, app: str = "web") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}}, "template": template(app)},
    }


def names(store: Store, resource: str = "pods") -> list[str]:
    return [o["metadata"]["name"] for o in store.list(resource)]
