from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from descheduler.errors import InputError
from descheduler.snapshot import load_snapshot, load_snapshot_objects

NODE = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
"""
POD = """
apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: default}
spec:
  nodeName: n1
  containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
status: {phase: Running}
"""
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_multi_document_stream_loads_every_object(tmp_path: Path) -> None:
    snapshot = load_snapshot(write(tmp_path, "s.yaml", NODE + "---" + POD), now=NOW)
    assert [n.name for n in snapshot.nodes] == ["n1"]
    assert [p.key for p in snapshot.pods] == ["default/p1"]
    assert snapshot.pods[0].requests == {"cpu": 500, "memory": 2**30}
    assert snapshot.pods_by_node["n1"] == snapshot.pods


def test_list_kind_loads_its_items_and_takes_its_snapshot_time(tmp_path: Path) -> None:
    text = """
apiVersion: v1
kind: List
metadata:
  annotations: {descheduler.dev/snapshot-time: "2026-03-01T10:00:00Z"}
items:
- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "2"}}}
"""
    snapshot = load_snapshot(write(tmp_path, "l.yaml", text))
    assert [n.name for n in snapshot.nodes] == ["n2"]
    assert snapshot.now == datetime(2026, 3, 1, 10, tzinfo=UTC)


def test_now_argument_overrides_the_snapshot_time(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: List\nmetadata: {annotations: {descheduler.dev/snapshot-time: '2026-03-01T10:00:00Z'}}\nitems: []\n"
    assert load_snapshot(write(tmp_path, "l.yaml", text), now=NOW).now == NOW


def test_directory_loads_every_yaml_and_json_file(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", NODE)
    write(tmp_path, "b.json", '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n0"}}')
    write(tmp_path, "notes.txt", "ignored")
    snapshot = load_snapshot(tmp_path, now=NOW)
    assert [n.name for n in snapshot.nodes] == ["n0", "n1"]


def test_unknown_kind_is_ignored_with_one_warning(tmp_path: Path) -> None:
    extra = "\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
    snapshot = load_snapshot(write(tmp_path, "s.yaml", NODE + extra), now=NOW)
    assert len(snapshot.warnings) == 1
    assert "v1 ConfigMap" in snapshot.warnings[0]


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: [\n")
    with pytest.raises(InputError) as err:
        load_snapshot(path, now=NOW)
    assert str(path) in str(err.value)
    assert "malformed YAML at line" in str(err.value)


def test_wrong_quantity_names_file_object_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", NODE + "---" + POD.replace("500m", "12x"))
    with pytest.raises(InputError) as err:
        load_snapshot(path, now=NOW)
    message = str(err.value)
    assert str(path) in message
    assert "Pod default/p1" in message
    assert "spec.containers[0].resources.requests.cpu" in message
    assert "'12x' is not a valid quantity" in message


def test_wrong_field_type_names_the_field(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", NODE + "---" + POD.replace("nodeName: n1", "nodeName: n1\n  priority: high"))
    with pytest.raises(InputError, match=r"spec\.priority: Expected `int \| null`, got `str`"):
        load_snapshot(path, now=NOW)


def test_pod_on_a_missing_node_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", POD)
    with pytest.raises(InputError) as err:
        load_snapshot(path, now=NOW)
    assert "bound to node 'n1', which is not in the snapshot" in str(err.value)
    assert "spec.nodeName" in str(err.value)


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory"):
        load_snapshot(tmp_path / "nope.yaml", now=NOW)


def test_object_without_kind_is_reported(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no apiVersion and kind"):
        load_snapshot(write(tmp_path, "s.yaml", "metadata: {name: x}\n"), now=NOW)


def test_duplicate_pod_is_reported(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="appears more than once"):
        load_snapshot(write(tmp_path, "s.yaml", NODE + "---" + POD + "---" + POD), now=NOW)


def test_workload_replicas_come_from_the_controller_else_from_sibling_pods(tmp_path: Path) -> None:
    owned = POD.replace(
        "metadata: {name: p1, namespace: default}",
        "metadata: {name: p1, namespace: default, ownerReferences: [{kind: ReplicaSet, name: rs, uid: u1, controller: true}]}",
    )
    snapshot = load_snapshot(write(tmp_path, "s.yaml", NODE + "---" + owned), now=NOW)
    assert snapshot.replicas(snapshot.pods[0]) == 1
    rs = "\n---\napiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, namespace: default, uid: u1}\nspec: {replicas: 5}\n"
    snapshot = load_snapshot(write(tmp_path, "t.yaml", NODE + "---" + owned + rs), now=NOW)
    assert snapshot.replicas(snapshot.pods[0]) == 5


def test_metrics_server_and_node_metric_usage_are_decoded(tmp_path: Path) -> None:
    text = """
apiVersion: metrics.k8s.io/v1beta1
kind: NodeMetrics
metadata: {name: n1}
timestamp: "2026-01-01T00:00:00Z"
window: 30s
usage: {cpu: 1500000000n, memory: 2Gi}
---
apiVersion: slo.koordinator.sh/v1alpha1
kind: NodeMetric
metadata: {name: n1}
spec: {metricCollectPolicy: {reportIntervalSeconds: 60}}
status:
  updateTime: "2026-01-01T00:00:10Z"
  nodeMetric:
    nodeUsage: {resources: {cpu: "2", memory: 3Gi}}
    systemUsage: {resources: {cpu: 200m, memory: 1Gi}}
    aggregatedNodeUsages:
    - duration: 5m0s
      usage:
        p95: {resources: {cpu: 2500m, memory: 3Gi}}
  podsMetric:
  - {namespace: default, name: p1, podUsage: {resources: {cpu: 700m, memory: 1Gi}}}
"""
    snapshot = load_snapshot(write(tmp_path, "s.yaml", NODE + "---" + POD + "---" + text), now=NOW)
    usage = snapshot.node_usage["n1"]
    assert usage.source == "NodeMetric"  # the later object wins
    assert usage.usage == {"cpu": 2000, "memory": 3 * 2**30}
    assert usage.system_usage == {"cpu": 200, "memory": 2**30}
    assert usage.report_interval_seconds == 60
    assert usage.aggregate("p95", 300) == {"cpu": 2500, "memory": 3 * 2**30}
    assert usage.aggregate("p95", None) == {"cpu": 2500, "memory": 3 * 2**30}
    assert usage.aggregate("p99", None) is None
    assert snapshot.pod_usage["default/p1"].usage == {"cpu": 700, "memory": 2**30}


def _pod_with(containers: list[dict[str, object]], **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1", "containers": containers, **spec},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:05Z"},
                {"type": "Ready", "status": "False"},
                {"type": "ContainersReady", "status": "True"},
            ],
        },
    }


@pytest.mark.parametrize(
    ("containers", "spec", "requests", "limits", "qos"),
    [
        # One container: a limit without a request defaults the request (the decoder's fast path).
        (
            [{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
            {},
            {"cpu": 1000, "memory": 2**30},
            {"cpu": 1000, "memory": 2**30},
            "Guaranteed",
        ),
        ([{"name": "a"}], {}, {}, {}, "BestEffort"),
        (
            [
                {"name": "a", "resources": {"requests": {"cpu": "100m"}}},
                {"name": "b", "resources": {"requests": {"cpu": "50m"}}},
            ],
            {},
            {"cpu": 150},
            {},
            "Burstable",
        ),
        # One container with overhead or an init container: summed by the general rule.
        (
            [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
            {"overhead": {"cpu": "10m"}},
            {"cpu": 110},
            {},
            "Burstable",
        ),
        (
            [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
            {"initContainers": [{"name": "i", "resources": {"requests": {"cpu": "300m"}}}]},
            {"cpu": 300},
            {},
            "Burstable",
        ),
    ],
)
def test_pod_requests_limits_and_qos_follow_the_kubernetes_rule(
    containers: list[dict[str, object]],
    spec: dict[str, object],
    requests: dict[str, int],
    limits: dict[str, int],
    qos: str,
) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    pod = load_snapshot_objects([node, _pod_with(containers, **spec)], now=NOW).pods[0]
    assert (dict(pod.requests), dict(pod.limits), pod.qos) == (requests, limits, qos)


def test_pod_conditions_give_scheduled_time_and_readiness() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    raw = _pod_with([{"name": "a"}])
    pod = load_snapshot_objects([node, raw], now=NOW).pods[0]
    assert pod.scheduled_at == datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert pod.ready is False  # ContainersReady True is not Ready
    raw["status"]["conditions"][1]["status"] = "True"  # type: ignore[index]
    assert load_snapshot_objects([node, raw], now=NOW).pods[0].ready is True


def test_a_pod_memo_reuses_pods_whose_resource_version_did_not_change() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}

    def raw(name: str, version: str, cpu: str) -> dict[str, object]:
        obj = _pod_with([{"name": "a", "resources": {"requests": {"cpu": cpu}}}])
        obj["metadata"] = {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": version}
        return obj

    memo: dict[tuple[str, str], Any] = {}
    first = load_snapshot_objects([node, raw("a", "1", "1"), raw("b", "1", "1")], now=NOW, pod_memo=memo)
    assert set(memo) == {("u-a", "1"), ("u-b", "1")}
    second = load_snapshot_objects([node, raw("a", "1", "1"), raw("b", "2", "2")], now=NOW, pod_memo=memo)
    assert second.pods[0] is first.pods[0]  # unchanged: not parsed again
    assert second.pods[1].requests["cpu"] == 2000  # a new resourceVersion is parsed
    assert set(memo) == {("u-a", "1"), ("u-b", "2")}  # only what the last call saw
