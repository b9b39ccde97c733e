"""metrics.k8s.io reader against the fake API server: fresh, stale, missing and malformed metrics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.kube import KubeClient
from descheduler.loadsource import LoadSourceError, MetricsServerReader
from descheduler.loadsource.metricsserver import _PLAIN_QUANTITY
from descheduler.quantity import to_units
from descheduler.snapshot import load_snapshot_objects

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


def _stamp(age: float) -> str:
    return (NOW - timedelta(seconds=age)).isoformat().replace("+00:00", "Z")


def node_metrics(name: str, cpu: str = "2500m", memory: str = "4Gi", age: float = 20) -> dict[str, Any]:
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": name},
        "timestamp": _stamp(age),
        "window": "20s",
        "usage": {"cpu": cpu, "memory": memory},
    }


def pod_metrics(name: str, *containers: tuple[str, str], namespace: str = "default", age: float = 20) -> dict[str, Any]:
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {"name": name, "namespace": namespace},
        "timestamp": _stamp(age),
        "window": "20s",
        "containers": [{"name": f"c{i}", "usage": {"cpu": c, "memory": m}} for i, (c, m) in enumerate(containers)],
    }


def test_fresh_metrics_become_node_and_pod_usage(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([node_metrics("n1"), pod_metrics("web", ("250m", "100Mi"), ("50m", "28Mi"))])
    reading = MetricsServerReader(kube).read(NOW)
    usage = reading.node_usage["n1"]
    assert (usage.usage["cpu"], usage.usage["memory"], usage.window_seconds) == (2500, 4 * 2**30, 20)
    assert usage.timestamp == NOW - timedelta(seconds=20)
    assert reading.age("n1") == 20
    pod = reading.pod_usage["default/web"]
    assert (pod.usage["cpu"], pod.usage["memory"]) == (300, 128 * 2**20)  # containers summed
    assert reading.warnings == () and reading.stale_nodes(180) == []


def test_stale_metrics_are_reported_with_their_age_not_dropped(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([node_metrics("fresh", age=30), node_metrics("stale", age=600)])
    reading = MetricsServerReader(kube).read(NOW)
    assert set(reading.node_usage) == {"fresh", "stale"}
    assert reading.age("stale") == 600
    assert reading.stale_nodes(180) == ["stale"]


def test_a_node_without_metrics_is_missing_from_the_reading(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([node_metrics("n1")])
    reading = MetricsServerReader(kube).read(NOW)
    assert "n2" not in reading.node_usage and reading.age("n2") is None


def test_a_malformed_object_is_left_out_and_named(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([node_metrics("good"), node_metrics("bad", cpu="very busy"), pod_metrics("p", ("1", "1Gi"))])
    bad_pod = pod_metrics("q", ("1", "1Gi"))
    del bad_pod["timestamp"]
    server.store.load([bad_pod])
    reading = MetricsServerReader(kube).read(NOW)
    assert set(reading.node_usage) == {"good"} and set(reading.pod_usage) == {"default/p"}
    assert reading.warnings == (
        "NodeMetrics bad: cannot be read, ignored: usage.cpu: 'very busy' is not a valid quantity "
        "(examples: 500m, 2, 1.5Gi, 100M, 1e3)",
        "PodMetrics default/q: cannot be read, ignored: Object missing required field `timestamp`",
    )


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (404, "metrics.k8s.io is not served by this cluster.*install metrics-server"),
        (503, "metrics.k8s.io is unavailable \\(503.*metrics-server is not ready"),
        (403, "not allowed to list NodeMetrics"),
    ],
)
def test_a_source_that_cannot_be_read_raises_instead_of_answering(
    server: FakeApiServer, kube: KubeClient, status: int, expected: str
) -> None:
    server.store.load([node_metrics("n1")])
    server.faults.fail_next(100, path="^/apis/metrics.k8s.io/", status=status)
    with pytest.raises(LoadSourceError, match=expected):
        MetricsServerReader(kube).read(NOW)


def test_kept_objects_replay_to_the_same_usage(server: FakeApiServer, kube: KubeClient) -> None:
    server.store.load([node_metrics("n1"), pod_metrics("web", ("250m", "100Mi"))])
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1"},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}},
    }
    reading = MetricsServerReader(kube).read(NOW, keep_objects=True)
    assert {msgspec.json.decode(o)["kind"] for o in reading.objects} == {"NodeMetrics", "PodMetrics"}
    replayed = load_snapshot_objects([node, *reading.objects], NOW)
    assert dict(replayed.node_usage) == dict(reading.node_usage)
    assert dict(replayed.pod_usage) == dict(reading.pod_usage)


def test_objects_without_usage_carry_the_same_objects_and_warnings(server: FakeApiServer, kube: KubeClient) -> None:
    """`snapshot save` reads no pod usage, but every PodMetrics the reader refuses is still named, and why."""
    bad_quantity = pod_metrics("bad-quantity", ("lots", "100Mi"))
    negative = pod_metrics("negative", ("-5m", "100Mi"))
    bad_type = pod_metrics("bad-type", ("250m", "100Mi"))
    bad_type["containers"][0]["name"] = 7
    no_stamp = pod_metrics("no-stamp", ("250m", "100Mi"))
    del no_stamp["timestamp"]
    good = [pod_metrics(f"web-{i}", ("250m", "100Mi"), ("1", "1Gi")) for i in range(3)]
    server.store.load([node_metrics("n1"), *good, bad_quantity, negative, bad_type, no_stamp])
    full = MetricsServerReader(kube).read(NOW, keep_objects=True)
    bare = MetricsServerReader(kube).read(NOW, keep_objects=True, usage=False)
    assert len(full.warnings) == 4
    assert bare.warnings == full.warnings
    assert bare.objects == full.objects
    assert dict(bare.node_usage) == dict(full.node_usage)
    assert len(full.pod_usage) == 3 and not bare.pod_usage


@given(st.from_regex(_PLAIN_QUANTITY, fullmatch=True), st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]))
def test_a_usage_taken_without_parsing_is_one_the_parser_takes(text: str, resource: str) -> None:
    """`_refused` skips parsing a value of digits and a suffix: each such value must parse, to ≥ 0."""
    assert to_units(resource, text) >= 0
