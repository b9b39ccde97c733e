"""The migration controller: drives every PodMigrationJob to an end (migration.md §3–6).

The API objects are the only state that matters: each pass lists the jobs and Reservations,
admits waiting jobs by the limits counted from those jobs, and takes each running job one or more
idempotent steps further. Every step is keyed by the job (the Reservation is named after it, the
eviction carries the pod's UID), so a controller that starts fresh — after a crash, or as a new
leader — continues every job where the last one stopped, without a second eviction.

Memory holds only what is safe to lose: retry backoff and the eviction call rate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import structlog

from descheduler import decode, metrics
from descheduler.durations import format_duration
from descheduler.eligibility import hard_refusal
from descheduler.events import EventRecorder, EventType, ObjectRef
from descheduler.migration.api import ApiFailure, MigrationApi
from descheduler.migration.arbiter import JobFacts, Verdict, WorkloadFacts, arbitrate, cooling_sources
from descheduler.migration.objects import (
    ANNOTATION_CYCLE,
    ANNOTATION_SOURCE_NODE,
    ANNOTATION_WORKLOAD,
    ANNOTATION_WORKLOAD_UID,
    JOBS,
    LABEL_JOB,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    RESERVATIONS,
    TERMINAL_PHASES,
    JobPhase,
    ObjectError,
    PodMigrationJob,
    PodMigrationJobStatus,
    PodReference,
    Reservation,
    ReservationReference,
    WorkloadReference,
    format_time,
    parse_job,
    parse_reservation,
)
from descheduler.migration.presence import SchedulerPresence
from descheduler.migration.records import (
    condition_time,
    owner_uid,
    reservation_body,
    reservation_name,
    with_condition,
    without_conditions,
)
from descheduler.migration.targets import Placement
from descheduler.model import Pod
from descheduler.policy import Policy
from descheduler.priority import importance
from descheduler.snapshot import Snapshot
from descheduler.tokenbucket import TokenBucket

log = structlog.get_logger(__name__)

MAX_STEPS_PER_PASS: Final = 12
CONFLICT_RETRIES: Final = 3
_PHASE_EVENTS: Final[dict[str, tuple[EventType, str]]] = {
    "Running": ("Normal", "MigrationStarted"),
    "Succeeded": ("Normal", "MigrationSucceeded"),
    "Failed": ("Warning", "MigrationFailed"),
    "Aborted": ("Warning", "MigrationAborted"),
}
_RESULTS: Final = {"Succeeded": "succeeded", "Failed": "failed", "Aborted": "aborted"}
# The reason on a ReservationFirst job's ReservationCreated=False condition when no
# reservation-aware scheduler answered as it started: the pod is moved without a Reservation.
NO_RESERVATION_SCHEDULER: Final = "NoReservationScheduler"


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential delays between retries of one job's step: base · 2^(attempt−1), at most `limit`."""

    base: timedelta = timedelta(seconds=1)
    limit: timedelta = timedelta(minutes=1)

    def delay(self, attempt: int) -> timedelta:
        delay: timedelta = self.base * (2 ** max(0, min(attempt - 1, 20)))
        return min(self.limit, delay)


@dataclass(slots=True)
class _Retry:
    attempts: int
    not_before: datetime


@dataclass(slots=True)
class JobHandle:
    """A job as read from the API (raw, so writes keep fields we do not model) and as parsed."""

    raw: dict[str, Any]
    job: PodMigrationJob

    def refresh(self, raw: dict[str, Any]) -> None:
        self.raw = raw
        self.job = parse_job(raw)

    @property
    def uid(self) -> str:
        return self.job.metadata.uid or self.job.name


class _Gone(Exception):
    """The job was deleted while we worked on it."""


@dataclass(slots=True)
class _Pass:
    """What one reconcile pass has read, shared by its steps."""

    now: datetime
    policy: Policy
    handles: list[JobHandle]
    reservations: list[dict[str, Any]]
    snapshot_source: Callable[[], Snapshot]
    _snapshot: Snapshot | None = None
    _snapshot_read: bool = False
    _placement: Placement | None = None
    cooling: set[str] | None = None  # nodes that were a source within the cooldown

    def snapshot(self) -> Snapshot | None:
        if not self._snapshot_read:
            self._snapshot_read = True
            try:
                self._snapshot = self.snapshot_source()
            except Exception as err:  # the cache may not be synced yet: wait for the next pass
                log.warning("no cluster snapshot for this pass; admissions and placements wait", error=str(err))
        return self._snapshot

    def placement(self) -> Placement | None:
        if self._placement is None:
            snapshot = self.snapshot()
            if snapshot is None:
                return None
            placing = {
                h.job.name
                for h in self.handles
                if h.job.spec.mode == "ReservationFirst"
                and h.job.status.phase in ("Pending", "Running")
                and not h.job.status.has("ReservationCreated")
            }
            live = []
            for raw in self.reservations:
                try:
                    live.append(decode.reservation_from_raw(decode.convert(raw, decode.RawReservation)))
                except decode.DecodeError as err:
                    log.warning("ignoring an unreadable Reservation", name=raw["metadata"].get("name"), error=str(err))
            # Ours as read this pass (fresher than any cache), and everyone else's as the snapshot has them.
            ours = {str(raw["metadata"].get("name")) for raw in self.reservations} | {h.job.name for h in self.handles}
            live += [r for r in snapshot.reservations if r.name not in ours]
            self._placement = Placement(snapshot, self.policy.scheduling, reservations=live, placing=placing)
        return self._placement


class MigrationController:
    """`reconcile_once()` is one pass over every job, then the orphan sweeper and job retention;
    `run(stop, period)` repeats it until `stop` is set."""

    def __init__(
        self,
        api_client: Any,
        policy: Callable[[], Policy],
        snapshot: Callable[[], Snapshot],
        clock: Callable[[], datetime],
        recorder: EventRecorder | None = None,
        *,
        backoff: Backoff | None = None,
        budget_backoff: Backoff | None = None,
        presence: SchedulerPresence | None = None,
    ) -> None:
        """`backoff` paces retries after API errors; `budget_backoff` retries after a
        PodDisruptionBudget said "not now" (default 5 s doubling to 1 min); `presence` tells whether a
        reservation-aware scheduler answers (None: assume one does)."""
        self.api = MigrationApi(api_client)
        self.presence = presence
        self.policy = policy
        self.snapshot = snapshot
        self.clock = clock
        self.recorder = recorder
        self.backoff = backoff or Backoff()
        self.budget_backoff = budget_backoff or Backoff(timedelta(seconds=5), timedelta(minutes=1))
        self._retries: dict[str, _Retry] = {}
        self._evictions: TokenBucket | None = None
        self._eviction_rate: tuple[float, int] | None = None
        self._released: set[str] = set()  # jobs whose Reservation this pass already deleted

    # ------------------------------------------------------------------------------ the loop

    def run(self, stop: threading.Event, period: float = 2.0) -> None:
        """Reconcile every `period` seconds until `stop` is set; one failing pass never ends the loop."""
        while not stop.is_set():
            try:
                self.reconcile_once()
            except Exception:
                log.exception("migration reconcile pass failed")
            stop.wait(period)

    def reconcile_once(self) -> None:
        now = self.clock()
        policy = self.policy()
        try:
            # Reservations first: every Reservation of ours then has its job in the list that follows.
            reservations = self.api.list_reservations(f"{MANAGED_BY_LABEL}={MANAGED_BY}")
            raw_jobs = self.api.list_jobs()
        except ApiFailure as failure:
            log.warning("cannot list migration jobs; nothing done this pass", error=str(failure))
            return
        handles: list[JobHandle] = []
        invalid: list[dict[str, Any]] = []
        for raw in raw_jobs:
            try:
                handles.append(JobHandle(raw, parse_job(raw)))
            except ObjectError as err:
                invalid.append(raw)
                self._reject(raw, err, now)
        ctx = _Pass(now, policy, handles, reservations, self.snapshot)
        self._released = set()
        self._refresh_eviction_rate(policy)
        for handle in sorted((h for h in handles if h.job.status.phase == "Running"), key=lambda h: h.job.name):
            self._drive(handle, ctx)
        self._admit([h for h in handles if h.job.status.phase == "Pending"], ctx)
        self._sweep(ctx)
        self._retire(ctx)
        self._publish(handles, invalid)
        live = {h.uid for h in handles}
        self._retries = {uid: r for uid, r in self._retries.items() if uid in live}

    # ------------------------------------------------------------------------------ helpers

    def _refresh_eviction_rate(self, policy: Policy) -> None:
        rate = (policy.migration.evict_qps, policy.migration.evict_burst)
        if rate != self._eviction_rate:
            self._evictions = TokenBucket(*rate)
            self._eviction_rate = rate

    def _log(self, job: PodMigrationJob) -> Any:
        ref = job.spec.pod_ref
        return log.bind(
            job=job.name,
            pod=f"{ref.namespace}/{ref.name}",
            node=job.status.source_node or job.metadata.annotations.get(ANNOTATION_SOURCE_NODE, ""),
            target=job.status.target_node or job.spec.target_node,
            strategy=job.spec.strategy,
            reason=job.spec.reason,
        )

    def _event(self, job: PodMigrationJob, event_type: EventType, reason: str, message: str) -> None:
        if self.recorder is not None:
            ref = ObjectRef("PodMigrationJob", job.name, uid=job.metadata.uid, api_version=job.api_version)
            self.recorder.record(ref, event_type, reason, message)

    def _due(self, handle: JobHandle, now: datetime) -> bool:
        retry = self._retries.get(handle.uid)
        return retry is None or now >= retry.not_before

    def _retry_later(self, handle: JobHandle, now: datetime, backoff: Backoff, at_least: float | None = None) -> None:
        retry = self._retries.get(handle.uid)
        attempts = (retry.attempts if retry else 0) + 1
        delay = backoff.delay(attempts)
        if at_least is not None:
            delay = max(delay, timedelta(seconds=at_least))
        self._retries[handle.uid] = _Retry(attempts, now + delay)

    def _progressed(self, handle: JobHandle) -> None:
        self._retries.pop(handle.uid, None)

    def _write(self, handle: JobHandle, status: PodMigrationJobStatus) -> None:
        body = dict(handle.raw)
        body["status"] = status.wire()
        handle.refresh(self.api.write_status(JOBS, body))

    def _note(self, handle: JobHandle, reason: str, message: str) -> None:
        """Say in the status why the job is waiting (written only when it changes)."""
        status = handle.job.status
        if status.reason == reason and status.message == message:
            return
        self._write(handle, status.model_copy(update={"reason": reason, "message": message}))
        self._log(handle.job).info("migration job waiting", why=reason, detail=message)

    def _set_phase(
        self,
        handle: JobHandle,
        phase: JobPhase,
        reason: str,
        message: str,
        now: datetime,
        status: PodMigrationJobStatus | None = None,
    ) -> None:
        """Change phase, then say so (Event, log, metric); a terminal phase releases the Reservation."""
        base = status or handle.job.status
        update: dict[str, Any] = {"phase": phase, "reason": reason, "message": message}
        if phase == "Running" and base.start_time is None:
            update["start_time"] = now
        if phase in TERMINAL_PHASES:
            update["completion_time"] = now
        self._write(handle, base.model_copy(update=update))
        self._progressed(handle)
        job = handle.job
        event_type, event_reason = _PHASE_EVENTS[phase]
        self._event(job, event_type, event_reason, f"{reason}: {message}" if message else reason)
        bound = self._log(job)
        if phase in TERMINAL_PHASES:
            metrics.MIGRATIONS.labels(job.spec.strategy or "unknown", _RESULTS[phase]).inc()
            self._release(job)
            (bound.info if phase == "Succeeded" else bound.warning)(
                f"migration job {phase.lower()}", why=reason, detail=message
            )
        else:
            bound.info("migration job started", why=reason, detail=message)

    def _release(self, job: PodMigrationJob) -> None:
        """Delete the job's Reservation (the sweeper retries when this fails)."""
        if job.spec.mode != "ReservationFirst":
            return
        self._released.add(job.name)
        try:
            if self.api.delete_object(RESERVATIONS, reservation_name(job)):
                self._log(job).info("reservation released")
        except ApiFailure as failure:
            self._log(job).warning("could not delete the reservation; the sweeper will", error=str(failure))

    def _live_pod(self, job: PodMigrationJob) -> tuple[tuple[dict[str, Any], Pod] | None, str]:
        """The job's pod if it is still the same pod and not on its way out, else (None, why)."""
        ref = job.spec.pod_ref
        got = self.api.get_pod(ref.namespace, ref.name)
        if got is None:
            return None, f"pod {ref.namespace}/{ref.name} no longer exists"
        pod = got[1]
        uid = job.status.pod_uid or ref.uid
        if uid and pod.uid != uid:
            return None, f"pod {ref.namespace}/{ref.name} was replaced (UID {pod.uid}, expected {uid})"
        if pod.deleting:
            return None, f"pod {ref.namespace}/{ref.name} is being deleted"
        if pod.terminal:
            return None, f"pod {ref.namespace}/{ref.name} has finished ({pod.phase})"
        return got, ""

    # ------------------------------------------------------------------------------ driving a job

    def _drive(self, handle: JobHandle, ctx: _Pass) -> None:
        """Take the job as far as it can go now; a conflict re-reads the job and decides again."""
        for _ in range(CONFLICT_RETRIES):
            try:
                for _ in range(MAX_STEPS_PER_PASS):
                    if not self._step(handle, ctx):
                        break
                return
            except ApiFailure as failure:
                if failure.conflict:
                    try:
                        fresh = self.api.get_object(JOBS, handle.job.name)
                    except ApiFailure as again:
                        self._failed_step(handle, ctx, again)
                        return
                    if fresh is None:
                        return
                    handle.refresh(fresh)
                    continue
                self._failed_step(handle, ctx, failure)
                return
            except (decode.DecodeError, ObjectError) as err:
                # Never act on data that could not be read: wait and read again.
                self._log(handle.job).warning("cannot read an object this job needs", error=str(err))
                self._retry_later(handle, ctx.now, self.backoff)
                return
            except Exception:
                self._log(handle.job).exception("migration step failed unexpectedly")
                self._retry_later(handle, ctx.now, self.backoff)
                return
        self._retry_later(handle, ctx.now, self.backoff)

    def _failed_step(self, handle: JobHandle, ctx: _Pass, failure: ApiFailure) -> None:
        self._log(handle.job).warning("migration step failed; will retry", error=str(failure))
        self._retry_later(handle, ctx.now, self.backoff, failure.retry_after)

    def _step(self, handle: JobHandle, ctx: _Pass) -> bool:
        """One step; True when it moved the job on and the next step may follow at once."""
        job = handle.job
        if job.terminal:
            return False
        deadline = job.deadline
        if deadline is not None and ctx.now >= deadline:
            self._expire(handle, ctx)
            return False
        if job.status.phase != "Running":
            return False
        if not self._due(handle, ctx.now):
            return False
        status = job.status
        if ctx.policy.dry_run and not status.has("Evicted"):
            self._note(handle, "DryRun", "the policy is in dryRun: nothing is reserved or evicted")
            return False
        if job.spec.paused and not status.has("Evicted"):
            self._note(handle, "Paused", "spec.paused is set: no step that has not begun is taken")
            return False
        if job.spec.mode == "EvictDirectly":
            if not status.has("Evicted"):
                return self._evict(handle, ctx)
            self._set_phase(handle, "Succeeded", "Evicted", "the pod was evicted (EvictDirectly)", ctx.now)
            return False
        if without_reservation(status):
            if not status.has("Evicted"):
                return self._evict(handle, ctx)
            if not status.has("ReplacementBound"):
                return self._await_stock_replacement(handle, ctx)
            return self._await_ready(handle, ctx)
        if not status.has("ReservationCreated"):
            return self._reserve(handle, ctx)
        if not status.has("ReservationScheduled"):
            return self._await_acknowledged(handle, ctx)
        if not status.has("Evicted"):
            return self._evict(handle, ctx)
        if not status.has("ReplacementBound"):
            return self._await_bound(handle, ctx)
        return self._await_ready(handle, ctx)

    def _expire(self, handle: JobHandle, ctx: _Pass) -> None:
        """TTL exceeded: Aborted when the pod was not evicted (pod untouched), else Failed Timeout."""
        job = handle.job
        ttl = format_time(job.deadline) if job.deadline else ""
        evicted = job.status.has("Evicted")
        could_have = job.status.phase == "Running" and (
            job.spec.mode == "EvictDirectly" or job.status.has("ReservationCreated") or without_reservation(job.status)
        )
        if not evicted and could_have:
            # A controller that evicted and then stopped before recording it: the pod says so.
            got, _ = self._live_pod(job)
            evicted = got is None
        if evicted and job.spec.mode == "EvictDirectly":
            # Its whole task was the eviction: late in the record, but done.
            self._set_phase(handle, "Succeeded", "Evicted", "the pod was evicted (EvictDirectly)", ctx.now)
            return
        if evicted and job.status.new_pod_ref is not None and job.status.has("ReplacementBound"):
            ref = job.status.new_pod_ref
            got = self.api.get_pod(ref.namespace, ref.name)
            if got is not None and got[1].uid == (ref.uid or got[1].uid) and got[1].ready:
                self._await_ready(handle, ctx)  # the replacement made it as time ran out
                return
        if evicted:
            target = job.status.target_node or job.spec.target_node
            where = f" on node {target}" if target else ""
            message = f"the pod was evicted but its replacement was not bound and Ready{where} by {ttl}"
            self._set_phase(handle, "Failed", "Timeout", message, ctx.now)
        else:
            message = f"not done within its ttl of {format_duration(job.spec.ttl)} (by {ttl}); the pod was not touched"
            self._set_phase(handle, "Aborted", "Timeout", message, ctx.now)

    def _pod_or_fail(self, handle: JobHandle, ctx: _Pass) -> tuple[dict[str, Any], Pod] | None:
        """The job's pod, or None after failing the job MissingPod (before anything was done to it)."""
        got, why = self._live_pod(handle.job)
        if got is None:
            self._set_phase(handle, "Failed", "MissingPod", why, ctx.now)
        return got

    def _reserve(self, handle: JobHandle, ctx: _Pass) -> bool:
        job = handle.job
        got = self._pod_or_fail(handle, ctx)
        if got is None:
            return False
        raw_pod, pod = got
        name = reservation_name(job)
        existing = self.api.get_object(RESERVATIONS, name)
        if existing is not None:
            reservation = parse_reservation(existing)
            theirs = owner_uid(existing)
            if (theirs and theirs != job.metadata.uid) or not reservation.holds_room:
                # Left by an earlier job of the same name, or its room is gone: start over.
                self.api.delete_object(RESERVATIONS, name, existing["metadata"].get("uid", ""))
                self._log(job).info("replaced a stale reservation", phase=reservation.status.phase)
                return True
            node, why = reservation.spec.node_name, "adopted the reservation made before"
        else:
            absent = self._no_reservation_scheduler(ctx)
            if absent is None:
                self._note(handle, "WaitingForScheduler", "cannot tell whether a reservation-aware scheduler answers")
                self._retry_later(handle, ctx.now, self.backoff)
                return False
            if absent:
                return self._go_without_reservation(handle, ctx, absent)
            target = self._target(handle, pod, ctx)
            if target is None:
                return False
            node, why = target
            try:
                self.api.create_object(RESERVATIONS, reservation_body(job, pod, raw_pod, node, ctx.now))
            except ApiFailure as failure:
                if failure.already_exists:
                    return True  # made by us a moment ago: the next step adopts it
                raise
            placement = ctx.placement()
            if placement is not None:
                placement.hold(pod, node)
        status = with_condition(
            job.status,
            "ReservationCreated",
            ctx.now,
            reason="Created",
            message=f"Reservation {name} on node {node}" + (f" ({why})" if why else ""),
        )
        status = status.model_copy(
            update={
                "reservation_ref": ReservationReference(name=name),
                "target_node": node,
                "reason": "ReservationCreated",
                "message": f"room reserved on node {node}; waiting for the scheduler to hold it",
            }
        )
        self._write(handle, status)
        # No reset of the retry backoff here: after a budget's "not now" the room is made again on
        # every retry, and the waits between retries must still grow.
        self._event(handle.job, "Normal", "ReservationCreated", f"Reservation {name} holds room on node {node}")
        self._log(handle.job).info("reservation created", target=node, detail=why)
        return True

    def _no_reservation_scheduler(self, ctx: _Pass) -> str | None:
        """Why no reservation-aware scheduler answers ("" when one does; None when it cannot be told)."""
        if self.presence is None:
            return ""
        answer = self.presence.check(ctx.now)
        if answer.present is None:
            return None
        return "" if answer.present else answer.why

    def _go_without_reservation(self, handle: JobHandle, ctx: _Pass, why: str) -> bool:
        """No scheduler would honour a Reservation: evict, then judge where the replacement lands."""
        message = (
            f"no reservation-aware scheduler answers ({why}): the pod is evicted without a Reservation and the "
            "move is judged by where the scheduler puts its replacement"
        )
        status = with_condition(
            handle.job.status,
            "ReservationCreated",
            ctx.now,
            value="False",
            reason=NO_RESERVATION_SCHEDULER,
            message=message,
        )
        status = status.model_copy(update={"reason": NO_RESERVATION_SCHEDULER, "message": message})
        self._write(handle, status)
        self._progressed(handle)
        self._event(handle.job, "Warning", NO_RESERVATION_SCHEDULER, message)
        self._log(handle.job).warning("moving without a reservation", detail=why)
        return True

    def _reservation_of(self, job: PodMigrationJob) -> tuple[str, Reservation | None]:
        """The job's Reservation, read now: its name, and the object (None when there is none)."""
        name = job.status.reservation_ref.name if job.status.reservation_ref else reservation_name(job)
        raw = self.api.get_object(RESERVATIONS, name)
        return name, parse_reservation(raw) if raw is not None else None

    def _await_acknowledged(self, handle: JobHandle, ctx: _Pass) -> bool:
        """Evict only once the scheduler side says its state holds the room (migration.md §3, step 3):
        a replacement placed 10 ms after the eviction must already see the Reservation."""
        job = handle.job
        name, reservation = self._reservation_of(job)
        if reservation is None or not reservation.holds_room:
            return self._reserve_again(handle, name, reservation)
        node = reservation.spec.node_name
        if reservation.status.phase == "Available":
            by = reservation.status.acknowledged_by or "the scheduler"
            message = f"{by} holds room on node {node}"
            status = with_condition(job.status, "ReservationScheduled", ctx.now, reason="Acknowledged", message=message)
            status = status.model_copy(update={"reason": "ReservationAvailable", "message": message})
            self._write(handle, status)
            self._log(job).info("reservation available", target=node, detail=message)
            return True
        absent = self._no_reservation_scheduler(ctx)
        if absent:
            # The scheduler went away before it held the room: nothing was done to the pod yet.
            self._release(job)
            self._forget_reservation(handle)
            return self._go_without_reservation(handle, ctx, absent)
        self._note(handle, "WaitingForScheduler", f"Reservation {name} on node {node} waits for the scheduler")
        return False

    def _reserve_again(self, handle: JobHandle, name: str, reservation: Reservation | None) -> bool:
        """The Reservation is gone or no longer holds room before the eviction: reserve anew."""
        state = "is gone" if reservation is None else f"is {reservation.status.phase}"
        self._forget_reservation(handle, reason="ReservationLost", message=f"Reservation {name} {state}")
        self._log(handle.job).warning("reservation lost before eviction; reserving again", state=state)
        return False

    def _forget_reservation(self, handle: JobHandle, **update: str) -> None:
        """Before the eviction: the job holds no room any more; its next step reserves again."""
        status = without_conditions(handle.job.status, "ReservationCreated", "ReservationScheduled")
        self._write(handle, status.model_copy(update={"reservation_ref": None, **update}))

    def _target(self, handle: JobHandle, pod: Pod, ctx: _Pass) -> tuple[str, str] | None:
        """The node to reserve on and a note on how it was chosen; None when the job must wait or failed."""
        job = handle.job
        placement = ctx.placement()
        if placement is None:
            self._note(handle, "WaitingForClusterState", "no snapshot of the cluster to check the target against")
            return None
        if ctx.cooling is None:
            ctx.cooling = cooling_sources(self._all_facts(ctx), ctx.policy.migration.cooldown, ctx.now)
        cooling = ctx.cooling
        target = placement.choose(pod, job.spec.target_node, cooling)
        if target.node is None:
            if target.cooling:
                self._note(handle, "TargetCooldown", target.why)
                self._retry_later(handle, ctx.now, self.backoff)
            else:
                self._set_phase(handle, "Failed", "Unschedulable", f"no node can take the pod: {target.why}", ctx.now)
            return None
        if target.why:
            self._log(job).info("planned target no longer fits; chose another", chosen=target.node, why=target.why)
        return target.node, target.why

    def _evict(self, handle: JobHandle, ctx: _Pass) -> bool:
        job = handle.job
        got, why = self._live_pod(job)
        if got is None:
            # Evicted by an earlier instance that stopped before recording it, or by someone else.
            return self._mark_evicted(handle, ctx, "PodGone", f"{why}; not evicted again")
        _, pod = got
        if reserves(job) and not self._room_still_held(handle, ctx):
            return True
        assert self._evictions is not None
        if not self._evictions.take(ctx.now.timestamp()):
            return False  # evictQPS/evictBurst: the next pass tries again
        bound = self._log(job)
        try:
            if job.spec.eviction_policy == "Delete":
                self.api.delete_pod(pod.namespace, pod.name, pod.uid)
            else:
                self.api.evict_pod(pod.namespace, pod.name, pod.uid)
        except ApiFailure as failure:
            return self._eviction_refused(handle, ctx, failure)
        metrics.EVICTIONS.labels("success").inc()
        verb = "Deleted" if job.spec.eviction_policy == "Delete" else "Evicted"
        target = job.status.target_node
        towards = f", target node {target}" if target else ""
        message = (
            f"{verb} by the descheduler ({job.spec.strategy or 'no strategy'}): {job.spec.reason or 'no reason given'} "
            f"(migration job {job.name}{towards})"
        )
        if self.recorder is not None:
            self.recorder.normal(ObjectRef("Pod", pod.name, pod.namespace, pod.uid), "Descheduled", message)
        bound.info("pod evicted", policy=job.spec.eviction_policy)
        return self._mark_evicted(handle, ctx, verb, f"pod {pod.key} {verb.lower()} from node {pod.node_name}")

    def _room_still_held(self, handle: JobHandle, ctx: _Pass) -> bool:
        """Before evicting: the Reservation must still hold room, else make a new one first."""
        name, reservation = self._reservation_of(handle.job)
        if reservation is not None and reservation.holds_room:
            return True
        return self._reserve_again(handle, name, reservation)

    def _mark_evicted(self, handle: JobHandle, ctx: _Pass, reason: str, message: str) -> bool:
        status = with_condition(handle.job.status, "Evicted", ctx.now, reason=reason, message=message)
        status = status.model_copy(update={"reason": "Evicted", "message": message})
        self._write(handle, status)
        self._progressed(handle)
        self._event(handle.job, "Normal", "Evicted", message)
        return True

    def _eviction_refused(self, handle: JobHandle, ctx: _Pass, failure: ApiFailure) -> bool:
        job = handle.job
        bound = self._log(job)
        if failure.not_found:
            return self._mark_evicted(handle, ctx, "PodGone", "the pod was gone when it was to be evicted")
        if failure.disruption_budget:
            metrics.EVICTIONS.labels("pdb_blocked").inc()
            self._retry_later(handle, ctx.now, self.budget_backoff)
            detail = "; ".join((failure.message, *failure.details)) if failure.details else failure.message
            if reserves(job):
                # An acknowledged Reservation draws the workload's next pod to it; while a budget says
                # "not now" that pod is another move's replacement and would take this room. Release
                # it, and reserve again when the eviction is retried.
                self._release(job)
                self._forget_reservation(handle)
                detail += "; its Reservation is released until then"
            self._note(handle, "DisruptionBudget", f"eviction refused, will retry: {detail}")
            self._event(job, "Warning", "EvictionBlocked", f"a PodDisruptionBudget allows no disruption now: {detail}")
            bound.info("eviction blocked by a disruption budget; will retry", detail=detail)
            return False
        metrics.EVICTIONS.labels("error").inc()
        if failure.multiple_budgets:
            self._set_phase(handle, "Failed", "MultiplePodDisruptionBudgets", failure.message, ctx.now)
            return False
        self._retry_later(handle, ctx.now, self.backoff, failure.retry_after)
        if failure.throttled:
            bound.info("eviction throttled by the API server; will retry", retry_after=failure.retry_after)
            return False
        self._note(handle, "EvictionError", f"will retry: {failure}")
        bound.warning("eviction failed; will retry", error=str(failure))
        return False

    def _await_bound(self, handle: JobHandle, ctx: _Pass) -> bool:
        """The replacement is the pod the scheduler side recorded on this job's Reservation (migration.md
        §3, step 5): Consumed on the target, or Failed when the owner's pod went to another node."""
        job = handle.job
        name, reservation = self._reservation_of(job)
        if reservation is None or not reservation.status.consumed_by:
            if reservation is None:
                self._note(handle, "ReservationGone", f"Reservation {name} is gone; waiting for the replacement")
            return False
        recorded = reservation.status
        namespace, _, pod_name = recorded.consumed_by.rpartition("/")
        got = self.api.get_pod(namespace or job.spec.pod_ref.namespace, pod_name)
        if got is None or (recorded.consumed_by_uid and got[1].uid != recorded.consumed_by_uid):
            self._note(handle, "ReplacementGone", f"pod {recorded.consumed_by} recorded on Reservation {name} is gone")
            return False
        replacement = got[1]
        target = reservation.spec.node_name
        if recorded.phase == "Failed" or replacement.node_name != target:
            return self._landed_elsewhere(handle, ctx, replacement, f"instead of the reserved node {target}")
        return self._bound(handle, ctx, replacement, f"replacement {replacement.key} bound to node {target}")

    def _bound(self, handle: JobHandle, ctx: _Pass, replacement: Pod, message: str) -> bool:
        ref = PodReference(namespace=replacement.namespace, name=replacement.name, uid=replacement.uid)
        status = with_condition(handle.job.status, "ReplacementBound", ctx.now, reason="Bound", message=message)
        status = status.model_copy(update={"new_pod_ref": ref, "reason": "ReplacementBound", "message": message})
        self._write(handle, status)
        self._progressed(handle)
        self._event(handle.job, "Normal", "ReplacementBound", message)
        self._log(handle.job).info("replacement bound", replacement=replacement.key, node=replacement.node_name)
        return True

    def _landed_elsewhere(self, handle: JobHandle, ctx: _Pass, replacement: Pod, how: str) -> bool:
        """Decided at once: the room held for it is released, and the move counts only when the
        replacement left the source for a node that stays under its thresholds."""
        job = handle.job
        self._release(job)
        where = f"replacement {replacement.key} was bound to node {replacement.node_name} {how}".rstrip()
        source = job.status.source_node
        crowded = self._crowded(replacement, ctx)
        if replacement.node_name == source or crowded:
            why = "back on the source node" if replacement.node_name == source else crowded
            self._set_phase(handle, "Failed", "ReplacementElsewhere", f"{where}: {why}", ctx.now)
            return False
        return self._bound(handle, ctx, replacement, f"{where}; that node stays under its thresholds")

    def _crowded(self, pod: Pod, ctx: _Pass) -> str:
        """Why the pod's node is over its load thresholds now ("" when it is not, or when unknown)."""
        placement = ctx.placement()
        return placement.over_thresholds(pod.node_name) if placement is not None else ""

    def _await_stock_replacement(self, handle: JobHandle, ctx: _Pass) -> bool:
        """Without a Reservation nothing records which pod replaced this one: the evidence is the
        owner's first pod created since the eviction that no other job claimed, once it is bound."""
        job = handle.job
        snapshot = ctx.snapshot()
        workload = job.status.workload.uid if job.status.workload else ""
        evicted = condition_time(job, "Evicted")
        if snapshot is None or not workload or evicted is None:
            return False
        claimed = {
            h.job.status.new_pod_ref.uid
            for h in ctx.handles
            if h.job.status.new_pod_ref is not None and h.job.name != job.name
        }
        fresh = sorted(
            (
                p
                for p in snapshot.pods
                if p.owner is not None
                and p.owner.uid == workload
                and p.uid not in claimed
                and not p.deleting
                and p.created is not None
                and p.created >= evicted - timedelta(seconds=1)
            ),
            key=lambda p: (p.created or evicted, p.key),
        )
        if not fresh or not fresh[0].node_name:
            return False
        return self._landed_elsewhere(handle, ctx, fresh[0], "by a scheduler that knows no Reservation")

    def _await_ready(self, handle: JobHandle, ctx: _Pass) -> bool:
        job = handle.job
        ref = job.status.new_pod_ref
        if ref is None:  # ReplacementBound without a pod: written by someone else; look again
            self._write(handle, without_conditions(job.status, "ReplacementBound"))
            return True
        got = self.api.get_pod(ref.namespace, ref.name)
        if got is None or (ref.uid and got[1].uid != ref.uid):
            status = without_conditions(job.status, "ReplacementBound").model_copy(
                update={
                    "new_pod_ref": None,
                    "reason": "ReplacementGone",
                    "message": f"pod {ref.namespace}/{ref.name} is gone",
                }
            )
            self._write(handle, status)
            return False
        if not got[1].ready:
            return False
        message = f"replacement {ref.namespace}/{ref.name} is Ready on node {got[1].node_name}"
        status = with_condition(job.status, "ReplacementReady", ctx.now, reason="Ready", message=message)
        self._set_phase(handle, "Succeeded", "Succeeded", message, ctx.now, status)
        return False

    # ------------------------------------------------------------------------------ admission

    def _job_facts(self, job: PodMigrationJob, pods: dict[str, Pod]) -> JobFacts:
        ref = job.spec.pod_ref
        key = f"{ref.namespace}/{ref.name}"
        pod = pods.get(key)
        if pod is not None and (job.status.pod_uid or ref.uid) not in ("", pod.uid):
            pod = None
        annotations = job.metadata.annotations
        workload = job.status.workload.uid if job.status.workload else ""
        workload = workload or annotations.get(ANNOTATION_WORKLOAD_UID, "")
        if not workload and pod is not None and pod.owner is not None:
            workload = pod.owner.uid
        return JobFacts(
            name=job.name,
            namespace=ref.namespace,
            pod=key,
            phase=job.status.phase,
            created=job.metadata.creation_timestamp or datetime.min.replace(tzinfo=UTC),
            source_node=job.status.source_node
            or annotations.get(ANNOTATION_SOURCE_NODE, "")
            or (pod.node_name if pod else ""),
            workload=workload,
            cycle=annotations.get(ANNOTATION_CYCLE, ""),
            started=job.status.start_time,
            evicted=condition_time(job, "Evicted"),
            rank=importance(pod),
        )

    def _all_facts(self, ctx: _Pass) -> list[JobFacts]:
        snapshot = ctx.snapshot()
        pods = {p.key: p for p in snapshot.pods} if snapshot is not None else {}
        return [self._job_facts(h.job, pods) for h in ctx.handles]

    def _workloads(
        self, pending: Iterable[JobFacts], snapshot: Snapshot, pods: dict[str, Pod]
    ) -> dict[str, WorkloadFacts]:
        wanted = {f.workload for f in pending if f.workload}
        if not wanted:
            return {}
        ready: dict[str, set[str]] = {uid: set() for uid in wanted}
        sample: dict[str, Pod] = {}
        for pod in snapshot.pods:
            if pod.owner is None or pod.owner.uid not in wanted:
                continue
            sample.setdefault(pod.owner.uid, pod)
            if pod.ready and not pod.deleting and not pod.terminal:
                ready[pod.owner.uid].add(pod.key)
        out = {}
        for uid in wanted:
            example = sample.get(uid)
            workload = snapshot.workloads.get(uid)
            if workload is not None and workload.replicas is not None:
                replicas = workload.replicas
            elif example is not None:
                replicas = snapshot.replicas(example) or 0
            else:
                continue  # nothing left of it to count: the job's own checks will fail it
            label = (
                f"{workload.kind} {workload.namespace}/{workload.name}"
                if workload
                else (
                    f"{example.owner.kind} {example.namespace}/{example.owner.name}"
                    if example and example.owner
                    else uid
                )
            )
            out[uid] = WorkloadFacts(uid, label, replicas, frozenset(ready[uid]))
        return out

    def _admit(self, pending: list[JobHandle], ctx: _Pass) -> None:
        waiting: list[JobHandle] = []
        for handle in pending:
            job = handle.job
            try:
                deadline = job.deadline
                if deadline is not None and ctx.now >= deadline:
                    self._expire(handle, ctx)
                elif job.spec.paused:
                    self._note(handle, "Paused", "spec.paused is set: the job does not start")
                elif ctx.policy.dry_run:
                    self._note(handle, "DryRun", "the policy is in dryRun: the job does not start")
                elif self._due(handle, ctx.now):
                    waiting.append(handle)
            except ApiFailure as failure:
                self._failed_step(handle, ctx, failure)
        if not waiting:
            return
        snapshot = ctx.snapshot()
        if snapshot is None:
            return
        pods = {p.key: p for p in snapshot.pods}
        facts = {h.job.name: self._job_facts(h.job, pods) for h in ctx.handles}
        candidates = [facts[h.job.name] for h in waiting]
        verdicts = arbitrate(
            candidates,
            list(facts.values()),
            self._workloads(candidates, snapshot, pods),
            ctx.policy.migration,
            ctx.now,
            ctx.policy.evictor.min_replicas,
        )
        by_name = {h.job.name: h for h in waiting}
        for verdict in verdicts:
            handle = by_name[verdict.job]
            try:
                if verdict.admit:
                    if self._start(handle, ctx):
                        self._drive(handle, ctx)
                elif verdict.permanent:
                    self._set_phase(handle, "Failed", verdict.reason, verdict.message, ctx.now)
                else:
                    self._wait(handle, verdict, ctx)
            except ApiFailure as failure:
                self._failed_step(handle, ctx, failure)

    def _wait(self, handle: JobHandle, verdict: Verdict, ctx: _Pass) -> None:
        message = verdict.message
        if verdict.retry_after:
            message += f"; not before {format_time(ctx.now + timedelta(seconds=verdict.retry_after))}"
        self._note(handle, verdict.reason, message)

    def _start(self, handle: JobHandle, ctx: _Pass) -> bool:
        """Pending → Running: the pod must still exist with the same UID (else Failed MissingPod)."""
        job = handle.job
        got = self._pod_or_fail(handle, ctx)
        if got is None:
            return False
        _, pod = got
        refusal = hard_refusal(pod)
        if refusal is not None:
            self._set_phase(handle, "Failed", "NotEvictable", refusal, ctx.now)
            return False
        if job.spec.mode == "ReservationFirst" and pod.owner is None:
            self._set_phase(
                handle,
                "Failed",
                "NoController",
                "ReservationFirst waits for a replacement, but no controller will recreate this pod; "
                "use mode EvictDirectly to move it anyway",
                ctx.now,
            )
            return False
        owner = pod.owner
        status = handle.job.status.model_copy(
            update={
                "source_node": pod.node_name,
                "pod_uid": pod.uid,
                "workload": WorkloadReference(kind=owner.kind, name=owner.name, uid=owner.uid) if owner else None,
            }
        )
        annotation = job.metadata.annotations.get(ANNOTATION_WORKLOAD, "")
        self._set_phase(
            handle,
            "Running",
            "Started",
            f"moving pod {pod.key} from node {pod.node_name}" + (f" ({annotation})" if annotation else ""),
            ctx.now,
            status,
        )
        return True

    # ------------------------------------------------------------------------------ clean-up

    def _sweep(self, ctx: _Pass) -> None:
        """Delete Reservations whose job is gone or finished; expire unconsumed ones past their TTL."""
        jobs = {h.job.name: h.job for h in ctx.handles}
        for raw in ctx.reservations:
            meta = raw.get("metadata") or {}
            labels = meta.get("labels") or {}
            name = str(meta.get("name", ""))
            job = jobs.get(labels.get(LABEL_JOB, ""))
            theirs = owner_uid(raw)
            if job is not None and job.name in self._released:
                continue  # finished in this pass, which already released its Reservation
            try:
                if job is None or job.terminal or (theirs and job.metadata.uid and theirs != job.metadata.uid):
                    if self.api.delete_object(RESERVATIONS, name, str(meta.get("uid", ""))):
                        log.info("deleted an orphan reservation", reservation=name, job=labels.get(LABEL_JOB, ""))
                    continue
                reservation = parse_reservation(raw)
                self._expire_reservation(raw, reservation, ctx.now)
            except ApiFailure as failure:
                if not failure.not_found and not failure.conflict:
                    log.warning("reservation clean-up failed; will retry", reservation=name, error=str(failure))
            except ObjectError as err:
                log.warning("unreadable reservation left alone", reservation=name, error=str(err))

    def _expire_reservation(self, raw: dict[str, Any], reservation: Reservation, now: datetime) -> None:
        created = reservation.metadata.creation_timestamp
        if not reservation.holds_room or created is None or now < created + reservation.spec.ttl:
            return
        status = {**(raw.get("status") or {}), "phase": "Expired", "reason": "TTLExceeded"}
        self.api.write_status(RESERVATIONS, {**raw, "status": status})
        log.info("reservation expired", reservation=reservation.name, node=reservation.spec.node_name)

    def _retire(self, ctx: _Pass) -> None:
        """Delete finished jobs after jobRetention — but not before the cooldown and the workload
        rate limit, which are counted from these jobs, are done with them."""
        args = ctx.policy.migration
        keep = max(args.job_retention, args.cooldown, args.object_limiters.workload.duration)
        for handle in ctx.handles:
            job = handle.job
            if not job.terminal:
                continue
            ended = job.status.completion_time or job.metadata.creation_timestamp
            if ended is None or ctx.now - ended < keep:
                continue
            try:
                self._release(job)
                if self.api.delete_object(JOBS, job.name, job.metadata.uid):
                    self._log(job).info("finished migration job deleted", phase=job.status.phase)
            except ApiFailure as failure:
                if not failure.not_found and not failure.conflict:
                    self._log(job).warning("could not delete a finished job; will retry", error=str(failure))

    def _reject(self, raw: dict[str, Any], err: ObjectError, now: datetime) -> None:
        """A job we cannot read is failed (never acted on), once, with the field that is wrong."""
        found = raw.get("status")
        status: dict[str, Any] = found if isinstance(found, dict) else {}
        if status.get("phase") in TERMINAL_PHASES:
            return
        log.error("invalid migration job; failing it", job=raw["metadata"].get("name"), error=str(err))
        body = {
            **raw,
            "status": {
                **status,
                "phase": "Failed",
                "reason": "InvalidSpec",
                "message": str(err),
                "completionTime": format_time(now),
            },
        }
        try:
            self.api.write_status(JOBS, body)
        except ApiFailure as failure:
            log.warning("could not mark the invalid job failed", job=raw["metadata"].get("name"), error=str(failure))
            return
        if self.recorder is not None:
            self.recorder.warning(ObjectRef.of(raw), "InvalidSpec", str(err))

    def _publish(self, handles: list[JobHandle], invalid: list[dict[str, Any]]) -> None:
        counts = dict.fromkeys(("Pending", "Running", "Succeeded", "Failed", "Aborted"), 0)
        for handle in handles:
            counts[handle.job.status.phase] += 1
        counts["Failed"] += len(invalid)
        for phase, count in counts.items():
            metrics.JOBS.labels(phase).set(count)


def reserves(job: PodMigrationJob) -> bool:
    """Whether the job moves its pod through a Reservation."""
    return job.spec.mode == "ReservationFirst" and not without_reservation(job.status)


def without_reservation(status: PodMigrationJobStatus) -> bool:
    """A ReservationFirst job that started when no reservation-aware scheduler answered."""
    created = status.condition("ReservationCreated")
    return created is not None and created.status == "False" and created.reason == NO_RESERVATION_SCHEDULER
