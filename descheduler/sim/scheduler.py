"""A simulated kube-scheduler: binds pending pods with our scheduling core, honouring Reservations."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from descheduler.errors import InputError
from descheduler.policy import default_policy
from descheduler.policy.scheduling import SchedulingArgs
from descheduler.scheduling import ClusterView, best_node, build_table
from descheduler.scheduling.predicates import owned_reservations
from descheduler.sim.apiserver import ApiError, Store
from descheduler.sim.apiserver.binding import bind_pod
from descheduler.snapshot import load_snapshot_objects

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER_NAMES = frozenset({"default-scheduler", ""})


@dataclass(frozen=True, slots=True)
class Binding:
    namespace: str
    pod: str
    node: str
    reservation: str = ""


@dataclass(slots=True)
class Scheduler:
    """Each step: one scheduling pass over the pending pods, highest priority first."""

    store: Store
    args: SchedulingArgs = field(default_factory=lambda: default_policy().scheduling)
    scheduler_names: frozenset[str] = DEFAULT_SCHEDULER_NAMES
    bindings: list[Binding] = field(default_factory=list)
    unschedulable: dict[str, str] = field(default_factory=dict)  # pod key -> why, from the last pass

    def _pending(self, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            p
            for p in pods
            if not (p.get("spec") or {}).get("nodeName")
            and not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase", "Pending") == "Pending"
            and (p.get("spec") or {}).get("schedulerName", "") in self.scheduler_names
        ]

    def _objects(self) -> list[dict[str, Any]]:
        objects: list[dict[str, Any]] = []
        for resource in ("nodes", "pods", "nodemetrics.slo.koordinator.sh", "reservations.descheduler.dev"):
            objects += self.store.list(resource)
        if not self.store.count("nodemetrics.slo.koordinator.sh"):
            objects += self.store.list("nodes.metrics.k8s.io") + self.store.list("pods.metrics.k8s.io")
        return objects

    def step(self, now: float) -> list[Binding]:
        waiting = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in self._pending(self.store.list("pods"))
        }
        if not waiting:
            self.unschedulable = {}
            return []
        instant = datetime.fromtimestamp(now, tz=UTC)
        try:
            snapshot = load_snapshot_objects(self._objects(), instant, source="<simulated cluster>")
        except InputError as err:
            log.warning("scheduler: cannot read the cluster: %s", err)
            return []
        view = ClusterView(build_table(snapshot, self.args))
        pending = sorted(
            (p for p in snapshot.pods if p.key in waiting),
            key=lambda p: (-(p.priority or 0), p.created or instant, p.key),
        )
        done: list[Binding] = []
        self.unschedulable = {}
        for pod in pending:
            choice = best_node(pod, view)
            if choice.node is None:
                self.unschedulable[pod.key] = choice.summary()
                continue
            owned = [r for r in owned_reservations(pod, view) if r.node_name == choice.node]
            try:
                bind_pod(self.store, pod.namespace, pod.name, {"target": {"name": choice.node}})
            except ApiError as err:
                log.info("scheduler: binding %s to %s failed: %s", pod.key, choice.node, err)
                continue
            reservation = owned[0].name if owned else ""
            done.append(Binding(pod.namespace, pod.name, choice.node, reservation))
            if reservation:
                self._consume(reservation, pod.name)
                # The reserved room is now the pod's: re-read the cluster so others see it right.
                snapshot = load_snapshot_objects(self._objects(), instant, source="<simulated cluster>")
                view = ClusterView(build_table(snapshot, self.args))
            else:
                view.place(pod, choice.node)
        self.bindings += done
        return done

    def _consume(self, reservation: str, pod_name: str) -> None:
        def mutate(obj: dict[str, Any]) -> None:
            status = obj.setdefault("status", {})
            status["phase"] = "Consumed"
            status["consumedBy"] = pod_name

        self.store.modify("reservations.descheduler.dev", reservation, "", mutate, subresource="status")
