"""Whether a reservation-aware scheduler serves a pod, and so how its move goes (migration.md §3).

The scheduler side (`descheduler extender`, or the simulator's scheduler) renews the Lease
`descheduler-system/descheduler-scheduler` (`--scheduler-lease` on both sides) while it serves, and
lists there the pod schedulerNames whose scheduler asks it (ANNOTATION_SCHEDULER_NAMES). A move gets
a Reservation only when its pod's schedulerName is listed on a fresh Lease: a Reservation for a pod
that no scheduler asking the extender would place holds room that no one takes.

Every other move waits or goes without a Reservation, as the policy's
`migration.reservationScheduler` says (`route`):
- Required: it waits (the job holds until its ttl; the pod is not touched);
- Preferred: after the controller starts, or after the Lease went stale, it waits `grace`; then it
  evicts without a Reservation and is judged by where the replacement lands;
- Absent: it never makes a Reservation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, Literal

import msgspec
import structlog

from descheduler import metrics
from descheduler.durations import format_duration
from descheduler.migration.api import ApiFailure, MigrationApi
from descheduler.migration.objects import (
    ANNOTATION_SCHEDULER_NAMES,
    DEFAULT_SCHEDULER_NAME,
    RESERVING_MODES,
    SCHEDULER_LEASE,
    SCHEDULER_LEASE_NAMESPACE,
)
from descheduler.plan import Plan
from descheduler.policy import MigrationArgs, Policy, ReservationSchedulerArgs
from descheduler.snapshot import Snapshot
from descheduler.timestamps import format_time, parse_time

log = structlog.get_logger(__name__)

# Clocks of the scheduler's node and ours may differ by this much before a renewal counts as late.
CLOCK_SKEW = timedelta(seconds=5)
# Read the Lease at most this often; jobs of one pass share the answer.
READ_EVERY = timedelta(seconds=2)
FIX: Final = (
    "deploy the extender (deploy/overlays/with-scheduler) and give it and the controller the same "
    "--scheduler-lease, for moves that land where they were planned"
)


@dataclass(frozen=True, slots=True)
class Presence:
    """`present` is None when the Lease could not be read: decide nothing on it. `names`: the
    schedulerNames the scheduler serves (None: its Lease does not say, so every one)."""

    present: bool | None
    why: str
    names: frozenset[str] | None = None

    def serves(self, scheduler_name: str) -> bool:
        return self.names is None or (scheduler_name or DEFAULT_SCHEDULER_NAME) in self.names


Way = Literal["Reservation", "Wait", "Without"]
# Why a move goes without a Reservation (the label of descheduler_moves_without_reservation_total).
Cause = Literal["", "policy", "absent", "unserved"]


@dataclass(frozen=True, slots=True)
class Route:
    """How a move goes: through a Reservation, waiting (`why`), or without a Reservation (`why`, `cause`)."""

    way: Way
    why: str
    cause: Cause = ""


class SchedulerPresence:
    """Reads the scheduler Lease; says once (log, metric) whenever the answer changes; remembers when
    it started asking and when it last saw the Lease fresh, for the grace of Preferred."""

    def __init__(self, api: MigrationApi, namespace: str = SCHEDULER_LEASE_NAMESPACE, name: str = SCHEDULER_LEASE):
        self.api = api
        self.namespace = namespace
        self.name = name
        self._last: tuple[datetime, Presence] | None = None
        self._said: bool | None = None
        self._started: datetime | None = None
        self._seen: datetime | None = None  # the last time the Lease was fresh

    @property
    def lease(self) -> str:
        return f"{self.namespace}/{self.name}"

    def check(self, now: datetime) -> Presence:
        if self._started is None:
            self._started = now
            log.info("reading the scheduler Lease", lease=self.lease)
        if self._last is not None and now - self._last[0] < READ_EVERY:
            return self._last[1]
        answer = self._read(now)
        self._last = (now, answer)
        if answer.present:
            self._seen = now
        if answer.present is not None and answer.present != self._said:
            self._said = answer.present
            metrics.RESERVATION_SCHEDULER.set(1 if answer.present else 0)
            if answer.present:
                served = ", ".join(sorted(answer.names)) if answer.names is not None else "every schedulerName"
                log.info("a reservation-aware scheduler answers", lease=self.lease, detail=answer.why, serves=served)
            else:
                log.warning(
                    "no reservation-aware scheduler answers: moves wait or evict without a Reservation as "
                    f"migration.reservationScheduler says; {FIX}",
                    lease=self.lease,
                    detail=answer.why,
                )
        return answer

    def route(self, scheduler_name: str, now: datetime, args: ReservationSchedulerArgs) -> Route:
        """How the move of a pod with this schedulerName goes now."""
        if args.expect == "Absent":
            return decide(None, scheduler_name, args, self.lease)
        answer = self.check(now)
        assert self._started is not None
        until = max(self._started, self._seen or self._started) + args.grace
        return decide(answer, scheduler_name, args, self.lease, until if now < until else None)

    def _read(self, now: datetime) -> Presence:
        try:
            lease = self.api.get_lease(self.namespace, self.name)
        except ApiFailure as failure:
            return Presence(None, f"cannot read Lease {self.lease}: {failure}")
        if lease is None:
            return no_lease(self.lease)
        return lease_presence(lease, now, self.lease)


def no_lease(name: str) -> Presence:
    return Presence(False, f"no Lease {name}: no reservation-aware scheduler has announced itself")


def decide(
    answer: Presence | None,
    scheduler_name: str,
    args: ReservationSchedulerArgs,
    lease: str,
    grace_until: datetime | None = None,
) -> Route:
    """How the move of a pod with this schedulerName goes, given what the scheduler Lease says
    (`answer`; None when not read) and, under Preferred, until when the grace still runs (None: over)."""
    if args.expect == "Absent":
        return Route(
            "Without",
            "the policy expects no reservation-aware scheduler (reservationScheduler.expect: Absent)",
            "policy",
        )
    assert answer is not None
    if answer.present is None:
        return Route("Wait", answer.why)
    name = scheduler_name or DEFAULT_SCHEDULER_NAME
    required = "; reservationScheduler.expect is Required: no pod is evicted without a Reservation"
    if answer.present and answer.serves(name):
        return Route("Reservation", answer.why)
    if answer.present:
        served = ", ".join(sorted(answer.names or ()))
        why = (
            f"the reservation-aware scheduler of Lease {lease} serves schedulerName {served}, not {name} "
            "(the extender's --scheduler-name)"
        )
        return Route("Wait", why + required) if args.expect == "Required" else Route("Without", why, "unserved")
    if args.expect == "Required":
        return Route("Wait", answer.why + required)
    if grace_until is not None:
        return Route(
            "Wait",
            f"{answer.why}; waiting until {format_time(grace_until)} (reservationScheduler.grace "
            f"{format_duration(args.grace)}) before moving without a Reservation",
        )
    return Route("Without", answer.why, "absent")


def lease_presence(lease: Any, now: datetime, name: str) -> Presence:
    """Whether the Lease says a reservation-aware scheduler answers at `now`: the Lease as the
    client's model (V1Lease) or as the API's JSON (a plain dict, e.g. from a snapshot file)."""
    facts = _lease_facts_of_dict(lease) if isinstance(lease, Mapping) else _lease_facts_of_model(lease)
    return _presence(facts, now, name)


@dataclass(frozen=True, slots=True)
class _LeaseFacts:
    """What the presence rules read of a Lease."""

    renewed: datetime | None  # renewTime, else acquireTime
    duration: timedelta
    holder: str
    scheduler_names: str | None  # the ANNOTATION_SCHEDULER_NAMES annotation as written


def _presence(lease: _LeaseFacts, now: datetime, name: str) -> Presence:
    """Fresh when renewed within its duration (plus clock skew) before `now`. The text of an answer
    that is not fresh holds no age, so a job's status that carries it is written once."""
    renewed, duration, holder = lease.renewed, lease.duration, lease.holder
    if renewed is None or duration <= timedelta(0):
        return Presence(False, f"Lease {name} has no renew time or duration")
    age = now - renewed
    if age > duration + CLOCK_SKEW:
        return Presence(
            False,
            f"Lease {name} last renewed by {holder} at {format_time(renewed)} "
            f"(lease duration {duration.total_seconds():.0f}s)",
        )
    listed = lease.scheduler_names
    names = None if listed is None else frozenset(n.strip() for n in listed.split(",") if n.strip())
    return Presence(True, f"Lease {name} renewed by {holder} {max(age.total_seconds(), 0):.0f}s ago", names)


def _lease_facts_of_model(lease: Any) -> _LeaseFacts:
    """The facts of a V1Lease (the kubernetes client's model: times already parsed)."""
    spec = lease.spec
    annotations = (lease.metadata.annotations if lease.metadata is not None else None) or {}
    return _LeaseFacts(
        renewed=spec.renew_time or spec.acquire_time,
        duration=timedelta(seconds=spec.lease_duration_seconds or 0),
        holder=spec.holder_identity or "nobody",
        scheduler_names=annotations.get(ANNOTATION_SCHEDULER_NAMES),
    )


def _lease_facts_of_dict(lease: Mapping[str, Any]) -> _LeaseFacts:
    """The facts of a Lease as the API's JSON: RFC 3339 times (MicroTime). Anything malformed reads
    as missing (a time that does not parse as no time), which the rules call not fresh."""
    spec = lease.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    metadata = lease.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    listed = annotations.get(ANNOTATION_SCHEDULER_NAMES) if isinstance(annotations, Mapping) else None
    seconds = spec.get("leaseDurationSeconds")
    holder = spec.get("holderIdentity")
    return _LeaseFacts(
        renewed=_micro_time(spec.get("renewTime")) or _micro_time(spec.get("acquireTime")),
        duration=timedelta(seconds=seconds if isinstance(seconds, int) and not isinstance(seconds, bool) else 0),
        holder=holder if isinstance(holder, str) and holder else "nobody",
        scheduler_names=listed if isinstance(listed, str) else None,
    )


def _micro_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


# ------------------------------------------------------------------------------ the plan

LANDING: Final[dict[Way, str]] = {"Reservation": "Reservation", "Wait": "Waits"}


def plan_routes(
    presence: SchedulerPresence, policy: Callable[[], Policy]
) -> Callable[[Plan, Snapshot, datetime], Plan]:
    """The controller's plans: each ReservationFirst move's landing as `presence` says now."""

    def annotate(plan: Plan, snapshot: Snapshot, now: datetime) -> Plan:
        migration = policy().migration
        return with_landings(
            plan, snapshot, migration, lambda name: presence.route(name, now, migration.reservation_scheduler)
        )

    return annotate


def never_without(route: Route, mode: str) -> Route:
    """A MakeBeforeBreak move never goes without a Reservation: its replacement starts while the pod
    runs, and nothing else would keep it off the source. Where another move would, it waits."""
    if route.way == "Without" and mode == "MakeBeforeBreak":
        return Route("Wait", f"{route.why}; a MakeBeforeBreak move needs a reservation-aware scheduler")
    return route


def with_landings(plan: Plan, snapshot: Snapshot, migration: MigrationArgs, route_of: Callable[[str], Route]) -> Plan:
    """The plan with each ReservationFirst move's landing (`Migration.landing`, from `route_of` its
    pod's schedulerName), and why in its warnings: one line per reason a move waits or goes without
    a Reservation."""
    wanted = {str(m.pod) for m in plan.migrations if m.mode in RESERVING_MODES}
    if not wanted:
        return plan
    names = {p.key: p.scheduler_name for p in snapshot.pods if p.key in wanted}
    steered = "Steered" if migration.steer_off_source else "Unsteered"
    counts: Counter[tuple[Way, str]] = Counter()
    moves = []
    for m in plan.migrations:
        if str(m.pod) not in wanted:
            moves.append(m)
            continue
        found = never_without(route_of(names.get(str(m.pod), "")), m.mode)
        if found.way != "Reservation":
            counts[(found.way, found.why)] += 1
        moves.append(msgspec.structs.replace(m, landing=LANDING.get(found.way, steered)))
    warnings = [*plan.warnings]
    for (way, why), count in counts.items():
        if way == "Wait":
            warnings.append(f"{count} move(s) wait for a reservation-aware scheduler: {why}")
            continue
        taint = (
            "; their source nodes carry the taint descheduler.dev/moving-off:PreferNoSchedule while they run"
            if migration.steer_off_source
            else "; nothing steers their replacements off the source (migration.steerOffSource: false)"
        )
        warnings.append(
            f"{count} move(s) evict without a Reservation and are judged by where the scheduler puts the "
            f"replacement: {why}{taint}; {FIX}"
        )
    return msgspec.structs.replace(plan, migrations=tuple(moves), warnings=tuple(warnings))
