"""Reading raw pod and owner dicts the way the simulated components need to."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from descheduler.quantity import to_units

Obj = dict[str, Any]


def pod_key(pod: Mapping[str, Any]) -> str:
    meta = pod["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def pod_requests(pod: Mapping[str, Any]) -> dict[str, int]:
    """cpu (millicores) and memory (bytes) requests: max(Σ containers, largest init container)."""
    spec = pod.get("spec") or {}
    out: dict[str, int] = {}
    for resource in ("cpu", "memory"):
        total = sum(_request(c, resource) for c in spec.get("containers") or [])
        init = max((_request(c, resource) for c in spec.get("initContainers") or []), default=0)
        out[resource] = max(total, init)
    return out


def _request(container: Mapping[str, Any], resource: str) -> int:
    resources = container.get("resources") or {}
    value = (resources.get("requests") or {}).get(resource, (resources.get("limits") or {}).get(resource))
    return 0 if value is None else to_units(resource, value)


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_terminating(obj: Mapping[str, Any]) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def is_active(pod: Mapping[str, Any]) -> bool:
    """Counts towards its controller's replicas: not terminal and not being deleted."""
    return not is_terminal(pod) and not is_terminating(pod)


def is_ready(pod: Mapping[str, Any]) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])


def controller_ref(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def owner_reference(owner: Mapping[str, Any]) -> dict[str, Any]:
    """An ownerReference to `owner` with controller: true, as the workload controllers write it."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owned_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    ref = controller_ref(obj)
    return ref is not None and ref.get("uid") == owner["metadata"].get("uid")


def set_condition(status: dict[str, Any], kind: str, value: str, when: str) -> None:
    """Set one pod condition, keeping lastTransitionTime when the value does not change."""
    conditions = [dict(c) for c in status.get("conditions") or []]
    for c in conditions:
        if c.get("type") == kind:
            if c.get("status") != value:
                c["status"], c["lastTransitionTime"] = value, when
            break
    else:
        conditions.append({"type": kind, "status": value, "lastTransitionTime": when})
    status["conditions"] = conditions


def container_id(pod: Mapping[str, Any], container: str) -> str:
    """A containerd-style container ID, derived from the pod's uid and the container's name."""
    digest = hashlib.sha256(f"{pod['metadata'].get('uid', '')}/{container}".encode()).hexdigest()
    return f"containerd://{digest}"


def _status(pod: Mapping[str, Any], container: Mapping[str, Any], state: dict[str, Any], *, ready: bool) -> Obj:
    name = str(container.get("name", ""))
    return {
        "name": name,
        "state": state,
        "lastState": {},
        "ready": ready,
        "restartCount": 0,
        "image": container.get("image", ""),
        "imageID": "",
        "containerID": container_id(pod, name),
        "started": "running" in state,
    }


def container_statuses(pod: Mapping[str, Any], started_at: str, *, ready: bool) -> Obj:
    """status.containerStatuses (and initContainerStatuses) of a pod whose containers run since
    `started_at`, as a kubelet reports them: init containers completed, sidecars (restartPolicy
    Always) and containers running, ready as `ready`."""
    spec = pod.get("spec") or {}
    running = {"running": {"startedAt": started_at}}
    completed = {
        "terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started_at, "finishedAt": started_at}
    }
    out: Obj = {
        "containerStatuses": [_status(pod, c, dict(running), ready=ready) for c in spec.get("containers") or []]
    }
    init = spec.get("initContainers") or []
    if init:
        out["initContainerStatuses"] = [
            _status(pod, c, dict(running), ready=ready)
            if c.get("restartPolicy") == "Always"
            else _status(pod, c, dict(completed), ready=False)
            for c in init
        ]
    return out


def finished_container_statuses(pod: Mapping[str, Any], finished_at: str) -> Obj:
    """status.containerStatuses of a Succeeded or Failed pod: every container terminated as the phase says."""
    failed = (pod.get("status") or {}).get("phase") == "Failed"
    terminated = {
        "exitCode": 1 if failed else 0,
        "reason": "Error" if failed else "Completed",
        "startedAt": finished_at,
        "finishedAt": finished_at,
    }
    containers = (pod.get("spec") or {}).get("containers") or []
    return {"containerStatuses": [_status(pod, c, {"terminated": dict(terminated)}, ready=False) for c in containers]}


def mark_containers_ready(status: dict[str, Any]) -> None:
    """Set every running container and sidecar of `status` ready, as the kubelet does once probes pass."""
    for c in [*(status.get("containerStatuses") or []), *(status.get("initContainerStatuses") or [])]:
        if "running" in (c.get("state") or {}):
            c["ready"] = True


def reported_pod(pod: Mapping[str, Any], now: str) -> dict[str, Any]:
    """`pod` with the container statuses its kubelet would have reported, when it has none: a bound
    Running pod's containers run since its startTime (else creation, else `now`), ready if the pod
    is Ready; a finished pod's containers are terminated. Others are returned as they are."""
    status = pod.get("status") or {}
    if "containerStatuses" in status or not (pod.get("spec") or {}).get("nodeName"):
        return dict(pod)
    since = str(status.get("startTime") or pod["metadata"].get("creationTimestamp") or now)
    if status.get("phase") == "Running":
        return {**pod, "status": {**status, **container_statuses(pod, since, ready=is_ready(pod))}}
    if is_terminal(pod):
        return {**pod, "status": {**status, **finished_container_statuses(pod, since)}}
    return dict(pod)
