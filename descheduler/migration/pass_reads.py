"""What one reconcile pass of the migration controller reads, shared by its steps.

The jobs (`JobHandle`: raw, so writes keep fields we do not model, and parsed) and our Reservations
are listed once at the start of the pass; the cluster snapshot, the placement built on it and the
nodes cooling down after a move are read lazily, at most once per pass, by the first step that
needs them. The only I/O here is the snapshot source the controller passes in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog

from descheduler import decode
from descheduler.migration import steps
from descheduler.migration.admission import job_facts
from descheduler.migration.limits import JobFacts, cooling_sources
from descheduler.migration.objects import ANNOTATION_SOURCE_NODE, RESERVING_MODES, PodMigrationJob, parse_job
from descheduler.migration.targets import Placement
from descheduler.model import Pod
from descheduler.policy import Policy
from descheduler.snapshot import Snapshot

log = structlog.get_logger(__name__)


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

    def log(self) -> Any:
        """A logger bound to the job: its pod, nodes, strategy and reason."""
        job = self.job
        ref = job.spec.pod_ref
        return log.bind(
            job=job.name,
            pod=f"{ref.namespace}/{ref.name}",
            node=job.status.source_node or job.metadata.annotations.get(ANNOTATION_SOURCE_NODE, ""),
            target=job.status.target_node or job.spec.target_node,
            strategy=job.spec.strategy,
            reason=job.spec.reason,
        )


@dataclass(slots=True)
class PassReads:
    """The reads of one reconcile pass: listed jobs and Reservations, and the lazily read snapshot,
    placement and cooling nodes."""

    now: datetime
    policy: Policy
    handles: list[JobHandle]
    reservations: list[dict[str, Any]]
    snapshot_source: Callable[[], Snapshot]
    _snapshot: Snapshot | None = None
    _snapshot_read: bool = False
    _placement: Placement | None = None
    _cooling: set[str] | None = field(default=None)

    def snapshot(self) -> Snapshot | None:
        """The cluster snapshot, read once (None when the cache cannot give one: wait a pass)."""
        if not self._snapshot_read:
            self._snapshot_read = True
            try:
                self._snapshot = self.snapshot_source()
            except Exception as err:  # the cache may not be synced yet: wait for the next pass
                log.warning("no cluster snapshot for this pass; admissions and placements wait", error=str(err))
        return self._snapshot

    def job_facts(self) -> list[JobFacts]:
        """Every listed job as arbitration sees it now (the jobs' statuses as this pass has left them)."""
        snapshot = self.snapshot()
        pods = {p.key: p for p in snapshot.pods} if snapshot is not None else {}
        return [job_facts(h.job, pods) for h in self.handles]

    def cooling(self) -> set[str]:
        """Nodes a pod was evicted from within the cooldown: not targets for now."""
        if self._cooling is None:
            self._cooling = cooling_sources(self.job_facts(), self.policy.migration.cooldown, self.now)
        return self._cooling

    def placement(self) -> Placement | None:
        """One node table for the pass, with our Reservations as read this pass (None: no snapshot)."""
        if self._placement is None:
            snapshot = self.snapshot()
            if snapshot is None:
                return None
            placing = {
                h.job.name
                for h in self.handles
                if h.job.spec.mode in RESERVING_MODES
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

    def stock_replacement(self, job: PodMigrationJob) -> steps.Elsewhere | None:
        """The owner's first pod bound since the job's eviction that no other job claimed
        (steps.stock_replacement); None until there is one, or without a snapshot."""
        snapshot = self.snapshot()
        if snapshot is None:
            return None
        claimed = {
            h.job.status.new_pod_ref.uid
            for h in self.handles
            if h.job.status.new_pod_ref is not None and h.job.name != job.name
        }
        return steps.stock_replacement(job, snapshot.pods, claimed)

    def why_crowded(self, pod: Pod) -> str:
        """Why the pod's node is over its load thresholds now ("" when it is not, or when unknown)."""
        placement = self.placement()
        return placement.over_thresholds(pod.node_name) if placement is not None else ""
