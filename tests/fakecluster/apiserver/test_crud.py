"""Create, read, update, delete: metadata the server owns, optimistic concurrency, Status bodies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from contract_support import pod, status_body
from kubernetes import client
from servers import ServerUnderTest

from descheduler.fakecluster.apiserver import FakeApiServer

POD_SPEC_IMMUTABLE = (
    "the real server forbids pod spec changes other than images, activeDeadlineSeconds, tolerations added and "
    "terminationGracePeriodSeconds (and its admission adds a service-account volume); the fake does not validate "
    "pod updates"
)
NO_NAMESPACE_CONTROLLER = "a namespace's contents go with the namespace controller (controller-manager), not run here"
EVENT_TIME = (
    "the official Python client writes eventTime as 2024-01-01T00:00:00+00:00, which the real server's MicroTime "
    "parser rejects (400); the fake does not parse times"
)
STATUS_KEEPS_METADATA = "the real server keeps metadata label changes sent to pods/status; the fake drops them"
NOT_INSTALLED_CRDS = (
    "ElasticQuota and NodeMetric CRDs are built into the fake; the real server has only what is installed"
)


def test_create_sets_uid_creation_timestamp_generation_and_resource_version(core: Any, ns: str) -> None:
    created = core.create_namespaced_pod(ns, pod("p", ns))
    assert created.metadata.uid
    assert created.metadata.creation_timestamp is not None
    assert created.metadata.generation == 1
    assert int(created.metadata.resource_version) > 0


def test_resource_version_increases_globally_across_kinds(core: Any, apps: Any, ns: str) -> None:
    first = core.create_namespaced_pod(ns, pod("p", ns))
    second = core.create_namespace({"metadata": {"name": f"{ns}-other"}})
    third = apps.create_namespaced_deployment(ns, {"metadata": {"name": "d"}, "spec": _deployment_spec()})
    versions = [int(o.metadata.resource_version) for o in (first, second, third)]
    assert versions == sorted(versions) and len(set(versions)) == 3


def test_create_existing_name_returns_409_already_exists(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, pod("p", ns))
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod(ns, pod("p", ns))
    body = status_body(info.value)
    assert info.value.status == 409
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["reason"] == "AlreadyExists"
    assert body["message"] == 'pods "p" already exists'
    assert body["details"] == {"name": "p", "kind": "pods"}
    assert body["code"] == 409


def test_get_missing_object_returns_404_not_found_status(core: Any, ns: str) -> None:
    with pytest.raises(client.ApiException) as info:
        core.read_namespaced_pod("missing", ns)
    body = status_body(info.value)
    assert info.value.status == 404
    assert (body["apiVersion"], body["reason"], body["message"]) == ("v1", "NotFound", 'pods "missing" not found')


def test_not_found_message_qualifies_the_group(apps: Any, ns: str) -> None:
    with pytest.raises(client.ApiException) as info:
        apps.read_namespaced_deployment("missing", ns)
    body = status_body(info.value)
    assert body["message"] == 'deployments.apps "missing" not found'
    assert body["details"] == {"name": "missing", "group": "apps", "kind": "deployments"}


def test_create_in_missing_namespace_returns_404_namespace_not_found(core: Any, ns: str) -> None:
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod("nowhere", pod("p", "nowhere"))
    assert info.value.status == 404
    assert status_body(info.value)["message"] == 'namespaces "nowhere" not found'


def test_create_with_namespace_mismatching_url_returns_400(core: Any, ns: str) -> None:
    core.create_namespace({"metadata": {"name": f"{ns}-other"}})
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod(ns, pod("p", f"{ns}-other"))
    assert info.value.status == 400
    assert status_body(info.value)["reason"] == "BadRequest"


def test_create_with_generate_name_assigns_a_unique_name(core: Any, ns: str) -> None:
    body = pod("ignored", ns)
    body["metadata"] = {"generateName": "worker-"}
    a = core.create_namespaced_pod(ns, body)
    b = core.create_namespaced_pod(ns, body)
    assert a.metadata.name.startswith("worker-") and b.metadata.name.startswith("worker-")
    assert a.metadata.name != b.metadata.name


def test_create_without_name_returns_422_invalid(core: Any, ns: str) -> None:
    body = pod("x", ns)
    body["metadata"] = {}
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod(ns, body)
    assert info.value.status == 422
    assert status_body(info.value)["reason"] == "Invalid"


def test_pod_create_over_http_resets_status_to_pending(core: Any, ns: str) -> None:
    created = core.create_namespaced_pod(ns, pod("p", ns, phase="Running", ready=True))
    assert created.status.phase == "Pending"
    assert created.status.qos_class == "BestEffort"


def test_update_with_stale_resource_version_returns_409(core: Any, ns: str) -> None:
    created = core.create_namespaced_pod(ns, pod("p", ns))
    fresh = core.read_namespaced_pod("p", ns)
    fresh.metadata.labels = {"a": "1"}
    core.replace_namespaced_pod("p", ns, fresh)
    created.metadata.labels = {"a": "2"}
    with pytest.raises(client.ApiException) as info:
        core.replace_namespaced_pod("p", ns, created)
    body = status_body(info.value)
    assert info.value.status == 409 and body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on pods "p": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


@pytest.mark.fake_only(POD_SPEC_IMMUTABLE)
def test_update_without_resource_version_is_unconditional(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, pod("p", ns))
    body = pod("p", ns, labels={"a": "1"})
    updated = core.replace_namespaced_pod("p", ns, body)
    assert updated.metadata.labels == {"a": "1"}


def test_update_of_missing_object_returns_404(core: Any, ns: str) -> None:
    with pytest.raises(client.ApiException) as info:
        core.replace_namespaced_pod("p", ns, pod("p", ns))
    assert info.value.status == 404


def test_update_with_name_mismatching_url_returns_400(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, pod("p", ns))
    with pytest.raises(client.ApiException) as info:
        core.replace_namespaced_pod("p", ns, pod("q", ns))
    assert info.value.status == 400


def test_update_keeps_uid_and_creation_timestamp(core: Any, ns: str) -> None:
    created = core.create_namespaced_pod(ns, pod("p", ns))
    created.metadata.creation_timestamp = None
    created.metadata.labels = {"a": "1"}
    updated = core.replace_namespaced_pod("p", ns, created)
    assert updated.metadata.uid == created.metadata.uid
    assert updated.metadata.creation_timestamp is not None


def test_update_with_another_uid_is_a_failed_precondition(core: Any, ns: str) -> None:
    created = core.create_namespaced_pod(ns, pod("p", ns))
    created.metadata.uid = "forged"
    with pytest.raises(client.ApiException) as info:
        core.replace_namespaced_pod("p", ns, created)
    assert info.value.status == 409
    assert "Precondition failed: UID in precondition: forged" in status_body(info.value)["message"]


def test_spec_change_bumps_generation_and_metadata_change_does_not(apps: Any, ns: str) -> None:
    created = apps.create_namespaced_deployment(ns, {"metadata": {"name": "d"}, "spec": _deployment_spec()})
    created.metadata.labels = {"team": "a"}
    relabelled = apps.replace_namespaced_deployment("d", ns, created)
    assert relabelled.metadata.generation == 1
    relabelled.spec.replicas = 5
    scaled = apps.replace_namespaced_deployment("d", ns, relabelled)
    assert scaled.metadata.generation == 2


def test_no_op_update_keeps_resource_version(core: Any, ns: str) -> None:
    created = core.create_namespaced_pod(ns, pod("p", ns))
    again = core.replace_namespaced_pod("p", ns, created)
    assert again.metadata.resource_version == created.metadata.resource_version


def test_update_of_main_resource_ignores_status_changes(core: Any, server: FakeApiServer) -> None:
    created = core.create_namespaced_pod("default", pod("p"))
    created.status.phase = "Running"
    created.metadata.labels = {"changed": "yes"}
    updated = core.replace_namespaced_pod("p", "default", created)
    assert updated.status.phase == "Pending"
    assert updated.metadata.labels == {"changed": "yes"}


@pytest.mark.fake_only(STATUS_KEEPS_METADATA)
def test_status_update_changes_only_status(core: Any, ns: str) -> None:
    created = core.create_namespaced_pod(ns, pod("p", ns))
    created.status.phase = "Running"
    created.metadata.labels = {"ignored": "yes"}
    updated = core.replace_namespaced_pod_status("p", ns, created)
    assert updated.status.phase == "Running"
    assert not updated.metadata.labels


def test_status_update_with_stale_resource_version_returns_409(core: Any, ns: str) -> None:
    created = core.create_namespaced_pod(ns, pod("p", ns))
    core.patch_namespaced_pod("p", ns, {"metadata": {"labels": {"x": "1"}}})
    created.status.phase = "Running"
    with pytest.raises(client.ApiException) as info:
        core.replace_namespaced_pod_status("p", ns, created)
    assert info.value.status == 409


def test_delete_of_non_pod_removes_it_at_once(apps: Any, ns: str) -> None:
    apps.create_namespaced_deployment(ns, {"metadata": {"name": "d"}, "spec": _deployment_spec()})
    apps.delete_namespaced_deployment("d", ns)
    with pytest.raises(client.ApiException) as info:
        apps.read_namespaced_deployment("d", ns)
    assert info.value.status == 404


def test_delete_of_missing_object_returns_404(core: Any, ns: str) -> None:
    with pytest.raises(client.ApiException) as info:
        core.delete_namespaced_pod("missing", ns)
    assert info.value.status == 404


def test_delete_with_stale_uid_precondition_returns_409(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, pod("p", ns))
    with pytest.raises(client.ApiException) as info:
        core.delete_namespaced_pod("p", ns, body={"preconditions": {"uid": "not-the-uid"}})
    assert info.value.status == 409


def test_deletecollection_removes_only_matching_objects(core: Any, ns: str) -> None:
    core.create_namespaced_pod(ns, pod("a", ns, labels={"app": "x"}))
    core.create_namespaced_pod(ns, pod("b", ns, labels={"app": "y"}))
    core.delete_collection_namespaced_pod(ns, label_selector="app=x")
    assert [p.metadata.name for p in core.list_namespaced_pod(ns).items] == ["b"]


def test_nodes_are_cluster_scoped(core: Any) -> None:
    node = core.create_node({"metadata": {"name": "n1", "labels": {"zone": "a"}}})
    assert node.metadata.namespace is None
    assert [n.metadata.name for n in core.list_node().items] == ["n1"]


def test_node_put_changes_taints_keeps_status_and_a_stale_one_conflicts(core: Any, api_server: ServerUnderTest) -> None:
    """What source steering (descheduler/migration/steering.py) relies on: a raw node PUT with the
    resourceVersion read rewrites spec.taints, leaves the status as it is, and is 409 when stale."""
    name = api_server.unique("n1")
    other = {"key": "example.com/maintenance", "effect": "PreferNoSchedule"}
    core.create_node({"metadata": {"name": name}, "spec": {"taints": [other]}})
    read = json.loads(core.read_node(name, _preload_content=False).data)
    ours = {"key": "descheduler.dev/moving-off", "effect": "PreferNoSchedule"}
    changed = {**read, "spec": {**read["spec"], "taints": [*read["spec"]["taints"], ours]}}
    changed["status"] = {**read.get("status", {}), "allocatable": {"cpu": "64"}}
    core.replace_node(name, changed, _preload_content=False)
    written = json.loads(core.read_node(name, _preload_content=False).data)
    assert written["spec"]["taints"] == [*read["spec"]["taints"], ours]
    assert written.get("status") == read.get("status")
    with pytest.raises(client.ApiException) as info:
        core.replace_node(name, changed, _preload_content=False)
    assert info.value.status == 409 and status_body(info.value)["reason"] == "Conflict"


@pytest.mark.fake_only(NO_NAMESPACE_CONTROLLER)
def test_namespace_delete_removes_its_objects(core: Any, ns: str) -> None:
    core.create_namespace({"metadata": {"name": "team"}})
    core.create_namespaced_pod("team", pod("p", "team"))
    core.delete_namespace("team")
    assert core.list_namespaced_pod("team").items == []


def test_lease_create_get_and_replace(api_client: Any) -> None:
    leases = client.CoordinationV1Api(api_client)
    body = {"metadata": {"name": "leader"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    created = leases.create_namespaced_lease("kube-system", body)
    created.spec.holder_identity = "b"
    replaced = leases.replace_namespaced_lease("leader", "kube-system", created)
    assert leases.read_namespaced_lease("leader", "kube-system").spec.holder_identity == "b"
    created.spec.holder_identity = "c"
    with pytest.raises(client.ApiException) as info:
        leases.replace_namespaced_lease("leader", "kube-system", created)
    assert info.value.status == 409
    assert replaced.metadata.resource_version != created.metadata.resource_version


def test_events_can_be_created_and_listed(core: Any, ns: str) -> None:
    event = {
        "metadata": {"name": "p.1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns},
        "reason": "Evicted",
        "message": "moved by LowNodeLoad",
        "type": "Normal",
    }
    core.create_namespaced_event(ns, event)
    listed = core.list_namespaced_event(ns, field_selector="reason=Evicted")
    assert [e.message for e in listed.items] == ["moved by LowNodeLoad"]


@pytest.mark.fake_only(EVENT_TIME)
def test_events_k8s_io_events_can_be_created(api_client: Any, ns: str) -> None:
    events = client.EventsV1Api(api_client)
    body = {
        "metadata": {"name": "e1"},
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "reportingController": "descheduler.dev/descheduler",
        "reportingInstance": "a",
        "action": "Evict",
        "reason": "Evicted",
        "type": "Normal",
    }
    events.create_namespaced_event(ns, body)
    assert [e.reason for e in events.list_namespaced_event(ns).items] == ["Evicted"]


def test_custom_resource_crud_with_status_subresource(custom: Any, api_server: ServerUnderTest) -> None:
    api_server.install_crds()
    group, version, plural = "descheduler.dev", "v1alpha1", "podmigrationjobs"
    body = {
        "apiVersion": "descheduler.dev/v1alpha1",
        "kind": "PodMigrationJob",
        "metadata": {"name": "job-1"},
        "spec": {"podRef": {"namespace": api_server.namespace, "name": "p"}, "mode": "ReservationFirst"},
        "status": {"phase": "Succeeded"},
    }
    created = custom.create_cluster_custom_object(group, version, plural, body)
    assert "status" not in created  # dropped on create: the kind has a status subresource
    created["status"] = {"phase": "Running"}
    updated = custom.replace_cluster_custom_object_status(group, version, plural, "job-1", created)
    assert updated["status"] == {"phase": "Running"}
    assert custom.get_cluster_custom_object(group, version, plural, "job-1")["status"]["phase"] == "Running"
    custom.delete_cluster_custom_object(group, version, plural, "job-1")
    assert custom.list_cluster_custom_object(group, version, plural)["items"] == []


@pytest.mark.fake_only(NOT_INSTALLED_CRDS)
@pytest.mark.parametrize("group", ["scheduling.sigs.k8s.io", "scheduling.x-k8s.io"])
def test_elastic_quota_is_namespaced_in_both_groups(custom: Any, group: str, ns: str) -> None:
    body = {
        "apiVersion": f"{group}/v1alpha1",
        "kind": "ElasticQuota",
        "metadata": {"name": "q"},
        "spec": {"min": {"cpu": "4"}, "max": {"cpu": "8"}},
    }
    custom.create_namespaced_custom_object(group, "v1alpha1", ns, "elasticquotas", body)
    listed = custom.list_namespaced_custom_object(group, "v1alpha1", ns, "elasticquotas")
    assert [q["spec"]["max"]["cpu"] for q in listed["items"]] == ["8"]


@pytest.mark.fake_only(NOT_INSTALLED_CRDS)
def test_node_metric_is_cluster_scoped(custom: Any) -> None:
    body = {"apiVersion": "slo.koordinator.sh/v1alpha1", "kind": "NodeMetric", "metadata": {"name": "n1"}, "spec": {}}
    custom.create_cluster_custom_object("slo.koordinator.sh", "v1alpha1", "nodemetrics", body)
    assert (
        custom.get_cluster_custom_object("slo.koordinator.sh", "v1alpha1", "nodemetrics", "n1")["metadata"]["name"]
        == "n1"
    )


def test_metrics_api_is_read_only_over_http(custom: Any, server: FakeApiServer) -> None:
    metrics = {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": "n1"},
        "timestamp": "2024-01-01T00:00:00Z",
        "window": "30s",
        "usage": {"cpu": "250m", "memory": "1Gi"},
    }
    with pytest.raises(client.ApiException) as info:
        custom.create_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes", metrics)
    assert info.value.status == 405
    server.store.create(metrics)
    got = custom.get_cluster_custom_object("metrics.k8s.io", "v1beta1", "nodes", "n1")
    assert got["usage"] == {"cpu": "250m", "memory": "1Gi"}


def test_pod_metrics_are_listed_per_namespace(custom: Any, server: FakeApiServer) -> None:
    server.store.create(
        {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "PodMetrics",
            "metadata": {"name": "p", "namespace": "default"},
            "containers": [{"name": "app", "usage": {"cpu": "10m", "memory": "20Mi"}}],
        }
    )
    listed = custom.list_namespaced_custom_object("metrics.k8s.io", "v1beta1", "default", "pods")
    assert [m["containers"][0]["usage"]["cpu"] for m in listed["items"]] == ["10m"]


def test_scale_subresource_reads_and_writes_replicas(apps: Any, ns: str) -> None:
    apps.create_namespaced_deployment(ns, {"metadata": {"name": "d"}, "spec": _deployment_spec()})
    scale = apps.read_namespaced_deployment_scale("d", ns)
    assert scale.spec.replicas == 2 and scale.status.selector == "app=d"
    apps.patch_namespaced_deployment_scale("d", ns, {"spec": {"replicas": 4}})
    assert apps.read_namespaced_deployment("d", ns).spec.replicas == 4


def _deployment_spec() -> dict[str, Any]:
    return {
        "replicas": 2,
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}},
    }
