"""Kubernetes Events (core/v1) written by the descheduler: on pods it moves, on its own objects,
on the policy ConfigMap, on ElasticQuotas (runtime.md §6).

Like client-go's recorder: a repeat of the same event on the same object bumps `count` and
`lastTimestamp` of the event already written instead of writing a new one; a per-object token
bucket stops one object from flooding the API; and an event that cannot be written is logged and
dropped — recording an event never fails the action it describes.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Literal

import structlog
from kubernetes import client
from urllib3.exceptions import HTTPError

from descheduler.timestamps import format_seconds
from descheduler.tokenbucket import TokenBucket

log = structlog.get_logger(__name__)

EventType = Literal["Normal", "Warning"]
COMPONENT: Final = "descheduler"
MAX_MESSAGE: Final = 1024
CLUSTER_SCOPED_NAMESPACE: Final = "default"  # where kubectl looks for events of cluster-scoped objects
_TIMEOUT: Final = (5.0, 10.0)


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """The object an event is about (an ObjectReference)."""

    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = "v1"
    resource_version: str = ""

    @classmethod
    def of(cls, obj: dict[str, Any]) -> ObjectRef:
        """From a raw API object."""
        meta = obj.get("metadata") or {}
        return cls(
            kind=str(obj.get("kind", "")),
            name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "")),
            uid=str(meta.get("uid", "")),
            api_version=str(obj.get("apiVersion", "v1")),
            resource_version=str(meta.get("resourceVersion", "")),
        )

    def wire(self) -> dict[str, str]:
        out = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        if self.uid:
            out["uid"] = self.uid
        if self.resource_version:
            out["resourceVersion"] = self.resource_version
        return out


@dataclass(slots=True)
class _Written:
    name: str
    namespace: str
    count: int


class EventRecorder:
    """`record(obj, "Normal", "Descheduled", "…")`; thread-safe; never raises for an API failure."""

    def __init__(
        self,
        api_client: Any,
        *,
        component: str = COMPONENT,
        instance: str | None = None,
        clock: Callable[[], datetime] | None = None,
        burst: int = 25,
        refill: timedelta = timedelta(minutes=5),
        cache_size: int = 4096,
    ) -> None:
        """`burst` events per object at once, then one more per `refill` (client-go's spam filter)."""
        self.core = client.CoreV1Api(api_client)
        self.component = component
        self.instance = instance or os.environ.get("POD_NAME") or socket.gethostname()
        self.clock = clock or (lambda: datetime.now(UTC))
        self._rate = 1.0 / refill.total_seconds()
        self._burst = burst
        self._cache_size = cache_size
        self._written: OrderedDict[tuple[str, ...], _Written] = OrderedDict()
        self._buckets: OrderedDict[tuple[str, ...], TokenBucket] = OrderedDict()
        self._lock = threading.Lock()
        self._sequence = itertools.count()
        self.dropped = 0

    def normal(self, obj: ObjectRef, reason: str, message: str) -> None:
        self.record(obj, "Normal", reason, message)

    def warning(self, obj: ObjectRef, reason: str, message: str) -> None:
        self.record(obj, "Warning", reason, message)

    def record(self, obj: ObjectRef, event_type: EventType, reason: str, message: str) -> None:
        now = self.clock()
        message = message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"
        target = (obj.kind, obj.namespace, obj.name, obj.uid)
        key = (*target, event_type, reason, message)
        with self._lock:
            bucket = self._buckets.get(target)
            if bucket is None:
                bucket = self._buckets[target] = TokenBucket(self._rate, self._burst)
                _trim(self._buckets, self._cache_size)
            self._buckets.move_to_end(target)
            if not bucket.take(now.timestamp()):
                self.dropped += 1
                log.debug("event dropped by the rate limit", object=f"{obj.kind}/{obj.name}", reason=reason)
                return
            seen = self._written.get(key)
        try:
            if seen is not None and self._bump(seen, now):
                return
            self._create(obj, key, event_type, reason, message, now)
        except (client.ApiException, HTTPError, OSError) as err:
            status = getattr(err, "status", None)
            log.warning(
                "could not write an event",
                object=f"{obj.kind}/{obj.namespace + '/' if obj.namespace else ''}{obj.name}",
                reason=reason,
                status=status,
                error=str(getattr(err, "reason", "") or err),
            )

    def _bump(self, seen: _Written, now: datetime) -> bool:
        """Count a repeat on the event already written; False when that event is gone."""
        patch = {"count": seen.count + 1, "lastTimestamp": format_seconds(now)}
        try:
            self.core.patch_namespaced_event(
                seen.name, seen.namespace, patch, _request_timeout=_TIMEOUT, _preload_content=False
            )
        except client.ApiException as err:
            if err.status == 404:
                return False
            raise
        with self._lock:
            seen.count += 1
        return True

    def _create(
        self, obj: ObjectRef, key: tuple[str, ...], event_type: EventType, reason: str, message: str, now: datetime
    ) -> None:
        namespace = obj.namespace or CLUSTER_SCOPED_NAMESPACE
        stamp = format_seconds(now)
        for _ in range(2):
            # client-go names events <object>.<unix nanoseconds in hex>; the sequence keeps two events
            # recorded at the same instant (a simulated clock) apart.
            name = f"{obj.name}.{int(now.timestamp() * 1e9) + next(self._sequence):x}"
            body: Any = {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": obj.wire(),
                "reason": reason,
                "message": message,
                "type": event_type,
                "count": 1,
                "firstTimestamp": stamp,
                "lastTimestamp": stamp,
                "source": {"component": self.component, "host": self.instance},
                "reportingComponent": self.component,
                "reportingInstance": self.instance,
            }
            try:
                self.core.create_namespaced_event(namespace, body, _request_timeout=_TIMEOUT, _preload_content=False)
            except client.ApiException as err:
                if err.status == 409:
                    continue  # a name taken by another replica at the same instant: pick the next
                raise
            with self._lock:
                self._written[key] = _Written(name, namespace, 1)
                _trim(self._written, self._cache_size)
            return


def _trim(cache: OrderedDict[Any, Any], size: int) -> None:
    while len(cache) > size:
        cache.popitem(last=False)
