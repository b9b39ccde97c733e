"""The ReservationFirst driver (migration.md §3): reserve, wait for the scheduler side to hold the
room, evict, then follow the replacement recorded on the Reservation to Ready.

Its steps, in order: `reserve` (adopt the Reservation found under the job's name, or choose a node
and create one; or move without one when no reservation-aware scheduler answers, which hands the
job to the `steered` driver), `await_acknowledged`, `evict` (only while the Reservation still holds
room), `await_bound`, then `Driving.await_ready`. MakeBeforeBreak reserves, waits and follows its
replacement with these same steps (`make_before_break`).
"""

from __future__ import annotations

from descheduler import metrics
from descheduler.migration import steps
from descheduler.migration.api import ApiFailure, FetchedPod
from descheduler.migration.driving import Driving, Lost
from descheduler.migration.objects import RESERVATIONS, Reservation, parse_reservation
from descheduler.migration.pass_reads import JobHandle, PassReads
from descheduler.migration.presence import Route, SchedulerPresence, never_without
from descheduler.migration.records import owner_uid, reservation_body, reservation_name
from descheduler.migration.steps import Hold, ReserveAgain, Stage


class ReservationFirst:
    """Drives ReservationFirst jobs that move through a Reservation; `presence` tells whether a
    reservation-aware scheduler answers (None: assume one does)."""

    def __init__(self, driving: Driving, presence: SchedulerPresence | None) -> None:
        self.driving = driving
        self.api = driving.api
        self.presence = presence

    def step(self, handle: JobHandle, stage: Stage, reads: PassReads) -> bool:
        """Take `stage`; True when it moved the job on and the next step may follow at once."""
        match stage:
            case "Reserve":
                return self.reserve(handle, reads)
            case "AwaitAcknowledged":
                return self.await_acknowledged(handle, reads)
            case "Evict":
                return self._evict(handle, reads)
            case "AwaitBound":
                return self.await_bound(handle, reads)
            case "AwaitReady":
                return self.driving.await_ready(handle, reads)
        raise AssertionError(f"a ReservationFirst job has no step {stage!r}")

    def expire(self, handle: JobHandle, reads: PassReads) -> None:
        self.driving.expire(handle, reads)

    # ------------------------------------------------------------------------------ reserving

    def reserve(self, handle: JobHandle, reads: PassReads) -> bool:
        """Hold room for the replacement: adopt the Reservation found under the job's name, or make one."""
        fetched = self.driving.pod_or_fail(handle, reads)
        if fetched is None:
            return False
        name = reservation_name(handle.job)
        existing = self.api.get_object(RESERVATIONS, name)
        if existing is None:
            return self._make_reservation(handle, name, fetched, reads)
        reservation = parse_reservation(existing)
        if steps.stale_reservation(handle.job, reservation, owner_uid(existing)):
            self.api.delete_object(RESERVATIONS, name, existing["metadata"].get("uid", ""))
            handle.log().info("replaced a stale reservation", phase=reservation.status.phase)
            return True  # the next step makes a new one
        return self.driving.apply(
            handle, steps.reserved(handle.job, name, reservation.spec.node_name, steps.ADOPTED, reads.now), reads
        )

    def _make_reservation(self, handle: JobHandle, name: str, fetched: FetchedPod, reads: PassReads) -> bool:
        """Choose a node and create the Reservation on it (or move without one when no
        reservation-aware scheduler answers)."""
        job, pod, driving = handle.job, fetched.pod, self.driving
        route = self._route(pod.scheduler_name, reads, job.spec.mode)
        if route.way == "Wait":
            return driving.apply(handle, steps.awaiting_scheduler(job, route.why, reads.now), reads)
        if route.way == "Without":
            metrics.MOVES_WITHOUT_RESERVATION.labels(route.cause).inc()
            return driving.apply(handle, steps.unreserved(job, route.why, reads.now), reads)
        placement = reads.placement()
        if placement is None:
            return driving.apply(
                handle, Hold("WaitingForClusterState", "no snapshot of the cluster to check the target against"), reads
            )
        target = placement.choose(pod, job.spec.target_node, reads.cooling())
        if target.node is None:
            outcome = steps.no_target(target)
            if isinstance(outcome, Hold):
                driving.retry_later(handle, reads.now, driving.backoff)
            return driving.apply(handle, outcome, reads)
        if target.why:
            handle.log().info("planned target no longer fits; chose another", chosen=target.node, why=target.why)
        try:
            self.api.create_object(RESERVATIONS, reservation_body(job, pod, fetched.raw, target.node, reads.now))
        except ApiFailure as failure:
            if failure.already_exists:
                return True  # made by us a moment ago: the next step adopts it
            raise
        placement.hold(pod, target.node)
        return driving.apply(handle, steps.reserved(job, name, target.node, target.why, reads.now), reads)

    def _route(self, scheduler_name: str, reads: PassReads, mode: str = "ReservationFirst") -> Route:
        """How the move of a pod with this schedulerName goes (without `presence`: a Reservation)."""
        if self.presence is None:
            return Route("Reservation", "")
        route = self.presence.route(scheduler_name, reads.now, reads.policy.migration.reservation_scheduler)
        return never_without(route, mode)

    def reservation_of(self, handle: JobHandle) -> tuple[str, Reservation | None]:
        """The job's Reservation, read now: its name, and the object (None when there is none)."""
        job = handle.job
        name = job.status.reservation_ref.name if job.status.reservation_ref else reservation_name(job)
        raw = self.api.get_object(RESERVATIONS, name)
        return name, parse_reservation(raw) if raw is not None else None

    def await_acknowledged(self, handle: JobHandle, reads: PassReads) -> bool:
        name, reservation = self.reservation_of(handle)
        route = Route("Reservation", "")
        if reservation is not None and reservation.holds_room and reservation.status.phase != "Available":
            route = self._route(reservation.spec.template.scheduler_name, reads, handle.job.spec.mode)
        absent = route.why if route.way == "Without" else ""
        outcome = steps.acknowledgement(handle.job, name, reservation, absent, reads.now, route.cause)
        return self.driving.apply(handle, outcome, reads)

    # ------------------------------------------------------------------------------ evicting

    def _evict(self, handle: JobHandle, reads: PassReads) -> bool:
        live = self.driving.live_pod(handle)
        if isinstance(live, Lost):
            return self.driving.evicted_before(handle, live, reads)
        name, reservation = self.reservation_of(handle)
        if reservation is None or not reservation.holds_room:
            # Before evicting: the Reservation must still hold room, else make a new one first.
            self.driving.apply(handle, ReserveAgain(name, steps.lost_state(reservation)), reads)
            return True  # the next step reserves again
        return self.driving.evict(handle, reads, live.pod)

    # ------------------------------------------------------------------------------ the replacement

    def await_bound(self, handle: JobHandle, reads: PassReads) -> bool:
        """The replacement recorded on the Reservation; the job fails at once when kube-scheduler's
        filters refused the reserved node for it."""
        name, reservation = self.reservation_of(handle)
        refused = steps.refused_by_filters(reservation) if reservation is not None else None
        if refused is not None:
            return self.driving.apply(handle, refused, reads)
        return self.follow_replacement(handle, reads, name, reservation)

    def follow_replacement(
        self, handle: JobHandle, reads: PassReads, name: str, reservation: Reservation | None
    ) -> bool:
        """Reservation `name` (as read; None: gone) and the replacement it records: bound on it, or
        elsewhere."""
        job = handle.job
        if reservation is None:
            hold = Hold("ReservationGone", f"Reservation {name} is gone; waiting for the replacement")
            self.driving.note(handle, hold)
            return False
        if not reservation.status.consumed_by:
            return self._landed_without_bind(handle, reads)
        fetched = self.api.get_pod(*steps.recorded_replacement(job, reservation))
        replacement = fetched.pod if fetched is not None else None
        return self.driving.apply(
            handle, steps.replacement_on_reservation(job, name, reservation, replacement, reads.now), reads
        )

    def _landed_without_bind(self, handle: JobHandle, reads: PassReads) -> bool:
        """The replacement bound on the Reservation's node by a scheduler that did not bind through
        the extender, which would have recorded it on the Reservation first: it counts as landed, and
        the room is released so that no other pod is kept from it."""
        found = reads.stock_replacement(handle.job)
        if found is None:
            return False
        name, reservation = self.reservation_of(handle)  # read after the pod: an extender bind shows now
        if (
            reservation is None
            or reservation.status.consumed_by
            or found.replacement.node_name != reservation.spec.node_name
        ):
            return False
        record = steps.bound(
            handle.job,
            found.replacement,
            f"replacement {found.replacement.key} bound to node {reservation.spec.node_name}, its Reservation's, "
            f"by a scheduler that did not record it there; Reservation {name} released",
            reads.now,
        )
        self.driving.record(handle, record)
        self.driving.cleanup.release(handle)
        return True
