"""List: label and field selectors, namespaces, limit/continue pagination, resourceVersion."""

from __future__ import annotations

import json
from typing import Any

import pytest
from contract_support import pod, running_pod, status_body
from kubernetes import client
from servers import ServerUnderTest

from descheduler.fakecluster.apiserver import FakeApiServer


@pytest.fixture
def labelled(server: FakeApiServer) -> None:
    server.store.load(
        [
            pod("web-1", labels={"app": "web", "tier": "front"}),
            pod("web-2", labels={"app": "web", "tier": "back"}),
            pod("db-1", labels={"app": "db"}),
            pod("bare"),
        ]
    )


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["web-1", "web-2"]),
        ("app==web", ["web-1", "web-2"]),
        ("app!=web", ["bare", "db-1"]),  # != also matches objects without the label
        ("app in (web,db)", ["db-1", "web-1", "web-2"]),
        ("app notin (web)", ["bare", "db-1"]),
        ("tier", ["web-1", "web-2"]),
        ("!tier", ["bare", "db-1"]),
        ("app=web,tier=back", ["web-2"]),
        ("app in (web, db),!tier", ["db-1"]),
        ("", ["bare", "db-1", "web-1", "web-2"]),
    ],
)
def test_list_filters_by_label_selector(core: Any, labelled: None, selector: str, expected: list[str]) -> None:
    names = [p.metadata.name for p in core.list_namespaced_pod("default", label_selector=selector).items]
    assert names == expected


def test_invalid_label_selector_returns_400(core: Any) -> None:
    with pytest.raises(client.ApiException) as info:
        core.list_namespaced_pod("default", label_selector="app in web")
    assert info.value.status == 400


@pytest.fixture
def placed(server: FakeApiServer) -> None:
    server.store.load(
        [
            running_pod("a", node="n1"),
            running_pod("b", node="n2"),
            pod("pending"),
            pod("done", node="n1", phase="Succeeded"),
        ]
    )


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=n1", ["a", "done"]),
        ("spec.nodeName==n2", ["b"]),
        ("spec.nodeName=", ["pending"]),
        ("spec.nodeName!=", ["a", "b", "done"]),
        ("status.phase=Running", ["a", "b"]),
        ("status.phase!=Running,status.phase!=Succeeded", ["pending"]),
        ("metadata.name=b", ["b"]),
        ("metadata.namespace=default,spec.nodeName=n1,status.phase=Running", ["a"]),
    ],
)
def test_list_filters_pods_by_field_selector(core: Any, placed: None, selector: str, expected: list[str]) -> None:
    names = [p.metadata.name for p in core.list_pod_for_all_namespaces(field_selector=selector).items]
    assert names == expected


def test_unsupported_field_selector_returns_400(core: Any) -> None:
    with pytest.raises(client.ApiException) as info:
        core.list_namespaced_pod("default", field_selector="spec.priority=5")
    assert info.value.status == 400
    assert "field label not supported" in status_body(info.value)["message"]


def test_field_selector_metadata_name_works_for_every_kind(core: Any, api_server: ServerUnderTest) -> None:
    n1, n2 = api_server.unique("n1"), api_server.unique("n2")
    core.create_node({"metadata": {"name": n1}})
    core.create_node({"metadata": {"name": n2}})
    assert [n.metadata.name for n in core.list_node(field_selector=f"metadata.name={n2}").items] == [n2]


def test_list_in_a_namespace_excludes_other_namespaces(core: Any, server: FakeApiServer) -> None:
    server.store.load([pod("a", "team-a"), pod("b", "team-b"), pod("c", "team-a-2")])
    assert [p.metadata.name for p in core.list_namespaced_pod("team-a").items] == ["a"]
    everywhere = core.list_pod_for_all_namespaces().items
    assert sorted(p.metadata.name for p in everywhere) == ["a", "b", "c"]


def test_list_carries_kind_and_current_resource_version(server: FakeApiServer, api_client: Any) -> None:
    server.store.load([pod("a")])
    resp = client.CoreV1Api(api_client).list_namespaced_pod("default", _preload_content=False)
    body = json.loads(resp.data)
    assert body["kind"] == "PodList" and body["apiVersion"] == "v1"
    assert body["metadata"]["resourceVersion"] == str(server.store.resource_version)


def test_limit_and_continue_page_through_everything_once(core: Any, server: FakeApiServer) -> None:
    server.store.load([pod(f"p{i:02d}") for i in range(25)])
    names: list[str] = []
    token = None
    pages = 0
    while True:
        page = core.list_namespaced_pod("default", limit=10, _continue=token)
        names += [p.metadata.name for p in page.items]
        pages += 1
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"p{i:02d}" for i in range(25)]
    assert pages == 3


def test_first_page_reports_remaining_item_count(core: Any, server: FakeApiServer) -> None:
    server.store.load([pod(f"p{i}") for i in range(5)])
    page = core.list_namespaced_pod("default", limit=2)
    assert page.metadata.remaining_item_count == 3
    assert page.metadata._continue


def test_exactly_full_last_page_has_no_continue_token(core: Any, server: FakeApiServer) -> None:
    server.store.load([pod(f"p{i}") for i in range(4)])
    first = core.list_namespaced_pod("default", limit=2)
    second = core.list_namespaced_pod("default", limit=2, _continue=first.metadata._continue)
    assert len(second.items) == 2 and not second.metadata._continue


def test_continued_pages_show_the_snapshot_of_the_first_page(core: Any, server: FakeApiServer) -> None:
    server.store.load([pod(f"p{i}") for i in range(4)])
    first = core.list_namespaced_pod("default", limit=2)
    server.store.create(pod("p9"))
    server.store.delete("pods", "p3", "default")
    rest = core.list_namespaced_pod("default", limit=10, _continue=first.metadata._continue)
    assert [p.metadata.name for p in rest.items] == ["p2", "p3"]
    assert rest.metadata.resource_version == first.metadata.resource_version


def test_paginated_list_with_selector_returns_only_matches(core: Any, server: FakeApiServer) -> None:
    server.store.load([pod(f"p{i}", labels={"even": str(i % 2 == 0).lower()}) for i in range(10)])
    names: list[str] = []
    token = None
    while True:
        page = core.list_namespaced_pod("default", limit=2, label_selector="even=true", _continue=token)
        names += [p.metadata.name for p in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert names == ["p0", "p2", "p4", "p6", "p8"]


def test_malformed_continue_token_returns_400(core: Any) -> None:
    with pytest.raises(client.ApiException) as info:
        core.list_namespaced_pod("default", limit=1, _continue="not-a-token")
    assert info.value.status == 400


def test_continue_token_older_than_the_kept_snapshots_returns_410(core: Any, server: FakeApiServer) -> None:
    server.store.load([pod(f"p{i}") for i in range(3)])
    token = core.list_namespaced_pod("default", limit=1).metadata._continue
    for i in range(40):  # every first page at a new version keeps a snapshot; only the newest survive
        server.store.create(pod(f"q{i}"))
        core.list_namespaced_pod("default", limit=1)
    with pytest.raises(client.ApiException) as info:
        core.list_namespaced_pod("default", limit=1, _continue=token)
    assert info.value.status == 410
    assert status_body(info.value)["reason"] == "Expired"


def test_list_with_resource_version_zero_returns_current_state(core: Any, server: FakeApiServer) -> None:
    server.store.load([pod("a")])
    assert [p.metadata.name for p in core.list_namespaced_pod("default", resource_version="0").items] == ["a"]


def test_list_with_resource_version_newer_than_current_is_refused(core: Any, server: FakeApiServer) -> None:
    too_new = str(server.store.resource_version + 100)
    with pytest.raises(client.ApiException) as info:
        core.list_namespaced_pod("default", resource_version=too_new)
    assert info.value.status == 504
    assert "Too large resource version" in status_body(info.value)["message"]


def test_list_with_exact_old_resource_version_returns_410(core: Any, server: FakeApiServer) -> None:
    old = str(server.store.resource_version)
    server.store.create(pod("a"))
    with pytest.raises(client.ApiException) as info:
        core.list_namespaced_pod("default", resource_version=old, resource_version_match="Exact")
    assert info.value.status == 410
