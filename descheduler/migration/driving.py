"""What every move mode's driver shares: applying a step's decision to its job, retries, the pod.

A driver (`reservation_first`, `steered`, `make_before_break`) reads what its step needs, asks
`steps` (or `rollout_steps`) what that means, and hands the answer to `Driving`, which carries it
out: the status written with its resourceVersion, an Event, a log line, a metric; a terminal phase
releases the job's Reservation. `Driving` also keeps what is safe to lose (each job's retry backoff,
the eviction call rate), reads the job's pod, evicts it, and follows a bound replacement to Ready,
the steps that several modes take alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from descheduler import metrics
from descheduler.events import EventRecorder, EventType, ObjectRef
from descheduler.migration import steps
from descheduler.migration.api import ApiFailure, FetchedPod, MigrationApi
from descheduler.migration.cleanup import Cleanup
from descheduler.migration.objects import (
    JOBS,
    REPLACEMENT_ELSEWHERE,
    TERMINAL_PHASES,
    JobPhase,
    PodMigrationJobStatus,
)
from descheduler.migration.pass_reads import JobHandle, PassReads
from descheduler.migration.steps import Elsewhere, GoWithoutReservation, Hold, Record, ReserveAgain, Transition
from descheduler.model import Pod
from descheduler.policy import Policy
from descheduler.tokenbucket import TokenBucket

_PHASE_EVENTS: Final[dict[str, tuple[EventType, str]]] = {
    "Running": ("Normal", "MigrationStarted"),
    "Succeeded": ("Normal", "MigrationSucceeded"),
    "Failed": ("Warning", "MigrationFailed"),
    "Aborted": ("Warning", "MigrationAborted"),
}
_RESULTS: Final = {"Succeeded": "succeeded", "Failed": "failed", "Aborted": "aborted"}
# A replacement that went elsewhere than planned is its own outcome: its Event and metric say so.
_ELSEWHERE_EVENT: Final[tuple[EventType, str]] = ("Warning", REPLACEMENT_ELSEWHERE)
ELSEWHERE_RESULT: Final = "elsewhere"

Outcome = Record | Transition | Hold | Elsewhere | ReserveAgain | GoWithoutReservation


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


@dataclass(frozen=True, slots=True)
class Lost:
    """The job's pod is no longer its pod to move (`why`)."""

    why: str


class Driving:
    """The shared plumbing of the drivers: apply, record, transition; retries; the pod; eviction."""

    def __init__(
        self,
        api: MigrationApi,
        recorder: EventRecorder | None,
        cleanup: Cleanup,
        backoff: Backoff,
        budget_backoff: Backoff,
    ) -> None:
        self.api = api
        self.recorder = recorder
        self.cleanup = cleanup
        self.backoff = backoff
        self.budget_backoff = budget_backoff
        self._retries: dict[str, _Retry] = {}
        self._evictions: TokenBucket | None = None
        self._eviction_rate: tuple[float, int] | None = None

    # ------------------------------------------------------------------------------ applying

    def apply(self, handle: JobHandle, outcome: Outcome, reads: PassReads) -> bool:
        """Carry out a step's decision; True when the job moved on and its next step may follow."""
        match outcome:
            case Record():
                self.record(handle, outcome)
                return True
            case Transition():
                self.transition(handle, outcome, reads.now)
                return False
            case Hold():
                self.note(handle, outcome)
                return False
            case Elsewhere():
                self.cleanup.release(handle)
                crowded = reads.why_crowded(outcome.replacement)
                return self.apply(handle, steps.landed_elsewhere(handle.job, outcome, crowded, reads.now), reads)
            case ReserveAgain():
                status = steps.forgotten(handle.job.status, "ReservationLost", outcome.message)
                self.write(handle, status)
                handle.log().warning("reservation lost before eviction; reserving again", state=outcome.state)
                return False
            case GoWithoutReservation():
                # The scheduler went away before it held the room: nothing was done to the pod yet.
                metrics.MOVES_WITHOUT_RESERVATION.labels(outcome.cause).inc()
                self.cleanup.release(handle)
                self.write(handle, steps.forgotten(handle.job.status))
                return self.apply(handle, steps.unreserved(handle.job, outcome.why, reads.now), reads)
        raise AssertionError(f"unknown outcome {outcome!r}")

    # ------------------------------------------------------------------------------ writing

    def record(self, handle: JobHandle, record: Record) -> None:
        """Write a step's status, then say so (Event, log)."""
        self.write(handle, record.status)
        if record.progress:
            self.progressed(handle)
        if record.event:
            self.event(handle, "Warning" if record.warning else "Normal", record.event, record.message)
        if record.log:
            bound = handle.log()
            (bound.warning if record.warning else bound.info)(record.log, **dict(record.fields))

    def write(self, handle: JobHandle, status: PodMigrationJobStatus) -> None:
        body = dict(handle.raw)
        body["status"] = status.wire()
        handle.refresh(self.api.write_status(JOBS, body))

    def note(self, handle: JobHandle, hold: Hold) -> None:
        """Say in the status why the job is waiting (written only when it changes)."""
        status = handle.job.status
        if status.reason == hold.reason and status.message == hold.message:
            return
        self.write(handle, status.model_copy(update={"reason": hold.reason, "message": hold.message}))
        handle.log().info("migration job waiting", why=hold.reason, detail=hold.message)

    def transition(self, handle: JobHandle, change: Transition, now: datetime) -> None:
        """Change phase, then say so (Event, log, metric); a terminal phase releases the Reservation."""
        phase: JobPhase = change.phase
        reason, message = change.reason, change.message
        base = change.status or handle.job.status
        update: dict[str, Any] = {"phase": phase, "reason": reason, "message": message}
        if phase == "Running" and base.start_time is None:
            update["start_time"] = now
        if phase in TERMINAL_PHASES:
            update["completion_time"] = now
        self.write(handle, base.model_copy(update=update))
        self.progressed(handle)
        job = handle.job
        elsewhere = phase == "Failed" and reason == REPLACEMENT_ELSEWHERE
        event_type, event_reason = _ELSEWHERE_EVENT if elsewhere else _PHASE_EVENTS[phase]
        self.event(handle, event_type, event_reason, f"{reason}: {message}" if message else reason)
        bound = handle.log()
        if phase in TERMINAL_PHASES:
            result = ELSEWHERE_RESULT if elsewhere else _RESULTS[phase]
            metrics.MIGRATIONS.labels(job.spec.strategy or "unknown", result).inc()
            self.cleanup.release(handle)
            (bound.info if phase == "Succeeded" else bound.warning)(
                f"migration job {phase.lower()}", why=reason, detail=message
            )
        else:
            bound.info("migration job started", why=reason, detail=message)

    def event(self, handle: JobHandle, event_type: EventType, reason: str, message: str) -> None:
        if self.recorder is not None:
            job = handle.job
            ref = ObjectRef("PodMigrationJob", job.name, uid=job.metadata.uid, api_version=job.api_version)
            self.recorder.record(ref, event_type, reason, message)

    # ------------------------------------------------------------------------------ reading the pod

    def live_pod(self, handle: JobHandle) -> FetchedPod | Lost:
        """The job's pod if it is still the same pod and not on its way out."""
        ref = handle.job.spec.pod_ref
        fetched = self.api.get_pod(ref.namespace, ref.name)
        why = steps.why_pod_lost(handle.job, fetched.pod if fetched is not None else None)
        return Lost(why) if why or fetched is None else fetched

    def pod_or_fail(self, handle: JobHandle, reads: PassReads) -> FetchedPod | None:
        """The job's pod, or None after failing the job MissingPod (before anything was done to it)."""
        live = self.live_pod(handle)
        if isinstance(live, Lost):
            self.transition(handle, Transition("Failed", "MissingPod", live.why), reads.now)
            return None
        return live

    # ------------------------------------------------------------------------------ evicting

    def evicted_before(self, handle: JobHandle, lost: Lost, reads: PassReads) -> bool:
        """The pod left before this job evicted it: by an earlier instance that stopped before
        recording it, or by someone else. Recorded as evicted, never evicted again."""
        record = steps.evicted(handle.job, steps.POD_GONE, f"{lost.why}; not evicted again", reads.now)
        return self.apply(handle, record, reads)

    def evict(
        self, handle: JobHandle, reads: PassReads, pod: Pod, before: Callable[[JobHandle, str], None] | None = None
    ) -> bool:
        """Evict (or delete) the pod at the policy's eviction rate and record it; `before` is called
        with the pod's node just before the call (the steered mode taints it)."""
        job = handle.job
        assert self._evictions is not None
        if not self._evictions.take(reads.now.timestamp()):
            return False  # evictQPS/evictBurst: the next pass tries again
        if before is not None:
            before(handle, pod.node_name)
        try:
            if job.spec.eviction_policy == "Delete":
                self.api.delete_pod(pod.namespace, pod.name, pod.uid)
            else:
                self.api.evict_pod(pod.namespace, pod.name, pod.uid)
        except ApiFailure as failure:
            return self._eviction_refused(handle, reads, failure)
        metrics.EVICTIONS.labels("success").inc()
        verb = "Deleted" if job.spec.eviction_policy == "Delete" else "Evicted"
        if self.recorder is not None:
            ref = ObjectRef("Pod", pod.name, pod.namespace, pod.uid)
            self.recorder.normal(ref, "Descheduled", steps.descheduled_message(job, verb))
        handle.log().info("pod evicted", policy=job.spec.eviction_policy)
        record = steps.evicted(job, verb, f"pod {pod.key} {verb.lower()} from node {pod.node_name}", reads.now)
        return self.apply(handle, record, reads)

    def _eviction_refused(self, handle: JobHandle, reads: PassReads, failure: ApiFailure) -> bool:
        job = handle.job
        bound = handle.log()
        if failure.not_found:
            return self.apply(
                handle,
                steps.evicted(job, steps.POD_GONE, "the pod was gone when it was to be evicted", reads.now),
                reads,
            )
        if failure.disruption_budget:
            metrics.EVICTIONS.labels("pdb_blocked").inc()
            self.retry_later(handle, reads.now, self.budget_backoff)
            detail = "; ".join((failure.message, *failure.details)) if failure.details else failure.message
            if steps.reserves(job):
                # An acknowledged Reservation draws the workload's next pod to it; while a budget says
                # "not now" that pod is another move's replacement and would take this room. Release
                # it, and reserve again when the eviction is retried.
                self.cleanup.release(handle)
                self.write(handle, steps.forgotten(handle.job.status))
                detail += "; its Reservation is released until then"
            self.note(handle, Hold("DisruptionBudget", f"eviction refused, will retry: {detail}"))
            self.event(
                handle, "Warning", "EvictionBlocked", f"a PodDisruptionBudget allows no disruption now: {detail}"
            )
            bound.info("eviction blocked by a disruption budget; will retry", detail=detail)
            return False
        metrics.EVICTIONS.labels("error").inc()
        if failure.multiple_budgets:
            self.transition(handle, Transition("Failed", "MultiplePodDisruptionBudgets", failure.message), reads.now)
            return False
        self.retry_later(handle, reads.now, self.backoff, failure.retry_after)
        if failure.throttled:
            bound.info("eviction throttled by the API server; will retry", retry_after=failure.retry_after)
            return False
        self.note(handle, Hold("EvictionError", f"will retry: {failure}"))
        bound.warning("eviction failed; will retry", error=str(failure))
        return False

    # ------------------------------------------------------------------------------ after the eviction

    def await_ready(self, handle: JobHandle, reads: PassReads) -> bool:
        """The bound replacement recorded on the job: Succeeded once it is Ready."""
        ref = handle.job.status.new_pod_ref
        fetched = self.api.get_pod(ref.namespace, ref.name) if ref is not None else None
        outcome = steps.readiness(handle.job, fetched.pod if fetched is not None else None, reads.now)
        if outcome is None:
            return False
        if isinstance(outcome, Record):
            self.record(handle, outcome)
            return ref is None  # a condition without a pod: look again at once
        return self.apply(handle, outcome, reads)

    def expire(self, handle: JobHandle, reads: PassReads) -> None:
        """TTL exceeded (every mode but MakeBeforeBreak): read what tells whether the pod was evicted
        and its replacement made it."""
        job = handle.job
        evicted = job.status.has("Evicted")
        if steps.may_be_evicted_unrecorded(job):
            # A controller that evicted and then stopped before recording it: the pod says so.
            evicted = isinstance(self.live_pod(handle), Lost)
        replacement_ready = False
        ref = job.status.new_pod_ref
        if evicted and job.spec.mode != "EvictDirectly" and ref is not None and job.status.has("ReplacementBound"):
            fetched = self.api.get_pod(ref.namespace, ref.name)
            replacement_ready = (
                fetched is not None and fetched.pod.uid == (ref.uid or fetched.pod.uid) and fetched.pod.ready
            )
        outcome = steps.expiry(job, evicted, replacement_ready)
        if outcome == "AwaitReady":
            self.await_ready(handle, reads)
        else:
            self.transition(handle, outcome, reads.now)

    # ------------------------------------------------------------------------------ retries

    def refresh_eviction_rate(self, policy: Policy) -> None:
        rate = (policy.migration.evict_qps, policy.migration.evict_burst)
        if rate != self._eviction_rate:
            self._evictions = TokenBucket(*rate)
            self._eviction_rate = rate

    def due(self, handle: JobHandle, now: datetime) -> bool:
        retry = self._retries.get(handle.uid)
        return retry is None or now >= retry.not_before

    def retry_later(self, handle: JobHandle, now: datetime, backoff: Backoff, at_least: float | None = None) -> None:
        retry = self._retries.get(handle.uid)
        attempts = (retry.attempts if retry else 0) + 1
        delay = backoff.delay(attempts)
        if at_least is not None:
            delay = max(delay, timedelta(seconds=at_least))
        self._retries[handle.uid] = _Retry(attempts, now + delay)

    def progressed(self, handle: JobHandle) -> None:
        self._retries.pop(handle.uid, None)

    def failed_step(self, handle: JobHandle, reads: PassReads, failure: ApiFailure) -> None:
        handle.log().warning("migration step failed; will retry", error=str(failure))
        self.retry_later(handle, reads.now, self.backoff, failure.retry_after)

    def forget_retries_except(self, live: set[str]) -> None:
        """Drop the backoff of jobs that are gone (`live`: the UIDs of the jobs listed)."""
        self._retries = {uid: r for uid, r in self._retries.items() if uid in live}
