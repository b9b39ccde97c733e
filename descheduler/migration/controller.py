"""The migration controller: drives every PodMigrationJob to an end (migration.md §3–6).

The API objects are the only state that matters: each pass lists the jobs and Reservations,
admits waiting jobs by the limits counted from those jobs, and takes each running job one or more
idempotent steps further. Every step is keyed by the job (the Reservation is named after it, the
eviction carries the pod's UID), so a controller that starts fresh — after a crash, or as a new
leader — continues every job where the last one stopped, without a second eviction.

This module is the loop and the imperative shell: it lists, decides by calling pure functions, and
applies what they decide (API writes, evictions, Events, logs, metrics). The decisions live apart:
- `steps`: a job's next step from its status, and what each step's reads mean (pure);
- `admission` and `arbiter`: which Pending jobs may start (pure facts, pure verdicts);
- `pass_reads`: what one pass reads (jobs, Reservations, the snapshot and placement, lazily);
- `cleanup`: releasing and sweeping Reservations, job retention, invalid jobs.

Memory holds only what is safe to lose: retry backoff and the eviction call rate.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

import structlog

from descheduler import decode, metrics
from descheduler.events import EventRecorder, EventType, ObjectRef
from descheduler.migration import steps
from descheduler.migration.admission import workload_facts
from descheduler.migration.api import ApiFailure, Evictions, FetchedPod, MigrationApi
from descheduler.migration.arbiter import arbitrate
from descheduler.migration.cleanup import Cleanup
from descheduler.migration.objects import (
    ANNOTATION_WORKLOAD,
    JOBS,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    RESERVATIONS,
    TERMINAL_PHASES,
    JobPhase,
    ObjectError,
    PodMigrationJobStatus,
    Reservation,
    parse_job,
    parse_reservation,
)
from descheduler.migration.pass_reads import JobHandle, PassReads
from descheduler.migration.presence import Route, SchedulerPresence, never_without
from descheduler.migration.records import owner_uid, reservation_body, reservation_name
from descheduler.migration.steering import SourceSteering
from descheduler.migration.steps import Elsewhere, GoWithoutReservation, Hold, Record, ReserveAgain, Transition
from descheduler.model import Pod
from descheduler.policy import Policy
from descheduler.snapshot import Snapshot
from descheduler.tokenbucket import TokenBucket

log = structlog.get_logger(__name__)

MAX_STEPS_PER_PASS: Final = 12
# Every node is checked for a moving-off taint no move needs any more this often (and at start).
STEERING_SWEEP: Final = timedelta(minutes=5)
CONFLICT_RETRIES: Final = 3
_PHASE_EVENTS: Final[dict[str, tuple[EventType, str]]] = {
    "Running": ("Normal", "MigrationStarted"),
    "Succeeded": ("Normal", "MigrationSucceeded"),
    "Failed": ("Warning", "MigrationFailed"),
    "Aborted": ("Warning", "MigrationAborted"),
}
_RESULTS: Final = {"Succeeded": "succeeded", "Failed": "failed", "Aborted": "aborted"}


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
class _Lost:
    """The job's pod is no longer its pod to move (`why`)."""

    why: str


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
        self.backoff = backoff or Backoff()
        self.budget_backoff = budget_backoff or Backoff(timedelta(seconds=5), timedelta(minutes=1))
        self.cleanup = Cleanup(self.api, recorder)
        self.steering = SourceSteering(self.api)
        self._tainted: set[str] = set()  # nodes this process tainted and has not untainted yet
        self._steering_swept: datetime | None = None  # when every node was last checked for our taint
        self._retries: dict[str, _Retry] = {}
        self._evictions: TokenBucket | None = None
        self._eviction_rate: tuple[float, int] | None = None
        self._stop: threading.Event | None = None  # the running pass's (reconcile_once)

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
        self._refresh_eviction_rate(policy)
        for handle in sorted((h for h in handles if h.job.status.phase == "Running"), key=lambda h: h.job.name):
            if self._stopped():
                return
            self._drive(handle, reads)
        self._admit([h for h in handles if h.job.status.phase == "Pending"], reads)
        if self._stopped():
            return
        self._steer(handles, reads)
        self.cleanup.sweep(reads)
        self.cleanup.retire(reads)
        _publish(handles, invalid)
        live = {h.uid for h in handles}
        self._retries = {uid: r for uid, r in self._retries.items() if uid in live}

    def _steer(self, handles: list[JobHandle], reads: PassReads) -> None:
        """Take the moving-off taint off every node with no move without a Reservation in flight:
        the nodes this process tainted at each pass, every node at start and every STEERING_SWEEP
        (another leader's, or a crashed one's, leftovers)."""
        in_flight = {
            h.job.status.source_node
            for h in handles
            if h.job.status.phase == "Running"
            and steps.without_reservation(h.job.status)
            and h.job.status.source_node
            and reads.policy.migration.steer_off_source
        }
        try:
            if self._steering_swept is None or reads.now - self._steering_swept >= STEERING_SWEEP:
                self.steering.reconcile(in_flight)
                self._steering_swept = reads.now
                self._tainted &= in_flight
                return
            for node in sorted(self._tainted - in_flight):
                self.steering.untaint(node)
                self._tainted.discard(node)
        except ApiFailure as failure:
            log.warning("cannot remove the moving-off taint; will retry", error=str(failure))

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
                        self._failed_step(handle, reads, again)
                        return
                    if fresh is None:
                        return
                    handle.refresh(fresh)
                    continue
                self._failed_step(handle, reads, failure)
                return
            except (decode.DecodeError, ObjectError) as err:
                # Never act on data that could not be read: wait and read again.
                handle.log().warning("cannot read an object this job needs", error=str(err))
                self._retry_later(handle, reads.now, self.backoff)
                return
            except Exception:
                handle.log().exception("migration step failed unexpectedly")
                self._retry_later(handle, reads.now, self.backoff)
                return
        self._retry_later(handle, reads.now, self.backoff)

    def _step(self, handle: JobHandle, reads: PassReads) -> bool:
        """One step; True when it moved the job on and the next step may follow at once."""
        step = steps.next_step(handle.job, reads.now, dry_run=reads.policy.dry_run, due=self._due(handle, reads.now))
        match step:
            case None:
                return False
            case Hold():
                self._note(handle, step)
                return False
            case Transition():
                self._transition(handle, step, reads.now)
                return False
            case "Expire":
                self._expire(handle, reads)
                return False
            case "Reserve":
                return self._reserve(handle, reads)
            case "AwaitAcknowledged":
                return self._await_acknowledged(handle, reads)
            case "Evict":
                return self._evict(handle, reads)
            case "AwaitBound":
                return self._await_bound(handle, reads)
            case "AwaitStockReplacement":
                return self._await_stock_replacement(handle, reads)
            case "AwaitReady":
                return self._await_ready(handle, reads)
            case "StartReplacement":
                return self._start_replacement(handle, reads)
            case "AwaitPodGone":
                return self._await_pod_gone(handle, reads)
        raise AssertionError(f"unknown step {step!r}")

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
                    self._note(handle, step)
                elif self._due(handle, reads.now):
                    waiting.append(handle)
            except ApiFailure as failure:
                self._failed_step(handle, reads, failure)
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
                    self._transition(handle, Transition("Failed", verdict.reason, verdict.message), reads.now)
                else:
                    self._note(handle, steps.waiting(verdict, reads.now))
            except ApiFailure as failure:
                self._failed_step(handle, reads, failure)

    def _start(self, handle: JobHandle, reads: PassReads) -> bool:
        """Pending → Running: the pod must still exist with the same UID (else Failed MissingPod)."""
        fetched = self._pod_or_fail(handle, reads)
        if fetched is None:
            return False
        job = handle.job
        refusal = steps.start_refusal(job, fetched.pod)
        if refusal is not None:
            self._transition(handle, refusal, reads.now)
            return False
        self._transition(
            handle, steps.started(job, fetched.pod, job.metadata.annotations.get(ANNOTATION_WORKLOAD, "")), reads.now
        )
        return True

    # ------------------------------------------------------------------------------ the steps

    def _expire(self, handle: JobHandle, reads: PassReads) -> None:
        """TTL exceeded: read what tells whether the pod was evicted and its replacement made it."""
        job = handle.job
        if job.spec.mode == "MakeBeforeBreak":
            self._expire_rollout(handle, reads)
            return
        evicted = job.status.has("Evicted")
        if steps.may_be_evicted_unrecorded(job):
            # A controller that evicted and then stopped before recording it: the pod says so.
            evicted = isinstance(self._live_pod(handle), _Lost)
        replacement_ready = False
        ref = job.status.new_pod_ref
        if evicted and job.spec.mode != "EvictDirectly" and ref is not None and job.status.has("ReplacementBound"):
            fetched = self.api.get_pod(ref.namespace, ref.name)
            replacement_ready = (
                fetched is not None and fetched.pod.uid == (ref.uid or fetched.pod.uid) and fetched.pod.ready
            )
        outcome = steps.expiry(job, evicted, replacement_ready)
        if outcome == "AwaitReady":
            self._await_ready(handle, reads)
        else:
            self._transition(handle, outcome, reads.now)

    def _reserve(self, handle: JobHandle, reads: PassReads) -> bool:
        """Hold room for the replacement: adopt the Reservation found under the job's name, or make one."""
        fetched = self._pod_or_fail(handle, reads)
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
        return self._apply(
            handle, steps.reserved(handle.job, name, reservation.spec.node_name, steps.ADOPTED, reads.now), reads
        )

    def _make_reservation(self, handle: JobHandle, name: str, fetched: FetchedPod, reads: PassReads) -> bool:
        """Choose a node and create the Reservation on it (or move without one when no
        reservation-aware scheduler answers)."""
        job, pod = handle.job, fetched.pod
        route = self._route(pod.scheduler_name, reads, job.spec.mode)
        if route.way == "Wait":
            return self._apply(handle, steps.awaiting_scheduler(job, route.why, reads.now), reads)
        if route.way == "Without":
            metrics.MOVES_WITHOUT_RESERVATION.labels(route.cause).inc()
            return self._apply(handle, steps.unreserved(job, route.why, reads.now), reads)
        placement = reads.placement()
        if placement is None:
            return self._apply(
                handle, Hold("WaitingForClusterState", "no snapshot of the cluster to check the target against"), reads
            )
        target = placement.choose(pod, job.spec.target_node, reads.cooling())
        if target.node is None:
            outcome = steps.no_target(target)
            if isinstance(outcome, Hold):
                self._retry_later(handle, reads.now, self.backoff)
            return self._apply(handle, outcome, reads)
        if target.why:
            handle.log().info("planned target no longer fits; chose another", chosen=target.node, why=target.why)
        try:
            self.api.create_object(RESERVATIONS, reservation_body(job, pod, fetched.raw, target.node, reads.now))
        except ApiFailure as failure:
            if failure.already_exists:
                return True  # made by us a moment ago: the next step adopts it
            raise
        placement.hold(pod, target.node)
        return self._apply(handle, steps.reserved(job, name, target.node, target.why, reads.now), reads)

    def _route(self, scheduler_name: str, reads: PassReads, mode: str = "ReservationFirst") -> Route:
        """How the move of a pod with this schedulerName goes (without `presence`: a Reservation)."""
        if self.presence is None:
            return Route("Reservation", "")
        route = self.presence.route(scheduler_name, reads.now, reads.policy.migration.reservation_scheduler)
        return never_without(route, mode)

    def _reservation_of(self, handle: JobHandle) -> tuple[str, Reservation | None]:
        """The job's Reservation, read now: its name, and the object (None when there is none)."""
        job = handle.job
        name = job.status.reservation_ref.name if job.status.reservation_ref else reservation_name(job)
        raw = self.api.get_object(RESERVATIONS, name)
        return name, parse_reservation(raw) if raw is not None else None

    def _await_acknowledged(self, handle: JobHandle, reads: PassReads) -> bool:
        name, reservation = self._reservation_of(handle)
        route = Route("Reservation", "")
        if reservation is not None and reservation.holds_room and reservation.status.phase != "Available":
            route = self._route(reservation.spec.template.scheduler_name, reads, handle.job.spec.mode)
        absent = route.why if route.way == "Without" else ""
        outcome = steps.acknowledgement(handle.job, name, reservation, absent, reads.now, route.cause)
        return self._apply(handle, outcome, reads)

    def _evict(self, handle: JobHandle, reads: PassReads) -> bool:
        job = handle.job
        live = self._live_pod(handle)
        if isinstance(live, _Lost):
            # Evicted by an earlier instance that stopped before recording it, or by someone else.
            return self._apply(
                handle, steps.evicted(job, steps.POD_GONE, f"{live.why}; not evicted again", reads.now), reads
            )
        pod = live.pod
        if steps.reserves(job):
            name, reservation = self._reservation_of(handle)
            if reservation is None or not reservation.holds_room:
                # Before evicting: the Reservation must still hold room, else make a new one first.
                self._apply(handle, ReserveAgain(name, steps.lost_state(reservation)), reads)
                return True  # the next step reserves again
        assert self._evictions is not None
        if not self._evictions.take(reads.now.timestamp()):
            return False  # evictQPS/evictBurst: the next pass tries again
        if (
            steps.without_reservation(job.status)
            and reads.policy.migration.steer_off_source
            and pod.node_name not in self._tainted
        ):
            self._taint_source(handle, pod.node_name)
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
        return self._apply(handle, record, reads)

    def _taint_source(self, handle: JobHandle, node: str) -> None:
        """Steer the replacement off the source: a stock scheduler scores a PreferNoSchedule taint
        down. A taint that cannot be written does not stop the move (it is judged by where the
        replacement lands either way); it is said."""
        try:
            self.steering.taint(node)
        except ApiFailure as failure:
            handle.log().warning(
                "cannot taint the source node; its replacement may land back on it", error=str(failure)
            )
            return
        self._tainted.add(node)

    def _eviction_refused(self, handle: JobHandle, reads: PassReads, failure: ApiFailure) -> bool:
        job = handle.job
        bound = handle.log()
        if failure.not_found:
            return self._apply(
                handle,
                steps.evicted(job, steps.POD_GONE, "the pod was gone when it was to be evicted", reads.now),
                reads,
            )
        if failure.disruption_budget:
            metrics.EVICTIONS.labels("pdb_blocked").inc()
            self._retry_later(handle, reads.now, self.budget_backoff)
            detail = "; ".join((failure.message, *failure.details)) if failure.details else failure.message
            if steps.reserves(job):
                # An acknowledged Reservation draws the workload's next pod to it; while a budget says
                # "not now" that pod is another move's replacement and would take this room. Release
                # it, and reserve again when the eviction is retried.
                self.cleanup.release(handle)
                self._write(handle, steps.forgotten(handle.job.status))
                detail += "; its Reservation is released until then"
            self._note(handle, Hold("DisruptionBudget", f"eviction refused, will retry: {detail}"))
            self._event(
                handle, "Warning", "EvictionBlocked", f"a PodDisruptionBudget allows no disruption now: {detail}"
            )
            bound.info("eviction blocked by a disruption budget; will retry", detail=detail)
            return False
        metrics.EVICTIONS.labels("error").inc()
        if failure.multiple_budgets:
            self._transition(handle, Transition("Failed", "MultiplePodDisruptionBudgets", failure.message), reads.now)
            return False
        self._retry_later(handle, reads.now, self.backoff, failure.retry_after)
        if failure.throttled:
            bound.info("eviction throttled by the API server; will retry", retry_after=failure.retry_after)
            return False
        self._note(handle, Hold("EvictionError", f"will retry: {failure}"))
        bound.warning("eviction failed; will retry", error=str(failure))
        return False

    def _await_bound(self, handle: JobHandle, reads: PassReads) -> bool:
        job = handle.job
        name, reservation = self._reservation_of(handle)
        if reservation is None:
            self._note(handle, Hold("ReservationGone", f"Reservation {name} is gone; waiting for the replacement"))
            return False
        if not reservation.status.consumed_by:
            return self._landed_without_bind(handle, reads)
        fetched = self.api.get_pod(*steps.recorded_replacement(job, reservation))
        replacement = fetched.pod if fetched is not None else None
        return self._apply(
            handle, steps.replacement_on_reservation(job, name, reservation, replacement, reads.now), reads
        )

    def _landed_without_bind(self, handle: JobHandle, reads: PassReads) -> bool:
        """The replacement bound on the Reservation's node by a scheduler that did not bind through
        the extender, which would have recorded it on the Reservation first: it counts as landed, and
        the room is released so that no other pod is kept from it."""
        found = self._stock_replacement(handle, reads)
        if found is None:
            return False
        name, reservation = self._reservation_of(handle)  # read after the pod: an extender bind shows now
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
        self._record(handle, record)
        self.cleanup.release(handle)
        return True

    def _await_stock_replacement(self, handle: JobHandle, reads: PassReads) -> bool:
        found = self._stock_replacement(handle, reads)
        return found is not None and self._apply(handle, found, reads)

    def _stock_replacement(self, handle: JobHandle, reads: PassReads) -> Elsewhere | None:
        """The owner's first pod bound since the eviction that no other job claimed (steps.stock_replacement)."""
        snapshot = reads.snapshot()
        if snapshot is None:
            return None
        claimed = {
            h.job.status.new_pod_ref.uid
            for h in reads.handles
            if h.job.status.new_pod_ref is not None and h.job.name != handle.job.name
        }
        return steps.stock_replacement(handle.job, snapshot.pods, claimed)

    def _await_ready(self, handle: JobHandle, reads: PassReads) -> bool:
        ref = handle.job.status.new_pod_ref
        fetched = self.api.get_pod(ref.namespace, ref.name) if ref is not None else None
        outcome = steps.readiness(handle.job, fetched.pod if fetched is not None else None, reads.now)
        if outcome is None:
            return False
        if isinstance(outcome, Record):
            self._record(handle, outcome)
            return ref is None  # a condition without a pod: look again at once
        return self._apply(handle, outcome, reads)

    # ------------------------------------------------------------------------------ make-before-break

    def _rollout_objects(self, pod: Pod) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """The pod's ReplicaSet and the Deployment that controls it, read now (None: not found)."""
        if pod.owner is None or pod.owner.kind != "ReplicaSet":
            return None, None
        replicaset = self.api.get_workload("ReplicaSet", pod.namespace, pod.owner.name)
        refs = ((replicaset or {}).get("metadata") or {}).get("ownerReferences") or ()
        owner = next((r for r in refs if r.get("controller") and r.get("kind") == "Deployment"), None)
        if owner is None:
            return replicaset, None
        deployment = self.api.get_workload("Deployment", pod.namespace, str(owner.get("name")))
        if deployment is not None and deployment["metadata"].get("uid") != owner.get("uid"):
            deployment = None  # another Deployment of that name
        return replicaset, deployment

    def _start_replacement(self, handle: JobHandle, reads: PassReads) -> bool:
        """Start the rollout that makes the replacement: the move's label on the Deployment's pod
        template (already there: started by an earlier pass or instance, which did not record it)."""
        fetched = self._pod_or_fail(handle, reads)
        if fetched is None:
            return False
        pod = fetched.pod
        try:
            replicaset, deployment = self._rollout_objects(pod)
            if deployment is None or not steps.rollout_started(deployment, pod.uid):
                refusal = steps.rollout_refusal(pod, replicaset, deployment)
                snapshot = reads.snapshot()
                if refusal is None and snapshot is not None:
                    refusal = steps.budget_hold(pod, snapshot.pdbs_for(pod))
                if refusal is not None:
                    if isinstance(refusal, Hold):
                        self._retry_later(handle, reads.now, self.budget_backoff)
                    return self._apply(handle, refusal, reads)
                assert deployment is not None
                deployment = self.api.replace_deployment(steps.with_rollout_label(deployment, pod.uid))
                if self.recorder is not None:
                    ref = ObjectRef("Pod", pod.name, pod.namespace, pod.uid)
                    self.recorder.normal(ref, "Descheduled", steps.descheduled_message(handle.job, "Replaced"))
        except ApiFailure as failure:
            if not failure.forbidden:
                raise
            # Not granted (deploy/base alone): wait and look again, so the move goes on once it is.
            self._retry_later(handle, reads.now, self.budget_backoff)
            return self._apply(handle, steps.rollout_forbidden(handle.job, str(failure), reads.now), reads)
        name = f"Deployment {pod.namespace}/{deployment['metadata']['name']}"
        return self._apply(handle, steps.replacement_started(handle.job, name, reads.now), reads)

    def _await_pod_gone(self, handle: JobHandle, reads: PassReads) -> bool:
        """The replacement is Ready: done once the rollout has removed the pod."""
        live = self._live_pod(handle)
        if not isinstance(live, _Lost):
            return False
        self._transition(handle, steps.pod_replaced(handle.job, live.why, reads.now), reads.now)
        return False

    def _expire_rollout(self, handle: JobHandle, reads: PassReads) -> None:
        """A MakeBeforeBreak job past its ttl: undo a rollout whose replacement is not Ready (the pod
        stays), else end it as it stands (steps.rollout_expiry)."""
        job = handle.job
        live = self._live_pod(handle)
        present = not isinstance(live, _Lost)
        replicaset = deployment = None
        try:
            if isinstance(live, FetchedPod):
                replicaset, deployment = self._rollout_objects(live.pod)
            uid = job.status.pod_uid or job.spec.pod_ref.uid
            ours = deployment is not None and steps.rollout_started(deployment, uid)
            ready = job.status.has("ReplacementReady")
            outcome = steps.rollout_expiry(job, reads.now, pod_present=present, ours=ours, replacement_ready=ready)
            if outcome == "RollBack":
                assert deployment is not None
                self.api.replace_deployment(steps.rolled_back(deployment, replicaset))
                handle.log().warning("rollout undone: its replacement was not Ready in time")
                outcome = steps.rolled_back_failure(job)
        except ApiFailure as failure:
            if not failure.forbidden:
                raise
            outcome = steps.rollout_expiry_forbidden(job, str(failure))  # retrying would never end the job
        self._transition(handle, outcome, reads.now)

    # ------------------------------------------------------------------------------ applying

    def _apply(
        self,
        handle: JobHandle,
        outcome: Record | Transition | Hold | Elsewhere | ReserveAgain | GoWithoutReservation,
        reads: PassReads,
    ) -> bool:
        """Carry out a step's decision; True when the job moved on and its next step may follow."""
        match outcome:
            case Record():
                self._record(handle, outcome)
                return True
            case Transition():
                self._transition(handle, outcome, reads.now)
                return False
            case Hold():
                self._note(handle, outcome)
                return False
            case Elsewhere():
                self.cleanup.release(handle)
                crowded = reads.why_crowded(outcome.replacement)
                return self._apply(handle, steps.landed_elsewhere(handle.job, outcome, crowded, reads.now), reads)
            case ReserveAgain():
                status = steps.forgotten(handle.job.status, "ReservationLost", outcome.message)
                self._write(handle, status)
                handle.log().warning("reservation lost before eviction; reserving again", state=outcome.state)
                return False
            case GoWithoutReservation():
                # The scheduler went away before it held the room: nothing was done to the pod yet.
                metrics.MOVES_WITHOUT_RESERVATION.labels(outcome.cause).inc()
                self.cleanup.release(handle)
                self._write(handle, steps.forgotten(handle.job.status))
                return self._apply(handle, steps.unreserved(handle.job, outcome.why, reads.now), reads)
        raise AssertionError(f"unknown outcome {outcome!r}")

    # ------------------------------------------------------------------------------ writing

    def _record(self, handle: JobHandle, record: Record) -> None:
        """Write a step's status, then say so (Event, log)."""
        self._write(handle, record.status)
        if record.progress:
            self._progressed(handle)
        if record.event:
            self._event(handle, "Warning" if record.warning else "Normal", record.event, record.message)
        if record.log:
            bound = handle.log()
            (bound.warning if record.warning else bound.info)(record.log, **dict(record.fields))

    def _write(self, handle: JobHandle, status: PodMigrationJobStatus) -> None:
        body = dict(handle.raw)
        body["status"] = status.wire()
        handle.refresh(self.api.write_status(JOBS, body))

    def _note(self, handle: JobHandle, hold: Hold) -> None:
        """Say in the status why the job is waiting (written only when it changes)."""
        status = handle.job.status
        if status.reason == hold.reason and status.message == hold.message:
            return
        self._write(handle, status.model_copy(update={"reason": hold.reason, "message": hold.message}))
        handle.log().info("migration job waiting", why=hold.reason, detail=hold.message)

    def _transition(self, handle: JobHandle, change: Transition, now: datetime) -> None:
        """Change phase, then say so (Event, log, metric); a terminal phase releases the Reservation."""
        phase: JobPhase = change.phase
        reason, message = change.reason, change.message
        base = change.status or handle.job.status
        update: dict[str, Any] = {"phase": phase, "reason": reason, "message": message}
        if phase == "Running" and base.start_time is None:
            update["start_time"] = now
        if phase in TERMINAL_PHASES:
            update["completion_time"] = now
        self._write(handle, base.model_copy(update=update))
        self._progressed(handle)
        job = handle.job
        event_type, event_reason = _PHASE_EVENTS[phase]
        self._event(handle, event_type, event_reason, f"{reason}: {message}" if message else reason)
        bound = handle.log()
        if phase in TERMINAL_PHASES:
            metrics.MIGRATIONS.labels(job.spec.strategy or "unknown", _RESULTS[phase]).inc()
            self.cleanup.release(handle)
            (bound.info if phase == "Succeeded" else bound.warning)(
                f"migration job {phase.lower()}", why=reason, detail=message
            )
        else:
            bound.info("migration job started", why=reason, detail=message)

    def _event(self, handle: JobHandle, event_type: EventType, reason: str, message: str) -> None:
        if self.recorder is not None:
            job = handle.job
            ref = ObjectRef("PodMigrationJob", job.name, uid=job.metadata.uid, api_version=job.api_version)
            self.recorder.record(ref, event_type, reason, message)

    # ------------------------------------------------------------------------------ reading the pod

    def _live_pod(self, handle: JobHandle) -> FetchedPod | _Lost:
        """The job's pod if it is still the same pod and not on its way out."""
        ref = handle.job.spec.pod_ref
        fetched = self.api.get_pod(ref.namespace, ref.name)
        why = steps.why_pod_lost(handle.job, fetched.pod if fetched is not None else None)
        return _Lost(why) if why or fetched is None else fetched

    def _pod_or_fail(self, handle: JobHandle, reads: PassReads) -> FetchedPod | None:
        """The job's pod, or None after failing the job MissingPod (before anything was done to it)."""
        live = self._live_pod(handle)
        if isinstance(live, _Lost):
            self._transition(handle, Transition("Failed", "MissingPod", live.why), reads.now)
            return None
        return live

    # ------------------------------------------------------------------------------ retries

    def _refresh_eviction_rate(self, policy: Policy) -> None:
        rate = (policy.migration.evict_qps, policy.migration.evict_burst)
        if rate != self._eviction_rate:
            self._evictions = TokenBucket(*rate)
            self._eviction_rate = rate

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

    def _failed_step(self, handle: JobHandle, reads: PassReads, failure: ApiFailure) -> None:
        handle.log().warning("migration step failed; will retry", error=str(failure))
        self._retry_later(handle, reads.now, self.backoff, failure.retry_after)


def _publish(handles: list[JobHandle], invalid: list[dict[str, Any]]) -> None:
    """The jobs by phase, as a metric (an invalid job counts as Failed)."""
    counts = dict.fromkeys(("Pending", "Running", "Succeeded", "Failed", "Aborted"), 0)
    for handle in handles:
        counts[handle.job.status.phase] += 1
    counts["Failed"] += len(invalid)
    for phase, count in counts.items():
        metrics.JOBS.labels(phase).set(count)
