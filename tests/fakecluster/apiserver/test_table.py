"""Server-side printing: `Accept: …;as=Table;v=v1;g=meta.k8s.io` answers a meta.k8s.io Table, as
kube-apiserver does for `kubectl get` (columns and cells of pkg/printers/internalversion/printers.go,
the custom-resource default Name/Age for other kinds, ages by duration.HumanDuration)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from contract_support import pod, raw_request
from servers import ServerUnderTest

from descheduler.fakecluster.apiserver import FakeApiServer
from descheduler.fakecluster.apiserver.printing import human_duration, selector_string

KUBECTL_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)
NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC).timestamp()
POD_COLUMNS = ["Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"]
NODE_COLUMNS = [
    "Name",
    "Status",
    "Roles",
    "Age",
    "Version",
    "Internal-IP",
    "External-IP",
    "OS-Image",
    "Kernel-Version",
    "Container-Runtime",
]


def ago(seconds: float) -> str:
    return datetime.fromtimestamp(NOW - seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    """A server whose clock stands still at NOW, so ages are exact."""
    with FakeApiServer(clock=lambda: NOW, bookmark_interval=0.1, pod_termination_delay=None) as srv:
        yield srv


@pytest.fixture
def api_server(server: FakeApiServer) -> ServerUnderTest:
    """The official client (`core`) on this module's still-clock server."""
    return ServerUnderTest("fake", server.url, "default", fake=server)


def get(server: FakeApiServer, path: str, accept: str = KUBECTL_ACCEPT) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(server.url + path, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def table(server: FakeApiServer, path: str, accept: str = KUBECTL_ACCEPT) -> dict[str, Any]:
    status, body = get(server, path, accept)
    assert status == 200, body
    assert body["kind"] == "Table"
    return body


def running_ready_pod(name: str, **meta: Any) -> dict[str, Any]:
    obj = pod(name, node="node-1", phase="Running", ready=True)
    obj["metadata"].update(creationTimestamp=ago(302), **meta)
    obj["status"].update(
        podIP="10.0.0.5",
        containerStatuses=[
            {
                "name": "app",
                "image": "nginx",
                "imageID": "",
                "ready": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": ago(300)}},
            }
        ],
    )
    return obj


def node(name: str, *, ready: str = "True", unschedulable: bool = False, **labels: str) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": ago(12 * 86400 + 3600)},
        "spec": {"unschedulable": True} if unschedulable else {},
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready}],
            "addresses": [
                {"type": "Hostname", "address": name},
                {"type": "InternalIP", "address": "192.168.0.7"},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.31.2",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "kernelVersion": "6.1.0-18-amd64",
                "containerRuntimeVersion": "containerd://1.7.13",
            },
        },
    }
    return obj


def row_of(body: dict[str, Any], name: str) -> dict[str, Any]:
    rows = [r for r in body["rows"] if r["cells"][0] == name]
    assert len(rows) == 1, body["rows"]
    row: dict[str, Any] = rows[0]
    return row


# ------------------------------------------------------------------ pods


def test_a_pod_list_is_a_table_with_the_pod_printer_columns(server: FakeApiServer) -> None:
    server.store.load([running_ready_pod("web-1")])
    body = table(server, "/api/v1/namespaces/default/pods")
    assert body["apiVersion"] == "meta.k8s.io/v1"
    assert body["metadata"] == {"resourceVersion": str(server.store.resource_version)}
    columns = body["columnDefinitions"]
    assert [c["name"] for c in columns] == POD_COLUMNS
    assert [c["priority"] for c in columns] == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert columns[0]["format"] == "name" and all(c["type"] == "string" for c in columns)
    assert set(columns[0]) == {"name", "type", "format", "description", "priority"}


def test_a_running_ready_pod_prints_ready_status_restarts_age_and_the_wide_cells(server: FakeApiServer) -> None:
    server.store.load([running_ready_pod("web-1")])
    row = row_of(table(server, "/api/v1/namespaces/default/pods"), "web-1")
    assert row["cells"] == ["web-1", "1/1", "Running", "0", "5m2s", "10.0.0.5", "node-1", "<none>", "<none>"]
    assert "conditions" not in row


def test_a_pod_with_a_deletion_timestamp_prints_terminating(server: FakeApiServer) -> None:
    server.store.load([running_ready_pod("going", deletionTimestamp=ago(-30), deletionGracePeriodSeconds=30)])
    assert row_of(table(server, "/api/v1/namespaces/default/pods"), "going")["cells"][2] == "Terminating"


def test_a_waiting_container_prints_its_reason_and_the_last_restart(server: FakeApiServer) -> None:
    crashing = running_ready_pod("crashing")
    crashing["status"]["containerStatuses"] = [
        {
            "name": "app",
            "ready": False,
            "restartCount": 4,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(75)}},
        }
    ]
    server.store.load([crashing])
    cells = row_of(table(server, "/api/v1/namespaces/default/pods"), "crashing")["cells"]
    assert cells[1:4] == ["0/1", "CrashLoopBackOff", "4 (75s ago)"]


def test_a_pending_pod_prints_none_for_ip_and_node(server: FakeApiServer) -> None:
    server.store.load([pod("waiting", phase="Pending")])
    cells = row_of(table(server, "/api/v1/namespaces/default/pods"), "waiting")["cells"]
    assert cells[1:3] == ["0/1", "Pending"]
    assert cells[5:] == ["<none>", "<none>", "<none>", "<none>"]


def test_a_succeeded_pod_row_carries_the_completed_condition(server: FakeApiServer) -> None:
    server.store.load([pod("job", node="node-1", phase="Succeeded")])
    row = row_of(table(server, "/api/v1/namespaces/default/pods"), "job")
    assert row["cells"][2] == "Succeeded"
    assert row["conditions"] == [
        {"type": "Completed", "status": "True", "reason": "Succeeded", "message": "The pod has completed successfully."}
    ]


# ------------------------------------------------------------------ nodes


def test_a_node_list_is_a_table_with_the_node_printer_columns(server: FakeApiServer) -> None:
    server.store.load([node("node-a")])
    columns = table(server, "/api/v1/nodes")["columnDefinitions"]
    assert [c["name"] for c in columns] == NODE_COLUMNS
    assert [c["priority"] for c in columns] == [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]


def test_a_ready_node_prints_roles_age_version_and_the_wide_cells(server: FakeApiServer) -> None:
    server.store.load([node("node-a", **{"node-role.kubernetes.io/worker": "", "kubernetes.io/role": "gpu"})])
    assert row_of(table(server, "/api/v1/nodes"), "node-a")["cells"] == [
        "node-a",
        "Ready",
        "gpu,worker",
        "12d",
        "v1.31.2",
        "192.168.0.7",
        "<none>",
        "Debian GNU/Linux 12 (bookworm)",
        "6.1.0-18-amd64",
        "containerd://1.7.13",
    ]


@pytest.mark.parametrize(
    ("ready", "unschedulable", "status"),
    [
        ("True", False, "Ready"),
        ("False", True, "NotReady,SchedulingDisabled"),
        ("Unknown", False, "NotReady"),
        (None, True, "Unknown,SchedulingDisabled"),
    ],
)
def test_node_status_is_the_ready_condition_plus_scheduling_disabled(
    server: FakeApiServer, ready: str | None, unschedulable: bool, status: str
) -> None:
    obj = node("node-b", ready=ready or "True", unschedulable=unschedulable)
    if ready is None:
        obj["status"]["conditions"] = []
    server.store.load([obj])
    cells = row_of(table(server, "/api/v1/nodes"), "node-b")["cells"]
    assert cells[1:3] == [status, "<none>"]


# ------------------------------------------------------------------ the row objects


def test_rows_carry_partial_object_metadata_by_default(server: FakeApiServer) -> None:
    server.store.load([running_ready_pod("web-1", labels={"app": "web"})])
    obj = row_of(table(server, "/api/v1/pods"), "web-1")["object"]
    stored = server.store.get("pods", "web-1", "default")
    assert obj == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": stored["metadata"]}


@pytest.mark.parametrize("include", ["Metadata", "Object", "None"])
def test_include_object_chooses_what_each_row_carries(server: FakeApiServer, include: str) -> None:
    server.store.load([running_ready_pod("web-1")])
    obj = row_of(table(server, f"/api/v1/pods?includeObject={include}"), "web-1")["object"]
    stored = server.store.get("pods", "web-1", "default")
    expected = {
        "Metadata": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": stored["metadata"]},
        "Object": stored,
        "None": None,
    }[include]
    assert obj == expected


def test_an_unknown_include_object_is_a_bad_request(server: FakeApiServer) -> None:
    status, body = get(server, "/api/v1/pods?includeObject=Everything")
    assert status == 400
    assert body["reason"] == "BadRequest"
    assert 'includeObject: Unsupported value: "Everything"' in body["message"]


def test_a_v1beta1_table_is_served_when_only_that_is_accepted(server: FakeApiServer) -> None:
    server.store.load([running_ready_pod("web-1")])
    body = table(server, "/api/v1/pods", "application/json;as=Table;v=v1beta1;g=meta.k8s.io")
    assert body["apiVersion"] == "meta.k8s.io/v1beta1"
    assert body["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"


# ------------------------------------------------------------------ get, paging, other kinds


def test_get_of_one_object_is_a_table_of_one_row_at_its_resource_version(server: FakeApiServer) -> None:
    server.store.load([running_ready_pod("web-1"), running_ready_pod("web-2")])
    body = table(server, "/api/v1/namespaces/default/pods/web-2")
    stored = server.store.get("pods", "web-2", "default")
    assert [r["cells"][0] for r in body["rows"]] == ["web-2"]
    assert body["metadata"] == {"resourceVersion": stored["metadata"]["resourceVersion"]}


def test_a_table_pages_with_limit_and_continue_like_the_list(server: FakeApiServer) -> None:
    server.store.load([running_ready_pod(f"web-{i}") for i in range(3)])
    first = table(server, "/api/v1/namespaces/default/pods?limit=2")
    assert [r["cells"][0] for r in first["rows"]] == ["web-0", "web-1"]
    assert first["metadata"]["remainingItemCount"] == 1
    rest = table(server, f"/api/v1/namespaces/default/pods?limit=2&continue={first['metadata']['continue']}")
    assert [r["cells"][0] for r in rest["rows"]] == ["web-2"]
    assert "continue" not in rest["metadata"]


@pytest.mark.parametrize(
    "path",
    [
        "/apis/descheduler.dev/v1alpha1/podmigrationjobs",
        "/apis/scheduling.sigs.k8s.io/v1alpha1/namespaces/default/elasticquotas",
    ],
)
def test_custom_resources_get_the_default_name_and_age(server: FakeApiServer, path: str) -> None:
    server.store.load(
        [
            {
                "apiVersion": "descheduler.dev/v1alpha1",
                "kind": "PodMigrationJob",
                "metadata": {"name": "thing", "creationTimestamp": ago(3 * 3600)},
            },
            {
                "apiVersion": "scheduling.sigs.k8s.io/v1alpha1",
                "kind": "ElasticQuota",
                "metadata": {"name": "thing", "namespace": "default", "creationTimestamp": ago(3 * 3600)},
            },
        ]
    )
    body = table(server, path)
    assert [(c["name"], c["type"], c["format"]) for c in body["columnDefinitions"]] == [
        ("Name", "string", "name"),
        ("Age", "date", ""),
    ]
    assert row_of(body, "thing")["cells"] == ["thing", "3h"]


# ------------------------------------------------------------------ built-in kinds beyond pods and nodes

TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}, {"name": "log", "image": "fluent-bit:3"}]},
}


def columns(body: dict[str, Any]) -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in body["columnDefinitions"]]


def test_a_deployment_prints_ready_up_to_date_available_and_the_wide_cells(server: FakeApiServer) -> None:
    server.store.load(
        [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "web", "namespace": "default", "creationTimestamp": ago(3 * 3600)},
                "spec": {
                    "replicas": 3,
                    "selector": {
                        "matchLabels": {"app": "web"},
                        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "edge"]}],
                    },
                    "template": TEMPLATE,
                },
                "status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
            }
        ]
    )
    body = table(server, "/apis/apps/v1/namespaces/default/deployments")
    assert columns(body) == [
        ("Name", 0),
        ("Ready", 0),
        ("Up-to-date", 0),
        ("Available", 0),
        ("Age", 0),
        ("Containers", 1),
        ("Images", 1),
        ("Selector", 1),
    ]
    assert row_of(body, "web")["cells"] == [
        "web",
        "2/3",
        3,
        2,
        "3h",
        "web,log",
        "nginx:1.27,fluent-bit:3",
        "app=web,tier in (edge,front)",
    ]


def test_a_pdb_prints_min_available_max_unavailable_and_allowed_disruptions(server: FakeApiServer) -> None:
    def pdb(name: str, **spec: Any) -> dict[str, Any]:
        return {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": ago(600)},
            "spec": {"selector": {"matchLabels": {"app": name}}, **spec},
            "status": {"disruptionsAllowed": 1},
        }

    server.store.load([pdb("web", minAvailable=2), pdb("api", maxUnavailable="25%")])
    body = table(server, "/apis/policy/v1/namespaces/default/poddisruptionbudgets")
    assert columns(body) == [
        ("Name", 0),
        ("Min Available", 0),
        ("Max Unavailable", 0),
        ("Allowed Disruptions", 0),
        ("Age", 0),
    ]
    assert row_of(body, "web")["cells"] == ["web", "2", "N/A", 1, "10m"]
    assert row_of(body, "api")["cells"] == ["api", "N/A", "25%", 1, "10m"]


EVENT_COLUMNS = [
    ("Last Seen", 0),
    ("Type", 0),
    ("Reason", 0),
    ("Object", 0),
    ("Subobject", 1),
    ("Source", 1),
    ("Message", 0),
    ("First Seen", 1),
    ("Count", 1),
    ("Name", 1),
]


def test_an_event_prints_last_seen_type_reason_object_message_and_the_wide_cells(server: FakeApiServer) -> None:
    server.store.load(
        [
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "web-1.17f", "namespace": "default", "creationTimestamp": ago(600)},
                "involvedObject": {"kind": "Pod", "name": "web-1", "fieldPath": "spec.containers{web}"},
                "reason": "Evicted",
                "message": "Evicted by the descheduler \n",
                "type": "Normal",
                "source": {"component": "descheduler", "host": "node-1"},
                "count": 3,
                "firstTimestamp": ago(600),
                "lastTimestamp": ago(90),
            }
        ]
    )
    body = table(server, "/api/v1/namespaces/default/events")
    assert columns(body) == EVENT_COLUMNS
    assert body["rows"][0]["cells"] == [
        "90s",
        "Normal",
        "Evicted",
        "pod/web-1",
        "spec.containers{web}",
        "descheduler, node-1",
        "Evicted by the descheduler",
        "10m",
        3,
        "web-1.17f",
    ]


def test_an_events_k8s_io_event_prints_like_its_core_form(server: FakeApiServer) -> None:
    server.store.load(
        [
            {
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": "web-1.180", "namespace": "default", "creationTimestamp": ago(120)},
                "eventTime": ago(120).replace("Z", ".000000Z"),
                "regarding": {"kind": "Pod", "name": "web-1"},
                "reason": "Scheduled",
                "note": "Successfully assigned default/web-1 to node-1",
                "type": "Normal",
                "action": "Binding",
                "reportingController": "default-scheduler",
                "reportingInstance": "default-scheduler-node-1",
            }
        ]
    )
    body = table(server, "/apis/events.k8s.io/v1/namespaces/default/events")
    assert columns(body) == EVENT_COLUMNS
    assert body["rows"][0]["cells"] == [
        "2m",
        "Normal",
        "Scheduled",
        "pod/web-1",
        "",
        "default-scheduler, default-scheduler-node-1",
        "Successfully assigned default/web-1 to node-1",
        "2m",
        1,
        "web-1.180",
    ]


def test_a_replica_set_a_stateful_set_and_a_daemon_set_print_their_replica_counts(server: FakeApiServer) -> None:
    meta = {"namespace": "default", "creationTimestamp": ago(3600)}
    selector = {"matchLabels": {"app": "web"}}
    server.store.load(
        [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": "web-5c8b6", **meta},
                "spec": {"replicas": 4, "selector": selector, "template": TEMPLATE},
                "status": {"replicas": 4, "readyReplicas": 3},
            },
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "db", **meta},
                "spec": {"replicas": 2, "selector": selector, "serviceName": "db", "template": TEMPLATE},
                "status": {"readyReplicas": 1},
            },
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "exporter", **meta},
                "spec": {
                    "selector": selector,
                    "template": {**TEMPLATE, "spec": {**TEMPLATE["spec"], "nodeSelector": {"os": "linux"}}},
                },
                "status": {
                    "desiredNumberScheduled": 5,
                    "currentNumberScheduled": 5,
                    "numberReady": 4,
                    "updatedNumberScheduled": 5,
                    "numberAvailable": 4,
                },
            },
        ]
    )
    replicasets = table(server, "/apis/apps/v1/namespaces/default/replicasets")
    assert [name for name, _ in columns(replicasets)] == [
        "Name",
        "Desired",
        "Current",
        "Ready",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    assert replicasets["rows"][0]["cells"] == [
        "web-5c8b6",
        4,
        4,
        3,
        "60m",
        "web,log",
        "nginx:1.27,fluent-bit:3",
        "app=web",
    ]
    statefulsets = table(server, "/apis/apps/v1/namespaces/default/statefulsets")
    assert [name for name, _ in columns(statefulsets)] == ["Name", "Ready", "Age", "Containers", "Images"]
    assert statefulsets["rows"][0]["cells"] == ["db", "1/2", "60m", "web,log", "nginx:1.27,fluent-bit:3"]
    daemonsets = table(server, "/apis/apps/v1/namespaces/default/daemonsets")
    assert daemonsets["rows"][0]["cells"] == [
        "exporter",
        5,
        5,
        4,
        5,
        4,
        "os=linux",
        "60m",
        "web,log",
        "nginx:1.27,fluent-bit:3",
        "app=web",
    ]


def test_namespaces_leases_and_priority_classes_print_their_columns(server: FakeApiServer) -> None:
    server.store.load(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "creationTimestamp": ago(7200)}},
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": "descheduler", "namespace": "default", "creationTimestamp": ago(7200)},
                "spec": {"holderIdentity": "descheduler-0"},
            },
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "serving", "creationTimestamp": ago(7200)},
                "value": 1000,
            },
        ]
    )
    assert row_of(table(server, "/api/v1/namespaces"), "shop")["cells"] == ["shop", "Active", "120m"]
    leases = table(server, "/apis/coordination.k8s.io/v1/namespaces/default/leases")
    assert leases["rows"][0]["cells"] == ["descheduler", "descheduler-0", "120m"]
    classes = table(server, "/apis/scheduling.k8s.io/v1/priorityclasses")
    assert [name for name, _ in columns(classes)] == ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]
    assert row_of(classes, "serving")["cells"] == ["serving", 1000, False, "120m", "PreemptLowerPriority"]


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        (None, ""),
        ({}, ""),
        ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
        (
            {
                "matchExpressions": [
                    {"key": "zone", "operator": "NotIn", "values": ["z2", "z1"]},
                    {"key": "gpu", "operator": "Exists"},
                    {"key": "spot", "operator": "DoesNotExist"},
                ]
            },
            "gpu,!spot,zone notin (z1,z2)",
        ),
    ],
)
def test_selectors_print_as_label_selector_strings(selector: Any, expected: str) -> None:
    assert selector_string(selector) == expected


# ------------------------------------------------------------------ without as=Table


@pytest.mark.parametrize(
    "accept",
    [
        "application/json",
        "*/*",
        "",
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
        "application/json;as=Table;v=v2;g=meta.k8s.io,application/json",
        "application/json,application/json;as=Table;v=v1;g=meta.k8s.io",
    ],
)
def test_a_request_not_asking_for_a_table_first_gets_the_list_unchanged(server: FakeApiServer, accept: str) -> None:
    server.store.load([running_ready_pod("web-1")])
    _, _, plain = raw_request(server, "GET", "/api/v1/namespaces/default/pods")
    status, body = get(server, "/api/v1/namespaces/default/pods", accept)
    assert status == 200
    assert body == json.loads(plain)
    assert body["kind"] == "PodList"


def test_the_official_client_still_gets_objects(server: FakeApiServer, core: Any) -> None:
    server.store.load([running_ready_pod("web-1")])
    assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["web-1"]


# ------------------------------------------------------------------ watch


def test_a_watch_asking_for_tables_gets_one_row_tables_with_columns_only_first(server: FakeApiServer) -> None:
    server.store.load([running_ready_pod("web-1"), running_ready_pod("web-2")])
    rv = server.store.resource_version
    server.store.delete("pods", "web-1", "default", grace_period_seconds=30)
    server.store.create(pod("web-3"))
    request = urllib.request.Request(
        server.url + f"/api/v1/namespaces/default/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1",
        headers={"Accept": KUBECTL_ACCEPT},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        events = [json.loads(line) for line in resp if line.strip()]
    assert [e["type"] for e in events] == ["MODIFIED", "ADDED"]
    first, second = (e["object"] for e in events)
    assert first["kind"] == second["kind"] == "Table"
    assert [c["name"] for c in first["columnDefinitions"]] == POD_COLUMNS
    assert second["columnDefinitions"] is None
    assert first["rows"][0]["cells"][:3] == ["web-1", "1/1", "Terminating"]
    assert second["rows"][0]["cells"][0] == "web-3"
    assert first["metadata"]["resourceVersion"] == first["rows"][0]["object"]["metadata"]["resourceVersion"]


def test_a_table_watch_bookmark_is_an_empty_table_at_the_current_resource_version(server: FakeApiServer) -> None:
    rv = server.store.resource_version
    request = urllib.request.Request(
        server.url + f"/api/v1/pods?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1",
        headers={"Accept": KUBECTL_ACCEPT},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        events = [json.loads(line) for line in resp if line.strip()]
    assert events, "no bookmark in a second at a 0.1 s bookmark interval"
    assert {e["type"] for e in events} == {"BOOKMARK"}
    assert events[0]["object"]["kind"] == "Table"
    assert events[0]["object"]["rows"] == []
    assert events[0]["object"]["metadata"] == {"resourceVersion": str(rv)}


def test_a_plain_watch_still_streams_objects(server: FakeApiServer) -> None:
    server.store.load([running_ready_pod("web-1")])
    request = urllib.request.Request(
        server.url + "/api/v1/namespaces/default/pods?watch=true&timeoutSeconds=1",
        headers={"Accept": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        events = [json.loads(line) for line in resp if line.strip()]
    assert [(e["type"], e["object"]["kind"]) for e in events] == [("ADDED", "Pod")]


# ------------------------------------------------------------------ HumanDuration

SECOND, MINUTE, HOUR, MS = 10**9, 60 * 10**9, 3600 * 10**9, 10**6
DAY, YEAR = 24 * HOUR, 365 * 24 * HOUR


@pytest.mark.parametrize(
    ("nanoseconds", "expected"),
    [
        # TestHumanDuration (k8s.io/apimachinery/pkg/util/duration/duration_test.go)
        (SECOND, "1s"),
        (70 * SECOND, "70s"),
        (190 * SECOND, "3m10s"),
        (70 * MINUTE, "70m"),
        (47 * HOUR, "47h"),
        (49 * HOUR, "2d1h"),
        ((8 * 24 + 2) * HOUR, "8d"),
        (367 * 24 * HOUR, "367d"),
        ((365 * 2 * 24 + 25) * HOUR, "2y1d"),
        ((365 * 8 * 24 + 2) * HOUR, "8y"),
        # TestHumanDurationBoundaries
        (-2 * SECOND, "<invalid>"),
        (-2 * SECOND + 1, "0s"),
        (0, "0s"),
        (SECOND - MS, "0s"),
        (2 * MINUTE - MS, "119s"),
        (2 * MINUTE, "2m"),
        (2 * MINUTE + SECOND, "2m1s"),
        (10 * MINUTE - MS, "9m59s"),
        (10 * MINUTE, "10m"),
        (10 * MINUTE + SECOND, "10m"),
        (3 * HOUR - MS, "179m"),
        (3 * HOUR, "3h"),
        (3 * HOUR + MINUTE, "3h1m"),
        (8 * HOUR - MS, "7h59m"),
        (8 * HOUR, "8h"),
        (8 * HOUR + 59 * MINUTE, "8h"),
        (2 * DAY - MS, "47h"),
        (2 * DAY, "2d"),
        (2 * DAY + HOUR, "2d1h"),
        (8 * DAY - MS, "7d23h"),
        (8 * DAY, "8d"),
        (8 * DAY + 23 * HOUR, "8d"),
        (2 * YEAR - MS, "729d"),
        (2 * YEAR, "2y"),
        (2 * YEAR + 23 * HOUR, "2y"),
        (2 * YEAR + 23 * HOUR + 59 * MINUTE, "2y"),
        (2 * YEAR + DAY - MS, "2y"),
        (2 * YEAR + DAY, "2y1d"),
        (3 * YEAR, "3y"),
        (4 * YEAR, "4y"),
        (5 * YEAR, "5y"),
        (6 * YEAR, "6y"),
        (7 * YEAR, "7y"),
        (8 * YEAR - MS, "7y364d"),
        (8 * YEAR, "8y"),
        (8 * YEAR + 364 * DAY, "8y"),
        (9 * YEAR, "9y"),
    ],
)
def test_human_duration_matches_the_go_implementation(nanoseconds: int, expected: str) -> None:
    assert human_duration(nanoseconds) == expected


# ------------------------------------------------------------------ kubectl itself

KUBECTL = shutil.which("kubectl")


def kubectl(server: FakeApiServer, tmp_path: Path, *args: str) -> list[list[str]]:
    assert KUBECTL is not None
    config = server.write_kubeconfig(tmp_path / "kubeconfig")
    env = {**os.environ, "KUBECONFIG": str(config), "HOME": str(tmp_path)}
    done = subprocess.run(
        [KUBECTL, "--cache-dir", str(tmp_path / "cache"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [line.split() for line in done.stdout.splitlines()]


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_kubectl_get_prints_the_printer_columns(server: FakeApiServer, tmp_path: Path) -> None:
    server.store.load([running_ready_pod("web-1"), node("node-a", **{"node-role.kubernetes.io/control-plane": ""})])
    pods = kubectl(server, tmp_path, "get", "pods", "-A")
    assert pods[0] == ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert pods[1] == ["default", "web-1", "1/1", "Running", "0", "5m2s"]
    wide = kubectl(server, tmp_path, "get", "pods", "-A", "-o", "wide")
    assert wide[0][-7:] == ["AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
    assert wide[1][-5:] == ["5m2s", "10.0.0.5", "node-1", "<none>", "<none>"]
    nodes = kubectl(server, tmp_path, "get", "nodes")
    assert nodes == [
        ["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
        ["node-a", "Ready", "control-plane", "12d", "v1.31.2"],
    ]
