"""The product's ClusterCache on a real kube-apiserver: it follows pods created, bound and deleted
through the API, equals a fresh list, and real watch BOOKMARK events leave no problem entry."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from realcluster_support import (
    bind,
    create,
    create_node,
    create_pod,
    delete_node,
    delete_pod_now,
    eventually,
    pod_manifest,
)

from descheduler.kube import PODS, ClusterCache, KubeClient
from descheduler.kube.kinds import KINDS
from descheduler.kube.listing import list_records

# The real server sends a bookmark ~2 s before a watch's timeoutSeconds (and once a minute on a
# long watch); a 5 s watch makes one arrive within seconds.
WATCH_SECONDS = (5, 5)


@pytest.fixture
def pod_cache(kube: KubeClient) -> Iterator[ClusterCache]:
    cache = ClusterCache(kube, kinds=[PODS], watch_seconds=WATCH_SECONDS, read_timeout=30.0, backoff=(0.1, 1.0))
    cache.start()
    try:
        assert cache.wait_synced(30), cache.not_ready()
        yield cache
    finally:
        cache.stop(timeout=10)


def _in_namespace(cache: ClusterCache, namespace: str) -> dict[str, object]:
    return {k: v for k, v in cache.items(PODS).items() if k.startswith(f"{namespace}/")}


def test_pod_cache_equals_a_fresh_list_and_real_bookmarks_leave_no_problem(
    kube: KubeClient, namespace: str, pod_cache: ClusterCache
) -> None:
    node = f"{namespace}-node"[:63]
    create_node(kube, node)
    try:
        for name in ("a", "b", "c", "d"):
            create_pod(kube, namespace, pod_manifest(name))
        for name in ("a", "b", "c"):
            bind(kube, namespace, name, node)
        delete_pod_now(kube, namespace, "b")

        def equal_to_a_fresh_list() -> bool:
            listed = list_records(kube, KINDS[PODS])
            return not listed.problems and pod_cache.items(PODS) == listed.records

        eventually(equal_to_a_fresh_list, timeout=20, what="the pod cache equal to a fresh list")
        assert sorted(_in_namespace(pod_cache, namespace)) == [f"{namespace}/{n}" for n in ("a", "c", "d")]
        assert {pod_cache.get(PODS, f"{namespace}/{n}").node_name for n in ("a", "c")} == {node}

        # A change to another resource moves etcd's revision on without a pod event: only a BOOKMARK
        # can bring the pod reflector's resourceVersion up to it.
        marker = create(kube, f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "marker"}})
        past = int(marker["metadata"]["resourceVersion"])
        eventually(
            lambda: pod_cache.applied_versions()[PODS] >= past,
            timeout=90,  # a bookmark comes ~2 s before each 5 s watch ends; at worst once a minute
            what=f"a pods BOOKMARK at or after resourceVersion {past}",
        )
        assert pod_cache.problems() == []
        assert pod_cache.problems_of(PODS) == {}
        assert pod_cache.not_ready() is None
        assert pod_cache.items(PODS) == list_records(kube, KINDS[PODS]).records
    finally:
        for name in ("a", "c", "d"):
            delete_pod_now(kube, namespace, name)
        delete_node(kube, node)


def test_a_watch_with_bookmarks_on_the_real_server_sends_the_shape_the_cache_is_tested_with(
    kube: KubeClient, namespace: str
) -> None:
    """What tests/kube/test_watch_bookmarks.py and the fake server assume, checked on the wire."""
    version = json.loads(kube.request("GET", "/api/v1/pods", query={"limit": 1}))["metadata"]["resourceVersion"]
    create(kube, f"/api/v1/namespaces/{namespace}/configmaps", {"metadata": {"name": "nudge"}})
    # The server sends the bookmark ~2 s before a watch's deadline, counted from when the request came
    # in; the first watch may spend that waiting for the pod watch cache to reach `version` (a quorum
    # read's revision), and then ends without one. The reflector simply watches again; so does this.
    deadline = time.monotonic() + 60
    lines: list[dict[str, Any]] = []
    bookmarks: list[dict[str, Any]] = []
    while not bookmarks and time.monotonic() < deadline:
        response = kube.stream(
            "/api/v1/pods",
            query={"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": version, "timeoutSeconds": 4},
            read_timeout=30.0,
        )
        try:
            lines = [json.loads(line) for line in response.read().splitlines() if line.strip()]
        finally:
            response.release_conn()
        bookmarks = [e["object"] for e in lines if e["type"] == "BOOKMARK"]
    assert bookmarks, f"no bookmark in 4 s watches for 60 s: {lines}"
    first = bookmarks[0]
    assert first == {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": first["metadata"]["resourceVersion"]},
        "spec": {"containers": None},
        "status": {},
    }
    assert int(first["metadata"]["resourceVersion"]) > int(version)
