"""The migration controller: drives every PodMigrationJob to an end (migration.md §3–6).

The API objects are the only state that matters: each pass lists the jobs and Reservations,
admits waiting jobs by the limits counted from those jobs, and takes each running job one or more
idempotent steps further. Every step is keyed by the job (the Reservation is named after it, the
eviction carries the pod's UID), so a controller that starts fresh — after a crash, or as a new
leader — continues every job where the last one stopped, without a second eviction.

This module is the loop: it lists, admits, and hands each running job's next step (`steps.next_step`)
to the driver of the job's move mode, each in its own module over the shared plumbing of `driving`
(applying a decision: status writes, Events, logs, metrics; retries; the pod; the eviction):
- `reservation_first`: reserve, wait for the scheduler side to hold the room, evict, follow the
  replacement recorded on the Reservation;
- `steered`: EvictDirectly, and moves without a reservation-aware scheduler (the source tainted,
  the move judged by where the replacement lands);
- `make_before_break`: the replacement rolled out and Ready before the pod goes.
The decisions live apart: `steps` and `rollout_steps` (pure), `admission` and `arbiter` (which
Pending jobs may start), `pass_reads` (what one pass reads), `cleanup` (Reservations released and
swept, job retention, invalid jobs).

Memory holds only what is safe to lose: retry backoff, the eviction call rate, the nodes tainted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, Final, Protocol

import structlog

from descheduler import decode, metrics
from descheduler.events import EventRecorder
from descheduler.migration import steps
from descheduler.migration.admission import workload_facts
from descheduler.migration.api import ApiFailure, Evictions, MigrationApi
from descheduler.migration.arbiter import arbitrate
from descheduler.migration.cleanup import Cleanup
from descheduler.migration.driving import Backoff, Driving
from descheduler.migration.make_before_break import MakeBeforeBreak
from descheduler.migration.objects import (
    ANNOTATION_WORKLOAD,
    JOBS,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    ObjectError,
    PodMigrationJob,
    parse_job,
)
from descheduler.migration.pass_reads import JobHandle, PassReads
from descheduler.migration.presence import SchedulerPresence
from descheduler.migration.reservation_first import ReservationFirst
from descheduler.migration.steered import Steered
from descheduler.migration.steps import Hold, Stage, Transition
from descheduler.policy import Policy
from descheduler.snapshot import Snapshot

log = structlog.get_logger(__name__)

MAX_STEPS_PER_PASS: Final = 12
CONFLICT_RETRIES: Final = 3

__all__ = ["Backoff", "MigrationController"]


class Driver(Protocol):
    """One move mode's steps (`reservation_first`, `steered`, `make_before_break`)."""

    def step(self, handle: JobHandle, stage: Stage, reads: PassReads) -> bool: ...

    def expire(self, handle: JobHandle, reads: PassReads) -> None: ...


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
        evictions: Evictions | None = None,
    ) -> None:
        """`backoff` paces retries after API errors; `budget_backoff` retries after a
        PodDisruptionBudget said "not now" (default 5 s doubling to 1 min); `presence` tells whether a
        reservation-aware scheduler answers (None: assume one does); `evictions` the client and bound
        for evicting pods (see MigrationApi; None: the shared client)."""
        self.api = MigrationApi(api_client, evictions)
        self.presence = presence
        self.policy = policy
        self.snapshot = snapshot
        self.clock = clock
        self.recorder = recorder
        self.cleanup = Cleanup(self.api, recorder)
        self.driving = Driving(
            self.api,
            recorder,
            self.cleanup,
            backoff or Backoff(),
            budget_backoff or Backoff(timedelta(seconds=5), timedelta(minutes=1)),
        )
        self.reservation_first = ReservationFirst(self.driving, presence)
        self.steered = Steered(self.driving)
        self.make_before_break = MakeBeforeBreak(self.driving, self.reservation_first)
        self._stop: threading.Event | None = None  # the running pass's (reconcile_once)

    def driver(self, job: PodMigrationJob) -> Driver:
        """The driver of the job's move mode, as its status stands (a ReservationFirst job that found
        no reservation-aware scheduler goes on without a Reservation)."""
        if job.spec.mode == "MakeBeforeBreak":
            return self.make_before_break
        return self.reservation_first if steps.reserves(job) else self.steered

    # ------------------------------------------------------------------------------ the loop

    def run(self, stop: threading.Event, period: float = 2.0) -> None:
        """Reconcile every `period` seconds until `stop` is set; one failing pass never ends the loop."""
        while not stop.is_set():
            try:
                self.reconcile_once(stop)
            except Exception:
                log.exception("migration reconcile pass failed")
            stop.wait(period)

    def reconcile_once(self, stop: threading.Event | None = None) -> None:
        """List; drive the Running jobs; admit the Pending ones; clean up; publish the counts.

        `stop` set during the pass (the Lease lost, or shutting down) ends it before its next step:
        the step in progress finishes, no other begins, so a replica that no longer leads does not
        go on acting next to the one that does (a pass can outlast the Lease by many seconds when
        each call waits out retries)."""
        self._stop = stop
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
                self.cleanup.reject(raw, err, now)
        reads = PassReads(now, policy, handles, reservations, self.snapshot)
        self.cleanup.new_pass()
        self.driving.refresh_eviction_rate(policy)
        for handle in sorted((h for h in handles if h.job.status.phase == "Running"), key=lambda h: h.job.name):
            if self._stopped():
                return
            self._drive(handle, reads)
        self._admit([h for h in handles if h.job.status.phase == "Pending"], reads)
        if self._stopped():
            return
        self.steered.reconcile_taints(handles, reads)
        self.cleanup.sweep(reads)
        self.cleanup.retire(reads)
        _publish(handles, invalid)
        self.driving.forget_retries_except({h.uid for h in handles})

    def _stopped(self) -> bool:
        """The pass was told to stop (see reconcile_once)."""
        return self._stop is not None and self._stop.is_set()

    def _drive(self, handle: JobHandle, reads: PassReads) -> None:
        """Take the job as far as it can go now; a conflict re-reads the job and decides again."""
        for _ in range(CONFLICT_RETRIES):
            try:
                for _ in range(MAX_STEPS_PER_PASS):
                    if self._stopped() or not self._step(handle, reads):
                        break
                return
            except ApiFailure as failure:
                if failure.conflict:
                    try:
                        fresh = self.api.get_object(JOBS, handle.job.name)
                    except ApiFailure as again:
                        self.driving.failed_step(handle, reads, again)
                        return
                    if fresh is None:
                        return
                    handle.refresh(fresh)
                    continue
                self.driving.failed_step(handle, reads, failure)
                return
            except (decode.DecodeError, ObjectError) as err:
                # Never act on data that could not be read: wait and read again.
                handle.log().warning("cannot read an object this job needs", error=str(err))
                self.driving.retry_later(handle, reads.now, self.driving.backoff)
                return
            except Exception:
                handle.log().exception("migration step failed unexpectedly")
                self.driving.retry_later(handle, reads.now, self.driving.backoff)
                return
        self.driving.retry_later(handle, reads.now, self.driving.backoff)

    def _step(self, handle: JobHandle, reads: PassReads) -> bool:
        """One step; True when it moved the job on and the next step may follow at once."""
        step = steps.next_step(
            handle.job, reads.now, dry_run=reads.policy.dry_run, due=self.driving.due(handle, reads.now)
        )
        match step:
            case None:
                return False
            case Hold():
                self.driving.note(handle, step)
                return False
            case Transition():
                self.driving.transition(handle, step, reads.now)
                return False
            case "Expire":
                self._expire(handle, reads)
                return False
        return self.driver(handle.job).step(handle, step, reads)

    # ------------------------------------------------------------------------------ admission

    def _admit(self, pending: list[JobHandle], reads: PassReads) -> None:
        """Pending jobs: expire or hold those that must, arbitrate the rest, start the admitted."""
        waiting: list[JobHandle] = []
        for handle in pending:
            if self._stopped():
                return
            try:
                step = steps.pending_step(handle.job, reads.now, dry_run=reads.policy.dry_run)
                if step == "Expire":
                    self._expire(handle, reads)
                elif isinstance(step, Hold):
                    self.driving.note(handle, step)
                elif self.driving.due(handle, reads.now):
                    waiting.append(handle)
            except ApiFailure as failure:
                self.driving.failed_step(handle, reads, failure)
        if not waiting:
            return
        snapshot = reads.snapshot()
        if snapshot is None:
            return
        facts = {f.name: f for f in reads.job_facts()}
        candidates = [facts[h.job.name] for h in waiting]
        verdicts = arbitrate(
            candidates,
            list(facts.values()),
            workload_facts(snapshot, (f.workload for f in candidates)),
            reads.policy.migration,
            reads.now,
            reads.policy.evictor.min_replicas,
        )
        by_name = {h.job.name: h for h in waiting}
        for verdict in verdicts:
            if self._stopped():
                return
            handle = by_name[verdict.job]
            try:
                if verdict.admit:
                    if self._start(handle, reads):
                        self._drive(handle, reads)
                elif verdict.permanent:
                    self.driving.transition(handle, Transition("Failed", verdict.reason, verdict.message), reads.now)
                else:
                    self.driving.note(handle, steps.waiting(verdict, reads.now))
            except ApiFailure as failure:
                self.driving.failed_step(handle, reads, failure)

    def _start(self, handle: JobHandle, reads: PassReads) -> bool:
        """Pending → Running: the pod must still exist with the same UID (else Failed MissingPod)."""
        fetched = self.driving.pod_or_fail(handle, reads)
        if fetched is None:
            return False
        job = handle.job
        refusal = steps.start_refusal(job, fetched.pod)
        if refusal is not None:
            self.driving.transition(handle, refusal, reads.now)
            return False
        self.driving.transition(
            handle, steps.started(job, fetched.pod, job.metadata.annotations.get(ANNOTATION_WORKLOAD, "")), reads.now
        )
        return True

    def _expire(self, handle: JobHandle, reads: PassReads) -> None:
        """TTL exceeded: the driver of the job's mode ends it."""
        self.driver(handle.job).expire(handle, reads)


def _publish(handles: list[JobHandle], invalid: list[dict[str, Any]]) -> None:
    """The jobs by phase, as a metric (an invalid job counts as Failed)."""
    counts = dict.fromkeys(("Pending", "Running", "Succeeded", "Failed", "Aborted"), 0)
    for handle in handles:
        counts[handle.job.status.phase] += 1
    counts["Failed"] += len(invalid)
    for phase, count in counts.items():
        metrics.JOBS.labels(phase).set(count)
