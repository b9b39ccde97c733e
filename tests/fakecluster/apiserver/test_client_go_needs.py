"""What a client-go program needs from a server: WatchList, PVCs and PriorityClasses, content
negotiation that answers 415/406 for what cannot be read or written, and the server's version."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from contract_support import pod, raw_request, watch_lines
from kubernetes import client
from servers import ServerUnderTest

WATCH_LIST = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
REAL_WATCH_LIST = (
    "kube-apiserver v1.36.2 on etcd 3.4.23 answers a WatchList with bookmarks with a 500 (required storage "
    "feature RequestWatchProgress is disabled): the initial-events-end bookmark cannot be seen here"
)
PROTOBUF = "application/vnd.kubernetes.protobuf"


def _pods(api_server: ServerUnderTest) -> str:
    return f"/api/v1/namespaces/{api_server.namespace}/pods"


# ------------------------------------------------------------------ WatchList


def test_watch_list_sends_added_for_every_existing_object(api_server: ServerUnderTest, ns: str) -> None:
    api_server.seed([pod("a", ns), pod("b", ns)])
    events = watch_lines(api_server, f"{_pods(api_server)}?{WATCH_LIST}&timeoutSeconds=1")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


@pytest.mark.fake_only(REAL_WATCH_LIST)
@pytest.mark.parametrize("rv", ["", "&resourceVersion=0", "&resourceVersion=CURRENT"])
def test_watch_list_ends_initial_events_with_an_annotated_bookmark_at_the_current_version(
    api_server: ServerUnderTest, ns: str, rv: str
) -> None:
    api_server.seed([pod("a", ns), pod("b", ns)])
    current = api_server.resource_version()
    rv = rv.replace("CURRENT", str(current))
    events = watch_lines(api_server, f"{_pods(api_server)}?{WATCH_LIST}&allowWatchBookmarks=true{rv}&timeoutSeconds=1")
    assert [e["type"] for e in events[:3]] == ["ADDED", "ADDED", "BOOKMARK"]
    end = events[2]["object"]
    assert end["kind"] == "Pod" and end["spec"] == {"containers": None}
    assert end["metadata"] == {
        "resourceVersion": str(current),
        "annotations": {"k8s.io/initial-events-end": "true"},
    }
    # Later bookmarks are plain ones.
    assert all("annotations" not in e["object"]["metadata"] for e in events[3:])


@pytest.mark.fake_only(REAL_WATCH_LIST)
def test_watch_list_streams_changes_after_the_initial_events(api_server: ServerUnderTest, ns: str) -> None:
    assert api_server.fake is not None
    store = api_server.fake.store
    api_server.seed([pod("a", ns)])

    def later() -> None:
        time.sleep(0.3)
        store.create(pod("b", ns))

    threading.Thread(target=later, daemon=True).start()
    events = watch_lines(api_server, f"{_pods(api_server)}?{WATCH_LIST}&allowWatchBookmarks=true&timeoutSeconds=1")
    kinds = [(e["type"], e["object"]["metadata"].get("name")) for e in events if e["type"] != "BOOKMARK"]
    assert kinds == [("ADDED", "a"), ("ADDED", "b")]
    assert events[1]["type"] == "BOOKMARK"


def test_send_initial_events_false_starts_from_now(api_server: ServerUnderTest, ns: str) -> None:
    api_server.seed([pod("a", ns)])
    path = f"{_pods(api_server)}?watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
    assert watch_lines(api_server, path) == []


@pytest.mark.parametrize(
    ("query", "messages"),
    [
        (
            "watch=true&sendInitialEvents=true",
            ["Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"],
        ),
        (
            "watch=true&resourceVersionMatch=NotOlderThan",
            ["Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"],
        ),
        (
            "watch=true&sendInitialEvents=true&resourceVersionMatch=Exact",
            [
                "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                'Unsupported value: "Exact": supported values: "NotOlderThan"',
            ],
        ),
    ],
)
def test_watch_list_options_are_validated_as_the_real_server_does(
    api_server: ServerUnderTest, query: str, messages: list[str]
) -> None:
    status, _, body = raw_request(api_server, "GET", f"{_pods(api_server)}?{query}&timeoutSeconds=1")
    answer = json.loads(body)
    assert (status, answer["reason"]) == (422, "Invalid")
    assert [c["message"] for c in answer["details"]["causes"]] == messages
    assert answer["details"]["kind"] == "ListOptions" and answer["details"]["group"] == "meta.k8s.io"


# ------------------------------------------------------------------ PVCs and PriorityClasses


def test_persistent_volume_claims_are_served_namespaced(core: Any, ns: str) -> None:
    body = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    created = core.create_namespaced_persistent_volume_claim(ns, body)
    assert created.spec.volume_mode == "Filesystem" and created.status.phase == "Pending"
    assert [c.metadata.name for c in core.list_namespaced_persistent_volume_claim(ns).items] == ["data"]
    assert core.read_namespaced_persistent_volume_claim("data", ns).spec.resources.requests == {"storage": "1Gi"}
    core.delete_namespaced_persistent_volume_claim("data", ns)


def test_the_system_priority_classes_exist_with_the_real_values(api_client: Any) -> None:
    scheduling = client.SchedulingV1Api(api_client)
    classes = {pc.metadata.name: pc for pc in scheduling.list_priority_class().items}
    assert (classes["system-node-critical"].value, classes["system-cluster-critical"].value) == (
        2000001000,
        2000000000,
    )
    assert classes["system-cluster-critical"].preemption_policy == "PreemptLowerPriority"
    assert classes["system-node-critical"].description == (
        "Used for system critical pods that must not be moved from their current node."
    )


def test_priority_classes_are_cluster_scoped_and_writable(api_client: Any, api_server: ServerUnderTest) -> None:
    scheduling = client.SchedulingV1Api(api_client)
    name = api_server.unique("batch-low")
    created = scheduling.create_priority_class({"metadata": {"name": name}, "value": 5})
    assert created.metadata.namespace is None and created.preemption_policy == "PreemptLowerPriority"
    assert scheduling.read_priority_class(name).value == 5
    scheduling.delete_priority_class(name)
    with pytest.raises(client.ApiException) as info:
        scheduling.read_priority_class(name)
    assert info.value.status == 404


def test_discovery_lists_pvcs_and_priority_classes(core: Any, api_client: Any) -> None:
    resources = {r.name: r for r in core.get_api_resources().resources}
    pvc = resources["persistentvolumeclaims"]
    assert (pvc.kind, pvc.namespaced, pvc.short_names) == ("PersistentVolumeClaim", True, ["pvc"])
    assert {"create", "delete", "get", "list", "watch"} <= set(pvc.verbs)
    listed = client.SchedulingV1Api(api_client).get_api_resources().resources
    pc = {r.name: r for r in listed}["priorityclasses"]
    assert (pc.kind, pc.namespaced, pc.short_names) == ("PriorityClass", False, ["pc"])
    groups = {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
    assert "scheduling.k8s.io" in groups


# ------------------------------------------------------------------ content negotiation


def test_a_body_in_an_unknown_media_type_is_415(api_server: ServerUnderTest) -> None:
    status, _, body = raw_request(api_server, "POST", _pods(api_server), data=b"name: p", content_type="text/plain")
    answer = json.loads(body)
    assert (status, answer["kind"], answer["reason"], answer["code"]) == (415, "Status", "UnsupportedMediaType", 415)
    assert answer["message"].startswith(
        "the body of the request was in an unknown format - accepted media types include: application/json, "
        "application/yaml"
    )


@pytest.mark.fake_only("the real server decodes protobuf; the fake does not implement it and says so with a 415")
def test_a_protobuf_body_is_415_with_a_status(api_server: ServerUnderTest) -> None:
    status, headers, body = raw_request(
        api_server,
        "POST",
        f"/api/v1/namespaces/{api_server.namespace}/events",
        data=b"k8s\x00\n",
        content_type=PROTOBUF,
    )
    answer = json.loads(body)
    assert status == 415 and headers["Content-Type"] == "application/json"
    assert (answer["kind"], answer["status"], answer["reason"]) == ("Status", "Failure", "UnsupportedMediaType")


def test_a_yaml_body_is_read(api_server: ServerUnderTest) -> None:
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: from-yaml\nspec:\n  containers:\n  - name: c\n    image: nginx\n"
    )
    status, _, body = raw_request(
        api_server, "POST", _pods(api_server), data=manifest.encode(), content_type="application/yaml"
    )
    assert status == 201 and json.loads(body)["metadata"]["name"] == "from-yaml"


def test_a_patch_in_an_unknown_media_type_is_415(api_server: ServerUnderTest) -> None:
    status, _, body = raw_request(
        api_server, "PATCH", f"/api/v1/namespaces/{api_server.namespace}", {"a": 1}, "application/xml"
    )
    answer = json.loads(body)
    assert (status, answer["reason"], answer["message"]) == (415, "UnsupportedMediaType", "415: Unsupported Media Type")


def test_an_accept_the_server_cannot_answer_is_406(api_server: ServerUnderTest) -> None:
    status, _, body = raw_request(api_server, "GET", _pods(api_server), accept="application/x-foo")
    answer = json.loads(body)
    assert (status, answer["reason"], answer["code"]) == (406, "NotAcceptable", 406)
    assert answer["message"].startswith("406: Not Acceptable\n\nAvailable representations: application/json")


@pytest.mark.fake_only("the real server answers protobuf; the fake writes JSON only and says so with a 406")
def test_an_accept_of_protobuf_only_is_406(api_server: ServerUnderTest) -> None:
    status, _, body = raw_request(api_server, "GET", _pods(api_server), accept=PROTOBUF)
    assert status == 406 and json.loads(body)["reason"] == "NotAcceptable"


def test_protobuf_first_with_json_as_fallback_still_gets_an_answer(api_server: ServerUnderTest) -> None:
    status, _, _ = raw_request(api_server, "GET", _pods(api_server), accept=f"{PROTOBUF}, application/json")
    assert status == 200


# ------------------------------------------------------------------ version


def test_version_is_the_real_servers(api_client: Any) -> None:
    info = client.VersionApi(api_client).get_code()
    assert (info.major, info.minor, info.git_version) == ("1", "36", "v1.36.2")
    assert (info.platform, info.compiler, info.git_tree_state) == ("linux/amd64", "gc", "clean")
    assert info.go_version.startswith("go1.") and info.git_commit and info.build_date


def test_version_document_has_the_real_fields(api_server: ServerUnderTest) -> None:
    status, _, body = raw_request(api_server, "GET", "/version")
    assert status == 200
    assert set(json.loads(body)) == {
        "major",
        "minor",
        "emulationMajor",
        "emulationMinor",
        "minCompatibilityMajor",
        "minCompatibilityMinor",
        "gitVersion",
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    }
