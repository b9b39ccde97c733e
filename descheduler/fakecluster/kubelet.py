"""A simulated kubelet for every node: starts bound pods, finishes terminating ones, reports usage."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from descheduler.fakecluster.apiserver import ApiError, Store
from descheduler.fakecluster.apiserver.clock import parse_instant, rfc3339
from descheduler.fakecluster.pods import (
    Obj,
    container_statuses,
    is_terminal,
    mark_containers_ready,
    pod_key,
    pod_requests,
    set_condition,
)
from descheduler.fakecluster.usage import UsageModel, UsageSpec, models_for, unchanged_until, usage_units


@dataclass(frozen=True, slots=True)
class PodUsage:
    namespace: str
    name: str
    node: str
    cpu: int  # millicores
    memory: int  # bytes


@dataclass(slots=True)
class Kubelet:
    """Pods bound to a node become Running after `start_delay`, Ready after `ready_delay` more;
    a terminating pod is removed once its deletionTimestamp has passed. `usage` holds each running
    pod's usage at the last step, for the metrics publisher."""

    store: Store
    usage_spec: UsageSpec = field(default_factory=UsageSpec)
    start_delay: float = 1.0
    ready_delay: float = 5.0
    seed: int = 0
    began: float = 0.0  # the scenario's start: series models count from here
    # The time of day usage models see at `began` (diurnal curves, noise); default `began`. A cluster
    # run in real time from "now" sets the scenario's own start here, so its load does not depend
    # on the wall clock's time of day.
    usage_began: float | None = None
    # Usage read once per period of this many seconds (from `began`) and held, as a trace sampled at
    # that step is; None: read at every step (diurnal curves and noise then change between steps).
    hold_seconds: float | None = None
    usage: dict[str, PodUsage] = field(default_factory=dict)
    _bound_at: dict[str, float] = field(default_factory=dict)
    _models: dict[str, tuple[dict[str, UsageModel], dict[str, int]]] = field(default_factory=dict)
    # Each pod's last usage and the elapsed time before which its models give the same (a busy
    # simulation steps every few seconds; trace series change every few minutes).
    _held: dict[str, tuple[float, PodUsage]] = field(default_factory=dict)
    # A pass over the pods changes nothing until the pods are written or this instant comes: a pod's
    # start or readiness falls due, a deletion's grace ends, or a usage model changes.
    _quiet: tuple[tuple[int, ...], float] = ((), -math.inf)

    def step(self, now: float) -> None:
        written = self.store.written("pods")
        if written == self._quiet[0] and now < self._quiet[1]:
            return
        usage: dict[str, PodUsage] = {}
        seen: set[str] = set()
        due = math.inf
        for pod in self.store.list("pods", shared=True):
            meta, spec = pod["metadata"], pod.get("spec") or {}
            node = spec.get("nodeName")
            if not node:
                continue
            uid = str(meta.get("uid"))
            seen.add(uid)
            if meta.get("deletionTimestamp"):
                deleted = parse_instant(meta["deletionTimestamp"])
                if deleted <= now:
                    self.store.finalize_pod(meta["namespace"], meta["name"])
                    continue
                due = min(due, deleted)
            elif not is_terminal(pod):
                due = min(due, self._advance_phase(pod, uid, now))
            if (pod.get("status") or {}).get("phase") == "Running" or meta.get("deletionTimestamp"):
                usage[pod_key(pod)] = self._usage(pod, uid, node, now)
        self.usage = usage
        self._bound_at = {k: v for k, v in self._bound_at.items() if k in seen}
        self._models = {k: v for k, v in self._models.items() if k in seen}
        self._held = {k: v for k, v in self._held.items() if k in seen}
        changes = min((self.began + held for held, _ in self._held.values()), default=math.inf)
        # Stamped with the pods as they were before this pass: a pass that wrote is followed by one
        # more, which sees what it wrote (a pod it started runs, and has usage).
        self._quiet = (written, min(due, changes))

    def _advance_phase(self, pod: Obj, uid: str, now: float) -> float:
        """Start the pod or make it Ready when due; the instant its phase is next due to change
        (inf: only a write to it can change it)."""
        status = pod.get("status") or {}
        bound = self._bound_at.setdefault(uid, now)
        phase = status.get("phase", "Pending")
        conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        if phase == "Running" and (
            conditions.get("Ready") == "True" or (conditions.get("ContainersReady") == "True" and not gates_pass(pod))
        ):
            return math.inf
        if phase == "Pending" and now < bound + self.start_delay:
            return bound + self.start_delay
        started = status.get("startTime")
        started_at = parse_instant(started) if started else now
        become_ready = phase == "Running" and now >= started_at + self.ready_delay

        def mutate(obj: Obj) -> None:
            st = obj.setdefault("status", {})
            when = rfc3339(now)
            if st.get("phase", "Pending") == "Pending":
                st["phase"] = "Running"
                st["startTime"] = when
                st["hostIP"] = st["podIP"] = "10.0.0.1"
                set_condition(st, "Initialized", "True", when)
                set_condition(st, "ContainersReady", "False", when)
                set_condition(st, "Ready", "False", when)
                st.update(container_statuses(obj, when, ready=False))
            if become_ready or (self.ready_delay == 0 and st.get("phase") == "Running"):
                set_condition(st, "ContainersReady", "True", when)
                set_condition(st, "Ready", "True" if gates_pass(obj) else "False", when)
                mark_containers_ready(st)

        try:
            self.store.modify(
                "pods", pod["metadata"]["name"], pod["metadata"]["namespace"], mutate, subresource="status"
            )
        except ApiError as err:
            if err.code != 404:
                raise
        if phase == "Pending":
            return math.inf if self.ready_delay == 0 else now + self.ready_delay
        return math.inf if become_ready else started_at + self.ready_delay

    def _usage(self, pod: Obj, uid: str, node: str, now: float) -> PodUsage:
        elapsed = now - self.began
        if self.hold_seconds is not None:
            elapsed -= elapsed % self.hold_seconds
        held = self._held.get(uid)
        if held is not None and elapsed < held[0] and held[1].node == node:
            return held[1]
        meta = pod["metadata"]
        cached = self._models.get(uid)
        if cached is None:
            models = models_for(self.usage_spec, meta["namespace"], meta.get("labels") or {})
            cached = self._models[uid] = (models, pod_requests(pod))
        models, requests = cached
        instant = elapsed + (self.began if self.usage_began is None else self.usage_began)
        key = pod_key(pod)
        values = {
            resource: usage_units(
                model, resource, requests.get(resource, 0), instant=instant, elapsed=elapsed, key=key, seed=self.seed
            )
            for resource, model in models.items()
        }
        usage = PodUsage(meta["namespace"], meta["name"], node, values.get("cpu", 0), values.get("memory", 0))
        if self.hold_seconds is not None:
            holds = [elapsed + self.hold_seconds]
        else:
            holds = [unchanged_until(model, instant=instant, elapsed=elapsed) for model in models.values()]
        self._held[uid] = (min(holds, default=float("inf")), usage)
        return usage


def gates_pass(pod: Obj) -> bool:
    """Whether every readiness gate of the pod has its condition True: a kubelet reports a pod Ready
    only then, its containers ready or not (a gate nobody sets keeps the pod from ever being Ready)."""
    gates = (pod.get("spec") or {}).get("readinessGates") or ()
    if not gates:
        return True
    conditions = {c.get("type"): c.get("status") for c in (pod.get("status") or {}).get("conditions") or ()}
    return all(conditions.get(gate.get("conditionType")) == "True" for gate in gates)
