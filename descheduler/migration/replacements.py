"""Replacements left Pending after their pod's eviction: what no move may leave behind (migration.md
§3; a replacement stranded by a rule we got wrong is an eviction wasted).

Read from each cycle's snapshot, so it costs no call of its own: for every job that evicted a pod to
move it (ReservationFirst, with or without a Reservation; not EvictDirectly, whose workload may
rightly stay short, nor MakeBeforeBreak, whose pod stays until its replacement is Ready), the
replacement is the one the job recorded, else the owner's first pod created since the eviction that
no other job claimed; it is stranded while it is not bound. `publish` sets the gauge the alert
DeschedulerReplacementPending reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from descheduler import metrics
from descheduler.model import MigrationJob, Pod
from descheduler.snapshot import Snapshot

# A replacement is made after the eviction; its creation time may read a little before it (clock skew).
SKEW = timedelta(seconds=1)


@dataclass(frozen=True, slots=True)
class PendingReplacement:
    """The replacement `pod` of job `job`, not bound since the eviction at `since`."""

    job: str
    pod: str
    since: datetime


def _replacement(job: MigrationJob, pods: list[Pod], claimed: set[str]) -> Pod | None:
    recorded = job.replacement
    if recorded is not None:
        key = f"{recorded.namespace}/{recorded.name}"
        return next((p for p in pods if p.key == key and (not recorded.uid or p.uid == recorded.uid)), None)
    assert job.evicted is not None
    fresh = [
        p
        for p in pods
        if p.owner is not None
        and p.owner.uid == job.workload_uid
        and p.uid not in claimed
        and not p.deleting
        and p.created is not None
        and p.created >= job.evicted - SKEW
    ]
    return min(fresh, key=lambda p: (p.created or job.evicted, p.key), default=None)


def pending_replacements(snapshot: Snapshot) -> list[PendingReplacement]:
    """Every evicting move's replacement that is not bound, oldest eviction first."""
    moved = [
        j for j in snapshot.jobs if j.mode == "ReservationFirst" and j.evicted is not None and j.workload_uid
    ]
    if not moved:
        return []
    claimed = {j.replacement.uid for j in snapshot.jobs if j.replacement is not None and j.replacement.uid}
    pods = list(snapshot.pods)
    out = []
    for job in moved:
        pod = _replacement(job, pods, claimed)
        if pod is not None and not pod.node_name and not pod.terminal and not pod.deleting:
            assert job.evicted is not None
            out.append(PendingReplacement(job.name, pod.key, job.evicted))
    return sorted(out, key=lambda p: (p.since, p.job))


def publish(snapshot: Snapshot) -> list[PendingReplacement]:
    """Set descheduler_replacement_pending_seconds to the longest wait, as of the snapshot (0: none)."""
    pending = pending_replacements(snapshot)
    waited = (snapshot.now - pending[0].since).total_seconds() if pending else 0.0
    metrics.REPLACEMENT_PENDING.set(max(0.0, waited))
    return pending
