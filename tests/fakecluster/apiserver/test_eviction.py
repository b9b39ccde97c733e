"""pods/eviction and PodDisruptionBudgets, as pkg/registry/core/pod/storage/eviction.go behaves."""

from __future__ import annotations

import json
from typing import Any

import pytest
from contract_support import pod, running_pod, status_body
from kubernetes import client

from descheduler.fakecluster.apiserver import FakeApiServer

PDB_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."


def _evict(core: Any, name: str, namespace: str = "default", **delete_options: Any) -> Any:
    body: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }
    if delete_options:
        body["deleteOptions"] = delete_options
    return core.create_namespaced_pod_eviction(name, namespace, body)


def _pdb(
    name: str,
    *,
    allowed: int,
    current: int = 3,
    desired: int = 2,
    labels: dict[str, str] | None = None,
    generation: int = 1,
    observed: int = 1,
    policy: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"minAvailable": desired, "selector": {"matchLabels": labels or {"app": "web"}}}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default", "generation": generation},
        "spec": spec,
        "status": {
            "observedGeneration": observed,
            "disruptionsAllowed": allowed,
            "currentHealthy": current,
            "desiredHealthy": desired,
            "expectedPods": current,
        },
    }


def _gone(server: FakeApiServer, name: str) -> bool:
    return not server.store.exists("pods", name, "default")


def test_eviction_without_pdb_deletes_the_pod(core: Any, server: FakeApiServer) -> None:
    server.store.load([running_pod("p", labels={"app": "web"})])
    _evict(core, "p")
    assert _gone(server, "p")


def test_eviction_of_missing_pod_returns_404(core: Any) -> None:
    with pytest.raises(client.ApiException) as info:
        _evict(core, "missing")
    assert info.value.status == 404


def test_eviction_with_zero_disruptions_allowed_returns_429_with_disruption_budget_cause(
    core: Any, server: FakeApiServer
) -> None:
    server.store.load([running_pod("p", labels={"app": "web"}), _pdb("web-pdb", allowed=0, current=2, desired=2)])
    with pytest.raises(client.ApiException) as info:
        _evict(core, "p")
    body = status_body(info.value)
    assert info.value.status == 429
    assert (body["reason"], body["message"]) == ("TooManyRequests", PDB_MESSAGE)
    assert body["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget web-pdb needs 2 healthy pods and has 2 currently",
        }
    ]
    assert not _gone(server, "p")


def test_eviction_within_budget_decrements_disruptions_allowed_and_records_the_pod(
    core: Any, policy: Any, server: FakeApiServer
) -> None:
    server.store.load([running_pod("p", labels={"app": "web"}), _pdb("web-pdb", allowed=1)])
    _evict(core, "p")
    pdb = policy.read_namespaced_pod_disruption_budget("web-pdb", "default")
    assert pdb.status.disruptions_allowed == 0
    assert list(pdb.status.disrupted_pods) == ["p"]
    assert _gone(server, "p")


def test_second_eviction_after_the_budget_is_spent_returns_429(core: Any, server: FakeApiServer) -> None:
    server.store.load(
        [
            running_pod("p1", labels={"app": "web"}),
            running_pod("p2", labels={"app": "web"}),
            _pdb("web-pdb", allowed=1),
        ]
    )
    _evict(core, "p1")
    with pytest.raises(client.ApiException) as info:
        _evict(core, "p2")
    assert info.value.status == 429


def test_eviction_refused_while_pdb_status_is_not_observed(core: Any, server: FakeApiServer) -> None:
    server.store.load([running_pod("p", labels={"app": "web"}), _pdb("web-pdb", allowed=5, generation=2, observed=1)])
    with pytest.raises(client.ApiException) as info:
        _evict(core, "p")
    body = status_body(info.value)
    assert info.value.status == 429
    assert body["message"] == PDB_MESSAGE
    assert body["details"]["causes"][0]["reason"] == "DisruptionBudget"
    assert "still being processed" in body["details"]["causes"][0]["message"]
    assert not _gone(server, "p")


def test_pdb_created_over_http_is_not_observed_until_its_status_is_set(
    core: Any, policy: Any, server: FakeApiServer
) -> None:
    server.store.load([running_pod("p", labels={"app": "web"})])
    body = _pdb("web-pdb", allowed=5)
    created = policy.create_namespaced_pod_disruption_budget("default", body)
    assert created.status.observed_generation is None  # status is the disruption controller's to write
    with pytest.raises(client.ApiException) as info:
        _evict(core, "p")
    assert info.value.status == 429


@pytest.mark.parametrize("phase", ["Pending", "Succeeded", "Failed"])
def test_pod_in_phase_is_evicted_without_pdb_check(core: Any, server: FakeApiServer, phase: str) -> None:
    server.store.load([pod("p", labels={"app": "web"}, node="n1", phase=phase), _pdb("web-pdb", allowed=0)])
    _evict(core, "p")
    assert _gone(server, "p")


def test_terminating_pod_is_evicted_without_pdb_check() -> None:
    with FakeApiServer(pod_termination_delay=None) as server, server.api_client() as api:
        core = client.CoreV1Api(api)
        server.store.load([running_pod("p", labels={"app": "web"}), _pdb("web-pdb", allowed=0)])
        core.delete_namespaced_pod("p", "default")
        _evict(core, "p")  # no 429 although the budget allows no disruption
        assert server.store.get("pods", "p", "default")["metadata"]["deletionTimestamp"]
        assert server.store.get("poddisruptionbudgets", "web-pdb", "default")["status"]["disruptionsAllowed"] == 0


def test_two_matching_pdbs_return_500(core: Any, server: FakeApiServer) -> None:
    server.store.load([running_pod("p", labels={"app": "web"}), _pdb("a", allowed=1), _pdb("b", allowed=1)])
    with pytest.raises(client.ApiException) as info:
        _evict(core, "p")
    body = status_body(info.value)
    assert info.value.status == 500
    assert (
        body["message"]
        == "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    )
    assert not _gone(server, "p")


def test_pdb_in_another_namespace_or_with_other_labels_does_not_apply(core: Any, server: FakeApiServer) -> None:
    other_ns = _pdb("elsewhere", allowed=0)
    other_ns["metadata"]["namespace"] = "kube-system"
    server.store.load([running_pod("p", labels={"app": "web"}), other_ns, _pdb("db", allowed=0, labels={"app": "db"})])
    _evict(core, "p")
    assert _gone(server, "p")


@pytest.mark.parametrize(
    ("policy", "current", "desired", "evicted"),
    [
        ("AlwaysAllow", 1, 3, True),  # unhealthy pods may always go
        ("IfHealthyBudget", 3, 2, True),  # the application is healthy enough
        ("IfHealthyBudget", 2, 2, True),
        ("IfHealthyBudget", 1, 2, False),  # the application is already disrupted
        (None, 1, 2, False),  # IfHealthyBudget is the default
    ],
)
def test_unhealthy_pod_eviction_policy_for_running_pod_that_is_not_ready(
    core: Any, server: FakeApiServer, policy: str | None, current: int, desired: int, evicted: bool
) -> None:
    server.store.load(
        [
            running_pod("p", labels={"app": "web"}, ready=False),
            _pdb("web-pdb", allowed=0, current=current, desired=desired, policy=policy),
        ]
    )
    if evicted:
        _evict(core, "p")
    else:
        with pytest.raises(client.ApiException) as info:
            _evict(core, "p")
        assert info.value.status == 429
    assert _gone(server, "p") is evicted


def test_unready_pod_evicted_under_policy_does_not_spend_the_budget(core: Any, server: FakeApiServer) -> None:
    server.store.load(
        [
            running_pod("p", labels={"app": "web"}, ready=False),
            _pdb("web-pdb", allowed=1, current=3, desired=2, policy="AlwaysAllow"),
        ]
    )
    _evict(core, "p")
    assert server.store.get("poddisruptionbudgets", "web-pdb", "default")["status"]["disruptionsAllowed"] == 1


def test_eviction_deletes_gracefully() -> None:
    with FakeApiServer(pod_termination_delay=None) as srv, srv.api_client() as api:
        srv.store.load([running_pod("p", labels={"app": "web"}, grace=20)])
        _evict(client.CoreV1Api(api), "p")
        evicted = srv.store.get("pods", "p", "default")
    assert evicted["metadata"]["deletionTimestamp"]
    assert evicted["metadata"]["deletionGracePeriodSeconds"] == 20
    conditions = {c["type"]: c for c in evicted["status"]["conditions"]}
    assert conditions["DisruptionTarget"]["reason"] == "EvictionByEvictionAPI"


def test_eviction_honours_delete_options_grace_period() -> None:
    with FakeApiServer(pod_termination_delay=None) as srv, srv.api_client() as api:
        srv.store.load([running_pod("p", grace=30)])
        _evict(client.CoreV1Api(api), "p", gracePeriodSeconds=5)
        assert srv.store.get("pods", "p", "default")["metadata"]["deletionGracePeriodSeconds"] == 5


def test_eviction_name_mismatch_returns_400(core: Any, server: FakeApiServer) -> None:
    server.store.load([running_pod("p")])
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}}
    with pytest.raises(client.ApiException) as info:
        core.create_namespaced_pod_eviction("p", "default", body)
    assert info.value.status == 400


def test_eviction_success_body_is_a_success_status(core: Any, server: FakeApiServer) -> None:
    server.store.load([running_pod("p")])
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "p", "namespace": "default"}}
    resp = core.create_namespaced_pod_eviction("p", "default", body, _preload_content=False)
    assert resp.status == 201
    assert json.loads(resp.data)["status"] == "Success"
