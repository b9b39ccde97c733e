"""Source steering (migration.md §3, issue 42): our PreferNoSchedule taint on the source of moves
without a Reservation, added once, other taints kept, removed once those moves end."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from descheduler import metrics
from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.migration.api import ApiFailure, MigrationApi
from descheduler.migration.objects import TAINT_MOVING_OFF
from descheduler.migration.steering import SourceSteering, with_moving_off, without_moving_off

OURS = {"key": TAINT_MOVING_OFF, "effect": "PreferNoSchedule"}
GPU = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
MAINTENANCE = {"key": "example.com/maintenance", "effect": "PreferNoSchedule"}
SERIES = "descheduler_source_taints_total"


def node(name: str, *taints: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"taints": [dict(t) for t in taints]} if taints else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": spec,
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as fake:
        yield fake


@pytest.fixture
def api(server: FakeApiServer) -> Iterator[MigrationApi]:
    api_client = server.api_client()
    yield MigrationApi(api_client)
    api_client.close()


def taints(server: FakeApiServer, name: str) -> list[dict[str, Any]]:
    return list(server.store.get("nodes", name)["spec"].get("taints") or [])


def writes(server: FakeApiServer, name: str) -> int:
    return server.faults.count(verb="update", path=f"/nodes/{name}$")


def counted(action: str) -> float:
    return metrics.sample(SERIES, {"action": action})


def test_taint_adds_ours_once(server: FakeApiServer, api: MigrationApi) -> None:
    server.store.load([node("node-a")])
    added = counted("added")
    steering = SourceSteering(api)
    steering.taint("node-a")
    steering.taint("node-a")
    assert taints(server, "node-a") == [OURS]
    assert writes(server, "node-a") == 1
    assert counted("added") == added + 1


def test_taint_keeps_every_other_taint_and_the_status(server: FakeApiServer, api: MigrationApi) -> None:
    server.store.load([node("node-a", GPU, MAINTENANCE)])
    SourceSteering(api).taint("node-a")
    assert taints(server, "node-a") == [GPU, MAINTENANCE, OURS]
    assert server.store.get("nodes", "node-a")["status"]["allocatable"]["cpu"] == "8"


def test_reconcile_removes_ours_only_from_nodes_not_in_flight(server: FakeApiServer, api: MigrationApi) -> None:
    server.store.load([node("node-a", GPU, OURS), node("node-b", OURS), node("node-c", MAINTENANCE)])
    removed = counted("removed")
    SourceSteering(api).reconcile({"node-a"})
    assert taints(server, "node-a") == [GPU, OURS]  # still moving off
    assert taints(server, "node-b") == []
    assert taints(server, "node-c") == [MAINTENANCE]
    assert counted("removed") == removed + 1
    assert (writes(server, "node-a"), writes(server, "node-b"), writes(server, "node-c")) == (0, 1, 0)


def test_reconcile_leaves_another_effect_of_our_key_alone(server: FakeApiServer, api: MigrationApi) -> None:
    """Only the PreferNoSchedule taint is ours: someone's NoSchedule with the same key is theirs."""
    fenced = {"key": TAINT_MOVING_OFF, "effect": "NoSchedule"}
    server.store.load([node("node-a", fenced)])
    SourceSteering(api).reconcile(set())
    assert taints(server, "node-a") == [fenced]


def test_reconcile_with_nothing_in_flight_cleans_every_leftover(server: FakeApiServer, api: MigrationApi) -> None:
    """At start, after a crash: every node of ours is untainted with one list and one write each."""
    server.store.load([node(f"node-{i}", OURS) for i in range(3)])
    SourceSteering(api).reconcile(set())
    assert all(taints(server, f"node-{i}") == [] for i in range(3))
    assert server.faults.count(verb="list", path="/nodes$") == 1
    assert server.faults.count(verb="get", path="/nodes/") == 0


def test_a_node_changed_since_it_was_read_is_read_again(server: FakeApiServer, api: MigrationApi) -> None:
    """A kubelet or another controller writes the node between our read and our write: a real 409
    (stale resourceVersion), then the write is redone on the node as it is now, its change kept."""
    server.store.load([node("node-a")])
    read = api.get_node

    def read_then_changed(name: str) -> dict[str, Any] | None:
        got = read(name)
        if server.faults.count(verb="update", path="/nodes/node-a$") == 0:
            server.store.modify("nodes", "node-a", "", lambda n: n["spec"].update(taints=[GPU]))
        return got

    api.get_node = read_then_changed  # type: ignore[method-assign]
    SourceSteering(api).taint("node-a")
    assert taints(server, "node-a") == [GPU, OURS]
    assert writes(server, "node-a") == 2


def test_conflicts_past_the_attempts_are_raised(server: FakeApiServer, api: MigrationApi) -> None:
    server.store.load([node("node-a")])
    server.faults.fail_next(3, path="/nodes/node-a$", verb="update", status=409)
    with pytest.raises(ApiFailure) as info:
        SourceSteering(api, attempts=3).taint("node-a")
    assert info.value.conflict
    assert taints(server, "node-a") == []


def test_a_conflict_within_the_attempts_is_retried(server: FakeApiServer, api: MigrationApi) -> None:
    server.store.load([node("node-a", OURS)])
    server.faults.fail_next(2, path="/nodes/node-a$", verb="update", status=409)
    SourceSteering(api, attempts=3).reconcile(set())
    assert taints(server, "node-a") == []


def test_a_missing_node_is_not_an_error(server: FakeApiServer, api: MigrationApi) -> None:
    added = counted("added")
    SourceSteering(api).taint("node-gone")
    assert counted("added") == added


def test_a_node_deleted_between_read_and_write_is_not_an_error(server: FakeApiServer, api: MigrationApi) -> None:
    server.store.load([node("node-a", OURS)])
    server.faults.fail_next(1, path="/nodes/node-a$", verb="update", status=404)
    removed = counted("removed")
    SourceSteering(api).reconcile(set())
    assert counted("removed") == removed


def test_other_failures_are_raised_after_every_node_was_tried(server: FakeApiServer, api: MigrationApi) -> None:
    server.store.load([node("node-a", OURS), node("node-b", OURS)])
    server.faults.fail_next(1, path="/nodes/node-a$", verb="update", status=500)
    with pytest.raises(ApiFailure) as info:
        SourceSteering(api).reconcile(set())
    assert info.value.status == 500
    assert taints(server, "node-a") == [OURS]
    assert taints(server, "node-b") == []


def test_a_failed_list_is_raised(server: FakeApiServer, api: MigrationApi) -> None:
    server.faults.fail_next(1, path="/nodes$", verb="list", status=503)
    with pytest.raises(ApiFailure) as info:
        SourceSteering(api).reconcile(set())
    assert info.value.transient


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ([], [OURS]),
        ([GPU], [GPU, OURS]),
        ([GPU, OURS], None),  # there already: nothing to write
        ([{**OURS, "value": ""}], None),  # an empty value is no value
    ],
)
def test_with_moving_off(before: list[dict[str, Any]], after: list[dict[str, Any]] | None) -> None:
    assert with_moving_off(before) == after


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ([GPU, OURS, MAINTENANCE], [GPU, MAINTENANCE]),
        ([OURS], []),
        ([GPU], None),  # not there: nothing to write
        ([], None),
    ],
)
def test_without_moving_off(before: list[dict[str, Any]], after: list[dict[str, Any]] | None) -> None:
    assert without_moving_off(before) == after
