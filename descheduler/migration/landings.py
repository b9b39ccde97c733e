"""A one-shot plan's landings (`descheduler plan`): how each ReservationFirst move would go, from the
scheduler Lease read with its snapshot (on a cluster, or as `snapshot save` kept it), at the plan's
`now`. The controller's plans get theirs from its live presence instead (`presence.plan_routes`)."""

from __future__ import annotations

import msgspec

from descheduler.migration.objects import RESERVING_MODES
from descheduler.migration.presence import decide, lease_presence, no_lease, with_landings
from descheduler.plan import Plan
from descheduler.policy import MigrationArgs
from descheduler.snapshot import Snapshot


def snapshot_landings(plan: Plan, snapshot: Snapshot, migration: MigrationArgs) -> Plan:
    """The plan with each ReservationFirst move's landing and why (`with_landings`). A snapshot
    that did not look for the Lease (built by hand, older files, the demo) leaves the plan as is;
    one that could not read it adds a warning and leaves the landings empty."""
    seen = snapshot.scheduler_lease
    if seen is None:
        return plan
    if seen.error is not None:
        if not any(m.mode in RESERVING_MODES for m in plan.migrations):
            return plan
        warning = (
            f"cannot read the scheduler Lease {seen.ref}: {seen.error}; how ReservationFirst moves would go "
            "(the landing after their mode) is left out"
        )
        return msgspec.structs.replace(plan, warnings=(*plan.warnings, warning))
    answer = no_lease(seen.ref) if seen.found is None else lease_presence(seen.found, snapshot.now, seen.ref)
    args = migration.reservation_scheduler
    # No grace (grace_until=None): a one-shot plan reports the steady state, how moves go once the
    # controller has run longer than reservationScheduler.grace; a controller just started (or whose
    # Lease just went stale) would make Preferred moves wait that long first.
    return with_landings(plan, snapshot, migration, lambda name: decide(answer, name, args, seen.ref))
