"""The kubelet stand-in exporter: its text parses as Prometheus exposition, its series carry the labels
node-exporter and cAdvisor use, and its counters integrate the simulated usage over simulated time."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.exporter import PAUSE_MEMORY, scrape_configs
from descheduler.fakecluster.scenario import parse_scenario
from descheduler.quantity import to_units

T0 = 1_768_478_400.0  # 2026-01-15T12:00:00Z
GI = 2**30
MI = 2**20


def running_pod(name: str, node: str, containers: dict[str, str], app: str) -> dict[str, Any]:
    """A pod already Running and Ready on `node`; `containers` maps a name to its cpu request."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"app": app}},
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": c, "image": f"example.com/{c}:1", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
                for c, cpu in containers.items()
            ],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"capacity": {"cpu": "4", "memory": "8Gi"}, "allocatable": {"cpu": "4", "memory": "8Gi"}},
    }


SCENARIO = {
    "apiVersion": "descheduler.dev/v1alpha1",
    "kind": "Scenario",
    "snapshot": [
        node("n1"),
        node("n2"),
        running_pod("web", "n1", {"web": "1", "proxy": "500m"}, "web"),
        running_pod("batch", "n1", {"batch": "1"}, "batch"),
    ],
    "usage": {
        "systemOverhead": {"cpu": "200m", "memory": "512Mi"},
        "default": {"cpu": {"constant": "600m"}, "memory": {"constant": "300Mi"}},
        "pods": [{"selector": {"matchLabels": {"app": "batch"}}, "cpu": {"series": {"values": ["1", "2"]}}}],
    },
}


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    with SimulatedCluster(parse_scenario(SCENARIO), start=T0, exporter_port=0) as running:
        yield running


def scrape(cluster: SimulatedCluster, path: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample at `path`, by name and sorted labels; the text must parse as Prometheus exposition."""
    assert cluster.exporter is not None
    with urllib.request.urlopen(f"{cluster.exporter.url}{path}", timeout=5) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in samples, f"duplicate series {key}"
            samples[key] = sample.value
    return samples


def busy_seconds(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
    return sum(
        v
        for (name, labels), v in samples.items()
        if name == "node_cpu_seconds_total" and ("mode", "idle") not in labels
    )


def node_metrics_cpu(cluster: SimulatedCluster, name: str) -> float:
    """Cores NodeMetrics reports for the node (metrics-server's view of the same usage)."""
    return to_units("cpu", cluster.store.get("nodes.metrics.k8s.io", name)["usage"]["cpu"]) / 1000


def test_node_exporter_has_a_counter_per_cpu_and_mode_and_the_memory_gauges(cluster: SimulatedCluster) -> None:
    samples = scrape(cluster, "/metrics/node/n1")
    cpu = [dict(labels) for name, labels in samples if name == "node_cpu_seconds_total"]
    assert {(c["cpu"], c["mode"]) for c in cpu} == {
        (str(i), m) for i in range(4) for m in ("idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user")
    }
    assert samples[("node_memory_MemTotal_bytes", ())] == 8 * GI
    used = 8 * GI - samples[("node_memory_MemAvailable_bytes", ())]
    assert used == 2 * 300 * MI + 512 * MI  # two pods + the node's overhead, as NodeMetrics says


def test_busy_cpu_seconds_grow_by_the_usage_nodemetrics_reports(cluster: SimulatedCluster) -> None:
    before = busy_seconds(scrape(cluster, "/metrics/node/n1"))
    cores = node_metrics_cpu(cluster, "n1")  # 0.6 (web) + 1 (batch, first step) + 0.2 overhead
    cluster.advance(1)
    after = busy_seconds(scrape(cluster, "/metrics/node/n1"))
    assert after - before == pytest.approx(cores * 1, abs=1e-9)
    assert cores == pytest.approx(1.8)


def test_idle_and_busy_seconds_add_up_to_the_cores_times_the_time(cluster: SimulatedCluster) -> None:
    def total() -> float:
        return sum(
            v for (name, _), v in scrape(cluster, "/metrics/node/n2").items() if name == "node_cpu_seconds_total"
        )

    before = total()
    cluster.advance(10)
    assert total() - before == pytest.approx(4 * 10)


def test_container_counters_integrate_each_steps_usage_until_the_next(cluster: SimulatedCluster) -> None:
    def batch() -> float:
        return scrape(cluster, "/metrics/cadvisor/n1")[
            ("container_cpu_usage_seconds_total", _labels("batch", "batch", "/kubepods/burstable/poduid-batch/batch"))
        ]

    before = batch()
    cluster.advance(4)  # the series steps every 60 s: 1 core throughout the first minute
    assert batch() - before == pytest.approx(4.0)
    cluster.advance(60)  # 56 s more at 1 core, then 4 s at 2 cores
    assert batch() - before == pytest.approx(4.0 + 56 + 4 * 2)


def _labels(pod: str, container: str, cgroup: str) -> tuple[tuple[str, str], ...]:
    image = {"POD": "registry.k8s.io/pause:3.9", "": ""}.get(container, f"example.com/{container}:1")
    name = f"k8s_{container}_{pod}_default_uid-{pod}_0" if container else ""
    return tuple(
        sorted(
            {
                "container": container,
                "id": cgroup,
                "image": image,
                "name": name,
                "namespace": "default",
                "pod": pod,
            }.items()
        )
    )


def test_cadvisor_splits_a_pod_by_request_and_adds_its_pause_container_and_pod_cgroup(
    cluster: SimulatedCluster,
) -> None:
    before = scrape(cluster, "/metrics/cadvisor/n1")
    cluster.advance(10)
    after = scrape(cluster, "/metrics/cadvisor/n1")

    def cores(container: str, cgroup: str) -> float:
        key = ("container_cpu_usage_seconds_total", _labels("web", container, cgroup))
        return (after[key] - before[key]) / 10

    # cpu splits by the cpu requests (1000m:500m), memory by the memory requests (1Gi:1Gi)
    assert cores("web", "/kubepods/burstable/poduid-web/web") == pytest.approx(0.4)
    assert cores("proxy", "/kubepods/burstable/poduid-web/proxy") == pytest.approx(0.2)
    assert cores("POD", "/kubepods/burstable/poduid-web/pause") == pytest.approx(0.0001)
    assert cores("", "/kubepods/burstable/poduid-web") == pytest.approx(0.6001)  # the pod's cgroup: all of them
    memory = {
        dict(labels)["container"]: v
        for (name, labels), v in after.items()
        if name == "container_memory_working_set_bytes" and dict(labels)["pod"] == "web"
    }
    assert memory == {"web": 150 * MI, "proxy": 150 * MI, "POD": PAUSE_MEMORY, "": 300 * MI + PAUSE_MEMORY}


def test_cadvisor_has_the_root_cgroup_without_pod_labels(cluster: SimulatedCluster) -> None:
    samples = scrape(cluster, "/metrics/cadvisor/n2")  # n2 runs no pods
    root = tuple(sorted({"container": "", "id": "/", "image": "", "name": "", "namespace": "", "pod": ""}.items()))
    assert {labels for name, labels in samples if name == "container_memory_working_set_bytes"} == {root}
    assert samples[("container_memory_working_set_bytes", root)] == 512 * MI


def test_a_recreated_pod_is_a_new_series_and_no_counter_goes_back(cluster: SimulatedCluster) -> None:
    cluster.advance(5)
    old = scrape(cluster, "/metrics/cadvisor/n1")
    cluster.store.delete("pods", "web", "default", grace_period_seconds=0)
    recreated = running_pod("web", "n1", {"web": "1", "proxy": "500m"}, "web")
    del recreated["metadata"]["uid"]
    uid = cluster.store.create(recreated)["metadata"]["uid"]
    cluster.advance(2)
    new = scrape(cluster, "/metrics/cadvisor/n1")
    ids = {dict(labels)["id"] for name, labels in new if dict(labels)["pod"] == "web"}
    assert ids == {
        f"/kubepods/burstable/pod{uid}",
        *(f"/kubepods/burstable/pod{uid}/{c}" for c in ("web", "proxy", "pause")),
    }
    assert not any(dict(labels)["id"].startswith("/kubepods/burstable/poduid-web/") for _, labels in new)
    for key, value in new.items():
        if key[0].endswith("_total") and key in old:
            assert value >= old[key], key


def test_between_real_time_ticks_counters_follow_the_simulated_instant(cluster: SimulatedCluster) -> None:
    assert cluster.exporter is not None
    first = busy_seconds(scrape(cluster, "/metrics/node/n2"))
    cluster._realtime = (cluster.clock(), 0.0, 1.0)  # as if run_realtime began long ago: one tick ahead at most
    try:
        ahead = busy_seconds(scrape(cluster, "/metrics/node/n2"))
    finally:
        cluster._realtime = None
    assert ahead - first == pytest.approx(0.2 * cluster.tick)  # n2's overhead for one tick, not more


def test_scrape_configs_name_each_nodes_targets_after_the_node() -> None:
    jobs = scrape_configs("127.0.0.1:9100", ["n2", "n1"])
    assert [job["job_name"] for job in jobs] == ["node-exporter", "kubelet"]
    assert jobs[0]["static_configs"][0] == {
        "targets": ["127.0.0.1:9100"],
        "labels": {"instance": "n1", "node": "n1", "__metrics_path__": "/metrics/node/n1"},
    }
    assert jobs[1]["static_configs"][1]["labels"]["__metrics_path__"] == "/metrics/cadvisor/n2"


def test_an_unknown_node_is_404(cluster: SimulatedCluster) -> None:
    with pytest.raises(urllib.error.HTTPError) as caught:
        scrape(cluster, "/metrics/node/nope")
    assert caught.value.code == 404


def test_a_node_set_to_fail_answers_text_that_does_not_parse(cluster: SimulatedCluster) -> None:
    assert cluster.exporter is not None
    cluster.exporter.faults["n1"] = "invalid"
    with pytest.raises(ValueError):
        scrape(cluster, "/metrics/node/n1")
    assert scrape(cluster, "/metrics/node/n2")  # the other nodes still answer
