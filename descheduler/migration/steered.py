"""The driver of moves without a Reservation (migration.md §3, EvictDirectly and what follows it).

- EvictDirectly: evict; the eviction is the whole task.
- A ReservationFirst job that started when no reservation-aware scheduler answered
  (`steps.without_reservation`): the source node carries our moving-off taint while such moves are in
  flight (`steering`), so a stock scheduler scores every other node higher; the pod is evicted, and
  the move is judged by where the owner's next pod lands (`PassReads.stock_replacement`): on a node
  that stays under its thresholds, then Ready.

`reconcile_taints` takes the taint off every node with no such move in flight any more.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

import structlog

from descheduler.migration import steps
from descheduler.migration.api import ApiFailure
from descheduler.migration.driving import Driving, Lost
from descheduler.migration.pass_reads import JobHandle, PassReads
from descheduler.migration.steering import SourceSteering
from descheduler.migration.steps import Stage

log = structlog.get_logger(__name__)

# Every node is checked for a moving-off taint no move needs any more this often (and at start).
STEERING_SWEEP: Final = timedelta(minutes=5)


class Steered:
    """Drives EvictDirectly jobs and ReservationFirst jobs moving without a Reservation."""

    def __init__(self, driving: Driving) -> None:
        self.driving = driving
        self.steering = SourceSteering(driving.api)
        self._tainted: set[str] = set()  # nodes this process tainted and has not untainted yet
        self._swept: datetime | None = None  # when every node was last checked for our taint

    def step(self, handle: JobHandle, stage: Stage, reads: PassReads) -> bool:
        """Take `stage`; True when it moved the job on and the next step may follow at once."""
        match stage:
            case "Evict":
                return self._evict(handle, reads)
            case "AwaitStockReplacement":
                found = reads.stock_replacement(handle.job)
                return found is not None and self.driving.apply(handle, found, reads)
            case "AwaitReady":
                return self.driving.await_ready(handle, reads)
        raise AssertionError(f"a move without a Reservation has no step {stage!r}")

    def expire(self, handle: JobHandle, reads: PassReads) -> None:
        self.driving.expire(handle, reads)

    def _evict(self, handle: JobHandle, reads: PassReads) -> bool:
        live = self.driving.live_pod(handle)
        if isinstance(live, Lost):
            return self.driving.evicted_before(handle, live, reads)
        steer = (
            steps.without_reservation(handle.job.status)
            and reads.policy.migration.steer_off_source
            and live.pod.node_name not in self._tainted
        )
        return self.driving.evict(handle, reads, live.pod, self._taint_source if steer else None)

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

    def reconcile_taints(self, handles: list[JobHandle], reads: PassReads) -> None:
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
            if self._swept is None or reads.now - self._swept >= STEERING_SWEEP:
                self.steering.reconcile(in_flight)
                self._swept = reads.now
                self._tainted &= in_flight
                return
            for node in sorted(self._tainted - in_flight):
                self.steering.untaint(node)
                self._tainted.discard(node)
        except ApiFailure as failure:
            log.warning("cannot remove the moving-off taint; will retry", error=str(failure))
