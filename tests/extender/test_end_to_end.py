"""kube-scheduler with our extender, on the simulated cluster: the simulated scheduler runs its own
filters and scores and calls the extender over HTTP for every pod; the extender reads the cluster
through the real list-watch cache and the metrics.k8s.io reader, as `descheduler extender` does.

The cluster (8 cpu nodes; the load threshold is 65% = 5.2 cpu; a 1-cpu pod is estimated at 0.85):
hot-1 and hot-2 run pods that request little and use a lot (5.6 cpu, 70%), so kube-scheduler's own
LeastAllocated score likes them best; cool-1 (3.1 cpu used) and cool-2 (3.0) run pods that request
more. Each cool node has room, by load, for two more 1-cpu pods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from descheduler import metrics
from descheduler.extender import CacheSource, Extender, ExtenderServer
from descheduler.extender.command import EXTENDER_KINDS
from descheduler.extender.reservations import ReservationWriter
from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import parse_scenario
from descheduler.fakecluster.scheduler import Binding, ExtenderConfig
from descheduler.fakecluster.stock import StockScheduler
from descheduler.kube import ClusterCache, KubeClient, RetryPolicy
from descheduler.loadsource import reader_for
from descheduler.policy import default_policy
from tests.waiting import wait_for

T0 = 1_768_478_400.0  # 2026-01-15T12:00:00Z
NS = "shop"
FAST_RETRY = RetryPolicy(max_retries=4, backoff_base=0.01, backoff_cap=0.05)


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _replicaset(app: str, replicas: int, cpu: str) -> dict[str, Any]:
    template = {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "containers": [
                {"name": app, "image": f"example.com/{app}:1", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
            ]
        },
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": app, "namespace": NS, "uid": f"uid-rs-{app}"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}}, "template": template},
    }


def _running(app: str, name: str, node: str, cpu: str) -> dict[str, Any]:
    rs = _replicaset(app, 0, cpu)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NS,
            "uid": f"uid-{name}",
            "labels": {"app": app},
            "creationTimestamp": "2026-01-15T10:00:00Z",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": f"uid-rs-{app}", "controller": True}
            ],
        },
        "spec": {**rs["spec"]["template"]["spec"], "nodeName": node},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-15T10:00:00Z"},
                {"type": "Ready", "status": "True"},
            ],
        },
    }


def _objects() -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = [_node(n) for n in ("cool-1", "cool-2", "hot-1", "hot-2")]
    objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    objects += [_replicaset("hog", 6, "100m"), _replicaset("filler", 2, "2"), _replicaset("web", 0, "1")]
    objects += [_replicaset("api", 1, "1")]
    objects += [_running("hog", f"hog-{i}", f"hot-{1 + i % 2}", "100m") for i in range(6)]
    objects += [_running("filler", "filler-1", "cool-1", "2"), _running("filler", "filler-2", "cool-2", "3")]
    objects += [_running("api", "api-0", "cool-1", "1")]
    return objects


def _scenario() -> Any:
    return parse_scenario(
        {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "Scenario",
            "start": T0,
            "seed": 1,
            "snapshot": _objects(),
            "usage": {
                "default": {"cpu": {"fraction": 0.1}, "memory": {"fraction": 0.3}},
                # 3 hogs per hot node × 1.8 cpu + 0.2 cpu overhead = 5.6 of 8 cpu: 70%.
                # cool-1: filler 2.8 + api 0.1 + 0.2 = 3.1 cpu; cool-2: filler 2.8 + 0.2 = 3.0 cpu.
                "pods": [
                    {"selector": {"matchLabels": {"app": "hog"}}, "cpu": {"constant": "1800m"}},
                    {"selector": {"matchLabels": {"app": "filler"}}, "cpu": {"constant": "2800m"}},
                ],
            },
            "timing": {"reportIntervalSeconds": 15, "startDelaySeconds": 1, "readyDelaySeconds": 2},
        }
    )


def _wait(condition: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    wait_for(condition, timeout, what, interval=0.005)


@dataclass
class Harness:
    cluster: SimulatedCluster
    cache: ClusterCache
    extender: Extender
    server: ExtenderServer

    def caught_up(self) -> bool:
        """The cache holds what the API server holds: every pod on its node, every reservation."""
        store = self.cluster.store
        pods = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in store.list("pods")}
        cached = self.cache.items("pods")
        if set(cached) != set(pods):
            return False
        if any(cached[k].node_name != (p.get("spec") or {}).get("nodeName", "") for k, p in pods.items()):
            return False
        reservations = {r["metadata"]["name"] for r in store.list("reservations.descheduler.dev")}
        return {r.name for r in self.cache.records("reservations.descheduler.dev")} == reservations

    def step(self, now: float) -> None:
        """Runs just before the simulated scheduler: the extender's state is current."""
        _wait(self.caught_up, "the extender's cache to catch up with the API server")
        assert self.extender.refresh(force=True)

    def after_bind(self, binding: Binding) -> None:
        """Like kube-scheduler's next cycle, which starts after the binding's watch event arrived."""
        key = f"{binding.namespace}/{binding.pod}"

        def seen() -> bool:
            state = self.extender.state
            return state is not None and (key in state.view.location or key in state.table.pod_rows)

        _wait(seen, f"the extender to see {key} bound")

    def placement(self, app: str) -> dict[str, str]:
        return {
            p["metadata"]["name"]: (p.get("spec") or {}).get("nodeName", "")
            for p in self.cluster.store.list("pods", NS)
            if p["metadata"]["labels"].get("app") == app and not p["metadata"].get("deletionTimestamp")
        }


@pytest.fixture
def harness() -> Iterator[Harness]:
    policy = default_policy()
    with SimulatedCluster(_scenario(), start=T0) as cluster:
        cluster.advance(20)  # pods running, metrics published
        client = KubeClient(cluster.server.configuration(), qps=0, burst=0, timeout=10, retry=FAST_RETRY)
        cache = ClusterCache(client, kinds=EXTENDER_KINDS, backoff=(0.02, 0.2), read_timeout=5.0)
        reader = reader_for(policy.load_source, client, cache)
        source = CacheSource(cache, reader.read, load_interval=0.0, wall_clock=cluster.clock.datetime)
        extender = Extender(source, policy.scheduling, writer=ReservationWriter(client, "ext-e2e"))
        cache.start()
        assert cache.wait_synced(15), cache.not_ready()
        server = ExtenderServer(extender, "127.0.0.1", 0).start()
        h = Harness(cluster, cache, extender, server)
        cluster.scheduler.extender = ExtenderConfig(url_prefix=server.url, weight=5)
        cluster.scheduler.after_bind = h.after_bind
        cluster.components.insert(cluster.components.index(cluster.scheduler), h)
        try:
            yield h
        finally:
            server.stop()
            cache.stop()
            reader.close()
            client.close()


def _scale(cluster: SimulatedCluster, app: str, replicas: int) -> None:
    def mutate(obj: dict[str, Any]) -> None:
        obj["spec"]["replicas"] = replicas

    cluster.store.modify("replicasets.apps", app, NS, mutate)


def test_kube_schedulers_own_scores_would_pick_the_hot_nodes(harness: Harness) -> None:
    """The premise: by requests alone (kube-scheduler's default scores) the hot nodes look best."""
    store = harness.cluster.store
    stock = StockScheduler(store.list("nodes"), store.list("pods"))
    web = next(p for p in store.list("pods") if p["metadata"]["name"] == "api-0")
    scores = stock.scores(web, stock.names)
    assert min(scores["hot-1"], scores["hot-2"]) > max(scores["cool-1"], scores["cool-2"])


def test_new_pods_avoid_the_hot_nodes_until_every_node_is_over_the_threshold(harness: Harness) -> None:
    waived = metrics.sample("descheduler_extender_load_filter_waived_total", {"pod": "other"})
    _scale(harness.cluster, "web", 6)
    harness.cluster.advance(5)  # no new metrics report in between: the bound pods count by their estimate
    placed = harness.placement("web")
    # Each cool node takes two (3.1 + 2 × 0.85 ≤ 5.2; a third would reach 5.95): had the extender not
    # counted the pods it had just seen bound, all six would have gone there. Then every node is over
    # its threshold: the load filter does not keep the last two Pending where kube-scheduler alone
    # would bind them (scheduling-core.md §2), and says so in a metric.
    assert sorted(placed.values()) == ["cool-1", "cool-1", "cool-2", "cool-2", "hot-1", "hot-2"], placed
    assert harness.cluster.scheduler.unschedulable == {}
    assert metrics.sample("descheduler_extender_load_filter_waived_total", {"pod": "other"}) == waived + 2


def test_a_replacement_pod_lands_on_its_reservation(harness: Harness) -> None:
    harness.cluster.store.create(
        {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "Reservation",
            "metadata": {"name": "move-api-0"},
            "spec": {
                "nodeName": "cool-2",
                "resources": {"cpu": "1", "memory": "1Gi", "pods": "1"},
                "owners": [{"controller": {"kind": "ReplicaSet", "name": "api", "uid": "uid-rs-api"}}],
            },
            "status": {"phase": "Available"},
        }
    )
    harness.cluster.advance(1)
    from kubernetes import client

    core = client.CoreV1Api(harness.cluster.api_client())
    core.create_namespaced_pod_eviction(
        "api-0", NS, client.V1Eviction(metadata=client.V1ObjectMeta(name="api-0", namespace=NS))
    )
    harness.cluster.advance(5)
    placed = harness.placement("api")
    assert "api-0" not in placed
    [(replacement, node)] = placed.items()
    # kube-scheduler alone would prefer cool-1 (fewer requests) and the hot nodes; the extender steered it.
    assert node == "cool-2", placed
    assert replacement.startswith("api-")
    # Other pods still see the reserved room as taken until the migration controller marks it consumed.
    state = harness.extender.state
    assert state is not None and state.table.reserved[state.table.index["cool-2"]].any()


def test_a_replacement_evicted_right_after_the_acknowledgement_takes_its_reservation(harness: Harness) -> None:
    """Defect 1: no rebuild between the Reservation and the replacement's scheduling; the extender
    acknowledged it only once its answers held it, binds the replacement and consumes it."""
    cluster = harness.cluster
    cluster.components.remove(harness)  # no forced refresh: the extender answers from what it has applied
    harness.extender.timing = type(harness.extender.timing)(interval=3600.0, max_age=3600.0)
    harness.extender.start(poll=0.5)  # as `descheduler extender` runs it: the acknowledger's thread too
    try:
        _replacement_takes_its_reservation(harness)
    finally:
        harness.extender.stop()


def _replacement_takes_its_reservation(harness: Harness) -> None:
    cluster = harness.cluster
    cluster.scheduler.extender = ExtenderConfig(url_prefix=harness.server.url, weight=5, bind_verb="bind")
    reservation = {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "Reservation",
        "metadata": {"name": "move-api-0"},
        "spec": {
            "nodeName": "cool-2",
            "resources": {"cpu": "1", "memory": "1Gi", "pods": "1"},
            "owners": [{"controller": {"kind": "ReplicaSet", "name": "api", "uid": "uid-rs-api"}}],
        },
        "status": {"phase": "Pending"},
    }
    cluster.store.create(reservation)

    def status() -> dict[str, Any]:
        return dict(cluster.store.get("reservations.descheduler.dev", "move-api-0").get("status") or {})

    _wait(lambda: status().get("phase") == "Available", "the acknowledgement")
    assert status()["acknowledgedBy"] == "ext-e2e"
    from kubernetes import client

    core = client.CoreV1Api(cluster.api_client())
    core.create_namespaced_pod_eviction(
        "api-0", NS, client.V1Eviction(metadata=client.V1ObjectMeta(name="api-0", namespace=NS))
    )
    cluster.advance(1)
    placed = harness.placement("api")
    [(replacement, node)] = placed.items()
    assert node == "cool-2", placed
    assert status()["phase"] == "Consumed" and status()["consumedBy"] == f"{NS}/{replacement}"
