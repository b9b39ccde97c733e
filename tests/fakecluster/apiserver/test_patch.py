"""PATCH: merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch, status subresource."""

from __future__ import annotations

import json
from typing import Any

import pytest
from contract_support import pod, raw_request, status_body
from kubernetes import client

from descheduler.fakecluster.apiserver import FakeApiServer

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
POD_SPEC_IMMUTABLE = (
    "the real server forbids pod container list changes (pod spec is immutable but for images and a few fields); "
    "the fake does not validate pod updates"
)


def _two_container_pod(ns: str) -> dict[str, Any]:
    body = pod("p", ns, labels={"app": "web", "tier": "front"})
    body["spec"]["containers"] = [
        {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
        {"name": "sidecar", "image": "proxy:1"},
    ]
    return body


def test_merge_patch_merges_maps_and_null_deletes_keys(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, _two_container_pod(ns))
    patched = core.patch_namespaced_pod(
        "p", ns, {"metadata": {"labels": {"tier": None, "new": "x"}}}, _content_type=MERGE
    )
    assert patched.metadata.labels == {"app": "web", "new": "x"}


@pytest.mark.fake_only(POD_SPEC_IMMUTABLE)
def test_merge_patch_replaces_lists_whole(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, _two_container_pod(ns))
    patched = core.patch_namespaced_pod(
        "p", ns, {"spec": {"containers": [{"name": "only", "image": "x"}]}}, _content_type=MERGE
    )
    assert [c.name for c in patched.spec.containers] == ["only"]


@pytest.mark.fake_only(POD_SPEC_IMMUTABLE)
def test_json_patch_applies_operations_in_order(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, _two_container_pod(ns))
    ops = [
        {"op": "add", "path": "/metadata/annotations", "value": {"a/b": "1"}},
        {"op": "replace", "path": "/spec/containers/1/image", "value": "proxy:2"},
        {"op": "remove", "path": "/metadata/labels/tier"},
        {"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/labels/copied"},
        {"op": "move", "from": "/metadata/labels/copied", "path": "/metadata/labels/moved"},
        {"op": "add", "path": "/spec/containers/-", "value": {"name": "third", "image": "t"}},
        {"op": "test", "path": "/metadata/annotations/a~1b", "value": "1"},
    ]
    patched = core.patch_namespaced_pod("p", ns, ops)
    assert patched.metadata.annotations == {"a/b": "1"}
    assert patched.metadata.labels == {"app": "web", "moved": "web"}
    assert [c.image for c in patched.spec.containers] == ["app:1", "proxy:2", "t"]


def test_json_patch_failed_test_returns_422_and_changes_nothing(core: Any, ns: str) -> None:
    created = core.create_namespaced_pod(ns, _two_container_pod(ns))
    ops = [
        {"op": "replace", "path": "/metadata/labels/app", "value": "changed"},
        {"op": "test", "path": "/metadata/labels/tier", "value": "back"},
    ]
    with pytest.raises(client.ApiException) as info:
        core.patch_namespaced_pod("p", ns, ops)
    assert info.value.status == 422
    after = core.read_namespaced_pod("p", ns)
    assert after.metadata.labels["app"] == "web"
    assert after.metadata.resource_version == created.metadata.resource_version


def test_json_patch_on_missing_path_returns_422(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, _two_container_pod(ns))
    with pytest.raises(client.ApiException) as info:
        core.patch_namespaced_pod("p", ns, [{"op": "remove", "path": "/metadata/annotations/nope"}])
    assert info.value.status == 422


def test_strategic_merge_patch_merges_containers_by_name(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, _two_container_pod(ns))
    patch = {"spec": {"containers": [{"name": "sidecar", "image": "proxy:2"}]}}
    patched = core.patch_namespaced_pod("p", ns, patch, _content_type=STRATEGIC)
    assert [(c.name, c.image) for c in patched.spec.containers] == [("app", "app:1"), ("sidecar", "proxy:2")]


def test_strategic_merge_patch_is_the_clients_default_for_object_patches(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, _two_container_pod(ns))
    patched = core.patch_namespaced_pod("p", ns, {"spec": {"containers": [{"name": "app", "image": "app:2"}]}})
    assert [c.image for c in patched.spec.containers] == ["app:2", "proxy:1"]


@pytest.mark.fake_only(POD_SPEC_IMMUTABLE)
def test_strategic_merge_patch_delete_directive_removes_list_item(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, _two_container_pod(ns))
    patch = {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}
    patched = core.patch_namespaced_pod("p", ns, patch, _content_type=STRATEGIC)
    assert [c.name for c in patched.spec.containers] == ["app"]


def test_strategic_merge_patch_merges_status_conditions_by_type(core: Any, server: FakeApiServer) -> None:
    server.store.load([pod("p", node="n1", phase="Running", ready=False)])
    patch = {
        "status": {"conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}
    }
    patched = core.patch_namespaced_pod_status("p", "default", patch, _content_type=STRATEGIC)
    assert {c.type: c.status for c in patched.status.conditions} == {"Ready": "True", "PodScheduled": "True"}
    assert [c.type for c in patched.status.conditions] == ["Ready", "PodScheduled"]


def test_strategic_merge_patch_on_custom_resource_returns_415(custom: Any, server: FakeApiServer) -> None:
    server.store.create({"apiVersion": "descheduler.dev/v1alpha1", "kind": "Reservation", "metadata": {"name": "r"}})
    status, _, body = raw_request(
        server, "PATCH", "/apis/descheduler.dev/v1alpha1/reservations/r", {"spec": {"nodeName": "n"}}, STRATEGIC
    )
    assert status == 415
    assert json.loads(body)["reason"] == "UnsupportedMediaType"


def test_custom_resource_merge_patch_is_the_clients_default(custom: Any, server: FakeApiServer) -> None:
    server.store.create({"apiVersion": "descheduler.dev/v1alpha1", "kind": "Reservation", "metadata": {"name": "r"}})
    patched = custom.patch_cluster_custom_object(
        "descheduler.dev", "v1alpha1", "reservations", "r", {"spec": {"nodeName": "n1"}}
    )
    assert patched["spec"] == {"nodeName": "n1"}


def test_patch_with_stale_resource_version_returns_409(core: Any, ns: str) -> None:
    created = core.create_namespaced_pod(ns, _two_container_pod(ns))
    core.patch_namespaced_pod("p", ns, {"metadata": {"labels": {"x": "1"}}})
    stale = {"metadata": {"resourceVersion": created.metadata.resource_version, "labels": {"y": "2"}}}
    with pytest.raises(client.ApiException) as info:
        core.patch_namespaced_pod("p", ns, stale, _content_type=MERGE)
    assert info.value.status == 409
    assert status_body(info.value)["reason"] == "Conflict"


def test_patch_with_current_resource_version_succeeds(core: Any, ns: str) -> None:
    created = core.create_namespaced_pod(ns, _two_container_pod(ns))
    body = {"metadata": {"resourceVersion": created.metadata.resource_version, "labels": {"y": "2"}}}
    assert core.patch_namespaced_pod("p", ns, body, _content_type=MERGE).metadata.labels["y"] == "2"


def test_patch_of_missing_object_returns_404(core: Any, ns: str) -> None:
    with pytest.raises(client.ApiException) as info:
        core.patch_namespaced_pod("missing", ns, {"metadata": {"labels": {"a": "b"}}})
    assert info.value.status == 404


def test_patch_on_status_subresource_changes_only_status(custom: Any, server: FakeApiServer) -> None:
    server.store.create(
        {
            "apiVersion": "descheduler.dev/v1alpha1",
            "kind": "PodMigrationJob",
            "metadata": {"name": "j"},
            "spec": {"mode": "A"},
        }
    )
    patched = custom.patch_cluster_custom_object_status(
        "descheduler.dev", "v1alpha1", "podmigrationjobs", "j", {"spec": {"mode": "B"}, "status": {"phase": "Running"}}
    )
    assert patched["status"] == {"phase": "Running"}
    assert patched["spec"] == {"mode": "A"}


def test_patch_on_main_resource_ignores_status(custom: Any, server: FakeApiServer) -> None:
    server.store.create(
        {"apiVersion": "descheduler.dev/v1alpha1", "kind": "PodMigrationJob", "metadata": {"name": "j"}}
    )
    patched = custom.patch_cluster_custom_object(
        "descheduler.dev", "v1alpha1", "podmigrationjobs", "j", {"spec": {"mode": "B"}, "status": {"phase": "Running"}}
    )
    assert patched["spec"] == {"mode": "B"} and "status" not in patched


def test_patch_with_unknown_content_type_returns_415(server: FakeApiServer) -> None:
    server.store.create(pod("p"))
    status, _, _ = raw_request(server, "PATCH", "/api/v1/namespaces/default/pods/p", {"a": 1}, "application/xml")
    assert status == 415
