"""Scenario events (scale, delete-pod, cordon, uncordon) applied when simulated time reaches them."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from descheduler.fakecluster.apiserver import ApiError, Store
from descheduler.fakecluster.scenario import DeletePodEvent, Event, NodeEvent, ScaleEvent
from descheduler.labels import LabelSelector

log = logging.getLogger(__name__)

_WORKLOAD_RESOURCES = {
    "Deployment": "deployments.apps",
    "ReplicaSet": "replicasets.apps",
    "StatefulSet": "statefulsets.apps",
}


@dataclass(slots=True)
class EventPlayer:
    """Applies each event once, in order, when `now - began >= event.at`; `applied` records what happened."""

    store: Store
    events: Sequence[Event]
    began: float
    applied: list[tuple[float, str]] = field(default_factory=list)
    _next: int = 0

    def __post_init__(self) -> None:
        self.events = sorted(self.events, key=lambda e: e.at)

    def step(self, now: float) -> None:
        while self._next < len(self.events) and now - self.began >= self.events[self._next].at:
            event = self.events[self._next]
            self._next += 1
            try:
                what = apply_event(self.store, event)
            except ApiError as err:
                what = f"{event.action} failed: {err}"
                log.warning("scenario event at %ss: %s", event.at, what)
            self.applied.append((event.at, what))


def apply_event(store: Store, event: Event) -> str:
    if isinstance(event, ScaleEvent):
        ref = event.target

        def scale(obj: dict[str, Any]) -> None:
            obj.setdefault("spec", {})["replicas"] = event.replicas

        store.modify(_WORKLOAD_RESOURCES[ref.kind], ref.name, ref.namespace, scale)
        return f"scaled {ref.kind} {ref.namespace}/{ref.name} to {event.replicas}"
    if isinstance(event, DeletePodEvent):
        if event.name is not None:
            store.delete("pods", event.name, event.namespace)
            return f"deleted pod {event.namespace}/{event.name}"
        selector = LabelSelector.from_dict(event.selector)
        names = [
            p["metadata"]["name"]
            for p in store.list("pods", event.namespace)
            if selector.matches(p["metadata"].get("labels") or {}) and not p["metadata"].get("deletionTimestamp")
        ]
        for name in names:
            store.delete("pods", name, event.namespace)
        return f"deleted {len(names)} pod(s) in {event.namespace}"
    assert isinstance(event, NodeEvent)
    cordon = event.action == "cordon"

    def mark(obj: dict[str, Any]) -> None:
        obj.setdefault("spec", {})["unschedulable"] = cordon
        if not cordon:
            obj["spec"].pop("unschedulable")

    store.modify("nodes", event.node, "", mark)
    return f"{event.action}ed node {event.node}"
