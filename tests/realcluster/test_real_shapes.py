"""The pod and node the benchmarks decode are shaped as a real kube-apiserver returns them.

benchmarks/shapes/pod.json and node.json were read from the real control plane by this test: a
Deployment's pod made by kube-controller-manager, bound by kube-scheduler, reported Running by the
kubelet stand-in (tests/realcluster/standin.py), and a Node registered with the status a kubelet
reports (descheduler/fakecluster/nodes.py). The test makes them again and checks that the files
still hold every field the server returns, at about the same size. To write the files again:

    DESCHEDULER_WRITE_SHAPES=1 .venv/bin/pytest tests/realcluster/test_real_shapes.py
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from controlplane import ControlPlane, Process
from realcluster_support import create, create_node, delete_node, eventually, merge_patch
from standin import KubeletStandIn

from benchmarks.server_shapes import SHAPES, key_paths
from descheduler.fakecluster.nodes import registered_node
from descheduler.kube import KubeClient

WRITE = os.environ.get("DESCHEDULER_WRITE_SHAPES") == "1"
REPLICAS = 2


@pytest.fixture(scope="module")
def controllers(control_plane: ControlPlane) -> Iterator[None]:
    """kube-controller-manager and the stock kube-scheduler, stopped when the module ends."""
    started: list[Process] = []
    try:
        started.append(control_plane.start_controller_manager())
        started.append(control_plane.start_scheduler())
        yield
    finally:
        for process in reversed(started):
            process.stop()


def workload(name: str, node: str) -> dict[str, Any]:
    """A Deployment as services commonly run: an app container with a port, an environment
    variable, a readiness probe, requests and limits, and a proxy sidecar."""
    labels = {"app": name, "tier": "backend"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": labels, "annotations": {"koordinator.sh/qosClass": "LS"}},
                "spec": {
                    "nodeSelector": {"kubernetes.io/hostname": node},
                    "containers": [
                        {
                            "name": "main",
                            "image": f"registry.example.com/{name}:1.4.2",
                            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                            "env": [{"name": "LOG_LEVEL", "value": "info"}],
                            "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}},
                            "resources": {
                                "requests": {"cpu": "250m", "memory": "512Mi"},
                                "limits": {"cpu": "1", "memory": "1Gi"},
                            },
                        },
                        {
                            "name": "sidecar",
                            "image": "registry.example.com/proxy:2.0",
                            "resources": {
                                "requests": {"cpu": "50m", "memory": "64Mi"},
                                "limits": {"cpu": "200m", "memory": "128Mi"},
                            },
                        },
                    ],
                },
            },
        },
    }


def register(kube: KubeClient, name: str) -> dict[str, Any]:
    """A Node with the status its kubelet reports on registration, addresses included."""
    create_node(kube, name, cpu="32", memory="128Gi")
    node: dict[str, Any] = kube.get_json(f"/api/v1/nodes/{name}")
    status = registered_node(node, time.time())["status"]
    status["addresses"] = [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": name}]
    merge_patch(kube, f"/api/v1/nodes/{name}/status", {"status": status})
    return node


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def test_the_benchmark_shapes_hold_what_the_real_server_returns(
    controllers: None, kube: KubeClient, namespace: str
) -> None:
    node_name = f"{namespace}-node"[:63]
    register(kube, node_name)
    try:
        with KubeletStandIn(kube, [node_name]):
            create(kube, f"/apis/apps/v1/namespaces/{namespace}/deployments", workload("shop", node_name))

            def running() -> bool:
                items = kube.get_json(f"/api/v1/namespaces/{namespace}/pods")["items"]
                return len(items) == REPLICAS and all(_ready(p) for p in items)

            eventually(running, timeout=60, what="the Deployment's pods Running and Ready")
        name = kube.get_json(f"/api/v1/namespaces/{namespace}/pods")["items"][0]["metadata"]["name"]
        read = {
            "pod": kube.get_json(f"/api/v1/namespaces/{namespace}/pods/{name}"),
            "node": kube.get_json(f"/api/v1/nodes/{node_name}"),
        }
    finally:
        delete_node(kube, node_name)
    for kind, obj in read.items():
        path = SHAPES / f"{kind}.json"
        if WRITE:
            path.write_text(json.dumps(obj, indent=1) + "\n")
        kept = json.loads(path.read_text())
        assert key_paths(obj) == key_paths(kept), f"{path}: the real server's {kind} has other fields; {__doc__}"
        size, kept_size = len(json.dumps(obj)), len(json.dumps(kept))
        assert 0.8 < size / kept_size < 1.25, f"{path}: {kept_size} bytes, the real server's {kind} {size}"


def test_key_paths_tell_a_missing_field_and_skip_values(tmp_path: Path) -> None:
    obj = {"metadata": {"name": "a", "managedFields": [{"fieldsV1": {"f:spec": {}}}]}, "spec": {"x": [1, {"y": 2}]}}
    same = {"metadata": {"name": "b", "managedFields": [{"fieldsV1": {"f:status": {}}}]}, "spec": {"x": [{"y": 3}]}}
    assert key_paths(obj) == key_paths(same)
    assert key_paths(obj) != key_paths({"metadata": {"name": "a"}, "spec": {"x": [1, {"y": 2}]}})
