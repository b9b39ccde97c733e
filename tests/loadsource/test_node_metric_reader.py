"""Koordinator NodeMetric reader, listing and from the cache: fresh, stale, missing and malformed metrics."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.kube import CLUSTER_KINDS, ClusterCache, KubeClient
from descheduler.loadsource import LoadSourceError, NodeMetricReader, cache_kinds, reader_for
from descheduler.policy import NodeMetricSource
from descheduler.snapshot import load_snapshot_objects

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
PATH = "^/apis/slo.koordinator.sh/v1alpha1/nodemetrics$"


def _stamp(age: float) -> str:
    return (NOW - timedelta(seconds=age)).isoformat().replace("+00:00", "Z")


def node_metric(
    name: str, cpu: str = "3", memory: str = "6Gi", age: float | None = 30, pods: list[tuple[str, str]] = ()
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "slo.koordinator.sh/v1alpha1",
        "kind": "NodeMetric",
        "metadata": {"name": name},
        "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 60, "aggregateDurationSeconds": 300}},
    }
    if age is not None:
        obj["status"] = {
            "updateTime": _stamp(age),
            "nodeMetric": {
                "nodeUsage": {"resources": {"cpu": cpu, "memory": memory}},
                "systemUsage": {"resources": {"cpu": "500m", "memory": "1Gi"}},
                "aggregatedNodeUsages": [
                    {"duration": "5m0s", "usage": {"p95": {"resources": {"cpu": "3500m", "memory": "7Gi"}}}},
                    {"duration": "30m0s", "usage": {"p95": {"resources": {"cpu": "3", "memory": "6Gi"}}}},
                ],
            },
            "podsMetric": [
                {"namespace": ns, "name": pod, "podUsage": {"resources": {"cpu": "1", "memory": "1Gi"}}}
                for ns, pod in pods
            ],
        }
    return obj


@pytest.fixture
def cache(kube: KubeClient) -> Iterator[ClusterCache]:
    cache = ClusterCache(kube, kinds=(*CLUSTER_KINDS, *cache_kinds(NodeMetricSource(type="nodeMetric"))))
    yield cache
    cache.stop()


def test_fresh_node_metric_carries_system_usage_percentiles_update_time_and_report_interval(
    server: FakeApiServer, kube: KubeClient
) -> None:
    server.store.load([node_metric("n1", pods=[("default", "web")])])
    reading = NodeMetricReader(kube).read(NOW)
    usage = reading.node_usage["n1"]
    assert (usage.usage["cpu"], usage.usage["memory"]) == (3000, 6 * 2**30)
    assert usage.system_usage is not None and usage.system_usage["cpu"] == 500
    assert usage.aggregate("p95", 300) is not None and usage.aggregate("p95", 300)["cpu"] == 3500
    assert usage.aggregate("p95", None)["cpu"] == 3000  # the longest window when none is named
    assert usage.timestamp == NOW - timedelta(seconds=30) and usage.report_interval_seconds == 60
    assert reading.pod_usage["default/web"].usage["cpu"] == 1000
    assert reading.warnings == ()


def test_stale_node_metric_is_reported_by_age(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([node_metric("fresh", age=30), node_metric("stale", age=900)])
    reading = NodeMetricReader(kube).read(NOW)
    assert reading.stale_nodes(180) == ["stale"] and reading.age("fresh") == 30


def test_a_node_metric_never_reported_is_missing(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([node_metric("reported"), node_metric("new-node", age=None)])
    reading = NodeMetricReader(kube).read(NOW)
    assert set(reading.node_usage) == {"reported"}


def test_a_malformed_node_metric_is_left_out_and_named(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([node_metric("good"), node_metric("bad", memory="lots")])
    reading = NodeMetricReader(kube).read(NOW)
    assert set(reading.node_usage) == {"good"}
    assert reading.warnings == (
        "NodeMetric bad: cannot be read, ignored: status.nodeMetric.nodeUsage.resources.memory: 'lots' is not a "
        "valid quantity (examples: 500m, 2, 1.5Gi, 100M, 1e3)",
    )


def test_a_pod_reported_by_two_nodes_takes_the_newer_report(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load(
        [
            node_metric("old-node", age=120, pods=[("default", "moved")]),
            node_metric("new-node", age=10, pods=[("default", "moved")]),
        ]
    )
    reading = NodeMetricReader(kube).read(NOW)
    assert reading.pod_usage["default/moved"].timestamp == NOW - timedelta(seconds=10)


def test_the_crd_not_installed_is_an_error_not_an_empty_reading(server: FakeApiServer, kube: KubeClient) -> None:
    server.faults.fail_next(100, path="^/apis/slo.koordinator.sh/", status=404)
    with pytest.raises(LoadSourceError, match=r"NodeMetric is not served by this cluster.*install Koordinator"):
        NodeMetricReader(kube).read(NOW)


def test_reads_from_the_cache_without_listing(server: FakeApiServer, kube: KubeClient, cache: ClusterCache) -> None:
    server.store.load([node_metric("n1", pods=[("default", "web")])])
    cache.start()
    assert cache.wait_synced(10)
    reader = reader_for(NodeMetricSource(type="nodeMetric"), kube, cache)
    lists = server.faults.count(verb="list", path=PATH)
    reading = reader.read(NOW)
    assert server.faults.count(verb="list", path=PATH) == lists
    assert reading.node_usage["n1"].usage["cpu"] == 3000 and "default/web" in reading.pod_usage
    # A change on the server reaches the next read through the watch.
    server.store.modify(
        "nodemetrics",
        "n1",
        "",
        lambda o: o["status"]["nodeMetric"]["nodeUsage"]["resources"].update(cpu="5"),
        subresource="status",
    )
    deadline = time.monotonic() + 10
    while reader.read(NOW).node_usage["n1"].usage["cpu"] != 5000:
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_from_the_cache_an_absent_crd_is_an_error(server: FakeApiServer, kube: KubeClient, cache: ClusterCache) -> None:
    server.faults.fail_next(1000, path="^/apis/slo.koordinator.sh/", status=404)
    cache.start()
    assert cache.wait_synced(10)
    with pytest.raises(LoadSourceError, match="not served"):
        NodeMetricReader(kube, cache).read(NOW)


def test_from_an_unsynced_cache_is_an_error(kube: KubeClient, cache: ClusterCache) -> None:
    with pytest.raises(LoadSourceError, match="not listed yet"):
        NodeMetricReader(kube, cache).read(NOW)


def test_kept_objects_replay_to_the_same_usage(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([node_metric("n1", pods=[("default", "web")])])
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "8"}}}
    reading = NodeMetricReader(kube).read(NOW, keep_objects=True)
    replayed = load_snapshot_objects([node, *reading.objects], NOW)
    assert dict(replayed.node_usage) == dict(reading.node_usage)
    assert dict(replayed.pod_usage) == dict(reading.pod_usage)
