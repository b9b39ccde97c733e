"""The Prometheus reader against a real Prometheus scraping a simulated cluster in real time.

One Prometheus (scraping every second) and one SimulatedCluster (speed 1, with its kubelet stand-in
exporter) per module; the reader uses the DEFAULT queries with a short window, through the real
query API. Each node's fault tests use a node of their own, so the tests do not interfere.

How close the reading must be to the simulation (test_reading_equals_the_simulated_usage_...):
rate() over [now-W, now] is the counter's slope between the first and last samples in the window,
extrapolated to its edges, i.e. the mean usage over [t_first, t_last] ⊂ [now-W, now], each end at
most one scrape interval δ inside. The mean over a subinterval missing at most 2δ of W differs from
the mean over the whole window by at most 2δ/W × (max − min usage in the window). On top: the few
milliseconds between Prometheus stamping a scrape and the exporter reading the simulated instant,
and a late tick (2 cores, shared), together ε ≤ 0.1 s at each end → 2ε × r / (W − 2δ), r the rate of
the counters read (a pod's max cores; a node's cores, as busy = cores − idle rate); and
the reader's rounding up to a whole millicore. Memory is a gauge of constant usage: exact.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from loadsource_support import DelayProxy

from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.exporter import scrape_configs
from descheduler.fakecluster.scenario import parse_scenario
from descheduler.loadsource import LoadSourceError, PrometheusReader
from descheduler.policy import PrometheusSource
from tests.prometheus_server import PrometheusServer
from tests.waiting import wait_for

WINDOW = 15.0  # W, seconds
SCRAPE = 1.0  # δ, seconds
JITTER = 0.1  # ε, seconds
START = 1_768_478_400.0  # the scenario's instant; usage models count from the cluster's start
MI = 2**20
STEP = 3  # the wave pod's cpu changes every STEP simulated seconds
WAVE = (0.2, 0.9, 0.5)  # fractions of its 2-core request
OVERHEAD_CPU = 0.2


def node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"capacity": {"cpu": "4", "memory": "8Gi"}, "allocatable": {"cpu": "4", "memory": "8Gi"}},
    }


def pod(name: str, node_name: str, containers: dict[str, str], **spec: Any) -> dict[str, Any]:
    running = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"app": name}},
        "spec": {
            **({"nodeName": node_name} if node_name else {}),
            "containers": [
                {"name": c, "image": f"example.com/{c}:1", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
                for c, cpu in containers.items()
            ],
            **spec,
        },
        "status": running if node_name else {"phase": "Pending"},
    }


SCENARIO = {
    "apiVersion": "descheduler.dev/v1alpha1",
    "kind": "Scenario",
    "start": START,
    "snapshot": [
        *(node(n) for n in ("n1", "n2", "n3", "n4")),
        pod("steady", "n1", {"steady": "1"}),
        pod("wave", "n1", {"app": "1500m", "sidecar": "500m"}),
        pod("quiet", "n2", {"quiet": "250m"}),
        pod("on-n3", "n3", {"main": "1"}),
        pod("on-n4", "n4", {"main": "1"}),
        pod("unschedulable", "", {"main": "1"}, nodeSelector={"no": "such-node"}),
    ],
    "usage": {
        "systemOverhead": {"cpu": "200m", "memory": "512Mi"},
        "default": {"cpu": {"constant": "500m"}, "memory": {"constant": "300Mi"}},
        "pods": [
            {
                "selector": {"matchLabels": {"app": "wave"}},
                "cpu": {"series": {"values": list(WAVE), "stepSeconds": STEP}},
            },
            {"selector": {"matchLabels": {"app": "quiet"}}, "cpu": {"constant": "100m"}},
        ],
    },
}


class World:
    """The running cluster, its Prometheus, and a reader on it."""

    def __init__(self, cluster: SimulatedCluster, prometheus: PrometheusServer) -> None:
        self.cluster, self.prometheus = cluster, prometheus
        self.scraped_since = time.monotonic()  # every target has been scraped once

    def wait_for_data(self, seconds: float) -> None:
        """Until Prometheus has `seconds` of scrapes: rate() over a window not yet full of samples
        extrapolates only half an interval past the first one, and reads far too low (idle: busy)."""
        wait_for(lambda: time.monotonic() - self.scraped_since >= seconds, seconds + 5, f"{seconds:g}s of scrapes")

    def config(self, **settings: Any) -> PrometheusSource:
        return PrometheusSource.model_validate(
            {"type": "prometheus", "address": self.prometheus.url, "window": f"{WINDOW:g}s", **settings}
        )

    def read(self, at: datetime | None = None, **settings: Any) -> Any:
        reader = PrometheusReader(self.config(**settings))
        try:
            return reader.read(at or datetime.now(UTC))
        finally:
            reader.close()


@pytest.fixture(scope="module")
def world(prometheus_binary: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with (
        SimulatedCluster(parse_scenario(SCENARIO), exporter_port=0) as cluster,
        cluster.running_in_real_time(),
    ):
        assert cluster.exporter is not None
        # n3's cAdvisor is not scraped: its node is known, its pods are not.
        jobs = scrape_configs(cluster.exporter.address, ["n1", "n2", "n3", "n4"])
        jobs[1]["static_configs"] = [t for t in jobs[1]["static_configs"] if t["labels"]["node"] != "n3"]
        with PrometheusServer(prometheus_binary, tmp_path_factory.mktemp("prometheus"), jobs) as prometheus:
            prometheus.wait_for_targets(20)
            yield World(cluster, prometheus)


# ---------------------------------------------------------------- the expected usage, from the scenario


def wave_cores(instant: float, began: float) -> float:
    """The wave pod's cpu at a simulated instant: its series, held from one tick to the next."""
    return WAVE[int((instant - began) // STEP) % len(WAVE)] * 2.0


def mean_wave_cores(start: float, end: float, began: float) -> tuple[float, float, float]:
    """Mean, min and max of the wave pod's cores over [start, end] (simulated instants)."""
    total, low, high, t = 0.0, float("inf"), 0.0, start
    while t < end:
        boundary = min(end, began + (int((t - began) // STEP) + 1) * STEP)
        cores = wave_cores(t, began)
        total += cores * (boundary - t)
        low, high, t = min(low, cores), max(high, cores), boundary
    return total / (end - start), low, high


def tolerance(low: float, high: float, counted: float | None = None) -> float:
    """Cores: the rate() window's error (module docstring), plus one millicore of rounding. The
    timing error scales with the rate of the counter read: a node's busy cores are 1 − its idle
    counters' rate, so there it is the node's cores (`counted`), not its busy cores."""
    fastest = high if counted is None else counted
    return 2 * SCRAPE / WINDOW * (high - low) + 2 * JITTER * fastest / (WINDOW - 2 * SCRAPE) + 0.001


OBSERVED: dict[str, float] = {}  # |read − expected| in cores, for the report


# ---------------------------------------------------------------- accuracy


def test_reading_equals_the_simulated_usage_within_the_rate_windows_error(world: World) -> None:
    cluster = world.cluster
    world.wait_for_data(WINDOW + 2)
    lag = time.time() - cluster.instant()  # wall clock − simulated instant, constant while it runs
    now = datetime.now(UTC)
    reading = world.read(now)
    end = now.timestamp() - lag
    wave, low, high = mean_wave_cores(end - WINDOW, end, cluster.began)
    n1 = 0.5 + wave + OVERHEAD_CPU
    expected = {"n1": (n1, low + 0.7, high + 0.7, 4.0), "n2": (0.3, 0.3, 0.3, 4.0)}  # 4 cores each
    expected |= {"default/wave": (wave, low, high, None), "default/steady": (0.5, 0.5, 0.5, None)}
    read = {name: u.usage["cpu"] / 1000 for name, u in reading.node_usage.items()}
    read |= {key: u.usage["cpu"] / 1000 for key, u in reading.pod_usage.items()}
    for name, (mean, lowest, highest, cores) in expected.items():
        OBSERVED[name] = abs(read[name] - mean)
        assert read[name] == pytest.approx(mean, abs=tolerance(lowest, highest, cores)), (name, OBSERVED)
    print(f"\nread − simulated (cores), window {WINDOW:g}s: {OBSERVED}")


def test_node_memory_is_the_pods_working_sets_plus_overhead_exactly(world: World) -> None:
    reading = world.read()
    assert reading.node_usage["n1"].usage["memory"] == 2 * 300 * MI + 512 * MI
    assert reading.node_usage["n2"].usage["memory"] == 300 * MI + 512 * MI


def test_pod_queries_leave_out_the_pause_container_and_the_pod_cgroup(world: World) -> None:
    reading = world.read()
    # Without the container filters the pod's cgroup (container="") would double it and the pause
    # container add 512 KiB.
    assert reading.pod_usage["default/steady"].usage["memory"] == 300 * MI
    assert reading.pod_usage["default/wave"].usage["memory"] == 300 * MI
    assert reading.warnings == ()  # the root cgroups (no pod labels) are filtered out by the query too


def test_the_percentile_form_runs_on_the_real_server(world: World) -> None:
    world.wait_for_data(2 * 5 + 2)  # the subquery's first step needs a full window before it
    reading = world.read(percentile=0.9, window="5s")
    assert reading.node_usage["n2"].usage["cpu"] == pytest.approx(
        300, abs=2 * JITTER * 0.3 / (5 - 2 * SCRAPE) * 1000 + 1
    )


def test_a_timeout_with_a_fraction_of_a_second_is_accepted(world: World) -> None:
    # Prometheus refuses timeout=1.5s as bad_data; the reader sends 1500ms.
    assert "n1" in world.read(timeout="1500ms").node_usage


# ---------------------------------------------------------------- missing series


def test_a_pod_nobody_reports_is_missing_without_a_warning(world: World) -> None:
    reading = world.read()
    assert "default/unschedulable" not in reading.pod_usage
    assert "default/on-n3" not in reading.pod_usage  # n3's cAdvisor is not scraped
    assert "n3" in reading.node_usage and "default/on-n4" in reading.pod_usage


@pytest.mark.parametrize(("node_name", "fault"), [("n3", "invalid"), ("n4", "unavailable")])
def test_a_node_whose_exporter_fails_is_missing_at_once_through_staleness_markers(
    world: World, node_name: str, fault: Any
) -> None:
    exporter = world.cluster.exporter
    assert exporter is not None
    assert node_name in world.read().node_usage
    exporter.faults[node_name] = fault
    try:
        took = wait_for(
            lambda: not {node_name, f"default/on-{node_name}"} & {*(r := world.read()).node_usage, *r.pod_usage},
            10,
            f"{node_name} and its pod missing",
            interval=0.2,
        )
        reading = world.read()
        # Its gauges went stale with the failed scrape (not after the 5-minute lookback); its cpu
        # rate still has samples in the window, so the node is half-reported and left out.
        assert took < 5, took
        assert f"prometheus: 1 node(s) reported cpu or memory but not both, left out (e.g. {node_name})" in (
            reading.warnings
        )
        up = world.prometheus.query(f'up{{job="node-exporter",instance="{node_name}"}}')
        assert up[0]["value"][1] == "0"
    finally:
        del exporter.faults[node_name]
    wait_for(lambda: node_name in world.read().node_usage, WINDOW + 10, f"{node_name} back", interval=0.5)


def test_a_reading_past_the_lookback_delta_finds_no_series(world: World) -> None:
    later = datetime.now(UTC) + timedelta(minutes=5, seconds=30)  # lookback 5m (the default)
    reading = world.read(later)
    assert reading.node_usage == {} and reading.pod_usage == {}


# ---------------------------------------------------------------- malformed answers


def test_two_series_per_node_is_an_error_naming_server_and_query(world: World) -> None:
    query = 'rate(node_cpu_seconds_total{mode="idle"}[$window])'  # one series per cpu
    with pytest.raises(LoadSourceError) as caught:
        world.read(queries={"nodeCpu": query})
    message = str(caught.value)
    assert message.startswith(f"prometheus {world.prometheus.url}: query nodeCpu returned two series for n")
    assert message.endswith('the query: rate(node_cpu_seconds_total{mode="idle"}[15s])')


@pytest.mark.parametrize(("query", "kind"), [("node_memory_MemTotal_bytes[10s]", "matrix"), ("42", "scalar")])
def test_a_query_that_is_not_an_instant_vector_is_an_error(world: World, query: str, kind: str) -> None:
    with pytest.raises(
        LoadSourceError, match=rf"prometheus {world.prometheus.url}: query nodeMemory returned a {kind}"
    ):
        world.read(queries={"nodeMemory": query})


def test_a_query_prometheus_cannot_parse_is_an_error_with_its_message(world: World) -> None:
    with pytest.raises(LoadSourceError, match=r"query podCpu failed \(HTTP 400\): bad_data: .*parse error"):
        world.read(queries={"podCpu": "sum by (pod (x)"})


# ---------------------------------------------------------------- down and slow


def test_a_stopped_prometheus_is_an_error_naming_its_address(prometheus_binary: str, tmp_path: Path) -> None:
    server = PrometheusServer(prometheus_binary, tmp_path, [])
    with server:
        config = PrometheusSource.model_validate({"type": "prometheus", "address": server.url, "timeout": "2s"})
        assert PrometheusReader(config).read(datetime.now(UTC)).node_usage == {}
    began = time.monotonic()
    with pytest.raises(LoadSourceError, match=rf"prometheus {server.url}: query nodeCpu: cannot reach the server"):
        PrometheusReader(config).read(datetime.now(UTC))
    assert time.monotonic() - began < 5


def test_a_slow_prometheus_is_an_error_within_the_timeout_and_its_retries(world: World) -> None:
    port = int(world.prometheus.url.rsplit(":", 1)[1])
    with DelayProxy(("127.0.0.1", port), delay=3.0) as proxy:
        config = PrometheusSource.model_validate({"type": "prometheus", "address": proxy.url, "timeout": "300ms"})
        began = time.monotonic()
        with pytest.raises(LoadSourceError, match=rf"prometheus {proxy.url}: query nodeCpu: no answer within the 0.3s"):
            PrometheusReader(config).read(datetime.now(UTC))
        took = time.monotonic() - began
    assert took < 3 * 0.3 + 0.3 + 0.6 + 1, took  # three tries and the backoff between them
