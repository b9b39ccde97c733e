"""The fake API server's access log: each request's RBAC attributes, derived as kube-apiserver does."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, watch

from descheduler.fakecluster.apiserver import Access, FakeApiServer, request_access


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("GET", "/api/v1/pods", {}, Access("list", "", "pods")),
        ("GET", "/api/v1/namespaces/ns/pods", {}, Access("list", "", "pods", namespace="ns")),
        ("GET", "/api/v1/namespaces/ns/pods", {"watch": "true"}, Access("watch", "", "pods", namespace="ns")),
        ("GET", "/api/v1/namespaces/ns/pods", {"watch": "false"}, Access("list", "", "pods", namespace="ns")),
        ("GET", "/api/v1/namespaces/ns/pods", {"watch": "1"}, Access("watch", "", "pods", namespace="ns")),
        ("GET", "/api/v1/watch/namespaces/ns/pods", {}, Access("watch", "", "pods", namespace="ns")),
        ("GET", "/api/v1/namespaces/ns/pods/p", {}, Access("get", "", "pods", namespace="ns", name="p")),
        # A named GET is a get, whatever the query says.
        ("GET", "/api/v1/namespaces/ns/pods/p", {"watch": "true"}, Access("get", "", "pods", namespace="ns", name="p")),
        ("POST", "/api/v1/namespaces/ns/pods", {}, Access("create", "", "pods", namespace="ns")),
        (
            "POST",
            "/api/v1/namespaces/ns/pods/p/eviction",
            {},
            Access("create", "", "pods", "eviction", namespace="ns", name="p"),
        ),
        ("PUT", "/api/v1/nodes/n1", {}, Access("update", "", "nodes", name="n1")),
        ("PATCH", "/api/v1/nodes/n1/status", {}, Access("patch", "", "nodes", "status", name="n1")),
        ("DELETE", "/api/v1/namespaces/ns/pods/p", {}, Access("delete", "", "pods", namespace="ns", name="p")),
        ("DELETE", "/api/v1/namespaces/ns/pods", {}, Access("deletecollection", "", "pods", namespace="ns")),
        (
            "GET",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            {"fieldSelector": "metadata.name=lock"},
            Access("list", "coordination.k8s.io", "leases", namespace="kube-system", name="lock"),
        ),
        (
            "GET",
            "/apis/descheduler.dev/v1alpha1/podmigrationjobs",
            {"watch": "true", "fieldSelector": "metadata.name!=x"},
            Access("watch", "descheduler.dev", "podmigrationjobs"),
        ),
        (
            "PUT",
            "/apis/descheduler.dev/v1alpha1/reservations/r1/status",
            {},
            Access("update", "descheduler.dev", "reservations", "status", name="r1"),
        ),
        # The namespace itself: its name is also the request's namespace.
        ("GET", "/api/v1/namespaces/ns", {}, Access("get", "", "namespaces", namespace="ns", name="ns")),
        ("PUT", "/api/v1/namespaces/ns/finalize", {}, Access("update", "", "namespaces", "finalize", "ns", "ns")),
        ("GET", "/apis/metrics.k8s.io/v1beta1/nodes", {}, Access("list", "metrics.k8s.io", "nodes")),
        ("GET", "/api", {}, Access("get", path="/api")),
        ("GET", "/apis/apps/v1", {}, Access("get", path="/apis/apps/v1")),
        ("GET", "/version", {}, Access("get", path="/version")),
        ("GET", "/healthz", {}, Access("get", path="/healthz")),
    ],
)
def test_request_attributes_follow_kube_apiserver(
    method: str, path: str, query: dict[str, str], expected: Access
) -> None:
    got = request_access(method, path, query)
    # Resource accesses keep their URL too; the attributes are what RBAC sees.
    assert (got.verb, got.group, got.resource, got.subresource, got.namespace, got.name) == (
        expected.verb,
        expected.group,
        expected.resource,
        expected.subresource,
        expected.namespace,
        expected.name,
    )
    assert got.is_resource == expected.is_resource
    if not expected.is_resource:
        assert got.path == path


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    with FakeApiServer(bookmark_interval=0.1) as srv:
        yield srv


@pytest.fixture
def api(server: FakeApiServer) -> Iterator[Any]:
    api_client = server.api_client()
    yield api_client
    api_client.close()


def _pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "n1"},
    }


def test_the_official_client_calls_are_recorded_with_their_attributes(server: FakeApiServer, api: Any) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_pod("default", _pod("p"))
    core.read_namespaced_pod("p", "default")
    core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1")
    core.patch_namespaced_pod_status("p", "default", {"metadata": {"labels": {"a": "b"}}})
    core.create_namespaced_pod_eviction(
        "p", "default", {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p"}}
    )
    core.create_namespaced_pod("default", _pod("q"))
    for _ in watch.Watch().stream(core.list_namespaced_pod, "default", timeout_seconds=5):
        break  # the first ADDED event
    assert server.accesses.accesses() >= {
        Access("create", "", "pods", namespace="default"),
        Access("get", "", "pods", namespace="default", name="p"),
        Access("list", "", "pods"),
        Access("patch", "", "pods", "status", "default", "p"),
        Access("create", "", "pods", "eviction", "default", "p"),
        Access("watch", "", "pods", namespace="default"),
    }


def test_failed_requests_are_recorded_too(server: FakeApiServer, api: Any) -> None:
    # RBAC is checked before the request is served: a call that fails still needed the permission.
    with pytest.raises(client.ApiException):
        client.CoreV1Api(api).read_namespace("missing")
    assert Access("get", "", "namespaces", namespace="missing", name="missing") in server.accesses.accesses()


def test_counts_and_clear(server: FakeApiServer, api: Any) -> None:
    core = client.CoreV1Api(api)
    core.list_node()
    core.list_node()
    assert server.accesses.counts()[Access("list", "", "nodes")] == 2
    server.accesses.clear()
    assert server.accesses.accesses() == set()
