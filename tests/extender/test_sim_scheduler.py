"""The simulated scheduler's kube-scheduler-with-extender mode: the calls it makes and what it does
when the extender cannot be reached (ignorable or not), as kube-scheduler does."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from descheduler import metrics
from descheduler.extender import Extender, ExtenderServer, SnapshotFileSource
from descheduler.fakecluster.apiserver import Store
from descheduler.fakecluster.clock import SimClock
from descheduler.fakecluster.scheduler import Binding, ExtenderConfig, Scheduler
from tests.builders import loaded_node

from .conftest import scheduling_args, write_snapshot

T0 = 1_768_478_430.0  # tests.builders.NOW


def _pending(name: str, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
        "status": {"phase": "Pending"},
    }


def _cluster() -> list[dict[str, Any]]:
    # cool: 1 cpu used of 8; hot: 5 cpu used, over 65% with one more pod.
    return [*loaded_node("cool", [("c1", "1")]), *loaded_node("hot", [("h1", "5")])]


@pytest.fixture
def store() -> Store:
    s = Store(clock=SimClock(T0), pod_termination_delay=None)
    s.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}])
    s.load(_cluster())
    return s


@pytest.fixture
def extender_url(tmp_path: Path) -> Iterator[str]:
    extender = Extender(SnapshotFileSource(write_snapshot(tmp_path / "s.yaml", _cluster())), scheduling_args())
    assert extender.refresh(force=True)
    with ExtenderServer(extender, "127.0.0.1", 0) as server:
        yield server.url


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _node(store: Store, name: str) -> str:
    return str(store.get("pods", name, "default")["spec"].get("nodeName", ""))


def test_the_extender_filters_out_the_hot_node_kube_schedulers_scores_would_prefer(
    store: Store, extender_url: str
) -> None:
    store.load([_pending("p")])
    scheduler = Scheduler(store, extender=ExtenderConfig(url_prefix=extender_url))
    filters = metrics.sample("descheduler_extender_requests_total", {"verb": "filter", "code": "200"})
    prioritizes = metrics.sample("descheduler_extender_requests_total", {"verb": "prioritize", "code": "200"})
    assert scheduler.step(T0) == [Binding("default", "p", "cool")]
    assert metrics.sample("descheduler_extender_requests_total", {"verb": "filter", "code": "200"}) == filters + 1
    # One node passed the filter: kube-scheduler does not score a single node, nor does the simulation.
    assert metrics.sample("descheduler_extender_requests_total", {"verb": "prioritize", "code": "200"}) == prioritizes


def test_an_unreachable_ignorable_extender_is_skipped(store: Store) -> None:
    store.load([_pending("p")])
    scheduler = Scheduler(store, extender=ExtenderConfig(url_prefix=_closed_port(), ignorable=True))
    # Without the extender only requests count: hot (1 cpu requested) and cool (1 cpu) tie; by name, cool.
    [binding] = scheduler.step(T0)
    assert binding.pod == "p" and _node(store, "p") == binding.node


def test_an_unreachable_extender_that_is_not_ignorable_leaves_the_pod_pending(store: Store) -> None:
    store.load([_pending("p")])
    scheduler = Scheduler(store, extender=ExtenderConfig(url_prefix=_closed_port(), http_timeout=1.0))
    assert scheduler.step(T0) == []
    assert _node(store, "p") == ""
    assert scheduler.unschedulable["default/p"].startswith("extender: filter at http://127.0.0.1:")


def test_when_the_load_filter_refuses_every_node_the_pod_is_bound_as_without_the_extender(
    store: Store, extender_url: str
) -> None:
    store.load([_pending("big", cpu="5")])  # cool: 1 + 4.25 of 8 cpu = 66%; hot more
    scheduler = Scheduler(store, extender=ExtenderConfig(url_prefix=extender_url))
    # Not kept Pending: kube-scheduler alone would bind it, and its scores (requests) prefer cool.
    assert scheduler.step(T0) == [Binding("default", "big", "cool")]
    assert "default/big" not in scheduler.unschedulable
