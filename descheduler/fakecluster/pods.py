"""Reading raw pod and owner dicts the way the simulated components need to."""

from __future__ import annotations

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
