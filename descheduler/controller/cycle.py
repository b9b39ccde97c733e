"""One planning cycle of the controller: read, plan, log, count, hand the moves to the executor.

The cycle never plans on data it could not read: an unsynced cache or a failing load source
skips the cycle (counted and logged), and the previous cycle's jobs carry on untouched.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import structlog

from descheduler import metrics
from descheduler.errors import InputError
from descheduler.events import EventRecorder, ObjectRef
from descheduler.migration import replacements
from descheduler.plan import Plan, QuotaRef
from descheduler.plan_cycle import plan_cycle
from descheduler.policy import Policy
from descheduler.snapshot import Snapshot

log = structlog.get_logger(__name__)

NODE_CLASSES = ("high", "low", "normal", "excluded")


class SnapshotSource(Protocol):
    """Where a cycle's Snapshot comes from (the list-watch cache plus the load reader)."""

    def not_ready(self) -> str | None:
        """None when a snapshot can be taken, else why not (for logs and /readyz)."""

    def snapshot(self, now: datetime, policy: Policy) -> Snapshot:
        """A frozen copy of the cluster at `now`; raises when the data cannot be read."""


class Mover(Protocol):
    """Turns a plan's moves into PodMigrationJobs (the executor)."""

    def submit(self, plan: Plan, snapshot: Snapshot) -> list[str]: ...


class SourceError(Exception):
    """The snapshot source could not produce trustworthy data (load source down, stale, malformed)."""


@dataclass(slots=True)
class CycleResult:
    now: datetime
    plan: Plan | None
    snapshot: Snapshot | None
    submitted: list[str]
    skipped_reason: str = ""


class PlanningLoop:
    """Holds what lives across cycles: the strategies' state (LowNodeLoad's hot-cycle counts,
    QuotaReclaim's over-max clocks) and the last result, for /readyz and the simulator."""

    def __init__(
        self,
        source: SnapshotSource,
        mover: Mover,
        policy: Callable[[], Policy],
        clock: Callable[[], datetime],
        *,
        dry_run: bool = False,
        recorder: EventRecorder | None = None,
        dry_run_events: bool = False,
        routes: Callable[[Plan, Snapshot, datetime], Plan] | None = None,
    ) -> None:
        """`recorder` writes a Reclaim Event on each ElasticQuota a cycle reclaims from, and a
        QuotaReclaimNoProgress Event on a waiting group's ElasticQuota when a reclaim for it made no
        progress; with `dry_run_events`, a dry-run cycle writes a WouldDeschedule Event on each pod
        it would move (the only write a dry run makes); `routes` says in the plan how each move will be
        carried out (through a Reservation or not, and why: migration/presence.py)."""
        self.source = source
        self.mover = mover
        self.policy = policy
        self.clock = clock
        self.dry_run = dry_run
        self.recorder = recorder
        self.dry_run_events = dry_run_events
        self.routes = routes
        self.state: dict[str, Any] = {}
        self.last: CycleResult | None = None
        self.cycles = 0
        self._pools: set[str] = set()  # the pools the metrics show, to remove those that go away

    def run_cycle(self) -> CycleResult:
        policy = self.policy()
        now = self.clock()
        began = time.perf_counter()
        self.cycles += 1
        metrics.DRY_RUN.set(1 if self.dry_run or policy.dry_run else 0)
        try:
            result = self._cycle(policy, now)
        except Exception:
            metrics.CYCLES.labels("error").inc()
            log.exception("cycle failed", cycle=self.cycles)
            result = CycleResult(now, None, None, [], "error")
        finally:
            metrics.CYCLE_DURATION.observe(time.perf_counter() - began)
        self.last = result
        return result

    def _cycle(self, policy: Policy, now: datetime) -> CycleResult:
        problem = self.source.not_ready()
        if problem is None:
            try:
                snapshot = self.source.snapshot(now, policy)
            except (SourceError, InputError) as err:
                problem = str(err)
        if problem is not None:
            metrics.CYCLES.labels("skipped").inc()
            log.warning("cycle skipped: not planning on data that could not be read", cycle=self.cycles, reason=problem)
            return CycleResult(now, None, None, [], problem)
        replacements.publish(snapshot)  # moved pods' replacements still Pending (an alert reads it)
        plan, self.state = plan_cycle(snapshot, policy, self.state)
        if self.routes is not None:
            plan = self.routes(plan, snapshot, now)
        self._report(plan)
        dry = self.dry_run or policy.dry_run
        submitted = [] if dry or not plan.migrations else self.mover.submit(plan, snapshot)
        if submitted and self.recorder is not None:
            self._quota_events(plan)
        self._reclaim_stalls(plan)
        if dry and self.dry_run_events and self.recorder is not None:
            uids = {p.key: p.uid for p in snapshot.pods}
            for m in plan.migrations:
                ref = ObjectRef("Pod", m.pod.name, m.pod.namespace, uids.get(str(m.pod), ""))
                target = f" to {m.target_node}" if m.target_node else ""
                self.recorder.normal(ref, "WouldDeschedule", f"dry run: {m.strategy} would move it{target}: {m.reason}")
        for strategy, count in Counter(m.strategy for m in plan.migrations).items():
            metrics.MIGRATIONS.labels(strategy, "planned").inc(count)
        for (strategy, code), count in Counter((s.strategy, s.code) for s in plan.skipped).items():
            metrics.SKIPS.labels(strategy, code).inc(count)
        metrics.CYCLES.labels("planned").inc()
        metrics.LAST_CYCLE.set_to_current_time()  # wall time: alerts compare it with Prometheus' time()
        summary = plan.summary()
        log.info(
            "cycle planned",
            cycle=self.cycles,
            dry_run=dry,
            migrations=summary["migrations"],
            submitted=len(submitted),
            hot_nodes=summary["hotNodes"],
            low_nodes=summary["lowNodes"],
            skipped=summary["skipped"],
        )
        return CycleResult(now, plan, snapshot, submitted)

    def _report(self, plan: Plan) -> None:
        for node_class in NODE_CLASSES:
            metrics.NODES.labels(node_class).set(sum(n.node_class == node_class for n in plan.nodes))
        self._report_pools(plan)
        for warning in plan.warnings:
            log.warning("plan warning", warning=warning)
        for m in plan.migrations:
            log.info(
                "move planned",
                pod=str(m.pod),
                node=m.source_node,
                target=m.target_node,
                strategy=m.strategy,
                mode=m.mode,
                landing=m.landing or None,
                reason=m.reason,
            )

    def _report_pools(self, plan: Plan) -> None:
        """Nodes per pool and class, and each pool's longest hot streak; a pool gone from the
        policy since the last cycle is removed, not left at its last values."""
        counts = {(n.pool, c): 0 for n in plan.nodes if n.pool for c in NODE_CLASSES}
        streaks = dict.fromkeys((pool for pool, _ in counts), 0)
        for n in plan.nodes:
            if n.pool:
                counts[(n.pool, n.node_class)] += 1
                if n.node_class == "high":
                    streaks[n.pool] = max(streaks[n.pool], n.hot_cycles)
        for (pool, node_class), count in counts.items():
            metrics.POOL_NODES.labels(pool, node_class).set(count)
        for pool, streak in streaks.items():
            metrics.POOL_HOT_STREAK.labels(pool).set(streak)
        for pool in self._pools - streaks.keys():
            metrics.POOL_HOT_STREAK.remove(pool)
            for node_class in NODE_CLASSES:
                metrics.POOL_NODES.remove(pool, node_class)
        self._pools = set(streaks)

    def _quota_events(self, plan: Plan) -> None:
        """One Event per borrowing ElasticQuota a cycle reclaims from (the pods get theirs from the jobs)."""
        assert self.recorder is not None
        by_quota: dict[QuotaRef, list[str]] = {}
        for m in plan.migrations:
            if m.quota is not None:
                by_quota.setdefault(m.quota, []).append(str(m.pod))
        for quota, pods in by_quota.items():
            ref = ObjectRef("ElasticQuota", quota.name, quota.namespace, api_version=f"{quota.api_group}/v1alpha1")
            self.recorder.normal(ref, "Reclaim", f"reclaiming lent capacity: evicting {', '.join(pods)}")

    def _reclaim_stalls(self, plan: Plan) -> None:
        """A QuotaReclaim round that made no progress: counted per lender, and a Warning Event on
        the waiting group's ElasticQuota (quotareclaim.md §4)."""
        for stall in plan.reclaim_stalls:
            for lender in stall.lenders:
                metrics.QUOTA_RECLAIM_NO_PROGRESS.labels(stall.group, lender).inc()
            if self.recorder is not None:
                quota = stall.quota
                ref = ObjectRef("ElasticQuota", quota.name, quota.namespace, api_version=f"{quota.api_group}/v1alpha1")
                self.recorder.warning(ref, "QuotaReclaimNoProgress", stall.message)

    def not_ready(self) -> str | None:
        return self.source.not_ready()
