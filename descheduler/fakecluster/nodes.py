"""A node's status as its kubelet reports it on registration: system info, conditions with times."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Final

from descheduler.fakecluster.apiserver.clock import instant_of, rfc3339
from descheduler.fakecluster.apiserver.discovery import VERSION_INFO

# What `kubectl get nodes -o wide` and `kubectl describe node` show for a node of the simulated
# cluster: its kubelet runs the API server's version, on an illustrative OS and runtime.
KUBELET_VERSION: Final = VERSION_INFO["gitVersion"]
OS_IMAGE: Final = "Ubuntu 24.04.2 LTS"
KERNEL_VERSION: Final = "6.8.0-60-generic"
CONTAINER_RUNTIME_VERSION: Final = "containerd://2.0.5"
KUBELET_PORT: Final = 10250

# The conditions a kubelet always reports, with the reason and message it gives when all is well.
_HEALTHY: Final = {
    "MemoryPressure": ("False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    "DiskPressure": ("False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    "PIDPressure": ("False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    "Ready": ("True", "KubeletReady", "kubelet is posting ready status"),
}
_NAMESPACE: Final = uuid.UUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")  # uuid.NAMESPACE_URL


def node_info(node: Mapping[str, Any]) -> dict[str, str]:
    """status.nodeInfo as a kubelet fills it: the node's own values first, then the simulated ones.

    The IDs are derived from the node's name, so a scenario loads the same way every time.
    """
    meta = node.get("metadata") or {}
    name = str(meta.get("name") or "")
    labels = meta.get("labels") or {}
    derived = {
        "machineID": uuid.uuid5(_NAMESPACE, f"machine/{name}").hex,
        "systemUUID": str(uuid.uuid5(_NAMESPACE, f"system/{name}")),
        "bootID": str(uuid.uuid5(_NAMESPACE, f"boot/{name}")),
        "kernelVersion": KERNEL_VERSION,
        "osImage": OS_IMAGE,
        "containerRuntimeVersion": CONTAINER_RUNTIME_VERSION,
        "kubeletVersion": KUBELET_VERSION,
        # Deprecated and left empty by kubelets since 1.31, but every NodeSystemInfo carries it.
        "kubeProxyVersion": "",
        "operatingSystem": str(labels.get("kubernetes.io/os") or "linux"),
        "architecture": str(labels.get("kubernetes.io/arch") or "amd64"),
    }
    given = (node.get("status") or {}).get("nodeInfo") or {}
    return {**derived, **{k: v for k, v in given.items() if v}}


def node_conditions(node: Mapping[str, Any], now: float) -> list[dict[str, Any]]:
    """The node's conditions, each with a heartbeat at `now` and a transition at its creation (or `now`);
    the kubelet's healthy reason and message where none is given, and the conditions it always
    reports (Ready, memory, disk and PID pressure) added, healthy, when missing."""
    meta, status = node.get("metadata") or {}, node.get("status") or {}
    created = instant_of(meta.get("creationTimestamp"))
    since = rfc3339(now if created is None else min(created, now))
    heartbeat = rfc3339(now)
    conditions = [dict(c) for c in status.get("conditions") or [] if isinstance(c, Mapping)]
    present = {c.get("type") for c in conditions}
    conditions[:0] = [
        {"type": kind, "status": value} for kind, (value, _, _) in _HEALTHY.items() if kind not in present
    ]
    for condition in conditions:
        condition.setdefault("lastHeartbeatTime", heartbeat)
        condition.setdefault("lastTransitionTime", since)
        healthy = _HEALTHY.get(str(condition.get("type")))
        if healthy is not None and condition.get("status") == healthy[0]:
            condition.setdefault("reason", healthy[1])
            condition.setdefault("message", healthy[2])
    return conditions


def registered_node(node: Mapping[str, Any], now: float) -> dict[str, Any]:
    """A copy of `node` with the status its kubelet reports on registration at `now`."""
    status = dict(node.get("status") or {})
    status["nodeInfo"] = node_info(node)
    status["conditions"] = node_conditions(node, now)
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": KUBELET_PORT}})
    return {**node, "status": status}
