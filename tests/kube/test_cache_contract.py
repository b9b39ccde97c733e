"""The list-watch cache against the fake API server: it converges to the server's state through
creates, updates, deletes, dropped watches, 410 Gone, and bursts of 500 and 429."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from kube_support import converged, eventually, node, pod, reference_snapshot, server_records

from descheduler import metrics
from descheduler.fakecluster.apiserver import FakeApiServer, Store
from descheduler.kube import (
    CLUSTER_KINDS,
    NODES,
    PODS,
    QUOTAS_SIGS,
    QUOTAS_X,
    CacheEvent,
    ClusterCache,
    KubeClient,
)
from descheduler.kube.kinds import RawList
from descheduler.kube.listing import ContinueExpired, list_pages

MakeCache = Callable[..., ClusterCache]
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


def _restarts(resource: str, reason: str) -> float:
    return metrics.sample("descheduler_watch_restarts_total", {"resource": resource, "reason": reason})


def _label(store: Store, name: str, value: str, namespace: str = "default") -> None:
    store.modify("pods", name, namespace, lambda o: o["metadata"]["labels"].update(version=value))


def _seed(server: FakeApiServer, pods: int = 6) -> None:
    server.store.load([node("n1"), node("n2")])
    server.store.load([pod(f"p{i}", node=f"n{1 + i % 2}", owner="rs") for i in range(pods)])


def test_initial_list_is_paginated_and_matches_the_server(server: FakeApiServer, make_cache: MakeCache) -> None:
    _seed(server, pods=7)
    cache = make_cache(kinds=(NODES, PODS), page_size=3).start()
    assert cache.wait_synced(10)
    assert cache.items(PODS) == server_records(server, PODS)
    assert cache.items(NODES) == server_records(server, NODES)
    assert server.faults.count(verb="list", path="^/api/v1/pods$") == 3  # 3 + 3 + 1
    assert cache.not_ready() is None


def test_cache_follows_creates_updates_and_deletes(server: FakeApiServer, make_cache: MakeCache) -> None:
    _seed(server)
    cache = make_cache(kinds=(NODES, PODS)).start()
    assert cache.wait_synced(10)
    server.store.create(pod("new", node="n2"))
    _label(server.store, "p0", "2")
    server.store.delete("pods", "p1", "default")
    server.store.create(node("n3"))
    eventually(converged(cache, server, (NODES, PODS)))
    assert cache.get(PODS, "default/p0").labels["version"] == "2"
    assert cache.get(PODS, "default/p1") is None


def test_applied_versions_reach_the_servers_last_change(server: FakeApiServer, make_cache: MakeCache) -> None:
    _seed(server)
    cache = make_cache(kinds=(NODES, PODS)).start()
    assert cache.wait_synced(10)
    _label(server.store, "p1", "2")
    target = server.store.last_change("pods")
    eventually(lambda: cache.applied_versions()[PODS] >= target)
    # Once the version is reached, the change it stands for is in the cache.
    assert cache.get(PODS, "default/p1").labels["version"] == "2"


def test_pods_are_indexed_by_node_and_follow_a_rebind(server: FakeApiServer, make_cache: MakeCache) -> None:
    _seed(server, pods=4)
    cache = make_cache(kinds=(NODES, PODS)).start()
    assert cache.wait_synced(10)
    assert [p.name for p in cache.pods_on("n1")] == ["p0", "p2"]
    server.store.delete("pods", "p2", "default")
    server.store.create(pod("p2", node="n2"))
    eventually(lambda: [p.name for p in cache.pods_on("n2")] == ["p1", "p2", "p3"])
    assert [p.name for p in cache.pods_on("n1")] == ["p0"]


@pytest.mark.parametrize("abrupt", [False, True], ids=["closed", "reset"])
def test_cache_resumes_after_a_dropped_watch(server: FakeApiServer, make_cache: MakeCache, abrupt: bool) -> None:
    _seed(server)
    cache = make_cache(kinds=(PODS,)).start()
    assert cache.wait_synced(10)
    before = _restarts(PODS, "closed") + _restarts(PODS, "error")
    lists_before = server.faults.count(verb="list", path="^/api/v1/pods$")
    eventually(lambda: server.faults.drop_watches("pods", abrupt=abrupt) > 0)
    server.store.create(pod("after-drop", node="n1"))
    _label(server.store, "p3", "dropped")
    eventually(converged(cache, server, (PODS,)))
    assert _restarts(PODS, "closed") + _restarts(PODS, "error") > before
    # Resumed from the last resourceVersion: no re-list was needed.
    assert server.faults.count(verb="list", path="^/api/v1/pods$") == lists_before


def test_a_quiet_watch_that_times_out_reading_is_resumed_without_an_error(
    make_cache: MakeCache, kube: KubeClient
) -> None:
    with FakeApiServer(bookmark_interval=60) as server:  # no bookmarks: the stream stays silent
        client = KubeClient(server.configuration(), qps=0, burst=0, timeout=10, retry=kube.retry)
        try:
            _seed(server)
            errors_before = _restarts(PODS, "error")
            cache = make_cache(client=client, kinds=(PODS,), read_timeout=0.3).start()
            assert cache.wait_synced(10)
            eventually(lambda: server.faults.count(verb="watch", path="^/api/v1/pods$") >= 3)
            assert _restarts(PODS, "error") == errors_before
            assert cache.status()[PODS].error == "" and cache.not_ready() is None
            server.store.create(pod("later", node="n1"))
            eventually(converged(cache, server, (PODS,)))
        finally:
            client.close()


def test_cache_relists_on_410_and_notices_deletions_it_missed(make_cache: MakeCache, kube: KubeClient) -> None:
    with FakeApiServer(bookmark_interval=60, history_size=5) as server:
        client = KubeClient(server.configuration(), qps=0, burst=0, timeout=10, retry=kube.retry)
        try:
            _seed(server)
            cache = make_cache(client=client, kinds=(PODS,)).start()
            assert cache.wait_synced(10)
            gone_before = _restarts(PODS, "gone")
            eventually(lambda: server.faults.count(verb="watch", path="^/api/v1/pods$") >= 1)
            time.sleep(0.1)
            # Hold the next watch request while more changes than the history window happen.
            server.faults.delay(1.0, path="^/api/v1/pods$", verb="watch", count=1)
            eventually(lambda: server.faults.drop_watches("pods") > 0)
            time.sleep(0.2)
            server.store.delete("pods", "p0", "default")
            for i in range(8):
                server.store.create(pod(f"burst-{i}", node="n1"))
            eventually(converged(cache, server, (PODS,)))
            assert cache.get(PODS, "default/p0") is None
            assert _restarts(PODS, "gone") == gone_before + 1
        finally:
            client.close()


def test_cache_rides_out_bursts_of_500_and_429(server: FakeApiServer, make_cache: MakeCache) -> None:
    _seed(server)
    server.faults.fail_next(3, path="^/api/v1/pods$", verb="list", status=500)
    server.faults.fail_next(2, path="^/api/v1/nodes$", verb="list", status=429, retry_after=0)
    cache = make_cache(kinds=(NODES, PODS)).start()
    assert cache.wait_synced(10)
    server.faults.fail_next(6, path="^/api/v1/pods$", verb="watch", status=500)
    server.faults.fail_next(3, path="^/api/v1/pods$", verb="watch", status=429, retry_after=0)
    eventually(lambda: server.faults.drop_watches("pods") > 0)
    server.store.create(pod("during-errors", node="n1"))
    server.store.delete("pods", "p2", "default")
    eventually(converged(cache, server, (NODES, PODS)))
    eventually(lambda: cache.not_ready() is None)


def test_a_missing_optional_api_counts_as_empty_and_does_not_block_sync(
    server: FakeApiServer, make_cache: MakeCache
) -> None:
    server.faults.fail_next(1000, path="^/apis/scheduling.x-k8s.io/", status=404)
    cache = make_cache(kinds=(NODES, QUOTAS_SIGS, QUOTAS_X)).start()
    assert cache.wait_synced(10)
    status = cache.status()
    assert status[QUOTAS_X].absent and not status[QUOTAS_SIGS].absent
    assert cache.records(QUOTAS_X) == []
    assert cache.not_ready() is None


def test_a_required_resource_that_cannot_be_listed_keeps_the_cache_unsynced(
    server: FakeApiServer, make_cache: MakeCache
) -> None:
    server.faults.fail_next(1000, path="^/api/v1/pods$", status=403, message='pods is forbidden: User "x" cannot list')
    cache = make_cache(kinds=(NODES, PODS)).start()
    assert not cache.wait_synced(0.5)
    eventually(lambda: "403" in (cache.not_ready() or ""))
    assert "pods not listed yet" in (cache.not_ready() or "")
    server.faults.clear()
    assert cache.wait_synced(10)


def test_a_synced_cache_whose_watch_keeps_failing_becomes_not_ready(
    server: FakeApiServer, make_cache: MakeCache
) -> None:
    _seed(server)
    cache = make_cache(kinds=(PODS,), max_staleness=0.3).start()
    assert cache.wait_synced(10)
    eventually(lambda: server.faults.count(verb="watch", path="^/api/v1/pods$") >= 1)
    server.faults.fail_next(100_000, path="^/api/v1/pods$", status=500)
    server.faults.drop_watches("pods")
    eventually(lambda: "pods watch failing" in (cache.not_ready() or ""))
    server.faults.clear()
    eventually(lambda: cache.not_ready() is None)


def test_listeners_see_each_change_in_order_and_a_failing_listener_does_not_stop_the_cache(
    server: FakeApiServer, make_cache: MakeCache
) -> None:
    _seed(server, pods=2)
    seen: list[tuple[str, str]] = []
    cache = make_cache(kinds=(NODES, PODS))

    def broken(event: CacheEvent) -> None:
        raise RuntimeError("listener bug")

    cache.add_listener(broken)
    cache.add_listener(lambda e: seen.append((e.type, e.key)), kinds=[PODS])
    cache.start()
    assert cache.wait_synced(10)
    eventually(lambda: len(seen) == 2)
    assert sorted(seen) == [("ADDED", "default/p0"), ("ADDED", "default/p1")]
    server.store.create(pod("c", node="n1"))
    _label(server.store, "c", "2")
    server.store.delete("pods", "c", "default", grace_period_seconds=0)
    eventually(lambda: len(seen) == 5)
    assert seen[2:] == [("ADDED", "default/c"), ("MODIFIED", "default/c"), ("DELETED", "default/c")]


def test_listener_events_carry_the_old_and_new_records(server: FakeApiServer, make_cache: MakeCache) -> None:
    _seed(server, pods=1)
    events: list[CacheEvent] = []
    cache = make_cache(kinds=(PODS,))
    cache.add_listener(events.append)
    cache.start()
    assert cache.wait_synced(10)
    _label(server.store, "p0", "2")
    eventually(lambda: len(events) == 2)
    change = events[1]
    assert change.old.labels.get("version") is None and change.new.labels["version"] == "2"


def test_an_object_that_cannot_be_decoded_is_left_out_and_named(server: FakeApiServer, make_cache: MakeCache) -> None:
    _seed(server, pods=2)
    server.store.create(pod("bad", node="n1", cpu="lots"))
    cache = make_cache(kinds=(NODES, PODS)).start()
    assert cache.wait_synced(10)
    assert cache.get(PODS, "default/bad") is None
    assert set(cache.items(PODS)) == {"default/p0", "default/p1"}
    [problem] = cache.problems()
    assert problem.startswith("pods default/bad: cannot be read, ignored: spec.containers[0].resources.requests.cpu")
    assert problem in cache.snapshot(NOW).warnings
    # Fixed on the server: the watch brings it back and the warning goes.
    server.store.modify(
        "pods", "bad", "default", lambda o: o["spec"]["containers"][0]["resources"]["requests"].update(cpu="1")
    )
    eventually(lambda: cache.get(PODS, "default/bad") is not None)
    assert cache.problems() == []
    # Broken again through the watch: the stale record is dropped, not kept, and the problem named.
    server.store.modify(
        "pods", "p0", "default", lambda o: o["spec"]["containers"][0]["resources"]["requests"].update(memory="1 GB")
    )
    eventually(lambda: cache.get(PODS, "default/p0") is None)
    assert [p.split(": cannot")[0] for p in cache.problems()] == ["pods default/p0"]
    assert cache.count(PODS) == 2


def test_stop_ends_every_reflector_promptly(server: FakeApiServer, kube: KubeClient) -> None:
    _seed(server)
    cache = ClusterCache(kube, kinds=CLUSTER_KINDS).start()
    assert cache.wait_synced(10)
    started = time.monotonic()
    cache.stop(timeout=5)
    assert time.monotonic() - started < 2
    assert not [t for t in threading.enumerate() if t.name.startswith("reflector:")]


def test_cache_objects_gauge_counts_each_resource(server: FakeApiServer, make_cache: MakeCache) -> None:
    _seed(server, pods=5)
    cache = make_cache(kinds=(NODES, PODS)).start()
    assert cache.wait_synced(10)
    eventually(lambda: metrics.sample("descheduler_cache_objects", {"resource": PODS}) == 5)
    assert metrics.sample("descheduler_cache_objects", {"resource": NODES}) == 2


def test_an_expired_continue_token_is_reported_so_the_list_starts_over(kube: KubeClient) -> None:
    store = Store(snapshot_count=1)
    store.load([pod(f"p{i}") for i in range(4)])
    with FakeApiServer(store=store) as server:
        client = KubeClient(server.configuration(), qps=0, burst=0, retry=kube.retry)
        try:
            pages = list_pages(client, "/api/v1/pods", _meta, page_size=2)
            next(pages)
            # Another paginated list at a newer version pushes ours out of the server's window.
            store.create(pod("later"))
            next(list_pages(client, "/api/v1/pods", _meta, page_size=2))
            with pytest.raises(ContinueExpired):
                next(pages)
        finally:
            client.close()


def _meta(body: bytes) -> Any:
    return msgspec.json.decode(body, type=RawList[msgspec.Raw])


# ---------------------------------------------------------------- snapshot


def test_snapshot_equals_what_snapshot_build_makes_of_the_same_records(
    server: FakeApiServer, make_cache: MakeCache
) -> None:
    server.store.load([node("n1"), node("n2"), node("n3")])
    server.store.load([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team", "labels": {"t": "1"}}}])
    server.store.load(
        [pod(f"p{i}", "team" if i % 3 else "default", node=f"n{1 + i % 3}", owner=f"rs{i % 2}") for i in range(12)]
    )
    server.store.load([pod("pending")])
    server.store.load(
        [
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "pdb", "namespace": "team"},
                "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
            },
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": "rs0", "namespace": "default", "uid": "uid-rs0"},
                "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}}, "template": {}},
            },
        ]
    )
    cache = make_cache().start()
    assert cache.wait_synced(10)
    assert cache.snapshot(NOW) == reference_snapshot(cache, NOW)
    # After incremental changes (adds, deletes, rebinds, updates) it still agrees.
    server.store.create(pod("a-first", "default", node="n3", owner="rs0"))
    server.store.create(pod("zz-last", "team", node="n1"))
    server.store.delete("pods", "p4", "team")
    _label(server.store, "p0", "9")
    server.store.delete("pods", "p3", "default")
    server.store.create(pod("p3", "default", node="n2", owner="rs1"))
    eventually(converged(cache, server, (PODS,)))
    first = cache.snapshot(NOW)
    assert first == reference_snapshot(cache, NOW)
    assert [p.key for p in first.pods] == sorted((p.key for p in first.pods), key=lambda k: tuple(k.split("/")))


def test_snapshot_leaves_out_pods_on_nodes_that_do_not_exist(server: FakeApiServer, make_cache: MakeCache) -> None:
    server.store.load([node("n1")])
    server.store.load([pod("ok", node="n1", owner="rs"), pod("orphan", node="gone", owner="rs")])
    cache = make_cache(kinds=(NODES, PODS)).start()
    assert cache.wait_synced(10)
    snapshot = cache.snapshot(NOW)
    assert [p.name for p in snapshot.pods] == ["ok"]
    assert set(snapshot.pods_by_node) == {"n1"}
    assert snapshot.pods_per_owner == {"uid-rs": 1}
    assert snapshot.warnings == (
        "1 pod(s) bound to 1 node(s) that do not exist (e.g. default/orphan on gone): left out",
    )
