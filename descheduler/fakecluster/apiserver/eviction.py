"""pods/eviction with the real server's PDB rules (pkg/registry/core/pod/storage/eviction.go)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import errors
from .clock import rfc3339
from .errors import ApiError
from .selectors import label_selector_from_struct
from .store import Store, check_preconditions

PDB_VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_PDBS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
MAX_DISRUPTED_PODS = 2000


def evict_pod(store: Store, namespace: str, name: str, eviction: Mapping[str, Any]) -> dict[str, Any]:
    """Evict or refuse; returns the success Status, raises ApiError (404, 429, 500, 403) on refusal."""
    requested = (eviction.get("metadata") or {}).get("name")
    if requested and requested != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = eviction.get("deleteOptions") or {}
    pods = store.resolve("pods")
    with store.lock:
        pod = store.entry(pods, name, namespace).decode()
        if _can_ignore_pdb(pod):
            return _delete(store, pod, options)
        budgets = _matching_budgets(store, pod)
        if len(budgets) > 1:
            # The real handler returns this as a Status object with code 500 and no reason.
            raise ApiError(500, "", MULTIPLE_PDBS)
        if budgets:
            pdb = budgets[0]
            status = pdb.get("status") or {}
            if not _is_ready(pod):
                policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") or "IfHealthyBudget"
                desired = int(status.get("desiredHealthy") or 0)
                if policy == "AlwaysAllow" or (int(status.get("currentHealthy") or 0) >= desired > 0):
                    # An unready pod does not count towards the budget: delete without spending it.
                    return _delete(store, pod, options)
            _check_and_decrement(store, pdb, name)
        return _delete(store, pod, options)


def _can_ignore_pdb(pod: Mapping[str, Any]) -> bool:
    """Terminal, pending or already terminating pods do not count against any budget."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Pending", "Succeeded", "Failed") or bool(pod["metadata"].get("deletionTimestamp"))


def _is_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _matching_budgets(store: Store, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    labels = pod["metadata"].get("labels") or {}
    matching = []
    for pdb in store.list("poddisruptionbudgets.policy", pod["metadata"]["namespace"]):
        try:
            selector = label_selector_from_struct((pdb.get("spec") or {}).get("selector"))
        except ValueError:
            continue  # an unparsable selector matches nothing, as in the real server
        if selector is not None and selector.matches(labels):
            matching.append(pdb)
    return matching


def _check_and_decrement(store: Store, pdb: dict[str, Any], pod_name: str) -> None:
    meta, status = pdb["metadata"], pdb.get("status") or {}
    name = meta["name"]
    if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
        cause = {
            "reason": "DisruptionBudget",
            "message": f"The disruption budget {name} is still being processed by the server.",
        }
        raise errors.too_many_requests(PDB_VIOLATION, retry_after=10, causes=[cause])
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise _forbidden(name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
        raise _forbidden(name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller")
    if allowed == 0:
        message = (
            f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} healthy pods "
            f"and has {int(status.get('currentHealthy') or 0)} currently"
        )
        raise errors.too_many_requests(PDB_VIOLATION, causes=[{"reason": "DisruptionBudget", "message": message}])
    now = rfc3339(store.clock())
    status["disruptionsAllowed"] = allowed - 1
    status.setdefault("disruptedPods", {})[pod_name] = now
    if allowed - 1 == 0:
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionAllowed"]
        conditions.append(
            {
                "type": "DisruptionAllowed",
                "status": "False",
                "reason": "InsufficientPods",
                "message": "",
                "lastTransitionTime": now,
                "observedGeneration": status.get("observedGeneration", 0),
            }
        )
        status["conditions"] = conditions
    pdb["status"] = status
    store.update(pdb, subresource="status")


def _forbidden(pdb_name: str, why: str) -> ApiError:
    return ApiError(
        403,
        "Forbidden",
        f'poddisruptionbudget.policy "{pdb_name}" is forbidden: {why}',
        {"name": pdb_name, "group": "policy", "kind": "poddisruptionbudget"},
    )


def _delete(store: Store, pod: dict[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """Mark the pod with the DisruptionTarget condition, then delete it with the eviction's options."""
    meta = pod["metadata"]
    preconditions = options.get("preconditions") or {}
    # Checked against the pod as it was before the condition write below bumps its resourceVersion.
    check_preconditions(store.resolve("pods"), meta["name"], meta, preconditions)
    conditions = (pod.get("status") or {}).get("conditions") or []
    if not any(c.get("type") == "DisruptionTarget" for c in conditions):
        pod.setdefault("status", {})["conditions"] = [
            *conditions,
            {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting",
                "lastTransitionTime": rfc3339(store.clock()),
            },
        ]
        store.update(pod, subresource="status")
    grace = options.get("gracePeriodSeconds")
    store.delete(
        "pods",
        meta["name"],
        meta["namespace"],
        grace_period_seconds=int(grace) if grace is not None else None,
        preconditions={"uid": preconditions["uid"]} if preconditions.get("uid") else None,
    )
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
