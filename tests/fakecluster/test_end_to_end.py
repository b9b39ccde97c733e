"""The demo scenario on a simulated cluster, driven through the official kubernetes client."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, watch

from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import load_demo_scenario

from .conftest import T0


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    with SimulatedCluster(load_demo_scenario(), start=T0) as c:
        yield c


def _ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def _web(core: Any) -> dict[str, tuple[str, str]]:
    pods = core.list_namespaced_pod("shop", label_selector="app=web").items
    return {p.metadata.name: (p.spec.node_name or "", p.status.phase) for p in pods}


def test_an_evicted_replicaset_pod_is_recreated_rescheduled_and_watched(cluster: SimulatedCluster) -> None:
    api = cluster.api_client()
    core = client.CoreV1Api(api)
    cluster.advance(90)
    before = _web(core)
    assert len(before) == 6 and all(phase == "Running" for _, phase in before.values())
    pdb = client.PolicyV1Api(api).read_namespaced_pod_disruption_budget("web", "shop")
    assert pdb.status.disruptions_allowed == 2

    start_rv = core.list_namespaced_pod("shop").metadata.resource_version
    events: list[tuple[str, str, str, str]] = []
    w = watch.Watch()
    replaced, deleted = threading.Event(), threading.Event()
    victim = sorted(before)[0]

    def collect() -> None:
        for event in w.stream(core.list_namespaced_pod, "shop", resource_version=start_rv, timeout_seconds=20):
            pod = event["object"]
            events.append((event["type"], pod.metadata.name, pod.spec.node_name or "", pod.status.phase))
            if event["type"] == "MODIFIED" and pod.metadata.name not in before and _ready(pod):
                replaced.set()
            if event["type"] == "DELETED" and pod.metadata.name == victim:
                deleted.set()
            if replaced.is_set() and deleted.is_set():
                w.stop()

    watcher = threading.Thread(target=collect)
    watcher.start()

    core.create_namespaced_pod_eviction(
        victim, "shop", client.V1Eviction(metadata=client.V1ObjectMeta(name=victim, namespace="shop"))
    )
    cluster.advance(60)
    watcher.join(timeout=20)
    api.close()
    assert not watcher.is_alive()

    after = _web(core)
    assert victim not in after
    assert len(after) == 6 and all(phase == "Running" and node for node, phase in after.values())
    [replacement] = set(after) - set(before)
    assert replacement.startswith("web-7d9f5-")
    seen = [(t, n) for t, n, _, _ in events]
    assert ("DELETED", victim) in seen
    assert ("ADDED", replacement) in seen
    # The watch saw the replacement go through binding, Running and Ready, in that order.
    replacement_states = [(node, phase) for t, n, node, phase in events if n == replacement]
    assert replacement_states[0] == ("", "Pending")
    assert "Running" in [phase for _, phase in replacement_states]
    assert replacement_states[-1][0] == after[replacement][0]


def test_usage_reaches_the_metrics_endpoints(cluster: SimulatedCluster) -> None:
    cluster.advance(61)
    api = cluster.api_client()
    custom = client.CustomObjectsApi(api)
    nodes = custom.list_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes")["items"]
    cpu = {n["metadata"]["name"]: int(n["usage"]["cpu"].removesuffix("n")) // 1_000_000 for n in nodes}
    assert len(cpu) == 7
    # node-a runs three web pods at 160% of 1 cpu each: the demo's hot node.
    assert cpu["node-a"] > 6000 and cpu["node-e"] < 1500
    assert nodes[0]["timestamp"] == "2026-01-15T12:01:00Z"
    metric = custom.get_cluster_custom_object("slo.koordinator.sh", "v1alpha1", "nodemetrics", "node-a")
    assert metric["status"]["updateTime"] == "2026-01-15T12:01:00Z"
    pod_metrics = custom.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", "shop", "pods")["items"]
    assert len(pod_metrics) == 16
    api.close()


def test_scenario_events_happen_at_their_time(cluster: SimulatedCluster) -> None:
    cluster.advance(599)
    assert len(cluster.store.list("pods", "shop", label_selector="app=worker")) == 4
    cluster.advance(1)
    cluster.advance(30)
    workers = cluster.store.list("pods", "shop", label_selector="app=worker")
    assert len(workers) == 8 and all(p["status"]["phase"] == "Running" for p in workers)
