"""A node as its kubelet registers it (system info, conditions with times), and the scenario's nodes
and pods carrying the status their kubelet would have reported when the simulated cluster loads them."""

from __future__ import annotations

from typing import Any

from descheduler.fakecluster.apiserver.clock import parse_instant, rfc3339
from descheduler.fakecluster.apiserver.printing import node_row, pod_row
from descheduler.fakecluster.cluster import SimulatedCluster
from descheduler.fakecluster.nodes import KUBELET_VERSION, node_conditions, node_info, registered_node
from descheduler.fakecluster.scenario import load_demo_scenario

from .conftest import T0, node


def conditions_by_type(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in obj["status"]["conditions"]}


def test_a_registered_node_prints_the_kubelet_version_os_kernel_and_runtime() -> None:
    cells, _ = node_row(registered_node(node("n1"), T0), T0)
    assert cells[4] == KUBELET_VERSION == "v1.36.2"
    assert cells[7:] == ["Ubuntu 24.04.2 LTS", "6.8.0-60-generic", "containerd://2.0.5"]


def test_node_info_keeps_what_the_node_reports_and_reads_os_and_arch_from_its_labels() -> None:
    given = node("n1")
    given["metadata"]["labels"].update({"kubernetes.io/arch": "arm64"})
    given["status"]["nodeInfo"] = {"kubeletVersion": "v1.30.1", "osImage": ""}
    info = node_info(given)
    assert (info["kubeletVersion"], info["architecture"], info["operatingSystem"]) == ("v1.30.1", "arm64", "linux")
    assert info["osImage"] == "Ubuntu 24.04.2 LTS"  # empty means unreported


def test_node_ids_are_derived_from_the_name() -> None:
    assert node_info(node("n1")) == node_info(node("n1"))
    assert node_info(node("n1"))["machineID"] != node_info(node("n2"))["machineID"]
    assert len(node_info(node("n1"))["machineID"]) == 32


def test_conditions_heartbeat_now_and_transition_at_creation() -> None:
    given = node("n1")
    given["metadata"]["creationTimestamp"] = rfc3339(T0 - 3600)
    ready = conditions_by_type({"status": {"conditions": node_conditions(given, T0)}})["Ready"]
    assert ready["lastHeartbeatTime"] == rfc3339(T0)
    assert ready["lastTransitionTime"] == rfc3339(T0 - 3600)
    assert (ready["reason"], ready["message"]) == ("KubeletReady", "kubelet is posting ready status")


def test_the_conditions_a_kubelet_always_reports_are_added_healthy_and_given_ones_kept() -> None:
    given = node("n1")
    given["status"]["conditions"] = [
        {"type": "MemoryPressure", "status": "True", "lastHeartbeatTime": rfc3339(T0 - 10)},
        {"type": "Ready", "status": "False"},
    ]
    conditions = node_conditions(given, T0)
    assert [c["type"] for c in conditions] == ["DiskPressure", "PIDPressure", "MemoryPressure", "Ready"]
    by_type = conditions_by_type({"status": {"conditions": conditions}})
    assert by_type["DiskPressure"]["status"] == "False"
    assert by_type["MemoryPressure"]["lastHeartbeatTime"] == rfc3339(T0 - 10)
    assert "reason" not in by_type["MemoryPressure"]  # not the healthy status: no invented reason
    assert by_type["Ready"]["status"] == "False"
    assert given["status"]["conditions"][1] == {"type": "Ready", "status": "False"}  # the input is untouched


def test_the_demo_loads_with_kubelet_reported_nodes_and_pods() -> None:
    cluster = SimulatedCluster(load_demo_scenario(), start=T0)
    nodes = cluster.store.list("nodes")
    assert nodes and all(n["status"]["nodeInfo"]["kubeletVersion"] == KUBELET_VERSION for n in nodes)
    for obj in nodes:
        for condition in obj["status"]["conditions"]:
            assert parse_instant(condition["lastHeartbeatTime"]) == T0
            assert parse_instant(condition["lastTransitionTime"]) <= T0
    running = [p for p in cluster.store.list("pods") if p["status"].get("phase") == "Running"]
    assert running
    for obj in running:
        cells, _ = pod_row(obj, T0)
        assert cells[1] == "1/1", obj["metadata"]["name"]
