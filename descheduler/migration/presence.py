"""Whether a reservation-aware scheduler answers (migration.md §3).

The scheduler side (`descheduler extender`, or the simulator's scheduler) renews the Lease
`SCHEDULER_LEASE` in the namespace it shares with the controller while it serves. Without a fresh
one, a Reservation would hold room that no scheduler honours and no one would acknowledge it, so
ReservationFirst jobs move the pod the way a stock scheduler allows (migration.md §3, EvictDirectly)
and are judged by where the replacement lands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog

from descheduler import metrics
from descheduler.migration.api import ApiFailure, MigrationApi
from descheduler.migration.objects import SCHEDULER_LEASE
from descheduler.plan import Plan

log = structlog.get_logger(__name__)

# Clocks of the scheduler's node and ours may differ by this much before a renewal counts as late.
CLOCK_SKEW = timedelta(seconds=5)
# Read the Lease at most this often; jobs of one pass share the answer.
READ_EVERY = timedelta(seconds=2)


@dataclass(frozen=True, slots=True)
class Presence:
    """`present` is None when the Lease could not be read: decide nothing on it."""

    present: bool | None
    why: str


class SchedulerPresence:
    """Reads the scheduler Lease; says once (log, metric) whenever the answer changes."""

    def __init__(self, api: MigrationApi, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self._last: tuple[datetime, Presence] | None = None
        self._said: bool | None = None

    @property
    def lease(self) -> str:
        return f"{self.namespace}/{SCHEDULER_LEASE}"

    def check(self, now: datetime) -> Presence:
        if self._last is not None and now - self._last[0] < READ_EVERY:
            return self._last[1]
        answer = self._read(now)
        self._last = (now, answer)
        if answer.present is not None and answer.present != self._said:
            self._said = answer.present
            metrics.RESERVATION_SCHEDULER.set(1 if answer.present else 0)
            if answer.present:
                log.info("a reservation-aware scheduler answers", lease=self.lease, detail=answer.why)
            else:
                log.warning(
                    "no reservation-aware scheduler answers: ReservationFirst moves evict without a Reservation "
                    "and are judged by where the stock scheduler puts the replacement; deploy the extender "
                    "(deploy/overlays/with-scheduler) for moves that land where they were planned",
                    lease=self.lease,
                    detail=answer.why,
                )
        return answer

    def _read(self, now: datetime) -> Presence:
        try:
            lease = self.api.get_lease(self.namespace, SCHEDULER_LEASE)
        except ApiFailure as failure:
            return Presence(None, f"cannot read Lease {self.lease}: {failure}")
        if lease is None:
            return Presence(False, f"no Lease {self.lease}: no reservation-aware scheduler has announced itself")
        return lease_presence(lease.spec, now, self.lease)


def lease_presence(spec: Any, now: datetime, name: str) -> Presence:
    """Fresh when renewed within its duration (plus clock skew) before `now`."""
    renewed = spec.renew_time or spec.acquire_time
    duration = timedelta(seconds=spec.lease_duration_seconds or 0)
    holder = spec.holder_identity or "nobody"
    if renewed is None or duration <= timedelta(0):
        return Presence(False, f"Lease {name} has no renew time or duration")
    age = now - renewed
    if age <= duration + CLOCK_SKEW:
        return Presence(True, f"Lease {name} renewed by {holder} {max(age.total_seconds(), 0):.0f}s ago")
    return Presence(
        False,
        f"Lease {name} last renewed by {holder} {age.total_seconds():.0f}s ago "
        f"(lease duration {duration.total_seconds():.0f}s)",
    )


def plan_notices(presence: SchedulerPresence) -> Callable[[Plan, datetime], list[str]]:
    """The plan warning when its ReservationFirst moves will find no scheduler that honours a Reservation."""

    def notices(plan: Plan, now: datetime) -> list[str]:
        if not any(m.mode == "ReservationFirst" for m in plan.migrations):
            return []
        answer = presence.check(now)
        if answer.present is not False:
            return []
        return [
            f"no reservation-aware scheduler answers ({answer.why}): ReservationFirst moves evict without a "
            "Reservation and are judged by where the scheduler puts the replacement; deploy the extender "
            "(deploy/overlays/with-scheduler) for moves that land where they were planned"
        ]

    return notices
