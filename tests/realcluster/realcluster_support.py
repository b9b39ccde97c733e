"""Helpers for the real-cluster tests (imported by name): CRDs, Nodes without a kubelet, pods bound
through the binding subresource, NodeMetric load, all through the API."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from descheduler.kube import KubeApiError, KubeClient
from tests.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
OUR_CRDS = REPO / "deploy" / "base" / "crds"

# A minimal Koordinator NodeMetric CRD (cluster-scoped, status subresource, schema left open).
NODE_METRIC_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "nodemetrics.slo.koordinator.sh"},
    "spec": {
        "group": "slo.koordinator.sh",
        "scope": "Cluster",
        "names": {
            "plural": "nodemetrics",
            "singular": "nodemetric",
            "kind": "NodeMetric",
            "listKind": "NodeMetricList",
        },
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}

NOT_READY_TAINT = "node.kubernetes.io/not-ready"


# A LowNodeLoad policy on Koordinator NodeMetrics, any pod old enough to move (the plan tests').
NODE_METRIC_POLICY = """\
apiVersion: descheduler.dev/v1alpha1
kind: DeschedulerPolicy
loadSource: {type: nodeMetric}
evictor: {minPodAge: 0s}
strategies:
  - name: LowNodeLoad
    args:
      lowThresholds: {cpu: 45, memory: 55}
      highThresholds: {cpu: 70, memory: 80}
"""


def eventually(check: Callable[[], bool], timeout: float = 30.0, interval: float = 0.1, what: str = "") -> None:
    """Wait until `check()` is true; fail naming `what` after `timeout` seconds."""
    wait_for(check, timeout, what or "condition", interval=interval)


def get(kube: KubeClient, path: str, **query: Any) -> Any:
    return json.loads(kube.request("GET", path, query=query or None))


def create(kube: KubeClient, path: str, obj: dict[str, Any]) -> Any:
    return json.loads(kube.request("POST", path, body=obj))


def merge_patch(kube: KubeClient, path: str, patch: dict[str, Any]) -> Any:
    return json.loads(kube.request("PATCH", path, body=patch, content_type="application/merge-patch+json"))


def apply_crd(kube: KubeClient, crd: dict[str, Any]) -> None:
    """Create a CRD (or leave the one there) and wait until it is Established."""
    name = crd["metadata"]["name"]
    try:
        create(kube, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    except KubeApiError as error:
        if error.status != 409:
            raise

    def established() -> bool:
        found = get(kube, f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conditions = found.get("status", {}).get("conditions") or []
        return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

    eventually(established, what=f"CRD {name} established")


def install_our_crds(kube: KubeClient) -> list[str]:
    """The project's CRDs from deploy/base/crds (PodMigrationJob, Reservation); their names."""
    names = []
    for path in sorted(OUR_CRDS.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        crd = yaml.safe_load(path.read_text())
        apply_crd(kube, crd)
        names.append(crd["metadata"]["name"])
    return names


def install_node_metric_crd(kube: KubeClient) -> None:
    apply_crd(kube, NODE_METRIC_CRD)


def create_node(kube: KubeClient, name: str, *, cpu: str = "8", memory: str = "32Gi", pods: str = "110") -> Any:
    """A Node as a kubelet would register it, Ready, without the not-ready taint admission adds."""
    resources = {"cpu": cpu, "memory": memory, "pods": pods}
    node = create(
        kube,
        "/api/v1/nodes",
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
        },
    )
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "stand-in",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        ],
    }
    merge_patch(kube, f"/api/v1/nodes/{name}/status", {"status": status})
    taints = [t for t in (node.get("spec", {}).get("taints") or []) if t.get("key") != NOT_READY_TAINT]
    return merge_patch(kube, f"/api/v1/nodes/{name}", {"spec": {"taints": taints or None}})


def delete_node(kube: KubeClient, name: str) -> None:
    try:
        kube.request("DELETE", f"/api/v1/nodes/{name}")
    except KubeApiError as error:
        if error.status != 404:
            raise


def pod_manifest(
    name: str, *, cpu: str = "500m", memory: str = "512Mi", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {"app": name}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }


def create_pod(kube: KubeClient, namespace: str, manifest: dict[str, Any]) -> Any:
    return create(kube, f"/api/v1/namespaces/{namespace}/pods", manifest)


def bind(kube: KubeClient, namespace: str, pod: str, node: str) -> None:
    """Bind a pod to a node through the pods/binding subresource, as a scheduler does."""
    create(
        kube,
        f"/api/v1/namespaces/{namespace}/pods/{pod}/binding",
        {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        },
    )


def run_pod(kube: KubeClient, namespace: str, pod: str) -> None:
    """What a kubelet would report for a started pod: Running and Ready."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    merge_patch(
        kube,
        f"/api/v1/namespaces/{namespace}/pods/{pod}/status",
        {
            "status": {
                "phase": "Running",
                "podIP": "10.244.0.10",
                "startTime": now,
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
            }
        },
    )


def delete_pod_now(kube: KubeClient, namespace: str, pod: str) -> None:
    """Delete with grace period 0: with no kubelet, nothing else finishes a pod's deletion."""
    kube.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/{pod}", body={"gracePeriodSeconds": 0})


def publish_node_metric(
    kube: KubeClient, node: str, *, cpu: str, memory: str, pods: Sequence[tuple[str, str, str, str]] = ()
) -> None:
    """A NodeMetric for `node` reporting `cpu`/`memory` in use now (and (namespace, name, cpu, memory) per pod)."""
    path = f"/apis/slo.koordinator.sh/v1alpha1/nodemetrics/{node}"
    try:
        create(
            kube,
            "/apis/slo.koordinator.sh/v1alpha1/nodemetrics",
            {
                "apiVersion": "slo.koordinator.sh/v1alpha1",
                "kind": "NodeMetric",
                "metadata": {"name": node},
                "spec": {"metricCollectPolicy": {"reportIntervalSeconds": 60, "aggregateDurationSeconds": 300}},
            },
        )
    except KubeApiError as error:
        if error.status != 409:
            raise
    status = {
        "updateTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "nodeMetric": {"nodeUsage": {"resources": {"cpu": cpu, "memory": memory}}},
        "podsMetric": [
            {"namespace": ns, "name": name, "podUsage": {"resources": {"cpu": c, "memory": m}}}
            for ns, name, c, m in pods
        ],
    }
    merge_patch(kube, f"{path}/status", {"status": status})
