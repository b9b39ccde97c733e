"""pods/binding, and graceful pod deletion with the built-in or a simulated kubelet."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from contract_support import pod, raw_request, running_pod, status_body, watch_lines
from kubernetes import client

from descheduler.fakecluster.apiserver import FakeApiServer


def _binding(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Node", "name": node}}


def test_binding_sets_node_name_and_pod_scheduled(core: Any, server: FakeApiServer) -> None:
    core.create_namespaced_pod("default", pod("p"))
    resp = core.create_namespaced_pod_binding("p", "default", _binding("p", "n1"), _preload_content=False)
    assert resp.status == 201 and json.loads(resp.data)["status"] == "Success"
    bound = core.read_namespaced_pod("p", "default")
    assert bound.spec.node_name == "n1"
    assert {c.type: c.status for c in bound.status.conditions}["PodScheduled"] == "True"


def test_binding_through_the_bindings_collection(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, pod("p", ns))
    core.create_namespaced_binding(ns, _binding("p", "n2"), _preload_content=False)
    assert core.read_namespaced_pod("p", ns).spec.node_name == "n2"


def test_binding_an_already_bound_pod_returns_409(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, pod("p", ns, node="n1"))
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod_binding("p", ns, _binding("p", "n2"), _preload_content=False)
    assert info.value.status == 409
    assert status_body(info.value)["message"].endswith('pod p is already assigned to node "n1"')


def test_binding_a_missing_pod_returns_404(core: Any, ns: str) -> None:
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod_binding("p", ns, _binding("p", "n1"), _preload_content=False)
    assert info.value.status == 404


def test_delete_of_bound_pod_marks_it_terminating_until_finalized(ns: str) -> None:
    with FakeApiServer(pod_termination_delay=None) as server, server.api_client() as api:
        core = client.CoreV1Api(api)
        server.store.load([running_pod("p", ns, grace=30)])
        returned = core.delete_namespaced_pod("p", ns)
        assert returned.metadata.deletion_timestamp is not None
        still = core.read_namespaced_pod("p", ns)
        assert still.metadata.deletion_grace_period_seconds == 30
        assert server.store.finalize_pod(ns, "p") is True
        with pytest.raises(client.ApiException) as info:
            core.read_namespaced_pod("p", ns)
        assert info.value.status == 404


def test_default_kubelet_removes_a_terminating_pod_right_after_marking_it(server: FakeApiServer) -> None:
    server.store.load([running_pod("p")])
    rv = server.store.resource_version
    status, _, _ = raw_request(server, "DELETE", "/api/v1/namespaces/default/pods/p")
    assert status == 200
    events = watch_lines(server, f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1")
    assert [e["type"] for e in events] == ["MODIFIED", "DELETED"]
    assert events[0]["object"]["metadata"]["deletionTimestamp"]


def test_kubelet_delay_keeps_the_pod_terminating_for_that_long(ns: str) -> None:
    with FakeApiServer(pod_termination_delay=0.3) as server:
        server.store.load([running_pod("p", ns)])
        server.store.delete("pods", "p", ns)
        assert server.store.exists("pods", "p", ns)
        deadline = time.monotonic() + 3
        while server.store.exists("pods", "p", ns) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not server.store.exists("pods", "p", ns)


def test_delete_with_grace_period_zero_removes_the_pod_at_once(ns: str) -> None:
    with FakeApiServer(pod_termination_delay=None) as server, server.api_client() as api:
        server.store.load([running_pod("p", ns)])
        client.CoreV1Api(api).delete_namespaced_pod("p", ns, grace_period_seconds=0)
        assert not server.store.exists("pods", "p", ns)


def test_delete_of_unbound_pod_removes_it_at_once(ns: str) -> None:
    with FakeApiServer(pod_termination_delay=None) as server, server.api_client() as api:
        server.store.load([pod("p", ns, phase="Pending")])
        client.CoreV1Api(api).delete_namespaced_pod("p", ns)
        assert not server.store.exists("pods", "p", ns)


def test_delete_of_finished_pod_removes_it_at_once(ns: str) -> None:
    with FakeApiServer(pod_termination_delay=None) as server:
        server.store.load([pod("p", ns, node="n1", phase="Succeeded")])
        server.store.delete("pods", "p", ns)
        assert not server.store.exists("pods", "p", ns)


def test_second_delete_with_shorter_grace_period_shortens_it(ns: str) -> None:
    with FakeApiServer(pod_termination_delay=None) as server:
        server.store.load([running_pod("p", ns, grace=60)])
        server.store.delete("pods", "p", ns)
        server.store.delete("pods", "p", ns, grace_period_seconds=10)
        assert server.store.get("pods", "p", ns)["metadata"]["deletionGracePeriodSeconds"] == 10
        server.store.delete("pods", "p", ns, grace_period_seconds=0)
        assert not server.store.exists("pods", "p", ns)


def test_finalizers_hold_deletion_until_removed(custom: Any, server: FakeApiServer) -> None:
    server.store.create(
        {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "Reservation",
            "metadata": {"name": "r", "finalizers": ["descheduler.dev/cleanup"]},
        }
    )
    custom.delete_cluster_custom_object("descheduler.dev", "v1alpha1", "reservations", "r")
    held = custom.get_cluster_custom_object("descheduler.dev", "v1alpha1", "reservations", "r")
    assert held["metadata"]["deletionTimestamp"]
    custom.patch_cluster_custom_object(
        "descheduler.dev", "v1alpha1", "reservations", "r", {"metadata": {"finalizers": None}}
    )
    assert not server.store.exists("reservations", "r")
