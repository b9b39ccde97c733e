"""Workload controllers and garbage collection: what keeps a cluster's pods coming back.

Each controller has `step(now)`; a step reads the store, compares desired with actual and
writes the difference, and is skipped when nothing it reads was written since its last pass.
Simplified from kube-controller-manager: no rollouts, no expectations cache — one step converges.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from collections.abc import Callable
from typing import Any

from descheduler.fakecluster.apiserver import ApiError, Store
from descheduler.fakecluster.pods import (
    Obj,
    controller_ref,
    is_active,
    is_ready,
    is_terminating,
    owned_by,
    owner_reference,
)

_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # the API server's generateName alphabet


def _live(store: Store, resource: str) -> list[Obj]:
    """The objects of `resource` not being deleted: a controller leaves those alone (read only: the
    controllers write through the store, and copy what they build from)."""
    return [obj for obj in store.list(resource, shared=True) if not is_terminating(obj)]


def _pod_from_template(owner: Obj, name: str) -> Obj:
    template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
    meta = template.get("metadata") or {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": owner["metadata"]["namespace"],
            "labels": dict(meta.get("labels") or {}),
            "annotations": dict(meta.get("annotations") or {}),
            "ownerReferences": [owner_reference(owner)],
        },
        "spec": template.get("spec") or {"containers": []},
    }


def _replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _write_status(store: Store, obj: Obj, status: dict[str, Any]) -> None:
    merged = {**(obj.get("status") or {}), **status}
    if merged == obj.get("status"):
        return
    try:
        store.modify(
            store.type_of(obj),
            obj["metadata"]["name"],
            obj["metadata"]["namespace"],
            lambda o: {**o, "status": merged},
            subresource="status",
        )
    except ApiError as err:
        if err.code != 404:
            raise


class _Inputs:
    """The resources a level-triggered controller reads. An unchanged cluster gives the same decisions,
    so a pass over it would write nothing: `run` skips the pass unless one of them was written since
    the last pass finished (the pass's own writes included)."""

    def __init__(self, store: Store, *resources: str) -> None:
        self.store = store
        self.resources = resources
        self._done: tuple[int, ...] | None = None

    def run(self, sync: Callable[[], None], *, anyway: bool = False) -> None:
        seen = self.store.written(*self.resources)
        if anyway or seen != self._done:
            sync()
            self._done = seen


class ReplicaSetController:
    """Keeps spec.replicas active pods per ReplicaSet, named <rs>-<5 random chars>."""

    def __init__(self, store: Store, rng: random.Random | None = None) -> None:
        self.store = store
        self.rng = rng or random.Random(0)
        self._inputs = _Inputs(store, "pods", "replicasets.apps")

    def _name(self, prefix: str, namespace: str) -> str:
        while True:
            name = prefix + "-" + "".join(self.rng.choices(_NAME_CHARS, k=5))
            if not self.store.exists("pods", name, namespace):
                return name

    def step(self, now: float) -> None:
        self._inputs.run(self._sync)

    def _sync(self) -> None:
        by_owner: dict[str, list[Obj]] = {}  # one listing, grouped by controller UID
        for pod in self.store.list("pods", shared=True):
            ref = controller_ref(pod)
            if ref is not None and ref.get("uid"):
                by_owner.setdefault(str(ref["uid"]), []).append(pod)
        for rs in _live(self.store, "replicasets.apps"):
            meta = rs["metadata"]
            ns = meta["namespace"]
            owned = [p for p in by_owner.get(str(meta.get("uid")), []) if p["metadata"].get("namespace") == ns]
            active = [p for p in owned if is_active(p)]
            want = _replicas(rs)
            created = [
                self.store.create(_pod_from_template(rs, self._name(meta["name"], ns)))
                for _ in range(want - len(active))
            ]
            if len(active) > want:
                # Scale down as the real controller prefers: unscheduled, then not ready, then newest.
                ranked = sorted(
                    active,
                    key=lambda p: (
                        bool((p.get("spec") or {}).get("nodeName")),
                        is_ready(p),
                        [-ord(c) for c in p["metadata"].get("creationTimestamp", "")],
                    ),
                )
                for pod in ranked[: len(active) - want]:
                    _delete(self.store, pod)
                active = ranked[len(active) - want :]
            active += created
            ready = sum(1 for p in active if is_ready(p))
            _write_status(
                self.store,
                rs,
                {
                    "replicas": len(active),
                    "readyReplicas": ready,
                    "availableReplicas": ready,
                    "observedGeneration": meta.get("generation", 1),
                },
            )


def template_hash(template: Any) -> str:
    """A stable short hash of a pod template (the pod-template-hash label)."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return "".join(_NAME_CHARS[int(digest[i : i + 2], 16) % len(_NAME_CHARS)] for i in range(0, 20, 2))


class DeploymentController:
    """One ReplicaSet per Deployment (created when none exists), kept at the Deployment's replicas."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._inputs = _Inputs(store, "deployments.apps", "replicasets.apps")

    def step(self, now: float) -> None:
        self._inputs.run(self._sync)

    def _sync(self) -> None:
        for deploy in _live(self.store, "deployments.apps"):
            meta = deploy["metadata"]
            ns = meta["namespace"]
            owned = [rs for rs in self.store.list("replicasets.apps", ns) if owned_by(rs, deploy)]
            want = _replicas(deploy)
            if not owned:
                owned = [self.store.create(self._replicaset(deploy, want))]
            # The newest ReplicaSet carries the replicas; older ones (earlier rollouts) scale to 0.
            owned.sort(key=lambda rs: (rs["metadata"].get("creationTimestamp", ""), rs["metadata"]["name"]))
            for i, rs in enumerate(owned):
                target = want if i == len(owned) - 1 else 0
                if _replicas(rs) != target:
                    self.store.modify("replicasets.apps", rs["metadata"]["name"], ns, _set_replicas(target))
            total = sum(int((rs.get("status") or {}).get("replicas") or 0) for rs in owned)
            ready = sum(int((rs.get("status") or {}).get("readyReplicas") or 0) for rs in owned)
            _write_status(
                self.store,
                deploy,
                {
                    "replicas": total,
                    "readyReplicas": ready,
                    "availableReplicas": ready,
                    "updatedReplicas": total,
                    "observedGeneration": meta.get("generation", 1),
                },
            )

    @staticmethod
    def _replicaset(deploy: Obj, replicas: int) -> Obj:
        spec = deploy.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        hashed = template_hash(template)
        labels = {**((template.get("metadata") or {}).get("labels") or {}), "pod-template-hash": hashed}
        template.setdefault("metadata", {})["labels"] = labels
        selector = copy.deepcopy(spec.get("selector") or {})
        selector.setdefault("matchLabels", {})["pod-template-hash"] = hashed
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{deploy['metadata']['name']}-{hashed}",
                "namespace": deploy["metadata"]["namespace"],
                "labels": labels,
                "ownerReferences": [owner_reference(deploy)],
            },
            "spec": {"replicas": replicas, "selector": selector, "template": template},
        }


def _set_replicas(replicas: int) -> Any:
    def mutate(obj: Obj) -> None:
        obj.setdefault("spec", {})["replicas"] = replicas

    return mutate


class StatefulSetController:
    """Pods <name>-0 … <name>-(replicas-1); a missing ordinal is recreated, extra ordinals removed."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._inputs = _Inputs(store, "statefulsets.apps", "pods")

    def step(self, now: float) -> None:
        self._inputs.run(self._sync)

    def _sync(self) -> None:
        for sts in _live(self.store, "statefulsets.apps"):
            meta = sts["metadata"]
            ns, name = meta["namespace"], meta["name"]
            want = _replicas(sts)
            owned = {p["metadata"]["name"]: p for p in self.store.list("pods", ns) if owned_by(p, sts)}
            for ordinal in range(want):
                pod_name = f"{name}-{ordinal}"
                if pod_name in owned:
                    continue
                if self.store.exists("pods", pod_name, ns):
                    continue  # a terminating predecessor, or someone else's pod: wait
                pod = _pod_from_template(sts, pod_name)
                pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] = pod_name
                pod["spec"].setdefault("hostname", pod_name)
                self.store.create(pod)
            for pod_name, pod in owned.items():
                ordinal = pod_name.removeprefix(f"{name}-")
                if ordinal.isdigit() and int(ordinal) >= want and is_active(pod):
                    _delete(self.store, pod)
            active = [p for p in self.store.list("pods", ns) if owned_by(p, sts) and is_active(p)]
            ready = sum(1 for p in active if is_ready(p))
            _write_status(
                self.store,
                sts,
                {
                    "replicas": len(active),
                    "readyReplicas": ready,
                    "availableReplicas": ready,
                    "currentReplicas": len(active),
                    "observedGeneration": meta.get("generation", 1),
                },
            )


_OWNED_RESOURCES = ("replicasets.apps", "pods", "reservations.descheduler.dev")
_OWNER_RESOURCES = {
    ("apps/v1", "ReplicaSet"): "replicasets.apps",
    ("apps/v1", "Deployment"): "deployments.apps",
    ("apps/v1", "StatefulSet"): "statefulsets.apps",
    ("apps/v1", "DaemonSet"): "daemonsets.apps",
    ("descheduler.dev/v1alpha1", "PodMigrationJob"): "podmigrationjobs.descheduler.dev",
}


class GarbageCollector:
    """Deletes pods, ReplicaSets and Reservations whose controller owner (a known kind: a workload, or
    a PodMigrationJob) no longer exists, as kube-controller-manager's garbage collector does."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._inputs = _Inputs(store, *_OWNED_RESOURCES, *_OWNER_RESOURCES.values())

    def step(self, now: float) -> None:
        self._inputs.run(self._sync)

    def _sync(self) -> None:
        uids: dict[str, dict[tuple[str, str], str]] = {}  # owner resource -> (namespace, name) -> uid
        for resource in _OWNED_RESOURCES:
            for obj in _live(self.store, resource):
                ref = controller_ref(obj)
                if ref is None:
                    continue
                owner_resource = _OWNER_RESOURCES.get((str(ref.get("apiVersion")), str(ref.get("kind"))))
                if owner_resource is None:
                    continue
                if owner_resource not in uids:
                    uids[owner_resource] = {
                        (o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"].get("uid", "")
                        for o in self.store.list(owner_resource, shared=True)
                    }
                uid = uids[owner_resource].get((obj["metadata"].get("namespace", ""), str(ref.get("name"))))
                if uid is None or (ref.get("uid") and uid != ref.get("uid")):
                    _delete(self.store, obj)


class PodGarbageCollector:
    """kube-controller-manager's pod GC for orphans (pkg/controller/podgc, gcOrphaned): a pod bound
    to a node that no longer exists is force-deleted (grace period 0) once the node has been
    missing for `quarantine` seconds (40 s in kube-controller-manager), so its controller makes a
    replacement that the scheduler places on a node that does exist."""

    def __init__(self, store: Store, quarantine: float = 40.0) -> None:
        self.store = store
        self.quarantine = quarantine
        self._missing_since: dict[str, float] = {}
        self._inputs = _Inputs(store, "nodes", "pods")

    def step(self, now: float) -> None:
        # Orphans waiting out their quarantine need a pass as time goes on, changed or not.
        self._inputs.run(lambda: self._sync(now), anyway=bool(self._missing_since))

    def _sync(self, now: float) -> None:
        nodes = {node["metadata"]["name"] for node in self.store.list("nodes", shared=True)}
        orphans: dict[str, list[Obj]] = {}
        for pod in self.store.list("pods", shared=True):
            node = (pod.get("spec") or {}).get("nodeName") or ""
            if node and node not in nodes:
                orphans.setdefault(node, []).append(pod)
        self._missing_since = {node: self._missing_since.get(node, now) for node in orphans}
        for node, pods in orphans.items():
            if now - self._missing_since[node] >= self.quarantine:
                for pod in pods:
                    _delete(self.store, pod, grace_period_seconds=0)


def _delete(store: Store, obj: Obj, grace_period_seconds: int | None = None) -> None:
    meta = obj["metadata"]
    resource = "pods" if obj.get("kind") == "Pod" else store.type_of(obj)
    try:
        store.delete(resource, meta["name"], meta.get("namespace", ""), grace_period_seconds=grace_period_seconds)
    except ApiError as err:
        if err.code != 404:
            raise
