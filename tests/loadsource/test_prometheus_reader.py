"""Prometheus reader against a local HTTP stub of the query API: fresh, stale, missing and malformed data."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from loadsource_support import PrometheusStub, vector

from descheduler.loadsource import LoadSourceError, PrometheusReader
from descheduler.loadsource.prometheus import expression, promql_duration, timeout_parameter
from descheduler.policy import PrometheusSource
from descheduler.snapshot import load_snapshot_objects

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
T = NOW.timestamp()


def source(stub: PrometheusStub, **settings: Any) -> PrometheusSource:
    return PrometheusSource.model_validate({"type": "prometheus", "address": stub.url, **settings})


def answers(
    node_cpu: list[tuple[dict[str, str], Any]] = (),
    node_memory: list[tuple[dict[str, str], Any]] = (),
    pod_cpu: list[tuple[dict[str, str], Any]] = (),
    pod_memory: list[tuple[dict[str, str], Any]] = (),
    at: float = T,
) -> Any:
    """Answer each default query with its series (the queries are told apart by their metric names)."""

    def answer(query: str) -> tuple[int, Any]:
        if "node_cpu_seconds_total" in query:
            return 200, vector(list(node_cpu), at)
        if "MemAvailable" in query:
            return 200, vector(list(node_memory), at)
        if "container_cpu_usage_seconds_total" in query:
            return 200, vector(list(pod_cpu), at)
        return 200, vector(list(pod_memory), at)

    return answer


def _healthy(at: float = T) -> Any:
    return answers(
        node_cpu=[({"instance": "n1"}, 2.5), ({"instance": "n2"}, 0.25)],
        node_memory=[({"instance": "n1"}, 8 * 2**30), ({"instance": "n2"}, 2**30)],
        pod_cpu=[({"namespace": "default", "pod": "web"}, 0.1234)],
        pod_memory=[({"namespace": "default", "pod": "web"}, 300 * 2**20)],
        at=at,
    )


def test_fresh_series_become_node_and_pod_usage(prometheus: PrometheusStub) -> None:
    prometheus.answer = _healthy()
    reading = PrometheusReader(source(prometheus)).read(NOW)
    assert {n: (u.usage["cpu"], u.usage["memory"]) for n, u in reading.node_usage.items()} == {
        "n1": (2500, 8 * 2**30),
        "n2": (250, 2**30),
    }
    pod = reading.pod_usage["default/web"]
    assert (pod.usage["cpu"], pod.usage["memory"]) == (124, 300 * 2**20)  # fractions of a millicore round up
    assert reading.node_usage["n1"].timestamp == NOW and reading.node_usage["n1"].window_seconds == 300
    assert reading.warnings == ()


def test_queries_are_evaluated_at_now_with_the_window_substituted(prometheus: PrometheusStub) -> None:
    prometheus.answer = _healthy()
    PrometheusReader(source(prometheus, window="2m", timeout="3s")).read(NOW)
    assert len(prometheus.requests) == 4
    first = prometheus.requests[0]
    assert first["time"] == f"{T:.3f}" and first["timeout"] == "3s"  # a duration Prometheus parses
    assert first["query"] == 'sum by (instance) (1 - rate(node_cpu_seconds_total{mode="idle"}[2m]))'
    assert first["authorization"] == ""


def test_a_percentile_wraps_each_query_in_quantile_over_time(prometheus: PrometheusStub) -> None:
    prometheus.answer = _healthy()
    PrometheusReader(source(prometheus, percentile=0.95, window="10m")).read(NOW)
    memory = prometheus.requests[1]["query"]
    assert memory == (
        "quantile_over_time(0.95, (sum by (instance) (node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes))[10m:])"
    )


def test_custom_queries_and_node_label_are_used(prometheus: PrometheusStub) -> None:
    prometheus.answer = lambda q: (200, vector([({"node": "n9"}, 1)] if "node" in q else []))
    config = source(
        prometheus,
        nodeLabel="node",
        queries={"nodeCpu": "node_cpu_busy", "nodeMemory": "node_mem_used", "podCpu": "pc", "podMemory": "pm"},
    )
    reading = PrometheusReader(config).read(NOW)
    assert [r["query"] for r in prometheus.requests] == ["node_cpu_busy", "node_mem_used", "pc", "pm"]
    assert reading.node_usage["n9"].usage["cpu"] == 1000


def test_the_bearer_token_is_read_from_its_file_on_every_read(prometheus: PrometheusStub, tmp_path: Path) -> None:
    prometheus.answer = _healthy()
    token = tmp_path / "token"
    token.write_text("first\n")
    reader = PrometheusReader(source(prometheus, bearerTokenFile=str(token)))
    reader.read(NOW)
    token.write_text("rotated")
    reader.read(NOW)
    assert {r["authorization"] for r in prometheus.requests[:4]} == {"Bearer first"}
    assert {r["authorization"] for r in prometheus.requests[4:]} == {"Bearer rotated"}


def test_a_missing_token_file_is_an_error_naming_it(prometheus: PrometheusStub, tmp_path: Path) -> None:
    with pytest.raises(LoadSourceError, match=r"cannot read bearerTokenFile .*/nope"):
        PrometheusReader(source(prometheus, bearerTokenFile=str(tmp_path / "nope"))).read(NOW)
    assert prometheus.requests == []


def test_stale_samples_are_reported_by_their_timestamp(prometheus: PrometheusStub) -> None:
    prometheus.answer = _healthy(at=T - 600)
    reading = PrometheusReader(source(prometheus)).read(NOW)
    assert reading.age("n1") == 600 and reading.stale_nodes(180) == ["n1", "n2"]


def test_a_node_with_cpu_but_no_memory_is_left_out(prometheus: PrometheusStub) -> None:
    prometheus.answer = answers(
        node_cpu=[({"instance": "n1"}, 1), ({"instance": "n2"}, 1)], node_memory=[({"instance": "n1"}, 2**30)]
    )
    reading = PrometheusReader(source(prometheus)).read(NOW)
    assert set(reading.node_usage) == {"n1"}
    assert reading.warnings == ("prometheus: 1 node(s) reported cpu or memory but not both, left out (e.g. n2)",)


def test_no_series_at_all_is_an_empty_reading_not_an_error(prometheus: PrometheusStub) -> None:
    reading = PrometheusReader(source(prometheus)).read(NOW)
    assert reading.node_usage == {} and reading.pod_usage == {}


def test_series_without_the_node_label_or_with_unusable_values_are_left_out_with_a_warning(
    prometheus: PrometheusStub,
) -> None:
    prometheus.answer = answers(
        node_cpu=[({"instance": "n1"}, 1), ({"job": "node"}, 5), ({"instance": "n2"}, "NaN"), ({"instance": "n3"}, -1)],
        node_memory=[({"instance": n}, 2**30) for n in ("n1", "n2", "n3")],
    )
    reading = PrometheusReader(source(prometheus)).read(NOW)
    assert set(reading.node_usage) == {"n1"}
    assert reading.warnings[:2] == (
        "prometheus: query nodeCpu: 1 series without label(s) instance, ignored",
        "prometheus: query nodeCpu: 2 series with an unusable value, ignored (e.g. n2=NaN)",
    )


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (
            400,
            {"status": "error", "errorType": "bad_data", "error": "parse error at char 5"},
            r"query nodeCpu failed \(HTTP 400\): bad_data: parse error at char 5",
        ),
        (200, b"<html>proxy login</html>", r"HTTP 200, not a Prometheus API answer: '<html>proxy login</html>'"),
        (
            200,
            {"status": "success", "data": {"resultType": "matrix", "result": []}},
            "returned a matrix, not an instant vector",
        ),
        (
            200,
            {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}, "value": "x"}]}},
            "malformed vector",
        ),
        (
            503,
            {"status": "error", "errorType": "unavailable", "error": "TSDB not ready"},
            "unavailable: TSDB not ready",
        ),
    ],
    ids=["bad-query", "not-json", "matrix", "bad-sample", "unavailable"],
)
def test_a_malformed_or_failed_answer_raises(prometheus: PrometheusStub, status: int, body: Any, expected: str) -> None:
    prometheus.answer = lambda q: (status, body)
    with pytest.raises(LoadSourceError, match=expected):
        PrometheusReader(source(prometheus)).read(NOW)


def test_two_series_for_one_node_is_an_error_asking_for_aggregation(prometheus: PrometheusStub) -> None:
    prometheus.answer = answers(node_cpu=[({"instance": "n1", "cpu": "0"}, 1), ({"instance": "n1", "cpu": "1"}, 1)])
    with pytest.raises(LoadSourceError, match=r"two series for n1: aggregate it by instance"):
        PrometheusReader(source(prometheus)).read(NOW)


def test_an_unreachable_server_raises(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = PrometheusSource.model_validate({"type": "prometheus", "address": f"http://127.0.0.1:{port}"})
    with pytest.raises(LoadSourceError, match="cannot reach the server"):
        PrometheusReader(config).read(NOW)


def test_a_server_slower_than_the_timeout_raises(prometheus: PrometheusStub) -> None:
    prometheus.delay = 1.0
    with pytest.raises(LoadSourceError, match=r"query nodeCpu: no answer within the 0.2s timeout"):
        PrometheusReader(source(prometheus, timeout="200ms")).read(NOW)


def test_kept_objects_replay_to_the_same_usage(prometheus: PrometheusStub) -> None:
    prometheus.answer = _healthy()
    reading = PrometheusReader(source(prometheus)).read(NOW, keep_objects=True)
    nodes = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}, "status": {"allocatable": {"cpu": "8"}}}
        for n in ("n1", "n2")
    ]
    replayed = load_snapshot_objects([*nodes, *reading.objects], NOW)
    assert {n: u.usage for n, u in replayed.node_usage.items()} == {n: u.usage for n, u in reading.node_usage.items()}
    assert {k: u.usage for k, u in replayed.pod_usage.items()} == {k: u.usage for k, u in reading.pod_usage.items()}
    assert {u.timestamp for u in replayed.node_usage.values()} == {NOW}


@pytest.mark.parametrize(("seconds", "text"), [(300, "5m"), (3600, "1h"), (90, "90s"), (7200, "2h")])
def test_windows_are_written_as_prometheus_durations(seconds: int, text: str) -> None:
    assert promql_duration(timedelta(seconds=seconds)) == text


@pytest.mark.parametrize(("seconds", "text"), [(3, "3s"), (1.5, "1500ms"), (0.2, "200ms"), (0.0001, "1ms")])
def test_timeouts_are_sent_as_durations_prometheus_parses(seconds: float, text: str) -> None:
    # Prometheus refuses "1.5s" (bad_data: cannot parse "1.5s" to a valid duration); see test_prometheus_real.py
    assert timeout_parameter(seconds) == text


def test_expression_leaves_a_query_without_window_alone(prometheus: PrometheusStub) -> None:
    assert expression("up", source(prometheus)) == "up"
