"""The Kubernetes Event recorder: core/v1 Events, repeats aggregated, rate-limited, never fatal."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from descheduler.events import EventRecorder, ObjectRef
from descheduler.fakecluster.apiserver import FakeApiServer

T0 = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer() as srv:
        yield srv


@pytest.fixture
def api(server: FakeApiServer) -> Iterator[Any]:
    client = server.api_client()
    yield client
    client.close()


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


POD = ObjectRef("Pod", "web-0", "shop", "uid-1")


def _events(server: FakeApiServer, namespace: str = "shop") -> list[dict[str, Any]]:
    return server.store.list("events", namespace)


def test_an_event_names_its_object_reason_and_source(server: FakeApiServer, api: Any) -> None:
    server.store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}])
    EventRecorder(api, instance="replica-1", clock=Clock()).normal(POD, "Descheduled", "moved for a reason")
    [event] = _events(server)
    assert event["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "web-0",
        "namespace": "shop",
        "uid": "uid-1",
    }
    assert (event["reason"], event["message"], event["type"], event["count"]) == (
        "Descheduled",
        "moved for a reason",
        "Normal",
        1,
    )
    assert event["source"] == {"component": "descheduler", "host": "replica-1"}
    assert event["reportingComponent"] == "descheduler" and event["reportingInstance"] == "replica-1"
    assert _time(event["firstTimestamp"]) == _time(event["lastTimestamp"]) == T0
    assert event["metadata"]["name"].startswith("web-0.")


def test_a_repeat_bumps_the_count_of_the_same_event(server: FakeApiServer, api: Any) -> None:
    server.store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}])
    clock = Clock()
    recorder = EventRecorder(api, clock=clock)
    recorder.warning(POD, "EvictionBlocked", "budget says no")
    clock.now += timedelta(seconds=30)
    recorder.warning(POD, "EvictionBlocked", "budget says no")
    recorder.warning(POD, "EvictionBlocked", "a different message")
    events = sorted(_events(server), key=lambda e: e["message"])
    assert [(e["message"], e["count"]) for e in events] == [("a different message", 1), ("budget says no", 2)]
    assert _time(events[1]["lastTimestamp"]) == T0 + timedelta(seconds=30)
    assert _time(events[1]["firstTimestamp"]) == T0


def test_a_repeat_of_an_event_someone_deleted_writes_a_new_one(server: FakeApiServer, api: Any) -> None:
    server.store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}])
    recorder = EventRecorder(api, clock=Clock())
    recorder.normal(POD, "Descheduled", "m")
    [event] = _events(server)
    server.store.delete("events", event["metadata"]["name"], "shop")
    recorder.normal(POD, "Descheduled", "m")
    [again] = _events(server)
    assert again["count"] == 1 and again["metadata"]["name"] != event["metadata"]["name"]


def test_events_of_cluster_scoped_objects_go_to_the_default_namespace(server: FakeApiServer, api: Any) -> None:
    job = ObjectRef("PodMigrationJob", "web-0-abc", uid="j1", api_version="descheduler.dev/v1alpha1")
    EventRecorder(api, clock=Clock()).normal(job, "MigrationStarted", "go")
    [event] = _events(server, "default")
    assert event["involvedObject"]["kind"] == "PodMigrationJob" and "namespace" not in event["involvedObject"]


def test_one_object_cannot_flood_the_api(server: FakeApiServer, api: Any) -> None:
    server.store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}])
    clock = Clock()
    recorder = EventRecorder(api, clock=clock, burst=3, refill=timedelta(minutes=5))
    for i in range(10):
        recorder.normal(POD, "Noisy", f"message {i}")
    assert len(_events(server)) == 3 and recorder.dropped == 7
    recorder.normal(ObjectRef("Pod", "other", "shop"), "Noisy", "another object has its own budget")
    clock.now += timedelta(minutes=5)
    recorder.normal(POD, "Noisy", "one more after the refill")
    assert len(_events(server)) == 5


def test_a_failed_write_is_logged_never_raised(server: FakeApiServer, api: Any) -> None:
    server.store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}])
    server.faults.fail_next(5, path="/events", status=500)
    recorder = EventRecorder(api, clock=Clock())
    recorder.normal(POD, "Descheduled", "m")  # no exception
    assert _events(server) == []
    recorder.normal(ObjectRef("Pod", "x", "missing-namespace"), "Descheduled", "m")  # 404: still no exception


def test_long_messages_are_cut(server: FakeApiServer, api: Any) -> None:
    server.store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}])
    EventRecorder(api, clock=Clock()).normal(POD, "Descheduled", "x" * 5000)
    [event] = _events(server)
    assert len(event["message"]) == 1024 and event["message"].endswith("…")
