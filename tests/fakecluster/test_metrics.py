from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.kubelet import PodUsage
from descheduler.fakecluster.metrics import MetricsPublisher
from descheduler.snapshot import load_snapshot_objects

from .conftest import T0, node, pod


def _publisher(store: Store, usage: dict[str, PodUsage]) -> MetricsPublisher:
    return MetricsPublisher(store, lambda: usage, overhead={"cpu": 100, "memory": 2**30}, report_interval=30)


def _seed(store: Store) -> dict[str, PodUsage]:
    store.load(
        [node("n1"), node("n2"), pod("a", node_name="n1", phase="Running"), pod("b", node_name="n1", phase="Running")]
    )
    return {
        "default/a": PodUsage("default", "a", "n1", 300, 2**30),
        "default/b": PodUsage("default", "b", "n1", 200, 2**29),
    }


def test_node_usage_is_the_sum_of_its_pods_plus_overhead(store: Store) -> None:
    _publisher(store, _seed(store)).step(T0)
    n1 = store.get("nodes.metrics.k8s.io", "n1")
    assert n1["usage"] == {"cpu": "600000000n", "memory": f"{(2**30 + 2**29 + 2**30) // 1024}Ki"}
    assert n1["timestamp"] == "2026-01-15T12:00:00Z"
    assert store.get("nodes.metrics.k8s.io", "n2")["usage"]["cpu"] == "100000000n"
    assert store.get("pods.metrics.k8s.io", "a", "default")["containers"][0]["usage"]["cpu"] == "300000000n"


def test_node_metric_carries_node_system_and_pod_usage(store: Store) -> None:
    _publisher(store, _seed(store)).step(T0)
    metric = store.get("nodemetrics.slo.koordinator.sh", "n1")
    assert metric["spec"]["metricCollectPolicy"]["reportIntervalSeconds"] == 30
    status = metric["status"]
    assert status["updateTime"] == "2026-01-15T12:00:00Z"
    assert status["nodeMetric"]["nodeUsage"]["resources"]["cpu"] == "600m"
    assert status["nodeMetric"]["systemUsage"]["resources"]["cpu"] == "100m"
    assert [(p["name"], p["podUsage"]["resources"]["cpu"]) for p in status["podsMetric"]] == [
        ("a", "300m"),
        ("b", "200m"),
    ]


def test_reports_only_every_interval(store: Store) -> None:
    publisher = _publisher(store, _seed(store))
    publisher.step(T0)
    publisher.step(T0 + 29)
    assert store.get("nodes.metrics.k8s.io", "n1")["timestamp"] == "2026-01-15T12:00:00Z"
    publisher.step(T0 + 30)
    assert store.get("nodes.metrics.k8s.io", "n1")["timestamp"] == "2026-01-15T12:00:30Z"


def test_metrics_of_gone_pods_are_removed(store: Store) -> None:
    usage = _seed(store)
    publisher = _publisher(store, usage)
    publisher.step(T0)
    del usage["default/b"]
    publisher.step(T0 + 30)
    assert [p["metadata"]["name"] for p in store.list("pods.metrics.k8s.io")] == ["a"]


def test_the_snapshot_loader_reads_what_is_published(store: Store) -> None:
    from datetime import UTC, datetime

    _publisher(store, _seed(store)).step(T0)
    objects = store.list("nodes") + store.list("pods") + store.list("nodemetrics.slo.koordinator.sh")
    snapshot = load_snapshot_objects(objects, datetime.fromtimestamp(T0, tz=UTC))
    assert snapshot.node_usage["n1"].usage["cpu"] == 600
