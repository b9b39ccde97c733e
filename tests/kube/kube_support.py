"""Helpers for the kube tests (imported by name): waiting, manifests, and the server's state as records."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from hypothesis import strategies as st

from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.kube import (
    DAEMONSETS,
    DEPLOYMENTS,
    KINDS,
    MIGRATION_JOBS,
    NAMESPACES,
    NODES,
    PDBS,
    PODS,
    PVCS,
    PVS,
    QUOTAS_SIGS,
    QUOTAS_X,
    REPLICASETS,
    RESERVATIONS,
    STATEFULSETS,
    ClusterCache,
)
from descheduler.kube.listing import records_of
from descheduler.model import Node, Pod
from descheduler.snapshot import Snapshot
from tests.waiting import wait_for


def eventually(check: Callable[[], bool], timeout: float = 10.0, interval: float = 0.02) -> None:
    """Wait until `check()` is true; fail after `timeout` seconds."""
    wait_for(check, timeout, interval=interval)


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


def reference_snapshot(cache: ClusterCache, now: datetime) -> Snapshot:
    """What `Snapshot.build` makes of the cache's records: the reference the cache's fast path must equal."""

    def records(kind: str, order: Callable[[Any], Any] | None = None) -> list[Any]:
        found = cache.records(kind) if cache.has(kind) else []
        return sorted(found, key=order) if order is not None else found

    by_name = lambda r: r.name  # noqa: E731
    by_namespace = lambda r: (r.namespace, r.name)  # noqa: E731
    nodes = records(NODES)
    names = {n.name for n in nodes}
    return Snapshot.build(
        now=now,
        nodes=nodes,
        pods=[p for p in records(PODS) if not p.node_name or p.node_name in names],
        pdbs=records(PDBS, by_namespace),
        pvcs=records(PVCS),
        pvs=records(PVS),
        workloads=[w for kind in (DEPLOYMENTS, REPLICASETS, STATEFULSETS, DAEMONSETS) for w in records(kind)],
        namespaces=cache.items(NAMESPACES) if cache.has(NAMESPACES) else {},
        quotas=[q for kind in (QUOTAS_SIGS, QUOTAS_X) for q in records(kind, by_namespace)],
        reservations=records(RESERVATIONS, by_name),
        jobs=records(MIGRATION_JOBS, by_name),
    )


NOTHING_TO_READ: st.SearchStrategy[object] = st.none()


def cluster_changes(
    pods: st.SearchStrategy[Pod], nodes: Sequence[str], snapshot: st.SearchStrategy[object] = NOTHING_TO_READ
) -> st.SearchStrategy[list[tuple[str, object]]]:
    """Up to 40 steps for `apply_step`, with ("snapshot", a value drawn from `snapshot`) where the
    test takes a snapshot."""
    return st.lists(
        st.one_of(
            st.tuples(st.just("pod"), pods),
            st.tuples(st.just("delete-pod"), pods),
            st.tuples(st.just("node"), st.sampled_from(nodes)),
            st.tuples(st.just("delete-node"), st.sampled_from(nodes)),
            st.tuples(st.just("snapshot"), snapshot),
        ),
        max_size=40,
    )


def plain_node(name: str) -> Node:
    return Node(name=name)


def apply_step(cache: ClusterCache, step: str, value: object, node: Callable[[str], Node] = plain_node) -> None:
    """One generated cluster change, as the reflector would apply its watch event: "pod" (ADDED, or
    MODIFIED when the key is cached), "delete-pod", "node" (`node(name)` ADDED), "delete-node"."""
    if step in ("pod", "delete-pod"):
        assert isinstance(value, Pod)
        cached = cache.get(PODS, value.key) is not None
        event = "DELETED" if step == "delete-pod" else "MODIFIED" if cached else "ADDED"
        cache.apply(KINDS[PODS], event, value.key, value, None)
    elif step in ("node", "delete-node"):
        name = str(value)
        cache.apply(KINDS[NODES], "ADDED" if step == "node" else "DELETED", name, node(name), None)
    else:
        raise AssertionError(f"not a cluster change: {step}")
