"""Fault injection, request counting, discovery documents and the kubeconfig the server writes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from contract_support import pod, raw_request, status_body
from kubernetes import client, config

from descheduler.fakecluster.apiserver import FakeApiServer


def test_fail_next_makes_exactly_n_matching_requests_fail_with_500(core: Any, server: FakeApiServer) -> None:
    server.faults.fail_next(2, path=r"/pods$", method="GET", status=500)
    for _ in range(2):
        with pytest.raises(client.ApiException) as info:
            core.list_namespaced_pod("default")
        body = status_body(info.value)
        assert info.value.status == 500
        assert (body["kind"], body["status"], body["reason"]) == ("Status", "Failure", "InternalError")
    assert core.list_namespaced_pod("default").items == []


def test_fail_next_does_not_touch_other_paths(core: Any, server: FakeApiServer) -> None:
    server.faults.fail_next(1, path=r"/nodes$", status=500)
    core.list_namespaced_pod("default")
    with pytest.raises(client.ApiException):
        core.list_node()


def test_injected_429_carries_retry_after(server: FakeApiServer) -> None:
    server.faults.fail_next(1, path="/pods", status=429, retry_after=3)
    status, headers, body = raw_request(server, "GET", "/api/v1/pods")
    assert status == 429
    assert headers["Retry-After"] == "3"
    parsed = json.loads(body)
    assert parsed["reason"] == "TooManyRequests" and parsed["details"]["retryAfterSeconds"] == 3


def test_injected_409_is_a_conflict_status(core: Any, server: FakeApiServer) -> None:
    core.create_namespaced_pod("default", pod("p"))
    server.faults.fail_next(1, path="/pods/p$", verb="update", status=409)
    with pytest.raises(client.ApiException) as info:
        core.replace_namespaced_pod("p", "default", pod("p"))
    assert info.value.status == 409 and status_body(info.value)["reason"] == "Conflict"
    core.replace_namespaced_pod("p", "default", pod("p"))


def test_failed_request_has_no_effect(core: Any, server: FakeApiServer) -> None:
    server.faults.fail_next(1, verb="create", status=500)
    with pytest.raises(client.ApiException):
        core.create_namespaced_pod("default", pod("p"))
    assert not server.store.exists("pods", "p", "default")


def test_delay_holds_matching_responses(core: Any, server: FakeApiServer) -> None:
    server.faults.delay(0.3, path="/nodes", count=1)
    started = time.monotonic()
    core.list_node()
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    core.list_node()
    assert time.monotonic() - started < 0.3


def test_a_cancelled_rule_stops_applying_and_says_how_often_it_did(core: Any, server: FakeApiServer) -> None:
    rule = server.faults.fail_next(5, path=r"/nodes$", status=503)
    with pytest.raises(client.ApiException):
        core.list_node()
    assert server.faults.served(rule) == 1
    assert server.faults.cancel(rule) == 1
    core.list_node()
    delay = server.faults.delay(5.0, path="/nodes")
    assert server.faults.cancel(delay) == 0
    started = time.monotonic()
    core.list_node()
    assert time.monotonic() - started < 5.0


def test_the_audit_log_has_every_answer_with_its_status_once_started(core: Any, server: FakeApiServer) -> None:
    core.list_node()  # before the audit starts: not recorded
    server.faults.start_audit()
    core.create_namespaced_pod("default", pod("p"))
    server.faults.fail_next(1, path="/pods/p$", status=500)
    with pytest.raises(client.ApiException):
        core.read_namespaced_pod("p", "default")
    with pytest.raises(client.ApiException):
        core.read_namespaced_pod("missing", "default")
    log = server.faults.audit_log()
    assert [(e.method, e.verb, e.path, e.status) for e in log] == [
        ("POST", "create", "/api/v1/namespaces/default/pods", 201),
        ("GET", "get", "/api/v1/namespaces/default/pods/p", 500),
        ("GET", "get", "/api/v1/namespaces/default/pods/missing", 404),
    ]
    assert server.faults.audit_log(since=2) == log[2:]
    assert server.faults.audit_length() == 3
    assert {e.user_agent for e in log} == {core.api_client.user_agent}  # which client asked


def test_requests_are_counted_per_verb_and_path(core: Any, server: FakeApiServer) -> None:
    core.list_namespaced_pod("default")
    core.list_namespaced_pod("default")
    core.create_namespaced_pod("default", pod("p"))
    counts = server.faults.request_counts()
    assert counts[("list", "/api/v1/namespaces/default/pods")] == 2
    assert counts[("create", "/api/v1/namespaces/default/pods")] == 1
    assert server.faults.count(verb="list", path="/pods$") == 2


def test_version_endpoint(api_client: Any) -> None:
    info = client.VersionApi(api_client).get_code()
    assert info.major == "1" and info.git_version.startswith("v1.")


def test_core_discovery_lists_pods_and_their_subresources(core: Any) -> None:
    resources = {r.name: r for r in core.get_api_resources().resources}
    assert resources["pods"].namespaced and resources["pods"].kind == "Pod"
    assert "watch" in resources["pods"].verbs
    eviction = resources["pods/eviction"]
    assert (eviction.group, eviction.version, eviction.kind, eviction.verbs) == ("policy", "v1", "Eviction", ["create"])
    assert resources["pods/binding"].verbs == ["create"]
    assert resources["pods/status"].kind == "Pod"
    assert not resources["nodes"].namespaced


@pytest.mark.fake_only("the fake serves our CRD groups built in; the real server only once their CRDs are installed")
def test_api_groups_list_every_served_group(api_client: Any) -> None:
    groups = {g.name: g for g in client.ApisApi(api_client).get_api_versions().groups}
    for name in (
        "apps",
        "policy",
        "coordination.k8s.io",
        "scheduling.sigs.k8s.io",
        "scheduling.x-k8s.io",
        "slo.koordinator.sh",
        "metrics.k8s.io",
        "descheduler.dev",
    ):
        assert name in groups
    assert groups["metrics.k8s.io"].preferred_version.group_version == "metrics.k8s.io/v1beta1"


def test_custom_group_discovery_shows_status_subresource(server: FakeApiServer) -> None:
    status, _, body = raw_request(server, "GET", "/apis/descheduler.dev/v1alpha1")
    resources = {r["name"]: r for r in json.loads(body)["resources"]}
    assert status == 200
    assert not resources["podmigrationjobs"]["namespaced"]
    assert resources["podmigrationjobs/status"]["verbs"] == ["get", "patch", "update"]
    assert "reservations/status" in resources


def test_metrics_discovery_is_get_and_list_only(server: FakeApiServer) -> None:
    _, _, body = raw_request(server, "GET", "/apis/metrics.k8s.io/v1beta1")
    resources = {r["name"]: r for r in json.loads(body)["resources"]}
    assert resources["nodes"]["kind"] == "NodeMetrics" and resources["nodes"]["verbs"] == ["get", "list"]
    assert resources["pods"]["namespaced"]


def test_group_discovery(server: FakeApiServer) -> None:
    status, _, body = raw_request(server, "GET", "/apis/apps")
    assert status == 200 and json.loads(body)["preferredVersion"]["version"] == "v1"


def test_unknown_path_returns_404_status(server: FakeApiServer) -> None:
    status, _, body = raw_request(server, "GET", "/apis/nope.example.com/v1/things")
    assert status == 404 and json.loads(body)["kind"] == "Status"


def test_written_kubeconfig_works_with_the_official_loader(server: FakeApiServer, tmp_path: Path) -> None:
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    api = config.new_client_from_config(config_file=str(path))
    try:
        assert [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items] == [
            "default",
            "kube-node-lease",
            "kube-public",
            "kube-system",
        ]
    finally:
        api.close()


def test_server_binds_a_free_port_and_stops(tmp_path: Path) -> None:
    with FakeApiServer() as a, FakeApiServer() as b:
        assert a.port != b.port and a.url.startswith("http://127.0.0.1:")
    status = None
    try:
        raw_request(a, "GET", "/version")
    except OSError:
        status = "refused"
    assert status == "refused"
