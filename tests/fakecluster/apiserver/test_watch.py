"""Watch: resume from a resourceVersion, initial ADDED, 410 Expired, bookmarks, timeouts, selectors."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import urllib3
from contract_support import pod, watch_lines
from kubernetes import client, watch

from descheduler.fakecluster.apiserver import FakeApiServer


def _later(delay: float, action: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(delay), action()), daemon=True)
    thread.start()
    return thread


def _collect(stream: Any, count: int) -> list[dict[str, Any]]:
    events = []
    for event in stream:
        events.append(event)
        if len(events) == count:
            break
    return events


def test_watch_from_list_resource_version_sees_added_modified_deleted(core: Any, server: FakeApiServer) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version

    def changes() -> None:
        server.store.create(pod("p"))
        server.store.modify("pods", "p", "default", lambda o: o["metadata"].update(labels={"x": "1"}))
        server.store.delete("pods", "p", "default")

    _later(0.05, changes)
    w = watch.Watch()
    events = _collect(w.stream(core.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5), 3)
    w.stop()
    assert [(e["type"], e["object"].metadata.name) for e in events] == [
        ("ADDED", "p"),
        ("MODIFIED", "p"),
        ("DELETED", "p"),
    ]
    versions = [int(e["object"].metadata.resource_version) for e in events]
    assert versions == sorted(versions) and versions[0] > int(rv)


def test_watch_replays_changes_made_after_the_requested_version(server: FakeApiServer) -> None:
    server.store.create(pod("before"))
    rv = server.store.resource_version
    server.store.create(pod("after"))
    events = watch_lines(server, f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "after")]


def test_watch_without_resource_version_starts_with_added_for_existing_objects(server: FakeApiServer) -> None:
    server.store.load([pod("a"), pod("b")])
    events = watch_lines(server, "/api/v1/namespaces/default/pods?watch=1&timeoutSeconds=1")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_with_resource_version_zero_starts_with_added_for_existing_objects(server: FakeApiServer) -> None:
    server.store.load([pod("a")])
    events = watch_lines(server, "/api/v1/namespaces/default/pods?watch=true&resourceVersion=0&timeoutSeconds=1")
    assert [e["type"] for e in events] == ["ADDED"]


def test_watch_from_version_older_than_window_sends_error_410_expired() -> None:
    with FakeApiServer(history_size=5) as server:
        old = server.store.resource_version
        server.store.load([pod(f"p{i}") for i in range(10)])
        events = watch_lines(server, f"/api/v1/pods?watch=true&resourceVersion={old}&timeoutSeconds=1")
    assert len(events) == 1
    error = events[0]
    assert error["type"] == "ERROR"
    status = error["object"]
    assert (status["kind"], status["status"], status["code"], status["reason"]) == ("Status", "Failure", 410, "Expired")
    assert status["message"].startswith("too old resource version")


def test_official_client_raises_410_for_an_expired_watch() -> None:
    with FakeApiServer(history_size=5) as server, server.api_client() as api:
        old = str(server.store.resource_version)
        server.store.load([pod(f"p{i}") for i in range(10)])
        core = client.CoreV1Api(api)
        with pytest.raises(client.ApiException) as info:
            list(watch.Watch().stream(core.list_pod_for_all_namespaces, resource_version=old, timeout_seconds=1))
    assert info.value.status == 410


def test_a_watch_resumed_from_before_forgotten_history_gets_410() -> None:
    """As after etcd compaction: the window is empty, so resuming from any earlier version is too old."""
    with FakeApiServer() as server:
        server.store.load([pod("p0")])
        rv = server.store.resource_version
        server.store.forget_history("pods")
        events = watch_lines(server, f"/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1")
        assert [e["object"]["code"] for e in events] == [410]
        fresh = watch_lines(server, "/api/v1/pods?watch=true&timeoutSeconds=1")  # a new list+watch works
    assert [e["type"] for e in fresh] == ["ADDED"]


def test_watch_within_the_window_is_not_expired() -> None:
    with FakeApiServer(history_size=5) as server:
        server.store.load([pod(f"p{i}") for i in range(10)])
        rv = server.store.resource_version - 3
        events = watch_lines(server, f"/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    assert [e["object"]["metadata"]["name"] for e in events] == ["p7", "p8", "p9"]


# BOOKMARK objects as kube-apiserver v1.36.2 sends them (tests/realcluster checks the Pod one on the
# wire): the kind's empty object, Go zero values included, with only the resourceVersion set.
REAL_BOOKMARK_BODIES = {
    "/api/v1/namespaces/default/pods": {"kind": "Pod", "apiVersion": "v1", "spec": {"containers": None}, "status": {}},
    "/api/v1/namespaces": {"kind": "Namespace", "apiVersion": "v1", "spec": {}, "status": {}},
    "/apis/apps/v1/namespaces/default/replicasets": {
        "kind": "ReplicaSet",
        "apiVersion": "apps/v1",
        "spec": {"replicas": 0, "selector": None, "template": {"metadata": {}, "spec": {"containers": None}}},
        "status": {"replicas": 0},
    },
    "/apis/apps/v1/namespaces/default/deployments": {
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "spec": {
            "replicas": 0,
            "selector": None,
            "template": {"metadata": {}, "spec": {"containers": None}},
            "strategy": {},
        },
        "status": {},
    },
    "/apis/policy/v1/namespaces/default/poddisruptionbudgets": {
        "kind": "PodDisruptionBudget",
        "apiVersion": "policy/v1",
        "spec": {},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
    },
    "/apis/descheduler.dev/v1alpha1/reservations": {"kind": "Reservation", "apiVersion": "descheduler.dev/v1alpha1"},
}


@pytest.mark.parametrize("collection", sorted(REAL_BOOKMARK_BODIES))
def test_watch_bookmarks_are_the_kinds_empty_object_with_only_the_resource_version(
    server: FakeApiServer, collection: str
) -> None:
    rv = server.store.resource_version
    path = f"{collection}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1"
    events = watch_lines(server, path)
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert bookmarks, "a one-second watch with a 0.1 s bookmark interval must see bookmarks"
    assert bookmarks[0]["object"] == {**REAL_BOOKMARK_BODIES[collection], "metadata": {"resourceVersion": str(rv)}}


def test_watch_without_allow_bookmarks_sends_none(server: FakeApiServer) -> None:
    rv = server.store.resource_version
    events = watch_lines(server, f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    assert events == []


def test_official_client_follows_bookmark_resource_version(core: Any, server: FakeApiServer) -> None:
    rv = core.list_namespaced_pod("default").metadata.resource_version
    server.store.create(pod("elsewhere", "kube-system"))  # moves the global version, not this watch
    w = watch.Watch()
    for event in w.stream(
        core.list_namespaced_pod, "default", resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=2
    ):
        if event["type"] == "BOOKMARK":
            break
    w.stop()
    assert int(w.resource_version) == server.store.resource_version


def test_timeout_seconds_closes_the_stream(server: FakeApiServer) -> None:
    started = time.monotonic()
    watch_lines(server, "/api/v1/pods?watch=true&timeoutSeconds=1")
    assert 0.9 <= time.monotonic() - started < 3


def test_watch_label_selector_filters_events(core: Any, server: FakeApiServer) -> None:
    rv = server.store.resource_version
    server.store.create(pod("other", labels={"app": "b"}))
    server.store.create(pod("mine", labels={"app": "a"}))
    events = watch_lines(
        server,
        f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&labelSelector=app%3Da&timeoutSeconds=1",
    )
    assert [e["object"]["metadata"]["name"] for e in events] == ["mine"]


def test_watch_field_selector_filters_events(server: FakeApiServer) -> None:
    rv = server.store.resource_version
    server.store.create(pod("x", node="n1"))
    server.store.create(pod("y", node="n2"))
    events = watch_lines(
        server, f"/api/v1/pods?watch=true&resourceVersion={rv}&fieldSelector=spec.nodeName%3Dn2&timeoutSeconds=1"
    )
    assert [e["object"]["metadata"]["name"] for e in events] == ["y"]


def test_object_that_stops_matching_the_selector_is_sent_as_deleted(server: FakeApiServer) -> None:
    server.store.create(pod("p", labels={"app": "a"}))
    rv = server.store.resource_version
    server.store.modify("pods", "p", "default", lambda o: o["metadata"].update(labels={"app": "b"}))
    events = watch_lines(
        server,
        f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&labelSelector=app%3Da&timeoutSeconds=1",
    )
    assert [e["type"] for e in events] == ["DELETED"]
    assert events[0]["object"]["metadata"]["labels"] == {"app": "a"}  # the last state that matched
    assert events[0]["object"]["metadata"]["resourceVersion"] == str(server.store.resource_version)


def test_object_that_starts_matching_the_selector_is_sent_as_added(server: FakeApiServer) -> None:
    server.store.create(pod("p", labels={"app": "b"}))
    rv = server.store.resource_version
    server.store.modify("pods", "p", "default", lambda o: o["metadata"].update(labels={"app": "a"}))
    events = watch_lines(
        server,
        f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&labelSelector=app%3Da&timeoutSeconds=1",
    )
    assert [e["type"] for e in events] == ["ADDED"]


def test_watch_in_a_namespace_ignores_other_namespaces(server: FakeApiServer) -> None:
    rv = server.store.resource_version
    server.store.create(pod("x", "kube-system"))
    server.store.create(pod("y"))
    events = watch_lines(server, f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    assert [e["object"]["metadata"]["name"] for e in events] == ["y"]


def test_watch_of_custom_resources_works_with_the_official_client(custom: Any, server: FakeApiServer) -> None:
    rv = str(server.store.resource_version)
    body = {"apiVersion": "descheduler.dev/v1alpha1", "kind": "Reservation", "metadata": {"name": "r1"}, "spec": {}}
    _later(0.05, lambda: server.store.create(body))
    w = watch.Watch()
    stream = w.stream(
        custom.list_cluster_custom_object,
        "descheduler.dev",
        "v1alpha1",
        "reservations",
        resource_version=rv,
        timeout_seconds=5,
    )
    events = _collect(stream, 1)
    w.stop()
    assert events[0]["type"] == "ADDED" and events[0]["object"]["metadata"]["name"] == "r1"


def test_dropped_watch_ends_the_stream_cleanly(server: FakeApiServer) -> None:
    _later(0.2, lambda: server.faults.drop_watches("pods"))
    started = time.monotonic()
    events = watch_lines(server, "/api/v1/pods?watch=true&resourceVersion=1&timeoutSeconds=5")
    assert events == [] and time.monotonic() - started < 2


def test_dropped_watch_only_affects_the_named_resource(server: FakeApiServer) -> None:
    _later(0.2, lambda: server.faults.drop_watches("nodes"))
    started = time.monotonic()
    watch_lines(server, "/api/v1/pods?watch=true&resourceVersion=1&timeoutSeconds=1")
    assert time.monotonic() - started >= 0.9


def test_abruptly_dropped_watch_breaks_the_client_connection(core: Any, server: FakeApiServer) -> None:
    rv = str(server.store.resource_version)
    _later(0.2, lambda: server.faults.drop_watches(abrupt=True))
    with pytest.raises(urllib3.exceptions.ProtocolError):
        list(watch.Watch().stream(core.list_pod_for_all_namespaces, resource_version=rv, timeout_seconds=5))


def test_official_client_resumes_after_a_clean_close(core: Any, server: FakeApiServer) -> None:
    rv = str(server.store.resource_version)

    def close_then_write() -> None:
        server.faults.drop_watches("pods")
        time.sleep(0.2)
        server.store.create(pod("after-drop"))

    _later(0.2, close_then_write)
    w = watch.Watch()
    events = _collect(w.stream(core.list_pod_for_all_namespaces, resource_version=rv), 1)
    w.stop()
    assert events[0]["object"].metadata.name == "after-drop"
