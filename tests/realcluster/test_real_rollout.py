"""The real Deployment controller on a rollout restart and its rollback, the scenario
tests/fakecluster/test_deployment_rollout.py runs against the fake one, so the two are known to agree:
a one-replica Deployment (default strategy: maxSurge 25% → 1, maxUnavailable 25% → 0) whose
template annotation changes keeps a Ready pod throughout; when the new pod never gets Ready,
putting the annotation back scales the new ReplicaSet to 0 and leaves the old pod alone.

kube-controller-manager runs, no scheduler: the test binds the pods itself, and the kubelet
stand-in reports those on its node Ready a few seconds after binding."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from realcluster_support import bind, create, create_node, delete_node, eventually, get, merge_patch
from standin import KubeletStandIn

from descheduler.kube import KubeApiError, KubeClient

RESTARTED = "kubectl.kubernetes.io/restartedAt"
START_DELAY = 2.5  # seconds from binding to Ready on the stand-in's node


@pytest.fixture
def nodes(kube: KubeClient, namespace: str) -> Iterator[tuple[str, str]]:
    """A node the stand-in runs pods on, and one nobody does (a pod there never gets Ready)."""
    served, dead = f"{namespace}-a"[:63], f"{namespace}-b"[:63]
    for name in (served, dead):
        create_node(kube, name)
    try:
        with KubeletStandIn(kube, [served], start_delay=START_DELAY):
            yield served, dead
    finally:
        for name in (served, dead):
            delete_node(kube, name)


def deployment(restarted: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {RESTARTED: restarted}},
                "spec": {
                    "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
                    "terminationGracePeriodSeconds": 0,
                },
            },
        },
    }


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


class Watcher:
    """Reads the namespace's pods, binds the unbound ones, and keeps the fewest Ready pods seen."""

    def __init__(self, kube: KubeClient, namespace: str, node: str) -> None:
        self.kube, self.namespace, self.node = kube, namespace, node
        self.fewest_ready: int | None = None

    def pods(self) -> dict[str, dict[str, Any]]:
        items = get(self.kube, f"/api/v1/namespaces/{self.namespace}/pods")["items"]
        return {p["metadata"]["name"]: p for p in items}

    def sample(self) -> dict[str, dict[str, Any]]:
        pods = self.pods()
        for name, pod in pods.items():
            if not (pod.get("spec") or {}).get("nodeName") and not pod["metadata"].get("deletionTimestamp"):
                try:
                    bind(self.kube, self.namespace, name, self.node)
                except KubeApiError as error:
                    if error.status not in (404, 409):
                        raise
        serving = sum(1 for p in pods.values() if _ready(p) and not p["metadata"].get("deletionTimestamp"))
        self.fewest_ready = serving if self.fewest_ready is None else min(self.fewest_ready, serving)
        return pods

    def until(self, check: Any, timeout: float, what: str) -> dict[str, dict[str, Any]]:
        """Sample every ~100 ms until `check(pods)` holds; the pods then."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pods = self.sample()
            if check(pods):
                return pods
            time.sleep(0.1)
        raise AssertionError(f"not within {timeout}s: {what}; pods: {sorted(self.pods())}")


def set_restarted(kube: KubeClient, namespace: str, value: str) -> None:
    patch = {"spec": {"template": {"metadata": {"annotations": {RESTARTED: value}}}}}
    merge_patch(kube, f"/apis/apps/v1/namespaces/{namespace}/deployments/web", patch)


def replicasets(kube: KubeClient, namespace: str) -> dict[str, dict[str, Any]]:
    items = get(kube, f"/apis/apps/v1/namespaces/{namespace}/replicasets")["items"]
    return {rs["metadata"]["name"]: rs for rs in items}


def running(kube: KubeClient, namespace: str, node: str) -> tuple[Watcher, str]:
    """The Deployment created, its pod bound to `node` and Ready; the watcher and the pod's name."""
    create(kube, f"/apis/apps/v1/namespaces/{namespace}/deployments", deployment("1"))
    watcher = Watcher(kube, namespace, node)
    pods = watcher.until(
        lambda pods: len(pods) == 1 and all(_ready(p) for p in pods.values()), 20, "the first pod Ready"
    )
    watcher.fewest_ready = None  # counted from here on
    return watcher, next(iter(pods))


def test_a_rollout_restart_keeps_a_ready_pod_throughout(
    controller_manager: None, kube: KubeClient, namespace: str, nodes: tuple[str, str]
) -> None:
    served, _ = nodes
    watcher, old = running(kube, namespace, served)
    set_restarted(kube, namespace, "2")
    watcher.until(lambda pods: len(pods) == 2, 10, "the new pod made next to the old one")
    pods = watcher.until(
        lambda pods: old not in pods and len(pods) == 1 and all(_ready(p) for p in pods.values()),
        20,
        "the old pod gone, the new one Ready",
    )
    assert watcher.fewest_ready == 1, "a moment without a Ready pod"
    assert next(iter(pods)) != old


def test_a_rollback_scales_the_new_replicaset_to_zero_and_keeps_the_old_pod(
    controller_manager: None, kube: KubeClient, namespace: str, nodes: tuple[str, str]
) -> None:
    served, dead = nodes
    watcher, old = running(kube, namespace, served)
    [first] = replicasets(kube, namespace)
    watcher.node = dead  # the new pod goes where nothing runs it: never Ready
    set_restarted(kube, namespace, "2")
    pods = watcher.until(
        lambda pods: len(pods) == 2 and all((p.get("spec") or {}).get("nodeName") for p in pods.values()),
        10,
        "the new pod made and bound",
    )
    [new] = [name for name in pods if name != old]
    time.sleep(2 * START_DELAY)  # time enough for the stand-in, were the pod on its node
    pods = watcher.sample()
    assert sorted(pods) == sorted([old, new]) and not _ready(pods[new])
    [second] = [name for name in replicasets(kube, namespace) if name != first]

    set_restarted(kube, namespace, "1")
    pods = watcher.until(lambda pods: new not in pods, 10, "the new pod deleted")
    assert list(pods) == [old] and _ready(pods[old]) and not pods[old]["metadata"].get("deletionTimestamp")
    sets = replicasets(kube, namespace)
    assert sorted(sets) == sorted([first, second])  # no third ReplicaSet
    assert (sets[first]["spec"]["replicas"], sets[second]["spec"]["replicas"]) == (1, 0)
    assert sets[first]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert watcher.fewest_ready == 1

    def observed() -> bool:
        found = get(kube, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
        status = found.get("status") or {}
        return (status.get("replicas"), status.get("updatedReplicas"), status.get("availableReplicas")) == (1, 1, 1)

    eventually(observed, timeout=10, what="the Deployment's status after the rollback")
