"""Defaulting the real API server applies on create, for the fields our callers read back."""

from __future__ import annotations

from typing import Any

from .resources import ResourceType

DEFAULT_TERMINATION_GRACE_PERIOD = 30


def apply_create_defaults(rt: ResourceType, obj: dict[str, Any], *, from_api: bool) -> None:
    """Mutate `obj` in place. `from_api` drops status as the real server does on HTTP create."""
    if from_api and rt.clears_status_on_create:
        obj.pop("status", None)
    if rt.group == "" and rt.kind == "Pod":
        spec = obj.setdefault("spec", {})
        spec.setdefault("terminationGracePeriodSeconds", DEFAULT_TERMINATION_GRACE_PERIOD)
        spec.setdefault("schedulerName", "default-scheduler")
        spec.setdefault("restartPolicy", "Always")
        status = obj.setdefault("status", {})
        status.setdefault("phase", "Pending")
        if "qosClass" not in status:
            status["qosClass"] = pod_qos_class(spec)
    elif rt.group == "" and rt.kind == "Namespace":
        obj.setdefault("status", {}).setdefault("phase", "Active")
    elif rt.group == "" and rt.kind == "PersistentVolumeClaim":
        obj.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
        obj.setdefault("status", {}).setdefault("phase", "Pending")
    elif rt.group == "scheduling.k8s.io" and rt.kind == "PriorityClass":
        obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    elif rt.group == "policy" and rt.kind == "PodDisruptionBudget":
        obj.setdefault("status", {}).setdefault("disruptionsAllowed", 0)
        obj["status"].setdefault("currentHealthy", 0)
        obj["status"].setdefault("desiredHealthy", 0)
        obj["status"].setdefault("expectedPods", 0)


def pod_qos_class(spec: dict[str, Any]) -> str:
    """BestEffort, Guaranteed or Burstable, computed from cpu and memory as the kubelet does."""
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set = False
    guaranteed = True
    for c in containers:
        resources = c.get("resources") or {}
        requests = {k: v for k, v in (resources.get("requests") or {}).items() if k in ("cpu", "memory")}
        limits = {k: v for k, v in (resources.get("limits") or {}).items() if k in ("cpu", "memory")}
        if requests or limits:
            any_set = True
        if set(limits) != {"cpu", "memory"} or any(str(requests.get(k, limits[k])) != str(limits[k]) for k in limits):
            guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"
