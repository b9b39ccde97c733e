"""pods/binding: the scheduler's way to assign a pod to a node (pkg/registry/core/pod/storage)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import errors
from .clock import rfc3339
from .store import Store

SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def bind_pod(store: Store, namespace: str, name: str, binding: Mapping[str, Any]) -> dict[str, Any]:
    """Set spec.nodeName and PodScheduled=True; 409 if the pod is already bound or terminating."""
    meta = binding.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise errors.bad_request("name in URL does not match name in Binding object")
    node = (binding.get("target") or {}).get("name")
    pods = store.resolve("pods")
    if not node:
        raise errors.invalid(pods, name, [("target.name", "Required value")])
    with store.lock:
        pod = store.entry(pods, name, namespace).decode()
        if pod["metadata"].get("deletionTimestamp"):
            raise errors.conflict("pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host")
        bound = (pod.get("spec") or {}).get("nodeName")
        if bound:
            raise errors.conflict("pods/binding", name, f'pod {name} is already assigned to node "{bound}"')
        pod.setdefault("spec", {})["nodeName"] = node
        if meta.get("annotations"):
            pod["metadata"]["annotations"] = {
                **(pod["metadata"].get("annotations") or {}),
                **meta["annotations"],
            }
        status = pod.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(store.clock())})
        status["conditions"] = conditions
        store.update(pod, subresource="all")
    return dict(SUCCESS)
