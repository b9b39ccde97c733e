"""Watch plumbing: events, per-watch queues, and how selectors turn updates into ADDED/DELETED."""

from __future__ import annotations

import copy
import queue
from dataclasses import dataclass
from typing import Any

from .entry import Entry, decode, encode
from .resources import ResourceType
from .selectors import FieldSelector, LabelSelector


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """A committed change. `old` is the previous state of a MODIFIED object."""

    type: str  # ADDED | MODIFIED | DELETED
    entry: Entry
    old: Entry | None = None


@dataclass(frozen=True, slots=True)
class StopWatch:
    """Tells a watch stream to end; `abrupt` drops the connection instead of ending the stream."""

    abrupt: bool = False


class Watcher:
    """One open watch: a queue the store fills under its lock and the stream drains."""

    def __init__(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        labels: LabelSelector | None = None,
        fields: FieldSelector | None = None,
    ) -> None:
        self.rt = rt
        self.namespace = namespace
        self.labels = labels or LabelSelector()
        self.fields = fields or FieldSelector()
        self._queue: queue.SimpleQueue[WatchEvent | StopWatch] = queue.SimpleQueue()

    def push(self, item: WatchEvent | StopWatch) -> None:
        self._queue.put(item)

    def next(self, timeout: float) -> WatchEvent | StopWatch | None:
        try:
            return self._queue.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return None

    def idle(self) -> bool:
        return self._queue.empty()

    def matches(self, entry: Entry) -> bool:
        if self.namespace is not None and entry.fields[1] != self.namespace:
            return False
        if not self.labels.matches(entry.labels):
            return False
        return self.fields.matches(lambda path: entry.field(self.rt, path))

    def translate(self, event: WatchEvent) -> tuple[str, bytes] | None:
        """What this watcher sees of an event, or None; mirrors the watch cache's filtering."""
        now_matches = self.matches(event.entry)
        if event.type != "MODIFIED" or event.old is None:
            return (event.type, event.entry.raw) if now_matches else None
        was_matching = self.matches(event.old)
        if now_matches:
            return ("MODIFIED" if was_matching else "ADDED", event.entry.raw)
        if was_matching:
            # The real server sends the previous object content with the new resourceVersion.
            old = decode(event.old.raw)
            old["metadata"]["resourceVersion"] = str(event.entry.rv)
            return ("DELETED", encode(old))
        return None


def event_line(event_type: str, raw_object: bytes) -> bytes:
    return b'{"type":"' + event_type.encode() + b'","object":' + raw_object + b"}\n"


# The empty object of each built-in kind as kube-apiserver v1.36.2 writes it in a watch BOOKMARK
# (Go zero values: `spec.containers: null`, zero counters, `selector: null`), seen on the wire.
# A client that decodes a bookmark as an object of the kind meets these, not a bare metadata.
_EMPTY_TEMPLATE: dict[str, Any] = {"metadata": {}, "spec": {"containers": None}}
_BOOKMARK_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("v1", "Pod"): {"spec": {"containers": None}, "status": {}},
    ("v1", "Namespace"): {"spec": {}, "status": {}},
    ("v1", "Node"): {
        "spec": {},
        "status": {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": dict.fromkeys(
                (
                    "machineID",
                    "systemUUID",
                    "bootID",
                    "kernelVersion",
                    "osImage",
                    "containerRuntimeVersion",
                    "kubeletVersion",
                    "kubeProxyVersion",
                    "operatingSystem",
                    "architecture",
                ),
                "",
            ),
        },
    },
    ("policy/v1", "PodDisruptionBudget"): {
        "spec": {},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
    },
    ("apps/v1", "Deployment"): {
        "spec": {"replicas": 0, "selector": None, "template": _EMPTY_TEMPLATE, "strategy": {}},
        "status": {},
    },
    ("apps/v1", "ReplicaSet"): {
        "spec": {"replicas": 0, "selector": None, "template": _EMPTY_TEMPLATE},
        "status": {"replicas": 0},
    },
    ("apps/v1", "StatefulSet"): {
        "spec": {"replicas": 0, "selector": None, "template": _EMPTY_TEMPLATE, "serviceName": "", "updateStrategy": {}},
        "status": {"replicas": 0, "availableReplicas": 0},
    },
    ("apps/v1", "DaemonSet"): {
        "metadata": {"annotations": {"deprecated.daemonset.template.generation": "0"}},
        "spec": {"selector": None, "template": _EMPTY_TEMPLATE, "updateStrategy": {}},
        "status": {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0},
    },
    ("coordination.k8s.io/v1", "Lease"): {"spec": {}},
    ("scheduling.k8s.io/v1", "PriorityClass"): {"value": 0},
}


# The annotation on the BOOKMARK that ends a WatchList's initial events (sendInitialEvents=true).
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def bookmark_object(rt: ResourceType, resource_version: int, *, initial_events_end: bool = False) -> bytes:
    """A BOOKMARK's object as the real server sends it: the kind's empty object with only the
    resourceVersion set (custom resources: kind, apiVersion and metadata alone); the one closing a
    WatchList's initial events also carries the `k8s.io/initial-events-end: "true"` annotation."""
    body: dict[str, Any] = {"kind": rt.kind, "apiVersion": rt.api_version}
    shape = copy.deepcopy(_BOOKMARK_BODIES.get((rt.api_version, rt.kind), {})) if rt.builtin else {}
    body["metadata"] = {"resourceVersion": str(resource_version), **shape.pop("metadata", {})}
    if initial_events_end:
        annotations = body["metadata"].setdefault("annotations", {})
        annotations[INITIAL_EVENTS_END] = "true"
    body.update(shape)
    return encode(body)
