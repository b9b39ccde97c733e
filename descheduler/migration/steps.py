"""A running job's state machine (migration.md §3): which step comes next, and what each step's
reads mean. Pure: a job and the facts read for it in, a decision out; no API call, clock or log.

Each mode's driver (`reservation_first`, `steered`, `make_before_break`) reads what a step needs
(the pod, the Reservation, the replacement, the snapshot's placement), asks this module what that
means, and applies the answer through `driving` (status writes, evictions, Events, logs, metrics).
A MakeBeforeBreak job's own decisions (the rollout) are in `rollout_steps`.

A ReservationFirst job goes ReservationCreated → ReservationScheduled (acknowledged by the scheduler
side) → Evicted → ReplacementBound → ReplacementReady (Succeeded); an EvictDirectly job is done once
Evicted; a ReservationFirst job that started when no reservation-aware scheduler answered
(`without_reservation`) is evicted, then judged by where the owner's next pod lands.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final, Literal

from descheduler.durations import format_duration
from descheduler.eligibility import hard_refusal
from descheduler.migration.arbiter import Verdict
from descheduler.migration.objects import (
    REPLACEMENT_ELSEWHERE,
    RESERVED_NODE_REFUSED,
    RESERVING_MODES,
    ConditionType,
    JobPhase,
    PodMigrationJob,
    PodMigrationJobStatus,
    PodReference,
    Reservation,
    ReservationReference,
    WorkloadReference,
)
from descheduler.migration.records import condition_time, with_condition, without_conditions
from descheduler.migration.targets import Target
from descheduler.model import Pod
from descheduler.timestamps import format_time

# The reason on a ReservationFirst job's ReservationCreated=False condition when no
# reservation-aware scheduler answered as it started: the pod is moved without a Reservation.
NO_RESERVATION_SCHEDULER: Final = "NoReservationScheduler"
# The Evicted reason when the pod was gone or leaving before this job evicted it (evicted by an earlier
# controller that stopped before recording it, or by someone else).
POD_GONE: Final = "PodGone"
# Why the job took the Reservation it found under its name (rather than choosing a node).
ADOPTED: Final = "adopted the reservation made before"


def reserves(job: PodMigrationJob) -> bool:
    """Whether the job moves its pod through a Reservation."""
    return job.spec.mode in RESERVING_MODES and not without_reservation(job.status)


def without_reservation(status: PodMigrationJobStatus) -> bool:
    """A ReservationFirst job that started when no reservation-aware scheduler answered."""
    created = status.condition("ReservationCreated")
    return created is not None and created.status == "False" and created.reason == NO_RESERVATION_SCHEDULER


# ------------------------------------------------------------------------------ decisions


@dataclass(frozen=True, slots=True)
class Hold:
    """No step now: the job's status says why (`reason`, `message`)."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Transition:
    """Move the job to `phase` (Running, or an end); `status`, when given, is the status to change
    from (a new condition, the pod's facts)."""

    phase: JobPhase
    reason: str
    message: str
    status: PodMigrationJobStatus | None = None


@dataclass(frozen=True, slots=True)
class Record:
    """A step done: write `status`; then an Event on the job (`event` reason and `message`; "" for
    none) and a log line (`log`, with `fields`), both Warning when `warning`. `progress`: a step that
    is not repeated on a retry, so the job's retry backoff starts over (reserving and acknowledging
    are repeated after each "not now" of a disruption budget, and those waits must keep growing)."""

    status: PodMigrationJobStatus
    event: str = ""
    message: str = ""
    log: str = ""
    fields: tuple[tuple[str, str], ...] = ()
    warning: bool = False
    progress: bool = False


Stage = Literal[
    "Expire",  # past its deadline: Aborted or Failed Timeout (or Succeeded, when it made it)
    "Reserve",  # hold room on a node (or adopt the Reservation found under the job's name)
    "AwaitAcknowledged",  # the scheduler side must hold the room before the eviction
    "Evict",
    "AwaitBound",  # the replacement recorded on the Reservation
    "AwaitStockReplacement",  # without a Reservation: the owner's next pod
    "AwaitReady",
    "StartReplacement",  # MakeBeforeBreak: the Deployment's rollout starts the replacement
    "AwaitPodGone",  # MakeBeforeBreak: the rollout removes the pod once its replacement is Ready
]

EVICTED_DIRECTLY: Final = Transition("Succeeded", "Evicted", "the pod was evicted (EvictDirectly)")


def next_step(job: PodMigrationJob, now: datetime, *, dry_run: bool, due: bool) -> Stage | Hold | Transition | None:
    """What a job takes next, from its recorded status alone (None: nothing now). `due` is False
    while the job waits out a retry backoff."""
    if job.terminal:
        return None
    deadline = job.deadline
    if deadline is not None and now >= deadline:
        return "Expire"
    if job.status.phase != "Running" or not due:
        return None
    status = job.status
    evicted = status.has("Evicted")
    begun = evicted or status.has("ReplacementStarted")
    if dry_run and not begun:
        return Hold("DryRun", "the policy is in dryRun: nothing is reserved or evicted")
    if job.spec.paused and not begun:
        return Hold("Paused", "spec.paused is set: no step that has not begun is taken")
    if job.spec.mode == "MakeBeforeBreak":
        return _make_before_break_step(status)
    if job.spec.mode == "EvictDirectly":
        return EVICTED_DIRECTLY if evicted else "Evict"
    if without_reservation(status):
        if not evicted:
            return "Evict"
        return "AwaitReady" if status.has("ReplacementBound") else "AwaitStockReplacement"
    if not status.has("ReservationCreated"):
        return "Reserve"
    if not status.has("ReservationScheduled"):
        return "AwaitAcknowledged"
    if not evicted:
        return "Evict"
    return "AwaitReady" if status.has("ReplacementBound") else "AwaitBound"


def _make_before_break_step(status: PodMigrationJobStatus) -> Stage:
    """Reserve, wait for the scheduler side to hold it, start the rollout, then follow the
    replacement to Ready on the Reservation's node and the pod out."""
    for condition, stage in _MAKE_BEFORE_BREAK:
        if not status.has(condition):
            return stage
    return "AwaitPodGone"


_MAKE_BEFORE_BREAK: Final[tuple[tuple[ConditionType, Stage], ...]] = (
    ("ReservationCreated", "Reserve"),
    ("ReservationScheduled", "AwaitAcknowledged"),
    ("ReplacementStarted", "StartReplacement"),
    ("ReplacementBound", "AwaitBound"),
    ("ReplacementReady", "AwaitReady"),
)


def pending_step(job: PodMigrationJob, now: datetime, *, dry_run: bool) -> Literal["Expire", "Admit"] | Hold:
    """What a Pending job takes next: expire, wait (paused, dryRun), or go to arbitration."""
    deadline = job.deadline
    if deadline is not None and now >= deadline:
        return "Expire"
    if job.spec.paused:
        return Hold("Paused", "spec.paused is set: the job does not start")
    if dry_run:
        return Hold("DryRun", "the policy is in dryRun: the job does not start")
    return "Admit"


def waiting(verdict: Verdict, now: datetime) -> Hold:
    """A job arbitration holds back for now: its status says why, and when to look again if known."""
    message = verdict.message
    if verdict.retry_after:
        message += f"; not before {format_time(now + timedelta(seconds=verdict.retry_after))}"
    return Hold(verdict.reason, message)


# ------------------------------------------------------------------------------ the pod


def why_pod_lost(job: PodMigrationJob, pod: Pod | None) -> str:
    """Why `pod` (read by the job's pod reference; None: not found) is no longer the job's pod to
    move ("" when it still is: same UID, not on its way out)."""
    ref = job.spec.pod_ref
    where = f"pod {ref.namespace}/{ref.name}"
    if pod is None:
        return f"{where} no longer exists"
    uid = job.status.pod_uid or ref.uid
    if uid and pod.uid != uid:
        return f"{where} was replaced (UID {pod.uid}, expected {uid})"
    if pod.deleting:
        return f"{where} is being deleted"
    if pod.terminal:
        return f"{where} has finished ({pod.phase})"
    return ""


def start_refusal(job: PodMigrationJob, pod: Pod) -> Transition | None:
    """Why the admitted job must fail instead of starting on this pod, or None."""
    refusal = hard_refusal(pod)
    if refusal is not None:
        return Transition("Failed", "NotEvictable", str(refusal))
    if job.spec.mode in RESERVING_MODES and pod.owner is None:
        return Transition(
            "Failed",
            "NoController",
            "ReservationFirst waits for a replacement, but no controller will recreate this pod; "
            "use mode EvictDirectly to move it anyway",
        )
    return None


def started(job: PodMigrationJob, pod: Pod, annotation: str) -> Transition:
    """Pending → Running: the status records the pod's node, UID and controller."""
    owner = pod.owner
    status = job.status.model_copy(
        update={
            "source_node": pod.node_name,
            "pod_uid": pod.uid,
            "workload": WorkloadReference(kind=owner.kind, name=owner.name, uid=owner.uid) if owner else None,
        }
    )
    message = f"moving pod {pod.key} from node {pod.node_name}" + (f" ({annotation})" if annotation else "")
    return Transition("Running", "Started", message, status)


# ------------------------------------------------------------------------------ reserving


def stale_reservation(job: PodMigrationJob, reservation: Reservation, owner_uid: str) -> bool:
    """A Reservation under the job's name that it must not adopt: left by an earlier job of the same
    name (another owner), or no longer holding room."""
    return bool(owner_uid and owner_uid != job.metadata.uid) or not reservation.holds_room


def no_target(target: Target) -> Hold | Transition:
    """No node can take the pod: wait out the cooldown when only that is in the way, else fail."""
    if target.cooling:
        return Hold("TargetCooldown", target.why)
    return Transition("Failed", "Unschedulable", f"no node can take the pod: {target.why}")


def reserved(job: PodMigrationJob, name: str, node: str, why: str, now: datetime) -> Record:
    """The job holds room on `node` through Reservation `name` (`why`: how the node was chosen)."""
    status = with_condition(
        job.status,
        "ReservationCreated",
        now,
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
    return Record(
        status,
        "ReservationCreated",
        f"Reservation {name} holds room on node {node}",
        log="reservation created",
        fields=(("target", node), ("detail", why)),
    )


WAITING_FOR_SCHEDULER: Final = "WaitingForScheduler"


def awaiting_scheduler(job: PodMigrationJob, why: str, now: datetime) -> Record | Hold:
    """No Reservation yet, and none may be skipped (`why`: the policy's reservationScheduler): the job
    waits, with a condition and an Event saying why, written once per reason."""
    created = job.status.condition("ReservationCreated")
    if created is not None and created.reason == WAITING_FOR_SCHEDULER and created.message == why:
        return Hold(WAITING_FOR_SCHEDULER, why)
    return Record(
        _not_reserved(job, WAITING_FOR_SCHEDULER, why, now),
        WAITING_FOR_SCHEDULER,
        why,
        log="waiting for a reservation-aware scheduler",
        fields=(("detail", why),),
        warning=True,
    )


def unreserved(job: PodMigrationJob, why: str, now: datetime) -> Record:
    """No scheduler would honour a Reservation (`why`): evict, then judge where the replacement lands."""
    message = (
        f"no reservation-aware scheduler answers ({why}): the pod is evicted without a Reservation and the "
        "move is judged by where the scheduler puts its replacement"
    )
    return Record(
        _not_reserved(job, NO_RESERVATION_SCHEDULER, message, now),
        NO_RESERVATION_SCHEDULER,
        message,
        log="moving without a reservation",
        fields=(("detail", why),),
        warning=True,
        progress=True,
    )


def _not_reserved(job: PodMigrationJob, reason: str, message: str, now: datetime) -> PodMigrationJobStatus:
    """The status with ReservationCreated=False for `reason`, which the job's status says too."""
    status = with_condition(job.status, "ReservationCreated", now, value="False", reason=reason, message=message)
    return status.model_copy(update={"reason": reason, "message": message})


def forgotten(status: PodMigrationJobStatus, reason: str = "", message: str = "") -> PodMigrationJobStatus:
    """Before the eviction: the job holds no room any more; its next step reserves again."""
    update: dict[str, object] = {"reservation_ref": None}
    if reason:
        update |= {"reason": reason, "message": message}
    return without_conditions(status, "ReservationCreated", "ReservationScheduled").model_copy(update=update)


def lost_state(reservation: Reservation | None) -> str:
    """How a Reservation that holds no room stands: "is gone" or "is <phase>"."""
    return "is gone" if reservation is None else f"is {reservation.status.phase}"


@dataclass(frozen=True, slots=True)
class ReserveAgain:
    """Reservation `name` is gone or holds no room before the eviction (`state`): reserve anew."""

    name: str
    state: str

    @property
    def message(self) -> str:
        return f"Reservation {self.name} {self.state}"


@dataclass(frozen=True, slots=True)
class GoWithoutReservation:
    """The scheduler went away before it held the room (`why`): release it and move without one."""

    why: str
    cause: str = "absent"


def acknowledgement(
    job: PodMigrationJob,
    name: str,
    reservation: Reservation | None,
    scheduler_absent: str,
    now: datetime,
    cause: str = "absent",
) -> Record | ReserveAgain | GoWithoutReservation | Hold:
    """Evict only once the scheduler side says its state holds the room (migration.md §3, step 3):
    a replacement placed 10 ms after the eviction must already see the Reservation.
    `scheduler_absent`: why the move now goes without a Reservation (`cause`), "" while it waits."""
    if reservation is None or not reservation.holds_room:
        return ReserveAgain(name, lost_state(reservation))
    node = reservation.spec.node_name
    if reservation.status.phase == "Available":
        by = reservation.status.acknowledged_by or "the scheduler"
        message = f"{by} holds room on node {node}"
        status = with_condition(job.status, "ReservationScheduled", now, reason="Acknowledged", message=message)
        status = status.model_copy(update={"reason": "ReservationAvailable", "message": message})
        return Record(status, log="reservation available", fields=(("target", node), ("detail", message)))
    if scheduler_absent:
        return GoWithoutReservation(scheduler_absent, cause)
    return Hold("WaitingForScheduler", f"Reservation {name} on node {node} waits for the scheduler")


# ------------------------------------------------------------------------------ evicting


def evicted(job: PodMigrationJob, reason: str, message: str, now: datetime) -> Record:
    """The pod is gone from its node (`reason`: Evicted, Deleted, or PodGone when someone else did it)."""
    status = with_condition(job.status, "Evicted", now, reason=reason, message=message)
    return Record(
        status.model_copy(update={"reason": "Evicted", "message": message}), "Evicted", message, progress=True
    )


def descheduled_message(job: PodMigrationJob, verb: str) -> str:
    """The pod's Descheduled Event: who moved it, why, and towards where."""
    target = job.status.target_node
    towards = f", target node {target}" if target else ""
    return (
        f"{verb} by the descheduler ({job.spec.strategy or 'no strategy'}): {job.spec.reason or 'no reason given'} "
        f"(migration job {job.name}{towards})"
    )


# ------------------------------------------------------------------------------ the replacement


def bound(job: PodMigrationJob, replacement: Pod, message: str, now: datetime) -> Record:
    ref = PodReference(namespace=replacement.namespace, name=replacement.name, uid=replacement.uid)
    status = with_condition(job.status, "ReplacementBound", now, reason="Bound", message=message)
    status = status.model_copy(update={"new_pod_ref": ref, "reason": "ReplacementBound", "message": message})
    fields = (("replacement", replacement.key), ("node", replacement.node_name))
    return Record(status, "ReplacementBound", message, log="replacement bound", fields=fields, progress=True)


def recorded_replacement(job: PodMigrationJob, reservation: Reservation) -> tuple[str, str]:
    """(namespace, name) of the pod the scheduler side recorded as consuming the Reservation."""
    namespace, _, name = reservation.status.consumed_by.rpartition("/")
    return namespace or job.spec.pod_ref.namespace, name


@dataclass(frozen=True, slots=True)
class Elsewhere:
    """The replacement was bound somewhere other than reserved (`how`; `reserved`: the node its
    Reservation held, "" for a move without one): decided by `landed_elsewhere` once its node's load
    is known; the room held for it is released."""

    replacement: Pod
    how: str
    reserved: str = ""


def replacement_on_reservation(
    job: PodMigrationJob, name: str, reservation: Reservation, replacement: Pod | None, now: datetime
) -> Record | Elsewhere | Hold:
    """The replacement is the pod recorded on the Reservation (migration.md §3, step 5), read by
    `recorded_replacement` (None: not found): bound on the target, or landed elsewhere when the
    Reservation Failed or the pod went to another node."""
    recorded = reservation.status
    if replacement is None or (recorded.consumed_by_uid and replacement.uid != recorded.consumed_by_uid):
        return Hold("ReplacementGone", f"pod {recorded.consumed_by} recorded on Reservation {name} is gone")
    target = reservation.spec.node_name
    if not replacement.node_name and recorded.phase != "Failed":
        # Recorded as consuming the room while its binding is not yet in what we read of it.
        return Hold("ReplacementBinding", f"pod {replacement.key} took Reservation {name}; not yet seen bound")
    if recorded.phase == "Failed" or replacement.node_name != target:
        return Elsewhere(replacement, f"instead of the reserved node {target}", target)
    return bound(job, replacement, f"replacement {replacement.key} bound to node {target}", now)


def landed_elsewhere(job: PodMigrationJob, elsewhere: Elsewhere, crowded: str, now: datetime) -> Record | Transition:
    """Decided at once (`crowded`: why the replacement's node is over its thresholds, "" when it is
    not or unknown). Off its Reservation, the move is never Succeeded as if planned: Failed
    ReplacementElsewhere, with where it went and how that node stands (migration.md §3, step 5).
    Without a Reservation it counts only when the replacement left the source for a node that stays
    under its thresholds."""
    replacement, how = elsewhere.replacement, elsewhere.how
    where = f"replacement {replacement.key} was bound to node {replacement.node_name} {how}".rstrip()
    back = replacement.node_name == job.status.source_node
    if back or crowded or elsewhere.reserved:
        why = "back on the source node" if back else crowded or "that node stays under its thresholds"
        ref = PodReference(namespace=replacement.namespace, name=replacement.name, uid=replacement.uid)
        status = job.status.model_copy(update={"new_pod_ref": ref})
        return Transition("Failed", REPLACEMENT_ELSEWHERE, f"{where}: {why}", status)
    return bound(job, replacement, f"{where}; that node stays under its thresholds", now)


def refused_by_filters(reservation: Reservation) -> Transition | None:
    """The scheduler side recorded on the Reservation that kube-scheduler's own filters refused its
    node for the replacement: the replacement can never land there, so the job fails at once (and its
    room is released) rather than at its ttl. None when the Reservation says nothing of the kind."""
    recorded = reservation.status
    if recorded.phase != "Failed" or recorded.reason != RESERVED_NODE_REFUSED:
        return None
    node = reservation.spec.node_name
    why = recorded.message or f"kube-scheduler's filters refused reserved node {node} for the replacement"
    return Transition("Failed", RESERVED_NODE_REFUSED, f"{why}; Reservation {reservation.name} released")


STOCK_SCHEDULER: Final = "by a scheduler that knows no Reservation"


def stock_replacement(job: PodMigrationJob, pods: Iterable[Pod], claimed: Set[str]) -> Elsewhere | None:
    """Without a Reservation nothing records which pod replaced this one: the evidence is the
    owner's first pod created since the eviction that no other job claimed (`claimed`: UIDs),
    once it is bound (None until then). An eviction this job did not see (PodGone: a controller
    that evicted and stopped before recording it, or someone else) happened before it was recorded,
    so the evidence is looked for from when the job chose to move without a Reservation."""
    workload = job.status.workload.uid if job.status.workload else ""
    evicted_at = condition_time(job, "Evicted")
    recorded = job.status.condition("Evicted")
    decided = job.status.condition("ReservationCreated")
    if recorded is not None and recorded.reason == POD_GONE and decided is not None:
        evicted_at = min(evicted_at or decided.last_transition_time, decided.last_transition_time)
    if not workload or evicted_at is None:
        return None
    fresh = sorted(
        (
            p
            for p in pods
            if p.owner is not None
            and p.owner.uid == workload
            and p.uid not in claimed
            and not p.deleting
            and p.created is not None
            and p.created >= evicted_at - timedelta(seconds=1)
        ),
        key=lambda p: (p.created or evicted_at, p.key),
    )
    if not fresh or not fresh[0].node_name:
        return None
    return Elsewhere(fresh[0], STOCK_SCHEDULER)


def readiness(job: PodMigrationJob, replacement: Pod | None, now: datetime) -> Record | Transition | None:
    """The bound replacement (read by `job.status.new_pod_ref`; None: not found): Succeeded once it
    is Ready; forgotten (look again) when it is gone; None while it is not Ready yet."""
    ref = job.status.new_pod_ref
    if ref is None:  # ReplacementBound without a pod: written by someone else; look again
        return Record(without_conditions(job.status, "ReplacementBound"))
    if replacement is None or (ref.uid and replacement.uid != ref.uid):
        status = without_conditions(job.status, "ReplacementBound").model_copy(
            update={
                "new_pod_ref": None,
                "reason": "ReplacementGone",
                "message": f"pod {ref.namespace}/{ref.name} is gone",
            }
        )
        return Record(status)
    if not replacement.ready:
        return None
    message = f"replacement {ref.namespace}/{ref.name} is Ready on node {replacement.node_name}"
    status = with_condition(job.status, "ReplacementReady", now, reason="Ready", message=message)
    if job.spec.mode == "MakeBeforeBreak":
        pod = job.spec.pod_ref
        waiting = f"{message}; the rollout removes pod {pod.namespace}/{pod.name} next"
        status = status.model_copy(update={"reason": "ReplacementReady", "message": waiting})
        return Record(status, log="replacement ready", fields=(("replacement", f"{ref.namespace}/{ref.name}"),))
    return Transition("Succeeded", "Succeeded", message, status)


# ------------------------------------------------------------------------------ time running out


def may_be_evicted_unrecorded(job: PodMigrationJob) -> bool:
    """Whether the job may have evicted its pod without recording it (a controller that stopped
    right after the eviction): then whether the pod is still there decides how it ends."""
    return not job.status.has("Evicted") and (
        job.status.phase == "Running"
        and (
            job.spec.mode == "EvictDirectly" or job.status.has("ReservationCreated") or without_reservation(job.status)
        )
    )


def expiry(job: PodMigrationJob, evicted: bool, replacement_ready: bool) -> Transition | Literal["AwaitReady"]:
    """TTL exceeded: Aborted when the pod was not evicted (pod untouched), else Failed Timeout —
    unless its task was done (EvictDirectly evicted; a bound replacement that is Ready)."""
    ttl = format_time(job.deadline) if job.deadline else ""
    if evicted and job.spec.mode == "EvictDirectly":
        return EVICTED_DIRECTLY  # its whole task was the eviction: late in the record, but done
    if evicted and replacement_ready:
        return "AwaitReady"  # the replacement made it as time ran out
    if evicted:
        target = job.status.target_node or job.spec.target_node
        where = f" on node {target}" if target else ""
        return Transition(
            "Failed", "Timeout", f"the pod was evicted but its replacement was not bound and Ready{where} by {ttl}"
        )
    return Transition(
        "Aborted",
        "Timeout",
        f"not done within its ttl of {format_duration(job.spec.ttl)} (by {ttl}); the pod was not touched",
    )
