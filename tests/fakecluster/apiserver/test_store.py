"""The Python side of the fake server: seeding, reading and writing without HTTP."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from contract_support import pod, running_pod

from descheduler.fakecluster.apiserver import ApiError, FakeApiServer, Store


def test_load_creates_missing_namespaces_and_keeps_status_and_identity() -> None:
    store = Store()
    seeded = running_pod("p", "team")
    seeded["metadata"]["uid"] = "fixed-uid"
    assert store.load([seeded]) == 2  # the namespace and the pod
    got = store.get("pods", "p", "team")
    assert got["metadata"]["uid"] == "fixed-uid" and got["status"]["phase"] == "Running"
    assert store.exists("namespaces", "team")


def test_load_does_not_mutate_the_callers_objects() -> None:
    seeded = pod("p")
    Store().load([seeded])
    assert "terminationGracePeriodSeconds" not in seeded["spec"] and "resourceVersion" not in seeded["metadata"]


def test_load_expands_list_documents() -> None:
    store = Store()
    store.load([{"apiVersion": "v1", "kind": "List", "items": [pod("a"), pod("b")]}])
    assert [p["metadata"]["name"] for p in store.list("pods")] == ["a", "b"]


def test_load_without_namespace_creation_refuses_unknown_namespace() -> None:
    with pytest.raises(ApiError) as info:
        Store().load([pod("p", "nowhere")], create_namespaces=False)
    assert info.value.code == 404


def test_python_create_of_unknown_kind_is_a_400() -> None:
    with pytest.raises(ApiError) as info:
        Store().create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
    assert info.value.code == 400


def test_modify_is_an_atomic_read_modify_write() -> None:
    store = Store()
    store.load([pod("p")])
    before = store.get("pods", "p", "default")["metadata"]["resourceVersion"]
    after = store.modify("pods", "p", "default", lambda o: o["metadata"].setdefault("labels", {}).update(a="1"))
    assert after["metadata"]["labels"] == {"a": "1"}
    assert int(after["metadata"]["resourceVersion"]) > int(before)


def test_modify_status_writes_status_only() -> None:
    store = Store()
    store.load([pod("p")])

    def run(obj: dict[str, Any]) -> None:
        obj["status"]["phase"] = "Running"
        obj["spec"]["nodeName"] = "ignored"

    updated = store.modify("pods", "p", "default", run, subresource="status")
    assert updated["status"]["phase"] == "Running" and "nodeName" not in updated["spec"]


def test_returned_objects_are_copies() -> None:
    store = Store()
    store.load([pod("p")])
    store.get("pods", "p", "default")["metadata"]["name"] = "changed"
    assert store.list("pods")[0]["metadata"]["name"] == "p"


def test_concurrent_writers_get_distinct_increasing_versions() -> None:
    store = Store()
    versions: list[int] = []
    lock = threading.Lock()

    def writer(prefix: str) -> None:
        for i in range(50):
            rv = int(store.create(pod(f"{prefix}-{i}"))["metadata"]["resourceVersion"])
            with lock:
                versions.append(rv)

    store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}])
    threads = [threading.Thread(target=writer, args=(f"w{n}",)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(versions)) == 200 and store.count("pods") == 200


def test_store_list_accepts_selectors() -> None:
    store = Store()
    store.load([running_pod("a", node="n1"), running_pod("b", node="n2", labels={"x": "1"})])
    assert [p["metadata"]["name"] for p in store.list("pods", field_selector="spec.nodeName=n2")] == ["b"]
    assert [p["metadata"]["name"] for p in store.list("pods", label_selector="x")] == ["b"]


def test_resolve_accepts_kubectl_style_names() -> None:
    store = Store()
    assert store.resolve("po").plural == "pods"
    assert store.resolve("deployments.apps").group == "apps"
    assert store.resolve("nodes.metrics.k8s.io").kind == "NodeMetrics"
    assert store.resolve("elasticquotas.scheduling.x-k8s.io").group == "scheduling.x-k8s.io"


def test_in_process_watch_sees_python_writes() -> None:
    store = Store()
    store.load([pod("a")])
    watcher, initial = store.watch(store.resolve("pods"), since=store.resource_version)
    store.create(pod("b"))
    event = watcher.next(1.0)
    store.stop_watch(watcher)
    assert initial == []
    assert event is not None and not isinstance(event, type(None))
    assert getattr(event, "type", None) == "ADDED"


def test_bulk_load_of_ten_thousand_pods_is_fast() -> None:
    import time

    store = Store()
    pods = [running_pod(f"p{i}", f"ns{i % 10}", node=f"n{i % 100}") for i in range(10_000)]
    started = time.monotonic()
    store.load(pods)
    assert time.monotonic() - started < 5
    assert store.count("pods") == 10_000


def test_server_uses_a_store_passed_in(tmp_path: Any) -> None:
    store = Store()
    store.load([pod("seeded")])
    with FakeApiServer(store=store) as server:
        assert server.store is store


def test_written_gives_each_resources_latest_write_even_after_history_is_dropped() -> None:
    store = Store()
    assert store.written("pods", "nodes") == (0, 0)
    store.load([pod("p")])
    pods_at = store.written("pods")[0]
    assert pods_at == store.resource_version and store.written("nodes") == (0,)
    store.list("pods")
    store.get("pods", "p", "default")
    assert store.written("pods") == (pods_at,)  # reads are not writes
    store.forget_history()
    assert store.written("pods") == (pods_at,)
    store.delete("pods", "p", "default", grace_period_seconds=0)
    assert store.written("pods")[0] > pods_at
