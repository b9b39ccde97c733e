"""Watch BOOKMARK events, in the shapes a real kube-apiserver sends them (v1.36.2, seen on the wire):
a bookmark only moves the resourceVersion on, whatever its object's body looks like."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast

import pytest
from kube_support import eventually, node, pod

from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.kube import DEPLOYMENTS, NAMESPACES, NODES, PDBS, PODS, REPLICASETS, ClusterCache, KubeClient
from descheduler.kube.kinds import KINDS
from descheduler.kube.reflector import Reflector

# Lines as kube-apiserver v1.36.2 wrote them for a watch with allowWatchBookmarks=true.
REAL_BOOKMARKS = {
    PODS: '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"209"},"spec":{"containers":null},"status":{}}}',
    NODES: '{"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"209"},"spec":{},"status":{"daemonEndpoints":{"kubeletEndpoint":{"Port":0}},"nodeInfo":{"machineID":"","systemUUID":"","bootID":"","kernelVersion":"","osImage":"","containerRuntimeVersion":"","kubeletVersion":"","kubeProxyVersion":"","operatingSystem":"","architecture":""}}}}',
    NAMESPACES: '{"type":"BOOKMARK","object":{"kind":"Namespace","apiVersion":"v1","metadata":{"resourceVersion":"209"},"spec":{},"status":{}}}',
    PDBS: '{"type":"BOOKMARK","object":{"kind":"PodDisruptionBudget","apiVersion":"policy/v1","metadata":{"resourceVersion":"209"},"spec":{},"status":{"disruptionsAllowed":0,"currentHealthy":0,"desiredHealthy":0,"expectedPods":0}}}',
    DEPLOYMENTS: '{"type":"BOOKMARK","object":{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"resourceVersion":"209"},"spec":{"replicas":0,"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"strategy":{}},"status":{}}}',
    REPLICASETS: '{"type":"BOOKMARK","object":{"kind":"ReplicaSet","apiVersion":"apps/v1","metadata":{"resourceVersion":"209"},"spec":{"replicas":0,"selector":null,"template":{"metadata":{},"spec":{"containers":null}}},"status":{"replicas":0}}}',
}

# The end of a WatchList's initial events (sendInitialEvents=true) is a bookmark annotated so.
INITIAL_EVENTS_END = '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"215","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}}'


def _pod_line(event: str, name: str, version: str) -> bytes:
    obj = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": version},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
        "status": {"phase": "Running"},
    }
    return json.dumps({"type": event, "object": obj}).encode()


def _reflector(kind: str) -> tuple[ClusterCache, Reflector]:
    """A cache of one resource and a reflector feeding it, neither started (no server needed)."""
    client = cast(KubeClient, None)
    cache = ClusterCache(client, kinds=[kind])
    return cache, Reflector(client, KINDS[kind], cache)


@pytest.mark.parametrize("kind", sorted(REAL_BOOKMARKS))
def test_a_real_bookmark_only_advances_the_resource_version(kind: str) -> None:
    cache, reflector = _reflector(kind)
    reflector.resource_version = "100"
    reflector.apply_events([REAL_BOOKMARKS[kind].encode()])
    assert reflector.resource_version == "209"
    assert cache.problems() == []
    assert cache.count(kind) == 0


def test_the_initial_events_end_bookmark_only_advances_the_resource_version() -> None:
    cache, reflector = _reflector(PODS)
    reflector.apply_events([INITIAL_EVENTS_END.encode()])
    assert reflector.resource_version == "215"
    assert cache.problems() == []


@pytest.mark.parametrize(
    "body",
    [
        {"metadata": {"resourceVersion": "300"}, "spec": 7, "status": "weird"},
        {"metadata": {"resourceVersion": "300", "creationTimestamp": "not a time", "labels": [1]}},
        {"kind": "Pod", "metadata": {"resourceVersion": "300", "name": 5}, "spec": {"containers": [{"resources": 1}]}},
    ],
    ids=["spec-and-status-of-other-types", "metadata-fields-that-do-not-fit", "containers-that-do-not-fit"],
)
def test_a_bookmark_whatever_its_body_looks_like_leaves_no_problem(body: dict[str, Any]) -> None:
    cache, reflector = _reflector(PODS)
    reflector.apply_events([json.dumps({"type": "BOOKMARK", "object": body}).encode()])
    assert reflector.resource_version == "300"
    assert cache.problems() == []


def test_a_bookmark_without_a_resource_version_keeps_the_one_we_have() -> None:
    cache, reflector = _reflector(PODS)
    reflector.resource_version = "120"
    reflector.apply_events([b'{"type":"BOOKMARK","object":{"kind":"Pod","spec":{"containers":null}}}'])
    assert reflector.resource_version == "120"
    assert cache.problems() == []


def test_events_around_real_bookmarks_are_applied_and_the_version_follows_the_stream() -> None:
    cache, reflector = _reflector(PODS)
    reflector.apply_events(
        [
            _pod_line("ADDED", "a", "201"),
            REAL_BOOKMARKS[PODS].encode(),
            _pod_line("ADDED", "b", "210"),
            _pod_line("DELETED", "a", "211"),
        ]
    )
    assert sorted(cache.items(PODS)) == ["default/b"]
    assert cache.problems() == []
    assert reflector.resource_version == "211"


def test_the_cache_on_the_fake_server_takes_its_real_shaped_bookmarks_without_a_problem(
    server: FakeApiServer, make_cache: Callable[..., ClusterCache]
) -> None:
    server.store.load([node("n1"), pod("a", node="n1")])
    cache = make_cache(kinds=[PODS, NODES]).start()
    assert cache.wait_synced(10)
    server.store.create(node("n2"))  # moves the version on without a pod event: only a bookmark brings it
    version = server.store.resource_version
    eventually(lambda: cache.applied_versions()[PODS] >= version, timeout=10)
    assert cache.problems() == []
