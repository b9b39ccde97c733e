"""The scheduler side of the Reservation contract (migration.md §3, `ReservationStatus`).

- Acknowledge: once the state the extender answers from holds a Pending Reservation, mark it
  `Available` with `acknowledgedBy`; the migration controller evicts only after that.
- Consume at binding: an owner pod bound on a Reservation's node takes it (`Consumed`,
  `consumedBy`, `consumedByUID`), allocate-once by resourceVersion: of two pods racing for one
  Reservation, one wins and the other, on 409, reads again and takes the next one or none.
- Send back once: an owner pod bound elsewhere while the owner's room waits for it was placed from a
  state that had not yet seen the room open (on a real control plane the replacement is scheduled
  milliseconds after the eviction, often before the extender's watch shows the moved pod leaving):
  the first such binding is refused, so kube-scheduler schedules the pod again, now steered to the room.
- Fail at binding: the second time (say the room's node no longer passes for the pod), the oldest
  Available Reservation of that owner is failed (`Failed`, reason `ReplacementElsewhere`), so the
  controller decides its job at once instead of at the TTL.
- Fail at filtering: kube-scheduler calls the extender after its own filters, with the nodes they
  passed; a replacement whose Reservation's node is not among them can never land there, so the
  Reservation is failed (`Failed`, reason `ReservedNodeRefused`, `refuse`): the controller fails the
  job at once, and the room no longer holds the pod to that node.

`choose_for_binding` decides (pure); `ReservationWriter` reads and writes the API.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, Final, TypeVar

import msgspec

from descheduler import decode, metrics
from descheduler.errors import ClusterUnreachableError
from descheduler.kube.client import KubeApiError, KubeClient
from descheduler.migration.objects import API_VERSION, REPLACEMENT_ELSEWHERE, RESERVATIONS, RESERVED_NODE_REFUSED
from descheduler.model import Node, Pod, Reservation
from descheduler.timestamps import parse_time

log = logging.getLogger(__name__)

RESERVATIONS_PATH: Final = f"/apis/{API_VERSION}/{RESERVATIONS}"
CONFLICT_RETRIES: Final = 5
SENT_BACK_REMEMBERED: Final = 4096  # (pod, Reservation) pairs already refused once, newest kept
_EPOCH: Final = datetime.min.replace(tzinfo=UTC)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ReservationRecord:
    """A Reservation as read from the API: the core's record, its age and version, the raw object."""

    reservation: Reservation
    created: datetime
    resource_version: str
    raw: dict[str, Any]

    @property
    def name(self) -> str:
        return self.reservation.name

    @classmethod
    def of(cls, raw: dict[str, Any]) -> ReservationRecord:
        meta = raw.get("metadata") or {}
        reservation = decode.reservation_from_raw(msgspec.convert(raw, decode.RawReservation))
        stamp = str(meta.get("creationTimestamp") or "")
        try:
            created = parse_time(stamp) if stamp else _EPOCH
        except ValueError:
            created = _EPOCH
        return cls(reservation, created, str(meta.get("resourceVersion") or ""), raw)


@dataclass(frozen=True, slots=True)
class BindingChoice:
    """What binding a pod does to Reservations: take one, fail one, or neither."""

    consume: ReservationRecord | None = None
    fail: ReservationRecord | None = None


def _age(record: ReservationRecord) -> tuple[datetime, str]:
    return (record.created, record.name)


def choose_for_binding(
    pod: Pod, node: str, records: Iterable[ReservationRecord], claimable: Callable[[Reservation], bool]
) -> BindingChoice:
    """The oldest unconsumed Reservation the pod owns on `node` is consumed, Available ones first (a
    Pending one's pod has not been evicted yet, so this pod is more likely another's replacement);
    when it owns none there, the oldest Available one it owns elsewhere is failed (its replacement
    went elsewhere). A Pending one elsewhere is left alone, for the same reason. Only rooms whose own pod
    is leaving or gone are the pod's to take (`claimable`, scheduling/predicates.py)."""
    owned = sorted(
        (r for r in records if r.reservation.holds_room and r.reservation.owned_by(pod) and claimable(r.reservation)),
        key=_age,
    )
    here = sorted(
        (r for r in owned if r.reservation.node_name == node), key=lambda r: r.reservation.phase != "Available"
    )
    if here:
        return BindingChoice(consume=here[0])
    waiting = [r for r in owned if r.reservation.phase == "Available"]
    return BindingChoice(fail=waiting[0] if waiting else None)


def consumed_status(status: dict[str, Any], pod: Pod, node: str) -> dict[str, Any]:
    return {
        **status,
        "phase": "Consumed",
        "consumedBy": pod.key,
        "consumedByUID": pod.uid,
        "message": f"pod {pod.key} was bound to node {node}",
    }


def failed_status(status: dict[str, Any], pod: Pod, node: str) -> dict[str, Any]:
    return {
        **status,
        "phase": "Failed",
        "reason": REPLACEMENT_ELSEWHERE,
        "consumedBy": pod.key,
        "consumedByUID": pod.uid,
        "message": f"replacement {pod.key} was bound to node {node}",
    }


def refused_status(status: dict[str, Any], pod: Pod, node: str) -> dict[str, Any]:
    return {
        **status,
        "phase": "Failed",
        "reason": RESERVED_NODE_REFUSED,
        "message": f"kube-scheduler's filters refused reserved node {node} for the replacement {pod.key}",
    }


def acknowledged_status(status: dict[str, Any], identity: str) -> dict[str, Any]:
    return {**status, "phase": "Available", "acknowledgedBy": identity}


def same_room(a: Reservation, b: Reservation) -> bool:
    """The same held room (node, resources, owners), whatever the phase."""
    return (a.node_name, a.resources, a.owners) == (b.node_name, b.resources, b.owners)


class BindError(Exception):
    """Binding could not be done; the text goes back to kube-scheduler."""


class ReservationWriter:
    """Reads and writes Reservations and pods/binding through the API, as `identity`."""

    def __init__(self, client: KubeClient, identity: str) -> None:
        self.client = client
        self.identity = identity
        self._sent_back: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._sent_back_lock = threading.Lock()

    # ---------------------------------------------------------------- reads and writes

    def _get(self, name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = msgspec.json.decode(self.client.request("GET", f"{RESERVATIONS_PATH}/{name}"))
        except KubeApiError as err:
            if err.status == 404:
                return None
            raise
        return found

    def _list(self) -> list[ReservationRecord]:
        listed = msgspec.json.decode(self.client.request("GET", RESERVATIONS_PATH))
        records = []
        for raw in listed.get("items") or ():
            try:
                records.append(ReservationRecord.of(raw))
            except (msgspec.ValidationError, decode.DecodeError) as err:
                name = (raw.get("metadata") or {}).get("name")
                log.info("extender: skipping unreadable Reservation %s: %s", name, err)
        return records

    def read_pod(self, namespace: str, name: str) -> Pod | None:
        """The pod as the API holds it now; None when it does not exist."""
        raw = self._read(f"/api/v1/namespaces/{namespace}/pods/{name}", decode.RawPod)
        return decode.pod_from_raw(raw) if raw is not None else None

    def read_node(self, name: str) -> Node | None:
        """The node as the API holds it now; None when it does not exist."""
        raw = self._read(f"/api/v1/nodes/{name}", decode.RawNode)
        return decode.node_from_raw(raw) if raw is not None else None

    def _read(self, path: str, kind: type[_T]) -> _T | None:
        try:
            return msgspec.json.decode(self.client.request("GET", path), type=kind)
        except KubeApiError as err:
            if err.status == 404:
                return None
            raise

    def _write_status(self, raw: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """PUT the status subresource with the object's resourceVersion: a stale write is a 409."""
        body = {**raw, "status": status}
        name = raw["metadata"]["name"]
        written: dict[str, Any] = msgspec.json.decode(
            self.client.request("PUT", f"{RESERVATIONS_PATH}/{name}/status", body=body)
        )
        return written

    # ---------------------------------------------------------------- acknowledge

    def _update_status(
        self, name: str, change: Callable[[ReservationRecord], dict[str, Any] | None]
    ) -> tuple[ReservationRecord | None, dict[str, Any] | None]:
        """Read Reservation `name`, ask `change` for its new status (None: leave it as it is) and write
        that with the resourceVersion read; a conflict reads again. (the record last read, the object
        written or None); (None, None) when it is gone or kept changing."""
        for _ in range(CONFLICT_RETRIES):
            raw = self._get(name)
            if raw is None:
                return None, None
            record = ReservationRecord.of(raw)
            status = change(record)
            if status is None:
                return record, None
            try:
                return record, self._write_status(raw, status)
            except KubeApiError as err:
                if err.status not in (404, 409):
                    raise
        return None, None

    def acknowledge(self, name: str, held: Reservation) -> bool:
        """Mark Reservation `name` Available if it is still Pending and still the room `held` (what the
        state holds); True when it is Available (by us or another replica) afterwards."""

        def change(record: ReservationRecord) -> dict[str, Any] | None:
            if record.reservation.phase != "Pending" or not same_room(record.reservation, held):
                return None  # taken further, or replaced since the state took it: the new one's event will come
            return acknowledged_status(dict(record.raw.get("status") or {}), self.identity)

        record, written = self._update_status(name, change)
        if written is not None:
            log.info("extender: acknowledged Reservation %s on node %s", name, held.node_name)
            return True
        return record is not None and record.reservation.phase == "Available"

    def expire(
        self, name: str, held: Reservation, now: datetime, on_written: Callable[[dict[str, Any]], None] | None = None
    ) -> bool:
        """Mark Reservation `name` Expired if it still holds the room `held` and its TTL has run out
        at `now`, as the migration controller's sweeper does: the scheduler side releases unconsumed
        room on time even while no controller leads. True when it is Expired afterwards; `on_written`
        sees the Reservation as written, so the answers stop counting its room before the watch shows it."""

        def change(record: ReservationRecord) -> dict[str, Any] | None:
            if not record.reservation.past_ttl(now) or not same_room(record.reservation, held):
                return None
            return {**(record.raw.get("status") or {}), "phase": "Expired", "reason": "TTLExceeded"}

        record, written = self._update_status(name, change)
        if written is None:
            return record is not None and record.reservation.phase == "Expired"
        if on_written is not None:
            on_written(written)
        log.info("extender: Reservation %s on node %s expired unconsumed", name, held.node_name)
        return True

    def refuse(
        self, name: str, held: Reservation, pod: Pod, on_written: Callable[[dict[str, Any]], None] | None = None
    ) -> bool:
        """kube-scheduler's filters left the node of Reservation `name` out for `pod`, its replacement:
        mark it Failed (reason ReservedNodeRefused) if it is still Available and the room `held`, so
        the migration controller fails its job at once and the room is given back. Idempotent, and safe
        between replicas (the write carries the resourceVersion read). True when it is Failed for this
        afterwards; `on_written` sees the Reservation as written."""

        def change(record: ReservationRecord) -> dict[str, Any] | None:
            if record.reservation.phase != "Available" or not same_room(record.reservation, held):
                return None  # consumed, failed, expired or replaced meanwhile: that word stands
            return refused_status(dict(record.raw.get("status") or {}), pod, held.node_name)

        record, written = self._update_status(name, change)
        if written is None:
            status = (record.raw.get("status") or {}) if record is not None else {}
            return status.get("phase") == "Failed" and status.get("reason") == RESERVED_NODE_REFUSED
        if on_written is not None:
            on_written(written)
        metrics.EXTENDER_RESERVATIONS_FAILED.labels(RESERVED_NODE_REFUSED).inc()
        log.info("extender: Reservation %s failed: %s", name, written["status"].get("message", ""))
        return True

    # ---------------------------------------------------------------- bind

    def bind(
        self,
        pod: Pod,
        node: str,
        on_written: Callable[[dict[str, Any]], None] | None = None,
        claimable: Callable[[Reservation], bool] = lambda r: True,
    ) -> None:
        """Consume or fail the pod's Reservation as `choose_for_binding` says, then bind the pod to `node`.

        Raises BindError with the reason; `on_written` sees each Reservation written."""
        try:
            written = self._settle(pod, node, claimable)
            if written is not None and on_written is not None:
                on_written(written[1])
            try:
                self._bind(pod, node)
            except KubeApiError as err:
                if written is not None and written[0] == "Consumed":
                    self._release(written[1], written[2], pod)
                raise BindError(f"binding {pod.key} to {node}: {err}") from None
        except (KubeApiError, ClusterUnreachableError) as err:
            raise BindError(str(err)) from None

    def _settle(
        self, pod: Pod, node: str, claimable: Callable[[Reservation], bool]
    ) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
        """(the phase written, the Reservation written, its status before), or None: nothing to write."""
        for _ in range(CONFLICT_RETRIES):
            choice = choose_for_binding(pod, node, self._list(), claimable)
            record = choice.consume or choice.fail
            if record is None:
                return None
            if choice.fail is not None and self._first_time(pod, choice.fail.name):
                raise BindError(
                    f"not binding {pod.key} to {node}: Reservation {choice.fail.name} holds room for it on node "
                    f"{choice.fail.reservation.node_name}, which it was placed without seeing; "
                    "scheduling it again sends it there"
                )
            status = dict(record.raw.get("status") or {})
            new = consumed_status(status, pod, node) if choice.consume else failed_status(status, pod, node)
            try:
                written = self._write_status(record.raw, new)
            except KubeApiError as err:
                if err.status in (404, 409):
                    continue  # taken, failed or deleted meanwhile: read again and choose again
                raise
            log.info("extender: Reservation %s %s by %s on node %s", record.name, new["phase"], pod.key, node)
            if choice.fail is not None:
                metrics.EXTENDER_RESERVATIONS_FAILED.labels(REPLACEMENT_ELSEWHERE).inc()
            return str(new["phase"]), written, status
        raise BindError(f"Reservations of {pod.key} kept changing: gave up after {CONFLICT_RETRIES} conflicts")

    def _first_time(self, pod: Pod, reservation: str) -> bool:
        """True the first time `pod` is sent back for `reservation`, remembered from then on."""
        key = (pod.uid or pod.key, reservation)
        with self._sent_back_lock:
            if key in self._sent_back:
                return False
            self._sent_back[key] = None
            while len(self._sent_back) > SENT_BACK_REMEMBERED:
                self._sent_back.popitem(last=False)
        return True

    def _release(self, raw: dict[str, Any], status: dict[str, Any], pod: Pod) -> None:
        """The binding failed after the pod took the room: give it back as it was (best effort; a
        conflict means someone else changed it since, and their word stands)."""
        try:
            self._write_status(raw, status)
        except (KubeApiError, ClusterUnreachableError) as err:
            log.warning(
                "extender: could not give back Reservation %s after %s failed to bind: %s",
                raw["metadata"]["name"],
                pod.key,
                err,
            )

    def _bind(self, pod: Pod, node: str) -> None:
        metadata: dict[str, str] = {"name": pod.name, "namespace": pod.namespace}
        if pod.uid:
            metadata["uid"] = pod.uid
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        self.client.request("POST", f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/binding", body=body)


class Acknowledger:
    """Writes Reservation statuses off the watch thread: `offer` (acknowledge) and `expire` queue, a
    worker writes; the latest task per Reservation wins. `on_expired` sees each Reservation written
    Expired."""

    def __init__(self, writer: ReservationWriter, on_expired: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.writer = writer
        self._on_expired = on_expired
        self._queue: dict[str, Callable[[], object]] = {}
        self._cond = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None

    def offer(self, reservations: Sequence[Reservation]) -> None:
        self._put({r.name: partial(self.writer.acknowledge, r.name, r) for r in reservations})

    def expire(self, reservations: Sequence[Reservation], now: datetime) -> None:
        self._put({r.name: partial(self.writer.expire, r.name, r, now, self._on_expired) for r in reservations})

    def _put(self, tasks: dict[str, Callable[[], object]]) -> None:
        if not tasks:
            return
        with self._cond:
            self._queue.update(tasks)
            self._cond.notify()

    def start(self) -> Acknowledger:
        if self._thread is None:
            self._stop = False
            self._thread = threading.Thread(target=self._run, name="extender-acknowledge", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                name, task = next(iter(self._queue.items()))
                del self._queue[name]
            try:
                task()
            except Exception as err:  # the next refresh offers it again
                log.warning("extender: writing the status of Reservation %s failed: %s", name, err)
