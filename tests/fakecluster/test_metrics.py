from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import pytest

from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.kubelet import PodUsage
from descheduler.fakecluster.metrics import Feed, MetricsPublisher, UsageHistory, memory_text
from descheduler.fakecluster.scenario import ScenarioError, Timing, load_demo_scenario, parse_scenario
from descheduler.quantity import to_units
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


# ------------------------------------------------------------------ feeds: real pipelines' cadence and windows


class _Kubelet:
    """Usage the test changes between steps, each time as a new mapping, as the kubelet does."""

    def __init__(self, usage: dict[str, PodUsage]) -> None:
        self.usage = usage

    def set(self, key: str, **change: int) -> None:
        self.usage = {**self.usage, key: replace(self.usage[key], **change)}

    def remove(self, key: str) -> None:
        self.usage = {k: v for k, v in self.usage.items() if k != key}


def _fed(store: Store, kubelet: _Kubelet, **feeds: Feed) -> MetricsPublisher:
    return MetricsPublisher(
        store, lambda: kubelet.usage, overhead={"cpu": 100, "memory": 2**30}, report_interval=30, began=T0, **feeds
    )


def _stepping(
    publisher: MetricsPublisher, until: int, every: int, change: Callable[[int], None] = lambda offset: None
) -> Iterator[int]:
    """Step at T0, T0 + every, … up to T0 + until, calling `change(offset)` before each step and
    yielding the offset after it."""
    for offset in range(0, until + 1, every):
        change(offset)
        publisher.step(T0 + offset)
        yield offset


def _node_metric(store: Store) -> tuple[str, str, dict[str, str]]:
    """n1's NodeMetric: its update time, node cpu and each pod's cpu."""
    status = store.get("nodemetrics.slo.koordinator.sh", "n1")["status"]
    pods = {p["name"]: p["podUsage"]["resources"]["cpu"] for p in status["podsMetric"]}
    return status["updateTime"], status["nodeMetric"]["nodeUsage"]["resources"]["cpu"], pods


def _node_metrics(store: Store) -> tuple[str, int, int]:
    """n1's NodeMetrics: its timestamp, cpu in millicores and memory in bytes."""
    metrics = store.get("nodes.metrics.k8s.io", "n1")
    return (
        metrics["timestamp"],
        int(metrics["usage"]["cpu"][:-1]) // 1_000_000,
        to_units("memory", metrics["usage"]["memory"]),
    )


def test_a_step_in_usage_enters_the_node_metric_mean_by_a_fifth_at_each_report(store: Store) -> None:
    kubelet = _Kubelet(_seed(store))
    publisher = _fed(store, kubelet, node_metric=Feed(interval=60, window=300))

    def jump(offset: int) -> None:
        if offset == 300:
            kubelet.set("default/a", cpu=800)  # from 300m: +500m from 5 minutes in

    seen = [_node_metric(store) for _ in _stepping(publisher, until=660, every=60, change=jump)]
    assert [(stamp[11:], node) for stamp, node, _ in seen[4:]] == [
        ("12:04:00Z", "600m"),
        ("12:05:00Z", "600m"),  # the mean of [0, 5 min]: the new usage holds from 5 minutes on
        ("12:06:00Z", "700m"),
        ("12:07:00Z", "800m"),
        ("12:08:00Z", "900m"),
        ("12:09:00Z", "1000m"),
        ("12:10:00Z", "1100m"),
        ("12:11:00Z", "1100m"),
    ]
    assert seen[6][2] == {"a": "400m", "b": "200m"}  # its pods are averaged too
    assert seen[-1][2] == {"a": "800m", "b": "200m"}
    spec = store.get("nodemetrics.slo.koordinator.sh", "n1")["spec"]["metricCollectPolicy"]
    assert spec == {"reportIntervalSeconds": 60, "aggregateDurationSeconds": 300}


def test_a_step_in_usage_is_whole_in_a_15s_metrics_server_mean_one_interval_later(store: Store) -> None:
    kubelet = _Kubelet(_seed(store))
    publisher = _fed(store, kubelet, metrics_server=Feed(interval=15, window=15))

    def jump(offset: int) -> None:
        if offset == 35:
            kubelet.set("default/a", cpu=900)  # from 300m, 5 s after the report at 30 s

    seen = dict(_node_metrics(store)[:2] for _ in _stepping(publisher, until=65, every=5, change=jump))
    assert {stamp[11:]: cpu for stamp, cpu in seen.items()} == {
        "12:00:00Z": 600,
        "12:00:15Z": 600,
        "12:00:30Z": 600,
        "12:00:45Z": 1000,  # 300m for 5 s and 900m for 10 s
        "12:01:00Z": 1200,
    }
    pod = store.get("pods.metrics.k8s.io", "a", "default")
    assert (pod["window"], pod["containers"][0]["usage"]["cpu"]) == ("15s", "900000000n")


def test_publication_instants_are_the_intervals_multiples_when_steps_are_sparse(store: Store) -> None:
    kubelet = _Kubelet(_seed(store))
    publisher = _fed(store, kubelet, node_metric=Feed(interval=60, window=0))
    publisher.step(T0)
    kubelet.set("default/a", cpu=800)
    publisher.step(T0 + 130)  # publishes 12:02:00, when the usage of the step at 12:00:00 still held
    assert _node_metric(store)[:2] == ("2026-01-15T12:02:00Z", "600m")
    publisher.step(T0 + 170)
    assert _node_metric(store)[:2] == ("2026-01-15T12:02:00Z", "600m")
    publisher.step(T0 + 190)
    assert _node_metric(store)[:2] == ("2026-01-15T12:03:00Z", "1100m")


def test_a_window_over_sparse_steps_weighs_each_usage_by_the_time_it_held(store: Store) -> None:
    kubelet = _Kubelet(_seed(store))
    publisher = _fed(store, kubelet, node_metric=Feed(interval=60, window=300))
    publisher.step(T0)
    kubelet.set("default/a", cpu=800)
    publisher.step(T0 + 130)
    publisher.step(T0 + 400)  # publishes 12:06:00: [1 min, 6 min] held 300m for 70 s and 800m for 230 s
    assert _node_metric(store) == (
        "2026-01-15T12:06:00Z",
        f"{600 + round(500 * 230 / 300)}m",
        {"a": "683m", "b": "200m"},
    )


def test_a_pod_that_ran_for_part_of_the_window_reports_its_mean_over_that_part(store: Store) -> None:
    kubelet = _Kubelet(_seed(store))
    publisher = _fed(store, kubelet, node_metric=Feed(interval=60, window=300))
    publisher.step(T0 + 60)
    kubelet.usage = {**kubelet.usage, "default/c": PodUsage("default", "c", "n1", 400, 2**30)}
    publisher.step(T0 + 240)
    publisher.step(T0 + 300)
    stamp, node, pods = _node_metric(store)
    assert (stamp, pods["c"]) == ("2026-01-15T12:05:00Z", "400m")
    assert node == f"{600 + 400 * 60 // 240}m"  # the window's covered time is 4 minutes (from the first step)


def test_a_pod_gone_before_the_report_counts_in_its_nodes_mean_but_is_not_listed(store: Store) -> None:
    kubelet = _Kubelet(_seed(store))
    publisher = _fed(store, kubelet, node_metric=Feed(interval=60, window=300), metrics_server=Feed(60, 300))
    list(_stepping(publisher, until=300, every=60, change=lambda t: kubelet.remove("default/b") if t == 240 else None))
    stamp, node, pods = _node_metric(store)
    assert (stamp, node, pods) == ("2026-01-15T12:05:00Z", f"{100 + 300 + 200 * 240 // 300}m", {"a": "300m"})
    assert [p["metadata"]["name"] for p in store.list("pods.metrics.k8s.io")] == ["a"]


def test_the_history_keeps_only_what_the_longest_window_needs(store: Store) -> None:
    kubelet = _Kubelet(_seed(store))
    publisher = _fed(store, kubelet, metrics_server=Feed(15, 15), node_metric=Feed(60, 300))
    list(_stepping(publisher, until=3600, every=10))
    # The next NodeMetric, at 3660 s, averages from 3360 s; the next PodMetrics, at 3615 s, from 3600 s.
    assert [s.start - T0 for s in publisher.history.segments] == list(range(3360, 3601, 10))


def test_steps_with_the_same_usage_mapping_share_one_set_of_arrays() -> None:
    usage = {"default/a": PodUsage("default", "a", "n1", 100, 2**20)}
    history = UsageHistory()
    for t in (0, 10, 20):
        history.record(T0 + t, usage)  # a kubelet whose pods did not change hands over the same mapping
    history.record(T0 + 30, {**usage, "default/a": PodUsage("default", "a", "n1", 500, 2**20)})
    reading = history.reading(T0 + 40, 40, 40)
    assert reading is not None and reading.pods["default/a"].cpu == 200  # 30 s at 100, 10 s at 500
    columns = [segment.columns for segment in history.segments]
    assert columns[0] is columns[1] is columns[2] and columns[3] is not columns[0]


def test_means_stay_right_while_thousands_of_pods_come_and_go(store: Store) -> None:
    kubelet = _Kubelet(_seed(store))
    publisher = _fed(store, kubelet, node_metric=Feed(60, 120))

    def churn(offset: int) -> None:  # 200 new pods a minute on n2, at 10m each; a at 300m and 500m in turn
        a = replace(kubelet.usage["default/a"], cpu=500 if offset % 120 else 300)
        kubelet.usage = {
            **{f"default/c{offset}-{i}": PodUsage("default", f"c{offset}-{i}", "n2", 10, 2**20) for i in range(200)},
            **{k: v for k, v in kubelet.usage.items() if v.node == "n1"},
            "default/a": a,
        }

    seen = [_node_metric(store)[1:] for _ in _stepping(publisher, until=3600, every=60, change=churn)]
    assert len(publisher.history._pods) < 12_000  # pods were renumbered on the way
    assert [m for m in seen[2:] if m != ("700m", {"a": "400m", "b": "200m"})] == []  # a full window from 2 min
    n2 = store.get("nodemetrics.slo.koordinator.sh", "n2")["status"]["nodeMetric"]["nodeUsage"]["resources"]
    assert n2["cpu"] == f"{100 + 200 * 10}m"


def test_metrics_server_memory_is_the_instant_value_while_node_metric_memory_is_averaged(store: Store) -> None:
    kubelet = _Kubelet(_seed(store))
    publisher = _fed(store, kubelet, metrics_server=Feed(60, 60), node_metric=Feed(60, 60))
    publisher.step(T0)
    kubelet.set("default/a", cpu=800, memory=3 * 2**30)  # from 1Gi: +2Gi
    publisher.step(T0 + 60)
    base = 2**30 + 2**29 + 2**30
    assert _node_metrics(store) == ("2026-01-15T12:01:00Z", 600, base + 2 * 2**30)
    assert store.get("pods.metrics.k8s.io", "a", "default")["containers"][0]["usage"] == {
        "cpu": "300000000n",
        "memory": f"{3 * 2**20}Ki",
    }
    node_metric = store.get("nodemetrics.slo.koordinator.sh", "n1")["status"]["nodeMetric"]["nodeUsage"]["resources"]
    assert node_metric == {"cpu": "600m", "memory": memory_text(base)}


def test_without_a_feed_each_kind_is_published_as_before_at_a_step_with_its_usage(store: Store) -> None:
    kubelet = _Kubelet(_seed(store))
    publisher = _fed(store, kubelet, metrics_server=Feed(60, 0))  # NodeMetric has no feed
    publisher.step(T0)
    kubelet.set("default/a", cpu=800)
    publisher.step(T0 + 130)
    assert _node_metric(store)[:2] == ("2026-01-15T12:02:10Z", "1100m")  # the step's instant and usage
    assert _node_metrics(store)[:2] == ("2026-01-15T12:02:00Z", 600)  # the feed's: 12:02:00, as it held then
    policy = store.get("nodemetrics.slo.koordinator.sh", "n1")["spec"]["metricCollectPolicy"]
    assert policy == {"reportIntervalSeconds": 30, "aggregateDurationSeconds": 300}


@pytest.mark.parametrize(
    ("disabled", "written", "not_written"),
    [
        (
            {"metrics_server": Feed(15, 15, enabled=False)},
            ["nodemetrics.slo.koordinator.sh"],
            ["nodes.metrics.k8s.io", "pods.metrics.k8s.io"],
        ),
        (
            {"node_metric": Feed(60, 300, enabled=False)},
            ["nodes.metrics.k8s.io", "pods.metrics.k8s.io"],
            ["nodemetrics.slo.koordinator.sh"],
        ),
    ],
)
def test_a_disabled_feed_writes_no_objects(
    store: Store, disabled: dict[str, Feed], written: list[str], not_written: list[str]
) -> None:
    kubelet = _Kubelet(_seed(store))
    list(_stepping(_fed(store, kubelet, **disabled), until=120, every=15))
    assert all(store.list(kind) for kind in written)
    assert [kind for kind in not_written if store.list(kind)] == []


def test_a_disabled_metrics_server_leaves_pod_metrics_alone(store: Store) -> None:
    kubelet = _Kubelet(_seed(store))
    _fed(store, kubelet).step(T0)
    kubelet.remove("default/b")
    _fed(store, kubelet, metrics_server=Feed(15, 15, enabled=False)).step(T0 + 60)
    assert sorted(p["metadata"]["name"] for p in store.list("pods.metrics.k8s.io")) == ["a", "b"]


def test_a_scenarios_feeds_reach_the_cluster_publisher() -> None:
    demo = load_demo_scenario()
    timing = Timing.model_validate(
        {"metricsServer": {"enabled": False}, "nodeMetric": {"intervalSeconds": 30, "windowSeconds": 120}}
    )
    loaded = demo.model_copy(update={"scenario": demo.scenario.model_copy(update={"timing": timing})})
    cluster = SimulatedCluster(loaded, start=T0)
    cluster.step()
    cluster.advance(45)
    metric = cluster.store.list("nodemetrics.slo.koordinator.sh")[0]
    assert metric["spec"]["metricCollectPolicy"] == {"reportIntervalSeconds": 30, "aggregateDurationSeconds": 120}
    assert metric["status"]["updateTime"] == "2026-01-15T12:00:30Z"
    assert cluster.store.list("nodes.metrics.k8s.io") == []


def test_feed_defaults_are_the_real_pipelines() -> None:
    timing = Timing.model_validate({"metricsServer": {"intervalSeconds": 30}, "nodeMetric": {}})
    assert timing.metrics_server is not None and timing.node_metric is not None
    assert (timing.metrics_server.interval_seconds, timing.metrics_server.window) == (30, 30)
    assert (timing.node_metric.interval_seconds, timing.node_metric.window) == (60, 300)
    assert Timing().metrics_server is None and Timing().node_metric is None


@pytest.mark.parametrize(
    ("timing", "field", "message"),
    [
        ({"metricsServer": {"intervalSeconds": 0}}, "timing.metricsServer.intervalSeconds", "greater than 0"),
        ({"metricsServer": {"intervalSeconds": True}}, "timing.metricsServer.intervalSeconds", "valid integer"),
        ({"nodeMetric": {"windowSeconds": -1}}, "timing.nodeMetric.windowSeconds", "greater than or equal to 0"),
        ({"nodeMetric": {"intervalSeconds": 7.5}}, "timing.nodeMetric.intervalSeconds", "valid integer"),
        ({"nodeMetric": {"aggregateDurationSeconds": 300}}, "timing.nodeMetric.aggregateDurationSeconds", "Extra"),
        ({"nodeMetric": {"enabled": "sometimes"}}, "timing.nodeMetric.enabled", "valid boolean"),
    ],
)
def test_feed_errors_name_the_field(timing: dict[str, Any], field: str, message: str) -> None:
    raw = {"apiVersion": "descheduler.dev/v1alpha1", "kind": "Scenario", "snapshot": [], "timing": timing}
    with pytest.raises(ScenarioError) as info:
        parse_scenario(raw)
    assert info.value.field == field
    assert message in info.value.message
