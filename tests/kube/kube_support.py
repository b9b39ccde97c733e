"""Helpers for the kube tests (imported by name): waiting, manifests, and the server's state as records."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from descheduler.kube import KINDS, ClusterCache
from descheduler.kube.listing import records_of
from descheduler.sim.apiserver import FakeApiServer


def eventually(check: Callable[[], bool], timeout: float = 10.0, interval: float = 0.02) -> None:
    """Wait until `check()` is true; fail with the last state after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def node(name: str, cpu: str = "8", memory: str = "32Gi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    namespace: str = "default",
    *,
    node: str = "",
    cpu: str = "500m",
    memory: str = "1Gi",
    labels: dict[str, str] | None = None,
    owner: str | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {"app": "web"}}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": f"uid-{owner}", "controller": True}
        ]
    spec: dict[str, Any] = {
        "containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
    }
    if node:
        spec["nodeName"] = node
    status = {"phase": "Running" if node else "Pending"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


def server_records(server: FakeApiServer, kind: str) -> dict[str, Any]:
    """What the server holds for a resource, decoded into records the way the cache decodes them."""
    spec = KINDS[kind]
    resource = f"{spec.plural}.{spec.group}" if spec.group else spec.plural
    return records_of(spec, server.store.list(resource)).records


def converged(cache: ClusterCache, server: FakeApiServer, kinds: tuple[str, ...]) -> Callable[[], bool]:
    return lambda: all(cache.items(kind) == server_records(server, kind) for kind in kinds)
