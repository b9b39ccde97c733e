"""The disruption controller: keeps every PodDisruptionBudget's status current (pkg/controller/disruption)."""

from __future__ import annotations

import math
from typing import Any

from descheduler.fakecluster.apiserver import ApiError, Store
from descheduler.fakecluster.apiserver.clock import parse_instant, rfc3339
from descheduler.fakecluster.pods import Obj, controller_ref, is_ready, is_terminal, is_terminating
from descheduler.labels import LabelSelector

DISRUPTED_POD_TIMEOUT = 120.0  # seconds an eviction's entry in disruptedPods lives (DeletionTimeout)


def scaled_value(value: int | str, total: int) -> int:
    """An int, or a percentage of `total` rounded up (intstr.GetScaledValueFromIntOrPercent, roundUp)."""
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * total / 100)
    return int(text)


class DisruptionController:
    """currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed, observedGeneration, disruptedPods."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def step(self, now: float) -> None:
        for pdb in self.store.list("poddisruptionbudgets.policy"):
            status = self.status_of(pdb, now)
            if {**(pdb.get("status") or {}), **status} == pdb.get("status"):
                continue
            meta = pdb["metadata"]

            def mutate(obj: Obj, status: dict[str, Any] = status) -> None:
                obj["status"] = {**(obj.get("status") or {}), **status}

            try:
                self.store.modify(
                    "poddisruptionbudgets.policy", meta["name"], meta["namespace"], mutate, subresource="status"
                )
            except ApiError as err:
                if err.code != 404:
                    raise

    def status_of(self, pdb: Obj, now: float) -> dict[str, Any]:
        meta, spec = pdb["metadata"], pdb.get("spec") or {}
        selector = LabelSelector.from_dict(spec.get("selector"))
        pods = [
            p
            for p in self.store.list("pods", meta["namespace"])
            if not is_terminal(p) and selector.matches(p["metadata"].get("labels") or {})
        ]
        names = {p["metadata"]["name"]: p for p in pods}
        disrupted: dict[str, str] = {}
        for name, when in ((pdb.get("status") or {}).get("disruptedPods") or {}).items():
            pod = names.get(name)
            if pod is None or is_terminating(pod):
                continue
            if parse_instant(when) + DISRUPTED_POD_TIMEOUT < now:
                continue  # the eviction never happened: the pod counts again
            disrupted[name] = when
        healthy = sum(
            1 for p in pods if is_ready(p) and not is_terminating(p) and p["metadata"]["name"] not in disrupted
        )
        if spec.get("maxUnavailable") is not None:
            expected = self._expected_scale(pods)
            desired = max(0, expected - scaled_value(spec["maxUnavailable"], expected))
        elif isinstance(spec.get("minAvailable"), str) and str(spec["minAvailable"]).endswith("%"):
            expected = self._expected_scale(pods)
            desired = scaled_value(spec["minAvailable"], expected)
        elif spec.get("minAvailable") is not None:
            expected = len(pods)
            desired = scaled_value(spec["minAvailable"], expected)
        else:
            # Neither set: policy/v1 treats it as maxUnavailable 0... but the API requires one; be safe.
            expected, desired = len(pods), len(pods)
        allowed = max(0, healthy - desired)
        status: dict[str, Any] = {
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "disruptionsAllowed": allowed,
            "observedGeneration": meta.get("generation", 1),
            "disruptedPods": disrupted,
        }
        condition = {
            "type": "DisruptionAllowed",
            "status": "True" if allowed > 0 else "False",
            "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
            "message": "",
            "observedGeneration": meta.get("generation", 1),
        }
        old = [c for c in (pdb.get("status") or {}).get("conditions") or [] if c.get("type") == "DisruptionAllowed"]
        condition["lastTransitionTime"] = (
            old[0].get("lastTransitionTime") if old and old[0].get("status") == condition["status"] else rfc3339(now)
        )
        status["conditions"] = [condition]
        return status

    def _expected_scale(self, pods: list[Obj]) -> int:
        """Σ replicas of the pods' controllers (a ReplicaSet owned by a Deployment counts as the Deployment)."""
        seen: dict[str, int] = {}
        loose = 0
        for pod in pods:
            ref = controller_ref(pod)
            if ref is None:
                loose += 1
                continue
            scale = self._scale_of(ref, pod["metadata"]["namespace"])
            if scale is None:
                loose += 1
            else:
                seen[scale[0]] = scale[1]
        return sum(seen.values()) + loose

    def _scale_of(self, ref: dict[str, Any], namespace: str) -> tuple[str, int] | None:
        resource = {"ReplicaSet": "replicasets.apps", "StatefulSet": "statefulsets.apps"}.get(str(ref.get("kind")))
        if resource is None:
            return None
        try:
            owner = self.store.get(resource, str(ref.get("name")), namespace)
        except ApiError:
            return None
        parent = controller_ref(owner)
        if resource == "replicasets.apps" and parent is not None and parent.get("kind") == "Deployment":
            try:
                deploy = self.store.get("deployments.apps", str(parent.get("name")), namespace)
            except ApiError:
                deploy = None
            if deploy is not None:
                return f"Deployment/{deploy['metadata']['uid']}", int((deploy.get("spec") or {}).get("replicas", 1))
        return f"{ref.get('kind')}/{owner['metadata']['uid']}", int((owner.get("spec") or {}).get("replicas", 1))
