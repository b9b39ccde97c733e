"""Scenario times are relative to the scenario's start: the simulated cluster moves them so that
start falls on its clock's start, and `kubectl get` ages count from when the cluster started."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

from descheduler.fakecluster.apiserver.clock import parse_instant, rfc3339, rfc3339_micro
from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.scenario import LoadedScenario, load_demo_scenario, parse_scenario

from .conftest import T0

HOUR = 3600.0
S = T0 - 30 * 86400  # a scenario's own start, a month before the cluster's


def scenario(objects: list[dict[str, Any]], start: float | None = S) -> LoadedScenario:
    raw: dict[str, Any] = {"apiVersion": "descheduler.dev/v1alpha1", "kind": "Scenario", "snapshot": objects}
    if start is not None:
        raw["start"] = rfc3339(start)
    return parse_scenario(raw)


def pod(name: str, created: float | None, **status: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if created is not None:
        meta["creationTimestamp"] = rfc3339(created)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"containers": [{"name": "app"}]},
        "status": status,
    }


def created(cluster: SimulatedCluster, name: str) -> str:
    return str(cluster.store.get("pods", name, "default")["metadata"]["creationTimestamp"])


def test_offsets_from_the_scenario_start_are_kept_at_the_cluster_start() -> None:
    loaded = scenario([pod("old", S - 2 * HOUR), pod("recent", S - 60), pod("at-start", S)])
    cluster = SimulatedCluster(loaded, start=T0)
    assert created(cluster, "old") == rfc3339(T0 - 2 * HOUR)
    assert created(cluster, "recent") == rfc3339(T0 - 60)
    assert created(cluster, "at-start") == rfc3339(T0)


def test_without_a_start_the_newest_creation_timestamp_is_the_scenario_start() -> None:
    loaded = scenario([pod("old", S - HOUR), pod("newest", S)], start=None)
    assert loaded.origin() == S
    cluster = SimulatedCluster(loaded, start=T0)
    assert created(cluster, "old") == rfc3339(T0 - HOUR)
    assert created(cluster, "newest") == rfc3339(T0)


def test_an_object_without_a_creation_timestamp_is_created_at_the_cluster_start() -> None:
    cluster = SimulatedCluster(scenario([pod("bare", None), pod("dated", S)]), start=T0)
    assert created(cluster, "bare") == rfc3339(T0)


def test_a_cluster_started_at_the_scenario_start_keeps_the_times_as_written() -> None:
    loaded = scenario([pod("p", S - HOUR)])
    assert loaded.objects_at(S) is loaded.objects
    assert created(SimulatedCluster(loaded, start=S), "p") == rfc3339(S - HOUR)


def test_every_time_field_moves_and_keeps_its_precision() -> None:
    condition = {"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(S - 50)}
    running = pod(
        "p",
        S - 60,
        phase="Running",
        startTime=rfc3339(S - 55),
        conditions=[condition],
        containerStatuses=[{"name": "app", "state": {"running": {"startedAt": rfc3339(S - 54)}}}],
    )
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "namespace": "default"},
        "spec": {"holderIdentity": "x", "renewTime": rfc3339_micro(S - 1.5)},
    }
    cluster = SimulatedCluster(scenario([running, lease]), start=T0)
    status = cluster.store.get("pods", "p", "default")["status"]
    assert status["startTime"] == rfc3339(T0 - 55)
    assert status["conditions"][0]["lastTransitionTime"] == rfc3339(T0 - 50)
    assert status["containerStatuses"][0]["state"]["running"]["startedAt"] == rfc3339(T0 - 54)
    assert cluster.store.get("leases", "l", "default")["spec"]["renewTime"] == rfc3339_micro(T0 - 1.5)


def test_objects_sharing_a_yaml_anchor_move_once_and_the_scenario_is_not_changed() -> None:
    shared = {"phase": "Running", "startTime": rfc3339(S - 10)}
    loaded = scenario([pod("a", S, **shared), pod("b", S, **shared)])
    loaded.objects[0]["status"] = loaded.objects[1]["status"] = shared  # as `status: *anchor` loads
    moved = loaded.objects_at(T0)
    assert [o["status"]["startTime"] for o in moved] == [rfc3339(T0 - 10)] * 2
    assert shared["startTime"] == rfc3339(S - 10)
    assert loaded.objects[0]["metadata"]["creationTimestamp"] == rfc3339(S)


def test_a_value_that_is_not_a_time_is_left_as_written() -> None:
    odd = pod("p", S)
    odd["metadata"]["annotations"] = {"note": "2026-01-15T10:00:00Z"}  # not a time field
    odd["status"]["startTime"] = "soon"
    moved = scenario([odd]).objects_at(T0)[0]
    assert moved["metadata"]["annotations"] == {"note": "2026-01-15T10:00:00Z"}
    assert moved["status"]["startTime"] == "soon"


def test_the_demo_served_now_shows_pod_ages_as_the_scenario_has_them() -> None:
    """`descheduler sim serve` starts the demo at the wall clock's now; its pods were created four
    hours before the scenario's start (10:00 and 14:00 UTC), so kubectl's AGE is 4h, not months."""
    with SimulatedCluster(load_demo_scenario()) as cluster:
        pods = cluster.store.list("pods", "shop")
        assert pods
        assert abs(cluster.began - time.time()) < 60
        for p in pods:
            assert 4 * 3600 <= cluster.began - parse_instant(p["metadata"]["creationTimestamp"]) < 4 * 3600 + 1
        request = urllib.request.Request(
            cluster.url + "/api/v1/namespaces/shop/pods",
            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            table = json.loads(resp.read())
        ages = {row["cells"][4] for row in table["rows"]}
        assert ages == {"4h"}, ages
